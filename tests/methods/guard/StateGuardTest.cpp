// require_finite_state (methods/StateGuard.hpp), the non-finite guard of the methods that do not
// check their own state: every rank throws the same error, naming the lowest particle id with a
// NaN or inf and that particle's first such field; finite states pass. 1-4 ranks, rank 0 empty.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "core/Mpi.hpp"
#include "methods/Method.hpp"
#include "methods/StateGuard.hpp"

namespace nendo {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// 100 particles on every rank but rank 0 (when there are several), in a 1 m cube, finite fields.
std::unique_ptr<Space> make_space(MPI_Comm comm) {
  const int me = mpi::rank(comm), ranks = mpi::size(comm);
  ParticleSet ps(3);
  ps.add_field("velocity", FieldType::Real, 3);
  ps.add_field("material", FieldType::Int32, 1);
  ps.add_field("F", FieldType::Real, 9);
  ps.resize(me == 0 && ranks > 1 ? 0 : 100);
  for (std::size_t p = 0; p < ps.size(); ++p) {
    ps.ids()[p] = 1000 * me + p;
    for (int a = 0; a < 3; ++a) ps.positions()[3 * p + a] = 0.01 * ((p * (a + 3)) % 97);
    for (int k = 0; k < 3; ++k) ps.real("velocity")[3 * p + k] = 0.5 * k;
    for (int k = 0; k < 9; ++k) ps.real("F")[9 * p + k] = k % 4 == 0 ? 1.0 : 0.0;
  }
  BlockGeometry g;
  g.dx = 0.05;
  auto space = std::make_unique<Space>(comm, g, std::move(ps));
  space->distribute();
  return space;
}

// Sets field[component] of the particle with `id`, wherever it lives.
void set_value(Space& space, ParticleId id, const char* field, int component, double value) {
  ParticleSet& ps = space.particles();
  const int c = ps.field(field).components();
  for (std::size_t p = 0; p < ps.size(); ++p)
    if (ps.ids()[p] == id) ps.real(field)[c * p + component] = value;
}

std::string failure(const Space& space, long step) {
  try {
    require_finite_state(space, step);
  } catch (const ParticleStateError& e) {
    EXPECT_EQ(e.step(), step);
    return e.what();
  }
  return "";
}

TEST(StateGuard, AFiniteStatePasses) { EXPECT_EQ(failure(*make_space(MPI_COMM_WORLD), 7), ""); }

TEST(StateGuard, NamesTheLowestIdAndItsFirstNonFiniteField) {
  const int last = mpi::size(MPI_COMM_WORLD) - 1;
  const std::unique_ptr<Space> space = make_space(MPI_COMM_WORLD);
  const ParticleId low = 1000 * last + 3, high = 1000 * last + 50;
  set_value(*space, high, "velocity", 1, kInf);  // a higher id, an earlier field
  set_value(*space, low, "F", 8, kNaN);
  EXPECT_EQ(failure(*space, 12), "step 12: particle " + std::to_string(low) + " has a non-finite F");
  set_value(*space, low, "velocity", 0, -kInf);  // now its first bad field is velocity
  EXPECT_EQ(failure(*space, 13), "step 13: particle " + std::to_string(low) + " has a non-finite velocity");
}

TEST(StateGuard, EveryRankThrowsTheSameWhereverTheParticleLives) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const std::unique_ptr<Space> space = make_space(comm);
  const ParticleId id = 1000 * (mpi::size(comm) - 1) + 99;
  set_value(*space, id, "F", 0, kNaN);
  EXPECT_EQ(failure(*space, 1),
            "step 1: particle " + std::to_string(id) + " has a non-finite F");  // on every rank
}

}  // namespace
}  // namespace nendo
