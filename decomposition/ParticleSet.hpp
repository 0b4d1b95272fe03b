#pragma once
// Particles in structure-of-arrays form. Every field is registered by name with a type and a
// component count, so migration, halo exchange, output and checkpoints carry every field with no
// per-field code. Two fields always exist: "id" (uint64, globally unique) and "position" (dim reals).
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/Types.hpp"

namespace nendo {

enum class FieldType : std::uint8_t { Real, Int32, UInt64 };

std::size_t field_type_size(FieldType type);
const char* field_type_name(FieldType type);

class ParticleField {
 public:
  ParticleField(std::string name, FieldType type, int components);

  const std::string& name() const { return name_; }
  FieldType type() const { return type_; }
  int components() const { return components_; }
  std::size_t bytes_per_particle() const { return field_type_size(type_) * components_; }

  // Typed access; throws nendo::Error if T does not match type().
  template <class T>
  T* data();
  template <class T>
  const T* data() const;
  // Untyped access for I/O and packing.
  void* raw();
  const void* raw() const;

  void resize(std::size_t particles);
  void reserve(std::size_t particles);
  // Particles the storage holds without reallocating.
  std::size_t capacity() const;
  // new[i] = old[order[i]] for i < order.size(); the field ends with order.size() particles.
  // scratch (one value per particle: a component at a time) is reused between calls, so a steady
  // state allocates nothing.
  void reorder(const std::vector<std::size_t>& order, std::vector<unsigned char>& scratch);
  // Keeps the particles whose keep[i] is true, in order, moving them down in place.
  void compact(const std::vector<bool>& keep);
  void pack(std::size_t particle, unsigned char* out) const;
  void unpack(std::size_t particle, const unsigned char* in);

 private:
  using Storage = std::variant<std::vector<Real>, std::vector<std::int32_t>, std::vector<std::uint64_t>>;
  std::string name_;
  FieldType type_;
  int components_;
  Storage storage_;
};

class ParticleSet {
 public:
  explicit ParticleSet(int dimension);

  int dimension() const { return dimension_; }
  std::size_t size() const { return size_; }
  // Changes with every call below that adds, removes or reorders particles, to a value no set has
  // had before (a copy shares it), so an order computed for the set is known to still hold while
  // it is unchanged. Writing ids or positions through the pointers does not change it.
  std::uint64_t layout() const { return layout_; }

  // Registers a field (zero-filled), or returns the existing one if name, type and components
  // match; a clash is an error.
  ParticleField& add_field(const std::string& name, FieldType type, int components);
  bool has_field(const std::string& name) const;
  ParticleField& field(const std::string& name);
  const ParticleField& field(const std::string& name) const;
  std::vector<ParticleField>& fields() { return fields_; }
  const std::vector<ParticleField>& fields() const { return fields_; }

  Real* real(const std::string& name) { return field(name).data<Real>(); }
  const Real* real(const std::string& name) const { return field(name).data<Real>(); }
  std::int32_t* int32(const std::string& name) { return field(name).data<std::int32_t>(); }
  const std::int32_t* int32(const std::string& name) const { return field(name).data<std::int32_t>(); }
  std::uint64_t* uint64(const std::string& name) { return field(name).data<std::uint64_t>(); }
  const std::uint64_t* uint64(const std::string& name) const { return field(name).data<std::uint64_t>(); }

  ParticleId* ids() { return fields_[0].data<ParticleId>(); }
  const ParticleId* ids() const { return fields_[0].data<ParticleId>(); }
  Real* positions() { return fields_[1].data<Real>(); }
  const Real* positions() const { return fields_[1].data<Real>(); }

  void resize(std::size_t particles);
  // Room for `particles` in every field, so that growing to that many allocates nothing more (a
  // seeder that knows its count: vectors grown one particle at a time hold up to twice their size).
  void reserve(std::size_t particles);
  // The fewest particles any field holds without reallocating.
  std::size_t capacity() const;
  void clear() { resize(0); }
  void reorder(const std::vector<std::size_t>& order);
  // Keeps the particles whose keep[i] is true, in order.
  void compact(const std::vector<bool>& keep);
  // Particles [from, from + count) to [to, to + count).
  struct Move {
    std::size_t from, to, count;
  };
  // A particle written into slot `to`: a copy of particle `from` as it was before the moves, or,
  // where record is not null, the particle packed there by pack().
  struct Placement {
    std::size_t to, from;
    const unsigned char* record;
  };
  // Applies the moves (sorted by source, none overlapping another's destination), then writes the
  // placements into the slots the moves left, and ends with new_size particles. Field by field, so
  // the particles placed from this set wait in the reorder buffer, one field at a time.
  void rearrange(const std::vector<Move>& moves, const std::vector<Placement>& placements,
                 std::size_t new_size);

  std::size_t bytes_per_particle() const;
  // Appends the packed bytes of the given particles (all fields, registration order) to out.
  void pack(const std::size_t* indices, std::size_t count, std::vector<unsigned char>& out) const;
  // Appends count particles from bytes made by pack() on a set with the same fields.
  void unpack_append(const unsigned char* in, std::size_t count);
  // Writes count particles from bytes made by pack() over the particles at the given indices.
  void unpack_over(const unsigned char* in, const std::size_t* indices, std::size_t count);
  // A set with the same fields (names, types, components) and no particles.
  ParticleSet empty_like() const;

 private:
  // One particle's packed bytes into slot `particle`; returns the next particle's bytes.
  const unsigned char* unpack_one(std::size_t particle, const unsigned char* in);

  int dimension_;
  std::size_t size_ = 0;
  std::uint64_t layout_;
  std::vector<ParticleField> fields_;
  // Reorder buffer for one field at a time: memory is touched once and reused every step.
  std::vector<unsigned char> scratch_;
};

}  // namespace nendo
