#pragma once
// The description of one scene key: what the loader checks and what docs/scene-reference.md says.
#include <optional>
#include <string>
#include <vector>

namespace nendo {

enum class ValueType {
  Integer,
  Real,
  Boolean,
  Text,
  Choice,    // one of `choices`
  Axis,      // x | y | z or 0 | 1 | 2
  Vector,    // `dimension` numbers
  TextList,  // strings, each one of `choices` when choices are given
  Section,   // a map read by its own section reader
  List,      // a list read by its own section reader
};

struct Bound {
  double value = 0;
  bool inclusive = false;
};

struct KeySchema {
  std::string name;
  ValueType type = ValueType::Real;
  std::string description;
  std::string unit;
  bool required = false;
  std::string default_value;  // YAML text used when the key is absent; for a vector, one number for all
  std::string unset_note;     // what an absent key without a default means
  std::optional<Bound> lower;
  std::optional<Bound> upper;
  std::vector<std::string> choices;
  bool names_file = false;      // Text: a path from the scene file's directory that must exist
  bool names_material = false;  // Text: a material the scene defines, of a model its method takes

  static KeySchema integer(std::string name, std::string description);
  static KeySchema real(std::string name, std::string description);
  static KeySchema boolean(std::string name, std::string description);
  static KeySchema text(std::string name, std::string description);
  static KeySchema choice(std::string name, std::vector<std::string> choices, std::string description);
  static KeySchema axis(std::string name, std::string description);
  static KeySchema vector(std::string name, std::string description);
  static KeySchema text_list(std::string name, std::string description);
  static KeySchema section(std::string name, std::string description);
  static KeySchema list(std::string name, std::string description);

  KeySchema& measured_in(std::string unit_name);
  KeySchema& mandatory();
  KeySchema& defaults_to(std::string yaml);
  KeySchema& when_unset(std::string note);
  KeySchema& above(double value);
  KeySchema& at_least(double value);
  KeySchema& below(double value);
  KeySchema& at_most(double value);
  KeySchema& one_of(std::vector<std::string> allowed);
  KeySchema& existing_file();
  KeySchema& material_name();
};

const KeySchema* find_key(const std::vector<KeySchema>& keys, const std::string& name);
std::vector<std::string> key_names(const std::vector<KeySchema>& keys);

// "> 0", ">= 1", "< 0.5", "<= 16"
std::string lower_bound_text(const Bound& bound);
std::string upper_bound_text(const Bound& bound);
// The bound `value` breaks, as lower_bound_text/upper_bound_text, or nothing.
std::optional<std::string> broken_bound(const KeySchema& key, double value);

std::string format_number(double value);
std::string join(const std::vector<std::string>& items, const std::string& separator);

}  // namespace nendo
