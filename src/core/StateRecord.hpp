#pragma once
// Named numbers a method (or the driver) must carry across a restart besides its particle fields:
// counters, emitter progress, random-generator state. Checkpoints store each entry as a dataset
// under /meta (io/Checkpoint.hpp); every rank holds the same record.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nendo {

struct StateRecord {
  std::map<std::string, std::vector<double>> reals;
  std::map<std::string, std::vector<std::int64_t>> integers;

  bool operator==(const StateRecord& other) const {
    return reals == other.reals && integers == other.integers;
  }
};

}  // namespace nendo
