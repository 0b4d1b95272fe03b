#pragma once
// A per-item array whose values repeat: each distinct value stored once, each item a 4-byte index
// into them. The fem model's per-tet constants (a few hundred bytes each) take a handful of
// distinct values in a scene (one per similarity class and material mix, one per fine material),
// so a hierarchy of a million tets holds 4 MB of indices instead of 400 MB of copies. Values are
// equal when their fields are bitwise: a looked-up value is bitwise the one stored, so results do
// not change.
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nendo::fem {

// Fields(value) gives a value's fields as a std::array<Real, N>; values are the same when those
// are bitwise (the padding of Eigen-aligned structs is left out: it is not initialised).
template <class T, class Fields>
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
  std::uint32_t index(std::size_t item) const { return index_[item]; }  // of its distinct value
  const T& distinct(std::uint32_t index) const { return distinct_[index]; }

 private:
  using Key = decltype(Fields()(std::declval<const T&>()));

  static std::uint64_t hash(const Key& key) {  // FNV-1a over the bits of the fields
    std::uint64_t h = 14695981039346656037ULL;
    for (const auto field : key) {
      std::uint64_t bits;
      std::memcpy(&bits, &field, sizeof bits);
      h = (h ^ bits) * 1099511628211ULL;
    }
    return h;
  }

  std::uint32_t find_or_insert(const T& value) {
    const Key key = Fields()(value);
    const std::uint64_t h = hash(key);
    const auto [first, last] = by_hash_.equal_range(h);
    for (auto it = first; it != last; ++it)
      if (std::memcmp(keys_[it->second].data(), key.data(), sizeof(Key)) == 0) return it->second;
    const auto index = static_cast<std::uint32_t>(distinct_.size());
    distinct_.push_back(value);
    keys_.push_back(key);
    by_hash_.emplace(h, index);
    return index;
  }

  std::vector<T> distinct_;
  std::vector<Key> keys_;
  std::vector<std::uint32_t> index_;
  std::unordered_multimap<std::uint64_t, std::uint32_t> by_hash_;
};

}  // namespace nendo::fem
