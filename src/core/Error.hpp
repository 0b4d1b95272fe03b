#pragma once
#include <stdexcept>
#include <string>

namespace nendo {

// Every error nendo raises on purpose. The message carries its context (file, line, key; or step,
// particle id, field) because it is raised where that context is known.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An error raised on every rank alike (core/CollectiveError.hpp, or a check every rank makes on the
// same data): no rank is left waiting, so the run can stop cleanly instead of aborting MPI.
class CollectiveError : public Error {
 public:
  using Error::Error;
};

// Bad input found on every rank alike before any work (a checkpoint that does not fit the scene,
// a Catalyst script that does not load): `nendo run` exits with 2, like a scene error.
class InputError : public CollectiveError {
 public:
  using CollectiveError::CollectiveError;
};

}  // namespace nendo
