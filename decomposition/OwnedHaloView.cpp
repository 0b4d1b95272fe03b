#include "decomposition/OwnedHaloView.hpp"

#include <algorithm>

#include "core/Error.hpp"

namespace nendo {
namespace {

// count particles' values, `components` each, to `width` each from `to` on.
template <class T>
void copy_padded(const T* from, std::size_t count, int components, int width, T* to) {
  if (components == width) {
    std::copy_n(from, count * width, to);
    return;
  }
  for (std::size_t p = 0; p < count; ++p) {
    std::copy_n(from + components * p, components, to + width * p);
    std::fill_n(to + width * p + components, width - components, T(0));
  }
}

}  // namespace

void OwnedHaloView::assign(const ParticleSet& owned, const ParticleSet& halo) {
  owned_set_ = &owned;
  halo_set_ = &halo;
  owned_ = owned.size();
  ids_.resize(owned.size() + halo.size());
  std::copy_n(owned.ids(), owned.size(), ids_.begin());
  std::copy_n(halo.ids(), halo.size(), ids_.begin() + owned.size());
  indexed_ = false;
}

template <class T>
void OwnedHaloView::gather(const std::string& field, std::vector<T>& out, int width) const {
  require_unchanged();
  const ParticleField& owned = owned_set_->field(field);
  const int components = owned.components();
  if (width == 0) width = components;
  if (width < components)
    throw Error("OwnedHaloView: field '" + field + "' has " + std::to_string(components) +
                " components, more than the " + std::to_string(width) + " asked for");
  out.resize(static_cast<std::size_t>(width) * size());
  copy_padded(owned.data<T>(), owned_, components, width, out.data());
  copy_padded(halo_set_->field(field).data<T>(), size() - owned_, components, width,
              out.data() + static_cast<std::size_t>(width) * owned_);
}

template void OwnedHaloView::gather(const std::string&, std::vector<Real>&, int) const;
template void OwnedHaloView::gather(const std::string&, std::vector<std::int32_t>&, int) const;
template void OwnedHaloView::gather(const std::string&, std::vector<std::uint64_t>&, int) const;

std::uint32_t OwnedHaloView::find(ParticleId id) {
  if (!indexed_) index_.build(ids_.data(), ids_.size());
  indexed_ = true;
  return index_.find(id);
}

// A gather after particles were added, removed or exchanged would mix two layouts.
void OwnedHaloView::require_unchanged() const {
  if (owned_set_ == nullptr || owned_set_->size() != owned_ || halo_set_->size() != size() - owned_)
    throw Error("OwnedHaloView: the particles changed since assign() (or it was never called)");
}

}  // namespace nendo
