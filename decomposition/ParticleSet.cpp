#include "decomposition/ParticleSet.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/Error.hpp"

namespace nendo {

std::size_t field_type_size(FieldType type) {
  switch (type) {
    case FieldType::Real:
      return sizeof(Real);
    case FieldType::Int32:
      return sizeof(std::int32_t);
    case FieldType::UInt64:
      return sizeof(std::uint64_t);
  }
  return 0;
}

const char* field_type_name(FieldType type) {
  switch (type) {
    case FieldType::Real:
      return "real";
    case FieldType::Int32:
      return "int32";
    case FieldType::UInt64:
      return "uint64";
  }
  return "?";
}

namespace {
template <class T>
constexpr FieldType field_type_of() {
  if constexpr (std::is_same_v<T, Real>) return FieldType::Real;
  if constexpr (std::is_same_v<T, std::int32_t>) return FieldType::Int32;
  if constexpr (std::is_same_v<T, std::uint64_t>) return FieldType::UInt64;
}
}  // namespace

ParticleField::ParticleField(std::string name, FieldType type, int components)
    : name_(std::move(name)), type_(type), components_(components) {
  switch (type) {
    case FieldType::Real:
      storage_ = std::vector<Real>();
      break;
    case FieldType::Int32:
      storage_ = std::vector<std::int32_t>();
      break;
    case FieldType::UInt64:
      storage_ = std::vector<std::uint64_t>();
      break;
  }
}

template <class T>
T* ParticleField::data() {
  if (field_type_of<T>() != type_)
    throw Error("particle field '" + name_ + "' is " + field_type_name(type_) + ", accessed as " +
                field_type_name(field_type_of<T>()));
  return std::get<std::vector<T>>(storage_).data();
}

template <class T>
const T* ParticleField::data() const {
  return const_cast<ParticleField*>(this)->data<T>();
}

template Real* ParticleField::data<Real>();
template std::int32_t* ParticleField::data<std::int32_t>();
template std::uint64_t* ParticleField::data<std::uint64_t>();
template const Real* ParticleField::data<Real>() const;
template const std::int32_t* ParticleField::data<std::int32_t>() const;
template const std::uint64_t* ParticleField::data<std::uint64_t>() const;

void* ParticleField::raw() {
  return std::visit([](auto& v) -> void* { return v.data(); }, storage_);
}

const void* ParticleField::raw() const { return const_cast<ParticleField*>(this)->raw(); }

void ParticleField::resize(std::size_t particles) {
  std::visit([&](auto& v) { v.resize(particles * components_); }, storage_);
}

void ParticleField::reserve(std::size_t particles) {
  std::visit([&](auto& v) { v.reserve(particles * components_); }, storage_);
}

std::size_t ParticleField::capacity() const {
  return std::visit([&](const auto& v) { return v.capacity() / components_; }, storage_);
}

// One component at a time through a scratch of one value per particle: the scratch is 8 bytes per
// particle instead of the field's own size (72 for a 3×3 matrix), which is what sets the peak
// memory of a redistribution; a many-component field is read once per component in exchange.
void ParticleField::reorder(const std::vector<std::size_t>& order, std::vector<unsigned char>& scratch) {
  const std::size_t n = order.size();
  const std::size_t C = static_cast<std::size_t>(components_);
  std::visit(
      [&](auto& values) {
        using T = typename std::decay_t<decltype(values)>::value_type;
        scratch.resize(n * sizeof(T));
        T* column = reinterpret_cast<T*>(scratch.data());
        for (std::size_t c = 0; c < C; ++c) {
          for (std::size_t i = 0; i < n; ++i) column[i] = values[C * order[i] + c];
          for (std::size_t i = 0; i < n; ++i) values[C * i + c] = column[i];
        }
      },
      storage_);
  resize(n);
}

void ParticleField::compact(const std::vector<bool>& keep) {
  const std::size_t bytes = bytes_per_particle();
  auto* data = static_cast<unsigned char*>(raw());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < keep.size(); ++i) {
    if (!keep[i]) continue;
    if (kept != i) std::memcpy(data + kept * bytes, data + i * bytes, bytes);
    ++kept;
  }
  resize(kept);
}

void ParticleField::pack(std::size_t particle, unsigned char* out) const {
  const std::size_t bytes = bytes_per_particle();
  std::memcpy(out, static_cast<const unsigned char*>(raw()) + particle * bytes, bytes);
}

void ParticleField::unpack(std::size_t particle, const unsigned char* in) {
  const std::size_t bytes = bytes_per_particle();
  std::memcpy(static_cast<unsigned char*>(raw()) + particle * bytes, in, bytes);
}

namespace {
std::uint64_t new_layout() {
  static std::atomic<std::uint64_t> last{0};
  return ++last;
}
}  // namespace

ParticleSet::ParticleSet(int dimension) : dimension_(dimension), layout_(new_layout()) {
  if (dimension != 2 && dimension != 3) throw Error("particle set dimension must be 2 or 3");
  add_field("id", FieldType::UInt64, 1);
  add_field("position", FieldType::Real, dimension);
}

