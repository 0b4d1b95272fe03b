#include "scene/KeySchema.hpp"

#include <fmt/format.h>

#include <utility>

namespace nendo {

namespace {

KeySchema make_key(std::string name, ValueType type, std::string description) {
  KeySchema key;
  key.name = std::move(name);
  key.type = type;
  key.description = std::move(description);
  return key;
}

}  // namespace

KeySchema KeySchema::integer(std::string name, std::string description) {
  return make_key(std::move(name), ValueType::Integer, std::move(description));
}

KeySchema KeySchema::real(std::string name, std::string description) {
  return make_key(std::move(name), ValueType::Real, std::move(description));
}

KeySchema KeySchema::boolean(std::string name, std::string description) {
  return make_key(std::move(name), ValueType::Boolean, std::move(description));
}

KeySchema KeySchema::text(std::string name, std::string description) {
  return make_key(std::move(name), ValueType::Text, std::move(description));
}

KeySchema KeySchema::choice(std::string name, std::vector<std::string> choices, std::string description) {
  KeySchema key = make_key(std::move(name), ValueType::Choice, std::move(description));
  key.choices = std::move(choices);
  return key;
}

KeySchema KeySchema::axis(std::string name, std::string description) {
  return make_key(std::move(name), ValueType::Axis, std::move(description));
}

KeySchema KeySchema::vector(std::string name, std::string description) {
  return make_key(std::move(name), ValueType::Vector, std::move(description));
}

KeySchema KeySchema::text_list(std::string name, std::string description) {
  return make_key(std::move(name), ValueType::TextList, std::move(description));
}

KeySchema KeySchema::section(std::string name, std::string description) {
  return make_key(std::move(name), ValueType::Section, std::move(description));
}

KeySchema KeySchema::list(std::string name, std::string description) {
  return make_key(std::move(name), ValueType::List, std::move(description));
}

KeySchema& KeySchema::measured_in(std::string unit_name) {
  unit = std::move(unit_name);
  return *this;
}

KeySchema& KeySchema::mandatory() {
  required = true;
  return *this;
}

KeySchema& KeySchema::defaults_to(std::string yaml) {
  default_value = std::move(yaml);
  return *this;
}

KeySchema& KeySchema::when_unset(std::string note) {
  unset_note = std::move(note);
  return *this;
}

KeySchema& KeySchema::above(double value) {
  lower = Bound{value, false};
  return *this;
}

KeySchema& KeySchema::at_least(double value) {
  lower = Bound{value, true};
  return *this;
}

KeySchema& KeySchema::below(double value) {
  upper = Bound{value, false};
  return *this;
}

KeySchema& KeySchema::at_most(double value) {
  upper = Bound{value, true};
  return *this;
}

KeySchema& KeySchema::one_of(std::vector<std::string> allowed) {
  choices = std::move(allowed);
  return *this;
}

KeySchema& KeySchema::existing_file() {
  names_file = true;
  return *this;
}

KeySchema& KeySchema::material_name() {
  names_material = true;
  return *this;
}

const KeySchema* find_key(const std::vector<KeySchema>& keys, const std::string& name) {
  for (const KeySchema& key : keys) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

std::vector<std::string> key_names(const std::vector<KeySchema>& keys) {
  std::vector<std::string> names;
  for (const KeySchema& key : keys) names.push_back(key.name);
  return names;
}

std::string lower_bound_text(const Bound& bound) {
  return (bound.inclusive ? ">= " : "> ") + format_number(bound.value);
}

std::string upper_bound_text(const Bound& bound) {
  return (bound.inclusive ? "<= " : "< ") + format_number(bound.value);
}

std::optional<std::string> broken_bound(const KeySchema& key, double value) {
  if (key.lower) {
    const bool inside = key.lower->inclusive ? value >= key.lower->value : value > key.lower->value;
    if (!inside) return lower_bound_text(*key.lower);
  }
  if (key.upper) {
    const bool inside = key.upper->inclusive ? value <= key.upper->value : value < key.upper->value;
    if (!inside) return upper_bound_text(*key.upper);
  }
  return std::nullopt;
}

std::string format_number(double value) { return fmt::format("{}", value); }

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string joined;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) joined += separator;
    joined += items[i];
  }
  return joined;
}

}  // namespace nendo
