#include "solvers/PetscSession.hpp"

#include <petscsys.h>

#include <algorithm>

#include "core/Error.hpp"
#include "solvers/PetscLog.hpp"

namespace nendo {

namespace {
std::vector<std::string> program_options;  // without dashes
int* command_line_count = nullptr;
char*** command_line = nullptr;
}  // namespace

PetscSession::PetscSession(int* argc, char*** argv) {
  if (PetscInitialize(argc, argv, nullptr, nullptr) != 0) throw Error("PetscInitialize failed");
  command_line_count = argc, command_line = argv;
  stage_log_ = std::make_unique<PetscStageLog>();
}

PetscSession::~PetscSession() {
  command_line_count = nullptr, command_line = nullptr;
  stage_log_.reset();
  PetscFinalize();
}

void PetscSession::add_options(const std::string& options) {
  if (options.empty()) return;
  if (PetscOptionsInsertString(nullptr, options.c_str()) != 0)
    throw Error("PETSc rejected the options '" + options + "'");
  // What the user gives at run time wins over the scene: .petscrc, PETSC_OPTIONS and the command
  // line are inserted again on top.
  if (command_line && PetscOptionsInsert(nullptr, command_line_count, command_line, nullptr) != 0)
    throw Error("PETSc could not re-read the command line options");
}

std::vector<std::string> PetscSession::unused_options() {
  PetscInt count = 0;
  char** names = nullptr;
  char** values = nullptr;
  if (PetscOptionsLeftGet(nullptr, &count, &names, &values) != 0) return {};
  std::vector<std::string> unused;
  for (PetscInt i = 0; i < count; ++i) {
    const std::string name = std::string(names[i]).substr(names[i][0] == '-' ? 1 : 0);  // "--set": "-set"
    if (names[i][0] != '-' ||
        std::find(program_options.begin(), program_options.end(), name) == program_options.end())
      unused.emplace_back(names[i]);
  }
  PetscOptionsLeftRestore(nullptr, &count, &names, &values);
  return unused;
}

void PetscSession::set_program_options(std::vector<std::string> names) { program_options = std::move(names); }

std::string PetscSession::version() {
  char text[256];
  PetscGetVersion(text, sizeof text);
  return text;
}

}  // namespace nendo
