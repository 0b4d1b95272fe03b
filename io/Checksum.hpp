#pragma once
// The checksum of a checkpoint dataset: the sum, modulo 2^64, of a hash of every 8-byte word and
// its global position. A sum does not depend on how the rows are split over ranks, so a file
// written on P ranks is verified while it is read on Q; any single changed bit changes it, and
// so does a moved row (the position is hashed with the word).
#include <algorithm>
#include <cstdint>
#include <cstring>

namespace nendo {

inline std::uint64_t mix64(std::uint64_t x) {  // the splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// rows rows of row_bytes bytes each, the first being global row first_row.
inline std::uint64_t rows_checksum(const void* data, std::size_t row_bytes, std::uint64_t first_row,
                                   std::uint64_t rows) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  const std::uint64_t words_per_row = (row_bytes + 7) / 8;
  const std::size_t total = row_bytes * rows;
  const std::size_t whole = total / 8;
  const std::uint64_t first_word = first_row * words_per_row;
  std::uint64_t sum = 0;
  if (row_bytes % 8 == 0) {
    for (std::size_t w = 0; w < whole; ++w) {
      std::uint64_t word;
      std::memcpy(&word, bytes + 8 * w, 8);
      sum += mix64(word ^ mix64(first_word + w));
    }
    return sum;
  }
  // Rows that are not whole words (int32 fields): each row's last word is zero-padded.
  for (std::uint64_t r = 0; r < rows; ++r)
    for (std::uint64_t j = 0; j < words_per_row; ++j) {
      std::uint64_t word = 0;
      const std::size_t at = row_bytes * r + 8 * j;
      std::memcpy(&word, bytes + at, std::min<std::size_t>(8, row_bytes - 8 * j));
      sum += mix64(word ^ mix64(first_word + r * words_per_row + j));
    }
  return sum;
}

}  // namespace nendo
