#pragma once
// The linear operator KSP solves with in each Newton iteration, A = P H P + (I − P), in one of two
// forms behind one interface (DESIGN.md "Implicit systems"):
//   matrix_free: a MatShell whose product is the problem's Hessian-vector product and whose
//                diagonal feeds PCJACOBI. Default: no matrix is ever stored.
//   assembled:   an MPIBAIJ matrix (block size = the node's unknowns; MPIAIJ with that block size
//                when the PC is GAMG, which cannot coarsen BAIJ; -mat_type overrides) preallocated exactly by
//                a symbolic pass (MATPREALLOCATOR), so that GAMG, hypre BoomerAMG, block Jacobi + ILU/ICC
//                work. Rigid-body modes from the node coordinates are attached as the near null space for
//                GAMG.
// Lifecycle, per time step: setup() for the step's layout, then update() at every linearisation.
#include <petscmat.h>

#include <memory>
#include <string>

#include "solvers/NewtonProblem.hpp"

namespace nendo {

class HessianOperator {
 public:
  virtual ~HessianOperator();
  HessianOperator() = default;
  HessianOperator(const HessianOperator&) = delete;
  HessianOperator& operator=(const HessianOperator&) = delete;

  // A new layout (the problem's DofMap changed): recreates the matrix. Collective.
  virtual void setup(NewtonProblem& problem) = 0;
  // The problem was linearised at a new point: the operator follows. Collective.
  virtual void update(NewtonProblem& problem) = 0;
  ::Mat mat() const { return mat_; }
  // The assembled operator's default matrix type (-mat_type overrides it).
  void set_matrix_type(const std::string& type) { matrix_type_ = type; }

 protected:
  ::Mat mat_ = nullptr;
  std::string matrix_type_ = "baij";
};

// "matrix_free" or "assembled"; throws nendo::Error for anything else.
std::unique_ptr<HessianOperator> make_hessian_operator(const std::string& type);

}  // namespace nendo
