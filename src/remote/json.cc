#include "remote/json.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <unordered_set>

namespace stacksym::remote {

const JsonValue* JsonValue::Find(std::string_view key) const {
  if (type_ != Type::kObject) return nullptr;
  for (const auto& [name, value] : object_) {
    if (name == key) return &value;
  }
  return nullptr;
}

JsonValue JsonValue::Bool(bool b) {
  JsonValue v;
  v.type_ = Type::kBool;
  v.bool_ = b;
  return v;
}

JsonValue JsonValue::Uint(uint64_t u) {
  JsonValue v;
  v.type_ = Type::kNumber;
  v.exact_uint_ = true;
  v.uint_ = u;
  v.number_ = static_cast<double>(u);
  return v;
}

JsonValue JsonValue::Number(double d) {
  JsonValue v;
  v.type_ = Type::kNumber;
  v.number_ = d;
  return v;
}

JsonValue JsonValue::String(std::string s) {
  JsonValue v;
  v.type_ = Type::kString;
  v.string_ = std::move(s);
  return v;
}

JsonValue JsonValue::Array(std::vector<JsonValue> items) {
  JsonValue v;
  v.type_ = Type::kArray;
  v.array_ = std::move(items);
  return v;
}

JsonValue JsonValue::Object(std::vector<std::pair<std::string, JsonValue>> members) {
  JsonValue v;
  v.type_ = Type::kObject;
  v.object_ = std::move(members);
  return v;
}

namespace {

// Length of the UTF-8 sequence starting at s[i] when it is valid (shortest form, no
// surrogates, at most U+10FFFF); 0 otherwise.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t b0 = byte(i);
  if (b0 < 0x80) return 1;
  auto cont = [&](size_t k) { return k < s.size() && (byte(k) & 0xC0) == 0x80; };
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    uint8_t b1 = byte(i + 1);
    if (b0 == 0xE0 && b1 < 0xA0) return 0;   // overlong
    if (b0 == 0xED && b1 >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    uint8_t b1 = byte(i + 1);
    if (b0 == 0xF0 && b1 < 0x90) return 0;   // overlong
    if (b0 == 0xF4 && b1 >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class Parser {
 public:
  Parser(std::string_view text, const JsonLimits& limits) : text_(text), limits_(limits) {}

  Result<JsonValue> ParseDocument() {
    SkipSpace();
    JsonValue v;
    if (!ParseValue(0, &v)) return Fail();
    SkipSpace();
    if (pos_ != text_.size()) {
      error_ = "unexpected data after the value";
      return Fail();
    }
    return v;
  }

 private:
  Error Fail() const {
    return MakeError(ErrorCode::kMalformed,
                     "invalid JSON at byte " + std::to_string(pos_) + ": " + error_);
  }

  bool Bad(const char* why) {
    if (error_.empty()) error_ = why;
    return false;
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return Bad("unknown literal");
    pos_ += word.size();
    return true;
  }

  bool ParseValue(size_t depth, JsonValue* out) {
    if (++values_ > limits_.max_values) return Bad("too many values");
    if (pos_ >= text_.size()) return Bad("unexpected end of input");
    switch (text_[pos_]) {
      case '{':
        return ParseObject(depth + 1, out);
      case '[':
        return ParseArray(depth + 1, out);
      case '"': {
        std::string s;
        if (!ParseString(&s)) return false;
        *out = JsonValue::String(std::move(s));
        return true;
      }
      case 't':
        *out = JsonValue::Bool(true);
        return Literal("true");
      case 'f':
        *out = JsonValue::Bool(false);
        return Literal("false");
      case 'n':
        *out = JsonValue::Null();
        return Literal("null");
      default:
        return ParseNumber(out);
    }
  }

  bool ParseObject(size_t depth, JsonValue* out) {
    if (depth > limits_.max_depth) return Bad("nested too deeply");
    ++pos_;  // '{'
    std::vector<std::pair<std::string, JsonValue>> members;
    std::unordered_set<std::string> seen;  // duplicate keys are refused, in linear time
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      *out = JsonValue::Object(std::move(members));
      return true;
    }
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"') return Bad("expected a string key");
      std::string key;
      if (!ParseString(&key)) return false;
      if (!seen.insert(key).second) return Bad("duplicate key");
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != ':') return Bad("expected ':'");
      ++pos_;
      SkipSpace();
      JsonValue value;
      if (!ParseValue(depth, &value)) return false;
      members.emplace_back(std::move(key), std::move(value));
      SkipSpace();
      if (pos_ >= text_.size()) return Bad("unexpected end of input in an object");
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (text_[pos_] == '}') {
        ++pos_;
        *out = JsonValue::Object(std::move(members));
        return true;
      }
      return Bad("expected ',' or '}'");
    }
  }

