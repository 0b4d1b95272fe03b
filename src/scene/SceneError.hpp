#pragma once
#include <string>
#include <utility>

#include "core/Error.hpp"

namespace nendo {

// A scene that cannot be loaded. what() reads "<where>: key '<key path>': <detail>", where <where> is
// "file:line" or "--set key.path=value"; the key part is left out for errors about the whole file.
class SceneError : public Error {
 public:
  SceneError(std::string where, std::string key_path, std::string detail)
      : Error(compose(where, key_path, detail)),
        where_(std::move(where)),
        key_path_(std::move(key_path)),
        detail_(std::move(detail)) {}

  const std::string& where() const { return where_; }
  const std::string& key_path() const { return key_path_; }
  const std::string& detail() const { return detail_; }

 private:
  static std::string compose(const std::string& where, const std::string& key_path,
                             const std::string& detail) {
    if (key_path.empty()) return where + ": " + detail;
    return where + ": key '" + key_path + "': " + detail;
  }

  std::string where_;
  std::string key_path_;
  std::string detail_;
};

}  // namespace nendo
