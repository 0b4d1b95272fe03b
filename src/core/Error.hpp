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

}  // namespace nendo