  bool ParseArray(size_t depth, JsonValue* out) {
    if (depth > limits_.max_depth) return Bad("nested too deeply");
    ++pos_;  // '['
    std::vector<JsonValue> items;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      *out = JsonValue::Array(std::move(items));
      return true;
    }
    while (true) {
      SkipSpace();
      JsonValue value;
      if (!ParseValue(depth, &value)) return false;
      items.push_back(std::move(value));
      SkipSpace();
      if (pos_ >= text_.size()) return Bad("unexpected end of input in an array");
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (text_[pos_] == ']') {
        ++pos_;
        *out = JsonValue::Array(std::move(items));
        return true;
      }
      return Bad("expected ',' or ']'");
    }
  }

  bool Hex4(uint32_t* out) {
    if (text_.size() - pos_ < 4) return Bad("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return Bad("bad hex digit in \\u escape");
      }
    }
    *out = v;
    return true;
  }

  bool ParseString(std::string* out) {
    ++pos_;  // '"'
    while (true) {
      if (pos_ >= text_.size()) return Bad("unterminated string");
      char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (static_cast<uint8_t>(c) < 0x20) return Bad("control character in a string");
      if (c != '\\') {
        size_t n = Utf8SequenceLength(text_, pos_);
        if (n == 0) return Bad("invalid UTF-8");
        out->append(text_.substr(pos_, n));
        pos_ += n;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size()) return Bad("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t cp;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return Bad("lone low surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low;
            if (text_.substr(pos_, 2) != "\\u") return Bad("high surrogate without a low one");
            pos_ += 2;
            if (!Hex4(&low)) return false;
            if (low < 0xDC00 || low > 0xDFFF) return Bad("high surrogate without a low one");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          return Bad("unknown escape");
      }
    }
  }

  bool ParseNumber(JsonValue* out) {
    size_t start = pos_;
    auto digit = [&](size_t k) { return k < text_.size() && text_[k] >= '0' && text_[k] <= '9'; };
    bool negative = false;
    if (pos_ < text_.size() && text_[pos_] == '-') {
      negative = true;
      ++pos_;
    }
    if (!digit(pos_)) return Bad("expected a value");
    if (text_[pos_] == '0') {
      ++pos_;
      if (digit(pos_)) return Bad("leading zero");
    } else {
      while (digit(pos_)) ++pos_;
    }
    size_t int_end = pos_;
    bool integer = true;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integer = false;
      ++pos_;
      if (!digit(pos_)) return Bad("expected a digit after '.'");
      while (digit(pos_)) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integer = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (!digit(pos_)) return Bad("expected a digit in the exponent");
      while (digit(pos_)) ++pos_;
    }
    if (integer && !negative) {
      uint64_t v = 0;
      bool fits = true;
      for (size_t k = start; k < int_end; ++k) {
        uint64_t d = static_cast<uint64_t>(text_[k] - '0');
        if (v > (UINT64_MAX - d) / 10) {
          fits = false;
          break;
        }
        v = v * 10 + d;
      }
      if (fits) {
        *out = JsonValue::Uint(v);
        return true;
      }
    }
    std::string copy(text_.substr(start, pos_ - start));
    *out = JsonValue::Number(std::strtod(copy.c_str(), nullptr));
    return true;
  }

  std::string_view text_;
  JsonLimits limits_;
  size_t pos_ = 0;
  size_t values_ = 0;
  std::string error_;
};

}  // namespace

Result<JsonValue> ParseJson(std::string_view text, const JsonLimits& limits) {
  return Parser(text, limits).ParseDocument();
}

void JsonWriter::Separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_value_.empty()) {
    if (has_value_.back()) out_.push_back(',');
    has_value_.back() = true;
  }
}

void JsonWriter::BeginObject() {
  Separate();
  out_.push_back('{');
  has_value_.push_back(false);
}

void JsonWriter::EndObject() {
  out_.push_back('}');
  has_value_.pop_back();
}

void JsonWriter::BeginArray() {
  Separate();
  out_.push_back('[');
  has_value_.push_back(false);
}

void JsonWriter::EndArray() {
  out_.push_back(']');
  has_value_.pop_back();
}

void JsonWriter::Key(std::string_view key) {
  String(key);
  out_.push_back(':');
  after_key_ = true;
}

void JsonWriter::String(std::string_view s) {
  Separate();
  out_.push_back('"');
  static const char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<uint8_t>(s[i]);
    if (c == '"' || c == '\\') {
      out_.push_back('\\');
      out_.push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      out_ += "\\u00";
      out_.push_back(kHex[c >> 4]);
      out_.push_back(kHex[c & 15]);
      ++i;
    } else if (size_t n = Utf8SequenceLength(s, i); n > 0) {
      out_.append(s.substr(i, n));
      i += n;
    } else {
      out_ += "\xEF\xBF\xBD";  // U+FFFD for a byte that starts no valid sequence
      ++i;
    }
  }
  out_.push_back('"');
}

void JsonWriter::Uint(uint64_t u) {
  Separate();
  out_ += std::to_string(u);
}

void JsonWriter::Bool(bool b) {
  Separate();
  out_ += b ? "true" : "false";
}

void JsonWriter::Null() {
  Separate();
  out_ += "null";
}

}  // namespace stacksym::remote
