#include "solvers/PetscSession.hpp"

#include <petscsys.h>

#include "core/Error.hpp"

namespace nendo {

PetscSession::PetscSession(int* argc, char*** argv) {
  if (PetscInitialize(argc, argv, nullptr, nullptr) != 0) throw Error("PetscInitialize failed");
}

PetscSession::~PetscSession() { PetscFinalize(); }

void PetscSession::add_options(const std::string& options) {
  if (options.empty()) return;
  if (PetscOptionsInsertString(nullptr, options.c_str()) != 0)
    throw Error("PETSc rejected the options '" + options + "'");
}

std::string PetscSession::version() {
  char text[256];
  PetscGetVersion(text, sizeof text);
  return text;
}

}  // namespace nendo
