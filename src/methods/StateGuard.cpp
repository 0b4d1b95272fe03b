#include "methods/StateGuard.hpp"

#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "methods/Method.hpp"

namespace nendo {
namespace {

// NaN and ±inf are the doubles whose exponent bits are all set: an integer test that vectorises,
// so that the slow search below runs only when a value is not finite.
bool all_finite(const Real* values, std::size_t count) {
  constexpr std::uint64_t exponent = 0x7ff0000000000000ull;
  std::uint64_t bad = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t bits;
    std::memcpy(&bits, values + i, sizeof bits);
    bad |= static_cast<std::uint64_t>((bits & exponent) == exponent);
  }
  return bad == 0;
}

}  // namespace

void require_finite_state(const Space& space, long step) {
  const ParticleSet& ps = space.particles();
  const std::vector<ParticleField>& fields = ps.fields();
  ParticleId bad_id = std::numeric_limits<ParticleId>::max();
  int bad_field = -1;
  for (int f = 0; f < static_cast<int>(fields.size()); ++f) {
    const ParticleField& field = fields[f];
    if (field.type() != FieldType::Real) continue;
    const Real* values = static_cast<const Real*>(field.raw());
    const int c = field.components();
    if (all_finite(values, ps.size() * c)) continue;
    for (std::size_t p = 0; p < ps.size(); ++p)
      for (int k = 0; k < c; ++k)
        if (!std::isfinite(values[p * c + k]) && ps.ids()[p] < bad_id) bad_id = ps.ids()[p], bad_field = f;
  }
  ParticleId first = 0;
  MPI_Allreduce(&bad_id, &first, 1, MPI_UINT64_T, MPI_MIN, space.comm());
  if (first == std::numeric_limits<ParticleId>::max()) return;
  // Fields in order and ids strictly lower: bad_field is the first bad field of the lowest id.
  int field = bad_id == first ? bad_field : std::numeric_limits<int>::max(), lowest = 0;
  MPI_Allreduce(&field, &lowest, 1, MPI_INT, MPI_MIN, space.comm());
  throw ParticleStateError(step, first, "non-finite " + fields[lowest].name());
}

}  // namespace nendo
