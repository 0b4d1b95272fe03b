#pragma once
// What every assembled operator of the solvers does the same way (AssembledHessian,
// GeometricMultigrid's coarse level): exact preallocation by one symbolic pass of the assembly into
// a MATPREALLOCATOR matrix, and the rigid-body modes of the nodes as GAMG's near null space.
#include <petscmat.h>

#include <functional>
#include <string>

#include "core/Types.hpp"

namespace nendo {

// A symmetric n×n (local) matrix of block size bs and type `type` (then -<prefix>mat_type), whose
// pattern is what `insert` adds; new nonzeros later are an error. Collective.
::Mat preallocated_matrix(MPI_Comm comm, PetscInt n, int bs, const std::string& type, const char* prefix,
                          const std::function<void(::Mat)>& insert);

// Attaches the rigid-body modes of the owned nodes at xyz (bs numbers per node, n numbers in all)
// as A's near null space. Collective.
void attach_rigid_body_modes(::Mat A, MPI_Comm comm, PetscInt n, int bs, const Real* xyz);

}  // namespace nendo
