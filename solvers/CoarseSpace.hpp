#pragma once
// A coarser discretisation of a NewtonProblem's unknowns, for geometric multigrid
// (GeometricMultigrid): its own nodes (block_size unknowns each, numbered by rank like a DofMap),
// the interpolation from its nodes to the problem's, and its operator at the problem's current
// linearisation point. Every call is collective.
#include <petscmat.h>

#include <cstdint>

#include "core/Types.hpp"

namespace nendo {

class CoarseSpace {
 public:
  virtual ~CoarseSpace() = default;
  virtual int block_size() const = 0;
  virtual PetscInt owned_nodes() const = 0;  // coarse nodes of this rank
  // Inserts P (rows: the problem's owned unknowns by global block index, columns: coarse nodes)
  // with MatSetValuesBlocked(..., INSERT_VALUES) into a matrix preallocated for
  // interpolation_width() blocks per row. P respects the problem's constraints: a constrained
  // direction of a fine node receives nothing from the coarse level.
  virtual void interpolation(::Mat P) = 0;
  virtual PetscInt interpolation_width() const = 0;
  // Adds the coarse operator at the problem's linearisation point into A (ADD_VALUES, block rows
  // of any rank), (I − P) on each owned constrained coarse node; inserts the same pattern every
  // time for a given layout, diagonal blocks of every owned node included.
  virtual void assemble(::Mat A) = 0;
  // Owned coarse node positions (block_size numbers per node), for GAMG's rigid-body modes.
  virtual void coordinates(Real* xyz) = 0;

  // Coarser levels below this one (nested spaces, e.g. a mesh hierarchy): deeper_levels() of
  // them, level k ≥ 1 with deeper_nodes(k) owned nodes and the interpolation from level k into
  // level k − 1 (level 0: this space), inserted like interpolation(). Their operators are the
  // Galerkin products Pᵀ A P of the level above.
  virtual int deeper_levels() const { return 0; }
  virtual PetscInt deeper_nodes(int /*k*/) const { return 0; }
  virtual void deeper_interpolation(int /*k*/, ::Mat /*P*/) {}
  // Whether the coarsest level's operator is consistent enough that an exact solve of it is the
  // best coarse solve (a Galerkin product of nested spaces); else one GAMG cycle serves better.
  virtual bool exact_coarse_solve_helps() const { return false; }
};

}  // namespace nendo
