#pragma once
// RAII for the PETSc library: PetscInitialize (which initialises MPI if needed) on construction,
// PetscFinalize on destruction. The options database sees the command line, ~/.petscrc and
// ./.petscrc, and the scene's implicit.petsc_options, so every PETSc knob reaches the solvers.
// While it lives, every StageClock stage is a PETSc log event (PetscLog.hpp).
#include <memory>
#include <string>

namespace nendo {

class PetscStageLog;

class PetscSession {
 public:
  PetscSession(int* argc, char*** argv);
  ~PetscSession();
  PetscSession(const PetscSession&) = delete;
  PetscSession& operator=(const PetscSession&) = delete;

  // Adds options such as "-ksp_type cg -pc_type gamg" to the database (a scene's petsc_options)
  // underneath those given at run time (.petscrc, PETSC_OPTIONS, the command line), which win.
  static void add_options(const std::string& options);
  static std::string version();

 private:
  std::unique_ptr<PetscStageLog> stage_log_;  // StageClock stages as PETSc log events (PetscLog.hpp)
};

}  // namespace nendo
