#pragma once
// A per-item array whose values repeat: each distinct value stored once, each item a 4-byte index
// into them. The fem model's per-tet constants (a few hundred bytes each) take a handful of
// distinct values in a scene (one per similarity class and material mix, one per fine material),
// so a hierarchy of a million tets holds 4 MB of indices instead of 400 MB of copies. Values are
// equal when their bytes are: a looked-up value is bitwise the one stored, so results do not change.
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace nendo::fem {

// T: plain data without padding or pointers (Eigen fixed-size matrices and arrays of doubles).
template <class T>
class DedupedTable {
 public:
  DedupedTable() = default;
  explicit DedupedTable(const std::vector<T>& values) {
    for (const T& value : values) push_back(value);
  }

  void push_back(const T& value) { index_.push_back(find_or_insert(value)); }
  void resize(std::size_t count, const T& value) { index_.resize(count, find_or_insert(value)); }
  void set(std::size_t item, const T& value) { index_[item] = find_or_insert(value); }

  const T& operator[](std::size_t item) const { return distinct_[index_[item]]; }
  std::size_t size() const { return index_.size(); }
  std::size_t distinct_count() const { return distinct_.size(); }

 private:
  static std::uint64_t hash(const T& value) {  // FNV-1a over the bytes
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    std::uint64_t h = 14695981039346656037ULL;
    for (unsigned char byte : bytes) h = (h ^ byte) * 1099511628211ULL;
    return h;
  }

  std::uint32_t find_or_insert(const T& value) {
    const std::uint64_t key = hash(value);
    const auto [first, last] = by_hash_.equal_range(key);
    for (auto it = first; it != last; ++it)
      if (std::memcmp(&distinct_[it->second], &value, sizeof(T)) == 0) return it->second;
    const auto index = static_cast<std::uint32_t>(distinct_.size());
    distinct_.push_back(value);
    by_hash_.emplace(key, index);
    return index;
  }

  std::vector<T> distinct_;
  std::vector<std::uint32_t> index_;
  std::unordered_multimap<std::uint64_t, std::uint32_t> by_hash_;
};

}  // namespace nendo::fem
