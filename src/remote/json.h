// A small strict JSON reader and writer for the symbolization API (RFC 8259).
//
// The reader takes untrusted bytes (HTTP bodies): it accepts exactly the RFC grammar — no
// comments, trailing commas, NaN or leading zeros — checks UTF-8, rejects duplicate object
// keys and nesting deeper than a limit, and keeps integers exact up to 2^64-1.
//
//   Result<JsonValue> v = ParseJson(body);
//   if (!v) return v.error();                      // message says what and at which byte
//   const JsonValue* ids = v->Find("modules");
//
//   JsonWriter w;
//   w.BeginObject(); w.Key("ok"); w.Bool(true); w.EndObject();
//   std::string text = std::move(w).Take();
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stacksym/result.h"

namespace stacksym::remote {

class JsonValue {
 public:
  enum class Type : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }
  // A number written as a non-negative integer that fits 64 bits (no fraction, no exponent).
  bool is_uint64() const { return type_ == Type::kNumber && exact_uint_; }

  bool boolean() const { return bool_; }
  uint64_t uint64() const { return uint_; }
  double number() const { return number_; }
  const std::string& string() const { return string_; }
  const std::vector<JsonValue>& array() const { return array_; }
  const std::vector<std::pair<std::string, JsonValue>>& object() const { return object_; }
  // The member named `key` of an object; nullptr when absent or not an object.
  const JsonValue* Find(std::string_view key) const;

  static JsonValue Null() { return JsonValue(); }
  static JsonValue Bool(bool b);
  static JsonValue Uint(uint64_t u);
  static JsonValue Number(double d);
  static JsonValue String(std::string s);
  static JsonValue Array(std::vector<JsonValue> items);
  static JsonValue Object(std::vector<std::pair<std::string, JsonValue>> members);

 private:
  Type type_ = Type::kNull;
  bool bool_ = false;
  bool exact_uint_ = false;
  uint64_t uint_ = 0;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> array_;
  std::vector<std::pair<std::string, JsonValue>> object_;
};

struct JsonLimits {
  size_t max_depth = 32;  // nested arrays/objects
  size_t max_values = size_t{1} << 22;
};

// The one JSON value `text` holds (surrounding whitespace allowed). Error kMalformed with the
// byte offset of the first problem.
Result<JsonValue> ParseJson(std::string_view text, const JsonLimits& limits = {});

// Appends JSON text; the caller pairs Begin/End and Key/value calls correctly. Strings are
// escaped; bytes that are not valid UTF-8 become U+FFFD so the output always parses.
class JsonWriter {
 public:
  void BeginObject();
  void EndObject();
  void BeginArray();
  void EndArray();
  void Key(std::string_view key);
  void String(std::string_view s);
  void Uint(uint64_t u);
  void Bool(bool b);
  void Null();
  const std::string& text() const { return out_; }
  std::string Take() && { return std::move(out_); }

 private:
  void Separate();
  std::string out_;
  // Per open container: whether a value was written (a comma is due before the next one).
  std::vector<bool> has_value_;
  bool after_key_ = false;
};

}  // namespace stacksym::remote
