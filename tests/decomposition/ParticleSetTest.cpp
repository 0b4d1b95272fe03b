// ParticleSet: structure-of-arrays particles with named, typed fields; every field travels with
// reorder, compact and pack/unpack without per-field code.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "core/Error.hpp"
#include "decomposition/ParticleSet.hpp"

namespace nendo {
namespace {

// 3D particles with one field of every type, several with more than one component.
ParticleSet make_set(std::size_t n) {
  ParticleSet ps(3);
  ps.add_field("velocity", FieldType::Real, 3);
  ps.add_field("material", FieldType::Int32, 1);
  ps.add_field("cell", FieldType::Int32, 2);
  ps.add_field("parent", FieldType::UInt64, 1);
  ps.resize(n);
  for (std::size_t p = 0; p < n; ++p) {
    ps.ids()[p] = 1000 + 7 * p;
    for (int a = 0; a < 3; ++a) {
      ps.positions()[3 * p + a] = 0.25 * p - a;
      ps.real("velocity")[3 * p + a] = -1.5 * p + 10 * a;
    }
    ps.int32("material")[p] = -static_cast<std::int32_t>(p);
    ps.int32("cell")[2 * p] = static_cast<std::int32_t>(p) * 100;
    ps.int32("cell")[2 * p + 1] = std::numeric_limits<std::int32_t>::min() + static_cast<std::int32_t>(p);
    ps.uint64("parent")[p] = std::numeric_limits<std::uint64_t>::max() - p;
  }
  return ps;
}

// Particle i of a equals particle j of b in every field, bit for bit.
void expect_same_particle(const ParticleSet& a, std::size_t i, const ParticleSet& b, std::size_t j) {
  ASSERT_EQ(a.fields().size(), b.fields().size());
  for (std::size_t f = 0; f < a.fields().size(); ++f) {
    const ParticleField& fa = a.fields()[f];
    const ParticleField& fb = b.fields()[f];
    ASSERT_EQ(fa.name(), fb.name());
    const std::size_t bytes = fa.bytes_per_particle();
    EXPECT_EQ(std::memcmp(static_cast<const unsigned char*>(fa.raw()) + i * bytes,
                          static_cast<const unsigned char*>(fb.raw()) + j * bytes, bytes),
              0)
        << "field " << fa.name() << ": particle " << i << " vs " << j;
  }
}

TEST(ParticleSet, StartsWithIdAndPosition) {
  for (int d : {2, 3}) {
    const ParticleSet ps(d);
    EXPECT_EQ(ps.dimension(), d);
    EXPECT_EQ(ps.size(), 0u);
    ASSERT_EQ(ps.fields().size(), 2u);
    EXPECT_EQ(ps.fields()[0].name(), "id");
    EXPECT_EQ(ps.fields()[0].type(), FieldType::UInt64);
    EXPECT_EQ(ps.fields()[0].components(), 1);
    EXPECT_EQ(ps.fields()[1].name(), "position");
    EXPECT_EQ(ps.fields()[1].type(), FieldType::Real);
    EXPECT_EQ(ps.fields()[1].components(), d);
    EXPECT_EQ(ps.bytes_per_particle(), 8u + 8u * d);
  }
  EXPECT_THROW(ParticleSet(1), Error);
  EXPECT_THROW(ParticleSet(4), Error);
}

TEST(ParticleSet, FieldSizesFollowTypeAndComponents) {
  EXPECT_EQ(field_type_size(FieldType::Real), 8u);
  EXPECT_EQ(field_type_size(FieldType::Int32), 4u);
  EXPECT_EQ(field_type_size(FieldType::UInt64), 8u);
  const ParticleSet ps = make_set(0);
  EXPECT_EQ(ps.field("velocity").bytes_per_particle(), 24u);
  EXPECT_EQ(ps.field("cell").bytes_per_particle(), 8u);
  // id 8 + position 24 + velocity 24 + material 4 + cell 8 + parent 8
  EXPECT_EQ(ps.bytes_per_particle(), 76u);
}

TEST(ParticleSet, AddingAnExistingFieldAgainReturnsItUnchanged) {
  ParticleSet ps = make_set(5);
  const std::size_t fields = ps.fields().size();
  ParticleField& again = ps.add_field("velocity", FieldType::Real, 3);
  EXPECT_EQ(&again, &ps.field("velocity"));
  EXPECT_EQ(ps.fields().size(), fields);
  EXPECT_EQ(ps.real("velocity")[3 * 4 + 2], -1.5 * 4 + 20);  // values kept
  EXPECT_EQ(&ps.add_field("position", FieldType::Real, 3), &ps.field("position"));
}

TEST(ParticleSet, AddingAFieldWithAnotherShapeIsAnError) {
  ParticleSet ps = make_set(2);
  EXPECT_THROW(ps.add_field("velocity", FieldType::Real, 2), Error);
  EXPECT_THROW(ps.add_field("velocity", FieldType::Int32, 3), Error);
  EXPECT_THROW(ps.add_field("id", FieldType::Int32, 1), Error);
  EXPECT_THROW(ps.add_field("position", FieldType::Real, 2), Error);
  EXPECT_EQ(ps.fields().size(), 6u);
}

TEST(ParticleSet, FieldAddedLaterIsZeroFilledForExistingParticles) {
  ParticleSet ps = make_set(4);
  ps.add_field("Jp", FieldType::Real, 1);
  ps.add_field("flags", FieldType::Int32, 3);
  ps.add_field("origin", FieldType::UInt64, 2);
  for (std::size_t p = 0; p < 4; ++p) {
    EXPECT_EQ(ps.real("Jp")[p], 0.0);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(ps.int32("flags")[3 * p + k], 0);
    for (int k = 0; k < 2; ++k) EXPECT_EQ(ps.uint64("origin")[2 * p + k], 0u);
  }
  ps.resize(6);  // growing zero-fills too
  EXPECT_EQ(ps.real("velocity")[3 * 5], 0.0);
  EXPECT_EQ(ps.ids()[3], 1000u + 21u);
}

TEST(ParticleSet, TypedAccessWithTheWrongTypeThrows) {
  ParticleSet ps = make_set(3);
  EXPECT_THROW(ps.int32("velocity"), Error);
  EXPECT_THROW(ps.uint64("velocity"), Error);
  EXPECT_THROW(ps.real("material"), Error);
  EXPECT_THROW(ps.uint64("material"), Error);
  EXPECT_THROW(ps.real("id"), Error);
  EXPECT_THROW(ps.int32("parent"), Error);
  EXPECT_THROW(ps.field("velocity").data<std::uint64_t>(), Error);
  const ParticleSet& constant = ps;
  EXPECT_THROW(constant.field("position").data<std::int32_t>(), Error);
  EXPECT_THROW(ps.field("no such field"), Error);
  EXPECT_THROW(constant.real("no such field"), Error);
  EXPECT_FALSE(ps.has_field("no such field"));
  EXPECT_TRUE(ps.has_field("parent"));
  EXPECT_NO_THROW(ps.real("velocity"));
  EXPECT_NO_THROW(ps.int32("cell"));
  EXPECT_NO_THROW(ps.uint64("id"));
}

// new[i] = old[order[i]]: a permutation, a subset or repetitions, in every field at once.
TEST(ParticleSet, ReorderMovesEveryField) {
  const ParticleSet original = make_set(5);
  ParticleSet ps = original;
  const std::vector<std::size_t> order{4, 0, 3, 3, 1};
  ps.reorder(order);
  ASSERT_EQ(ps.size(), 5u);
  for (std::size_t i = 0; i < order.size(); ++i) expect_same_particle(ps, i, original, order[i]);
  EXPECT_EQ(ps.ids()[0], 1028u);
  EXPECT_EQ(ps.int32("cell")[2 * 2 + 1], std::numeric_limits<std::int32_t>::min() + 3);

  ps = original;
  ps.reorder({2, 1});  // shrinks
  ASSERT_EQ(ps.size(), 2u);
  expect_same_particle(ps, 0, original, 2);
  expect_same_particle(ps, 1, original, 1);
  EXPECT_EQ(ps.field("velocity").components(), 3);
}

// A redistribution's peak memory: the scratch of a reorder holds one value per particle, not a
// whole particle's field (a 3×3 matrix is 72 bytes; the old gather-and-copy-back held all of it).
TEST(ParticleSet, ReorderOfAMatrixFieldNeedsOneValuePerParticleOfScratch) {
  ParticleField F("F", FieldType::Real, 9);
  const std::size_t n = 1000;
  F.resize(n);
  Real* values = F.data<Real>();
  for (std::size_t i = 0; i < 9 * n; ++i) values[i] = Real(i);
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = (i * 389) % n;  // a permutation (389 is prime)
  std::vector<unsigned char> scratch;
  F.reorder(order, scratch);
  EXPECT_LE(scratch.size(), n * sizeof(Real));
  const Real* moved = F.data<Real>();
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < 9; ++c) ASSERT_EQ(moved[9 * i + c], Real(9 * order[i] + c)) << i << " " << c;
}

TEST(ParticleSet, CompactKeepsTheChosenParticlesInOrder) {
  const ParticleSet original = make_set(6);
  ParticleSet ps = original;
  ps.compact({true, false, false, true, true, false});
  ASSERT_EQ(ps.size(), 3u);
  expect_same_particle(ps, 0, original, 0);
  expect_same_particle(ps, 1, original, 3);
  expect_same_particle(ps, 2, original, 4);

  ps = original;
  ps.compact(std::vector<bool>(6, true));
  ASSERT_EQ(ps.size(), 6u);
  for (std::size_t p = 0; p < 6; ++p) expect_same_particle(ps, p, original, p);

  ps.compact(std::vector<bool>(6, false));
  EXPECT_EQ(ps.size(), 0u);
  EXPECT_EQ(ps.fields().size(), original.fields().size());
}

TEST(ParticleSet, PackThenUnpackAppendRoundTripsEveryFieldType) {
  const ParticleSet source = make_set(5);
  const std::size_t picks[] = {3, 0, 4, 4};
  std::vector<unsigned char> bytes{0xAB};  // pack appends after what is there
  source.pack(picks, 4, bytes);
  ASSERT_EQ(bytes.size(), 1 + 4 * source.bytes_per_particle());
  EXPECT_EQ(bytes[0], 0xAB);

  ParticleSet target = source.empty_like();
  target.unpack_append(bytes.data() + 1, 4);
  ASSERT_EQ(target.size(), 4u);
  for (std::size_t n = 0; n < 4; ++n) expect_same_particle(target, n, source, picks[n]);
  EXPECT_EQ(target.uint64("parent")[0], std::numeric_limits<std::uint64_t>::max() - 3);
  EXPECT_EQ(target.int32("material")[2], -4);
  EXPECT_EQ(target.real("velocity")[3 * 1 + 1], 10.0);

  // Appending keeps the particles already there.
  ParticleSet more = make_set(2);
  more.unpack_append(bytes.data() + 1, 4);
  ASSERT_EQ(more.size(), 6u);
  const ParticleSet two = make_set(2);
  expect_same_particle(more, 0, two, 0);
  expect_same_particle(more, 1, two, 1);
  for (std::size_t n = 0; n < 4; ++n) expect_same_particle(more, 2 + n, source, picks[n]);

  // Nothing packed, nothing appended.
  std::vector<unsigned char> none;
  source.pack(picks, 0, none);
  EXPECT_TRUE(none.empty());
  more.unpack_append(none.data(), 0);
  EXPECT_EQ(more.size(), 6u);
}

TEST(ParticleSet, PackLaysOutFieldsInRegistrationOrder) {
  const ParticleSet ps = make_set(2);
  const std::size_t one = 1;
  std::vector<unsigned char> bytes;
  ps.pack(&one, 1, bytes);
  std::uint64_t id = 0;
  double x[3];
  std::memcpy(&id, bytes.data(), 8);
  std::memcpy(x, bytes.data() + 8, 24);
  EXPECT_EQ(id, 1007u);
  EXPECT_EQ(x[0], 0.25);
  EXPECT_EQ(x[2], 0.25 - 2);
  std::uint64_t parent = 0;
  std::memcpy(&parent, bytes.data() + 68, 8);
  EXPECT_EQ(parent, std::numeric_limits<std::uint64_t>::max() - 1);
}

TEST(ParticleSet, EmptyLikeHasTheSameFieldsAndNoParticles) {
  for (int d : {2, 3}) {
    ParticleSet ps(d);
    ps.add_field("mass", FieldType::Real, 1);
    ps.add_field("material", FieldType::Int32, 1);
    ps.add_field("F", FieldType::Real, d * d);
    ps.add_field("origin", FieldType::UInt64, 2);
    ps.resize(9);
    const ParticleSet empty = ps.empty_like();
    EXPECT_EQ(empty.dimension(), d);
    EXPECT_EQ(empty.size(), 0u);
    EXPECT_EQ(empty.bytes_per_particle(), ps.bytes_per_particle());
    ASSERT_EQ(empty.fields().size(), ps.fields().size());
    for (std::size_t f = 0; f < ps.fields().size(); ++f) {
      EXPECT_EQ(empty.fields()[f].name(), ps.fields()[f].name());
      EXPECT_EQ(empty.fields()[f].type(), ps.fields()[f].type());
      EXPECT_EQ(empty.fields()[f].components(), ps.fields()[f].components());
    }
  }
}

}  // namespace
}  // namespace nendo
