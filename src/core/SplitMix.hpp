#pragma once
// SplitMix64 (Steele, Lea, Flood 2014): a counter-based generator. Hashing a particle's id gives a
// random number that depends on the id alone, not on which rank makes it or in which order.
#include <cstdint>

namespace nendo {

inline std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace nendo
