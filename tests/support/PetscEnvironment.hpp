#pragma once
// For tests that run PETSc solvers (the implicit integrator): PETSc is initialised once for the
// test program, on top of the MPI that MpiTestMain.cpp initialised, and finalised at the end.
// Include this header in one source file of the test program.
#include <gtest/gtest.h>
#include <petscsys.h>

namespace nendo::testing {

class PetscEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { PetscInitializeNoArguments(); }
  void TearDown() override { PetscFinalize(); }
};

inline ::testing::Environment* const petsc_environment =
    ::testing::AddGlobalTestEnvironment(new PetscEnvironment);

}  // namespace nendo::testing
