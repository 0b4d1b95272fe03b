#pragma once
// PETSc calls from C++: a nonzero error code becomes a nendo::Error naming the call.
#include <petscsys.h>

#include <string>

#include "core/Error.hpp"

namespace nendo {

inline void petsc_call(PetscErrorCode code, const char* what) {
  if (code == 0) return;
  const char* text = nullptr;
  PetscErrorMessage(code, &text, nullptr);
  throw Error(std::string("PETSc: ") + what + " failed: " + (text ? text : "error " + std::to_string(code)));
}

}  // namespace nendo