ParticleField& ParticleSet::add_field(const std::string& name, FieldType type, int components) {
  for (auto& f : fields_) {
    if (f.name() != name) continue;
    if (f.type() != type || f.components() != components)
      throw Error("particle field '" + name + "' registered twice with different shapes");
    return f;
  }
  fields_.emplace_back(name, type, components);
  fields_.back().resize(size_);
  return fields_.back();
}

bool ParticleSet::has_field(const std::string& name) const {
  for (const auto& f : fields_)
    if (f.name() == name) return true;
  return false;
}

ParticleField& ParticleSet::field(const std::string& name) {
  for (auto& f : fields_)
    if (f.name() == name) return f;
  throw Error("no particle field '" + name + "'");
}

const ParticleField& ParticleSet::field(const std::string& name) const {
  return const_cast<ParticleSet*>(this)->field(name);
}

void ParticleSet::resize(std::size_t particles) {
  for (auto& f : fields_) f.resize(particles);
  size_ = particles;
  layout_ = new_layout();
}

void ParticleSet::reserve(std::size_t particles) {
  for (auto& f : fields_) f.reserve(particles);
}

std::size_t ParticleSet::capacity() const {
  std::size_t fewest = std::numeric_limits<std::size_t>::max();
  for (const auto& f : fields_) fewest = std::min(fewest, f.capacity());
  return fewest;
}

void ParticleSet::reorder(const std::vector<std::size_t>& order) {
  for (auto& f : fields_) f.reorder(order, scratch_);
  size_ = order.size();
  layout_ = new_layout();
}

void ParticleSet::compact(const std::vector<bool>& keep) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < size_; ++i) kept += keep[i];
  if (kept == size_) return;
  for (auto& f : fields_) f.compact(keep);
  size_ = kept;
  layout_ = new_layout();
}

// A stretch moved left overwrites only particles left of its source, which have moved already when
// the left moves go first to last; one moved right, only particles right of it: the right moves go
// last to first.
void ParticleSet::rearrange(const std::vector<Move>& moves, const std::vector<Placement>& placements,
                            std::size_t new_size) {
  if (new_size > size_) resize(new_size);
  std::size_t copies = 0;
  for (const Placement& p : placements) copies += p.record == nullptr;
  std::size_t offset = 0;  // of the field in a packed record
  for (auto& f : fields_) {
    auto* data = static_cast<unsigned char*>(f.raw());
    const std::size_t bytes = f.bytes_per_particle();
    scratch_.resize(copies * bytes);
    unsigned char* copy = scratch_.data();
    for (const Placement& p : placements) {
      if (p.record) continue;
      std::memcpy(copy, data + p.from * bytes, bytes);
      copy += bytes;
    }
    for (const Move& m : moves)
      if (m.to < m.from) std::memmove(data + m.to * bytes, data + m.from * bytes, m.count * bytes);
    for (auto m = moves.rbegin(); m != moves.rend(); ++m)
      if (m->to > m->from) std::memmove(data + m->to * bytes, data + m->from * bytes, m->count * bytes);
    copy = scratch_.data();
    for (const Placement& p : placements) {
      const unsigned char* from = p.record ? p.record + offset : copy;
      std::memcpy(data + p.to * bytes, from, bytes);
      if (!p.record) copy += bytes;
    }
    offset += bytes;
  }
  if (new_size < size_) resize(new_size);
  layout_ = new_layout();
}

std::size_t ParticleSet::bytes_per_particle() const {
  std::size_t bytes = 0;
  for (const auto& f : fields_) bytes += f.bytes_per_particle();
  return bytes;
}

void ParticleSet::pack(const std::size_t* indices, std::size_t count, std::vector<unsigned char>& out) const {
  const std::size_t stride = bytes_per_particle();
  std::size_t offset = out.size();
  out.resize(offset + count * stride);
  for (std::size_t n = 0; n < count; ++n)
    for (const auto& f : fields_) {
      f.pack(indices[n], out.data() + offset);
      offset += f.bytes_per_particle();
    }
}

const unsigned char* ParticleSet::unpack_one(std::size_t particle, const unsigned char* in) {
  for (auto& f : fields_) {
    f.unpack(particle, in);
    in += f.bytes_per_particle();
  }
  return in;
}

void ParticleSet::unpack_append(const unsigned char* in, std::size_t count) {
  const std::size_t first = size_;
  resize(size_ + count);
  for (std::size_t n = 0; n < count; ++n) in = unpack_one(first + n, in);
}

void ParticleSet::unpack_over(const unsigned char* in, const std::size_t* indices, std::size_t count) {
  for (std::size_t n = 0; n < count; ++n) in = unpack_one(indices[n], in);
  if (count > 0) layout_ = new_layout();
}

ParticleSet ParticleSet::empty_like() const {
  ParticleSet out(dimension_);
  for (const auto& f : fields_) out.add_field(f.name(), f.type(), f.components());
  return out;
}

}  // namespace nendo
