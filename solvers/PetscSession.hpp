#pragma once
// RAII for the PETSc library: PetscInitialize (which initialises MPI if needed) on construction,
// PetscFinalize on destruction. The options database sees the command line, ~/.petscrc and
// ./.petscrc, and the scene's implicit.petsc_options, so every PETSc knob reaches the solvers.
// While it lives, every StageClock stage is a PETSc log event (PetscLog.hpp).
#include <memory>
#include <string>
#include <vector>

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
  // The options in the database that nothing has read so far, without their dash (what PETSc's
  // -options_left lists at the end).
  static std::vector<std::string> unused_options();
  // The program's own long options: PETSc's parser sees them on the command line too (`--set a=1`
  // reads as option -set), and unused_options() leaves them out.
  static void set_program_options(std::vector<std::string> names);

 private:
  std::unique_ptr<PetscStageLog> stage_log_;  // StageClock stages as PETSc log events (PetscLog.hpp)
};

}  // namespace nendo
