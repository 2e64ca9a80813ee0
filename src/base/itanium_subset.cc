#include "base/itanium_subset.h"

#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

namespace stacksym {
namespace {

// libiberty gives up on some names whose templates nest this deep (on libceph-common, 12 of
// the 36 nested 19 or more deep): those are left to it, so that the text stays its own.
constexpr int kMaxTemplateDepth = 18;
// Types inside types (pointers to pointers, ...): bounds the recursion of parsing and printing.
constexpr int kMaxTypeDepth = 256;
// Parameters of a function, arguments of a template: libiberty gives up past about a thousand
// (real names have a handful).
constexpr size_t kMaxListLength = 256;

const char* BuiltinType(char c) {
  switch (c) {
    case 'v':
      return "void";
    case 'w':
      return "wchar_t";
    case 'b':
      return "bool";
    case 'c':
      return "char";
    case 'a':
      return "signed char";
    case 'h':
      return "unsigned char";
    case 's':
      return "short";
    case 't':
      return "unsigned short";
    case 'i':
      return "int";
    case 'j':
      return "unsigned int";
    case 'l':
      return "long";
    case 'm':
      return "unsigned long";
    case 'x':
      return "long long";
    case 'y':
      return "unsigned long long";
    case 'n':
      return "__int128";
    case 'o':
      return "unsigned __int128";
    case 'f':
      return "float";
    case 'd':
      return "double";
    case 'e':
      return "long double";
    case 'g':
      return "__float128";
    case 'z':
      return "...";
    default:
      return nullptr;
  }
}

// Operators printed as libiberty prints them when no template arguments follow.
const char* OperatorName(char a, char b) {
  struct Operator {
    char code[2];
    const char* text;
  };
  static constexpr Operator kOperators[] = {
      {{'n', 'w'}, "operator new"},    {{'n', 'a'}, "operator new[]"},
      {{'d', 'l'}, "operator delete"}, {{'d', 'a'}, "operator delete[]"},
      {{'p', 's'}, "operator+"},       {{'n', 'g'}, "operator-"},
      {{'a', 'd'}, "operator&"},       {{'d', 'e'}, "operator*"},
      {{'c', 'o'}, "operator~"},       {{'p', 'l'}, "operator+"},
      {{'m', 'i'}, "operator-"},       {{'m', 'l'}, "operator*"},
      {{'d', 'v'}, "operator/"},       {{'r', 'm'}, "operator%"},
      {{'a', 'n'}, "operator&"},       {{'o', 'r'}, "operator|"},
      {{'e', 'o'}, "operator^"},       {{'a', 'S'}, "operator="},
      {{'p', 'L'}, "operator+="},      {{'m', 'I'}, "operator-="},
      {{'m', 'L'}, "operator*="},      {{'d', 'V'}, "operator/="},
      {{'r', 'M'}, "operator%="},      {{'a', 'N'}, "operator&="},
      {{'o', 'R'}, "operator|="},      {{'e', 'O'}, "operator^="},
      {{'l', 's'}, "operator<<"},      {{'r', 's'}, "operator>>"},
      {{'l', 'S'}, "operator<<="},     {{'r', 'S'}, "operator>>="},
      {{'e', 'q'}, "operator=="},      {{'n', 'e'}, "operator!="},
      {{'l', 't'}, "operator<"},       {{'g', 't'}, "operator>"},
      {{'l', 'e'}, "operator<="},      {{'g', 'e'}, "operator>="},
      {{'n', 't'}, "operator!"},       {{'a', 'a'}, "operator&&"},
      {{'o', 'o'}, "operator||"},      {{'p', 'p'}, "operator++"},
      {{'m', 'm'}, "operator--"},      {{'c', 'm'}, "operator,"},
      {{'p', 'm'}, "operator->*"},     {{'p', 't'}, "operator->"},
      {{'c', 'l'}, "operator()"},      {{'i', 'x'}, "operator[]"},
  };
  for (const Operator& o : kOperators) {
    if (o.code[0] == a && o.code[1] == b) return o.text;
  }
  return nullptr;
}

// A parsed name as a tree whose shared nodes are the substitutions. Each node's text is
// printed once; a later reference copies it from the output.
struct Node {
  enum Kind : uint8_t { kText, kNested, kTemplate, kPointer, kRef, kRvalueRef, kConst };
  Kind kind = kText;
  uint32_t left = 0;   // kNested: the prefix; kTemplate: the name; modifiers: the type
  uint32_t right = 0;  // kNested: the last component; kTemplate: its argument list
  std::string_view text;
  uint32_t printed_at = 0, printed_size = 0;
  bool printed = false;
};

class Parser {
 public:
  void Reset(std::string_view mangled) {
    in_ = mangled;
    at_ = 0;
    ok_ = true;
    depth_ = 0;
    type_depth_ = 0;
    nodes_.clear();
    substitutions_.clear();
    lists_.clear();
    pending_.clear();
    texts_.clear();
    function_args_ = -1;
    out_.clear();
  }
  std::optional<std::string> Demangle();

 private:
  char Peek(size_t ahead = 0) const { return at_ + ahead < in_.size() ? in_[at_ + ahead] : '\0'; }
  bool Eat(char c) {
    if (Peek() != c) return false;
    ++at_;
    return true;
  }
  uint32_t Fail() {
    ok_ = false;
    return 0;
  }
  uint32_t Add(Node::Kind kind, uint32_t left = 0, uint32_t right = 0) {
    Node n;
    n.kind = kind;
    n.left = left;
    n.right = right;
    nodes_.push_back(n);
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  uint32_t Text(std::string_view text) {
    uint32_t id = Add(Node::kText);
    nodes_[id].text = text;
    return id;
  }
  uint32_t OwnedText(std::string text) { return Text(texts_.emplace_back(std::move(text))); }

  bool Number(size_t* value);
  bool SeqId(size_t* index);
  uint32_t SourceName(std::string_view* identifier);
  uint32_t TemplateArgs();
  uint32_t Type();
  uint32_t NestedName(std::string_view* last_identifier, bool* ends_in_template, bool* ctor_or_dtor,
                      bool* const_member);
  uint32_t UnqualifiedName(std::string_view* last_identifier, bool* ctor_or_dtor);
  uint32_t Reference(char code, uint32_t inner);
  void Print(uint32_t id);

  std::string_view in_;
  size_t at_ = 0;
  bool ok_ = true;
  int depth_ = 0;       // templates
  int type_depth_ = 0;  // types
  std::vector<Node> nodes_;
  std::vector<uint32_t> substitutions_;
  std::vector<uint32_t> lists_;     // argument lists: count, then the nodes
  std::vector<uint32_t> pending_;   // arguments being parsed (nested lists stack up)
  std::deque<std::string> texts_;   // literals and destructor names (stable addresses)
  int64_t function_args_ = -1;      // the function template's argument list in lists_
  bool last_was_operator_ = false;  // the last unqualified name read
  std::string out_;
};

bool Parser::Number(size_t* value) {
  if (Peek() < '0' || Peek() > '9') return false;
  size_t v = 0;
  while (Peek() >= '0' && Peek() <= '9') {
    v = v * 10 + static_cast<size_t>(in_[at_++] - '0');
    if (v > in_.size()) return false;
  }
  *value = v;
  return true;
}

// The index after 'S': "_" is 0, "<base 36>_" is that plus 1.
bool Parser::SeqId(size_t* index) {
  if (Eat('_')) {
    *index = 0;
    return true;
  }
  size_t v = 0, digits = 0;
  for (;; ++at_, ++digits) {
    char c = Peek();
    if (c >= '0' && c <= '9') {
      v = v * 36 + static_cast<size_t>(c - '0');
    } else if (c >= 'A' && c <= 'Z') {
      v = v * 36 + static_cast<size_t>(c - 'A' + 10);
    } else {
      break;
    }
    if (v > in_.size()) return false;
  }
  if (digits == 0 || !Eat('_')) return false;
  *index = v + 1;
  return true;
}

uint32_t Parser::SourceName(std::string_view* identifier) {
  size_t length;
  if (!Number(&length) || length == 0 || length > in_.size() - at_) return Fail();
  std::string_view id = in_.substr(at_, length);
  at_ += length;
  for (char c : id) {  // what compilers write (libiberty takes any byte, then fails elsewhere)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '$')) {
      return Fail();
    }
  }
  if (id.size() >= 10 && id.substr(0, 8) == "_GLOBAL_" &&
      (id[8] == '.' || id[8] == '_' || id[8] == '$') && id[9] == 'N') {
    *identifier = {};  // no constructor is named after it
    return Text("(anonymous namespace)");
  }
  *identifier = id;
  return Text(id);
}

uint32_t Parser::TemplateArgs() {
  if (!Eat('I') || ++depth_ > kMaxTemplateDepth) return Fail();
  const size_t base = pending_.size();
  while (ok_ && !Eat('E')) {
    if (at_ >= in_.size()) return Fail();
    uint32_t arg;
    if (Eat('L')) {
      char type = Peek();
      const char* suffix = nullptr;
      switch (type) {
        case 'i':
          suffix = "";
          break;
        case 'j':
          suffix = "u";
          break;
        case 'l':
          suffix = "l";
          break;
        case 'm':
          suffix = "ul";
          break;
        case 'x':
          suffix = "ll";
          break;
        case 'y':
          suffix = "ull";
          break;
        case 'b':
          break;
        default:
          return Fail();
      }
      ++at_;
      bool negative = Eat('n');
      size_t from = at_, value;
      if (!Number(&value)) return Fail();
      std::string_view digits = in_.substr(from, at_ - from);
      if (!Eat('E')) return Fail();
      if (type == 'b') {
        if (negative || (digits != "0" && digits != "1")) return Fail();
        arg = Text(digits == "1" ? "true" : "false");
      } else {
        arg = OwnedText((negative ? "-" : "") + std::string(digits) + suffix);
      }
    } else {
      arg = Type();
    }
    pending_.push_back(arg);
    if (pending_.size() - base > kMaxListLength) return Fail();
  }
  if (!ok_) return 0;
  --depth_;
  uint32_t list = static_cast<uint32_t>(lists_.size());
  lists_.push_back(static_cast<uint32_t>(pending_.size() - base));
  lists_.insert(lists_.end(), pending_.begin() + static_cast<ptrdiff_t>(base), pending_.end());
  pending_.resize(base);
  return list;
}

// R or O applied to `inner`, collapsed as C++ does when `inner` is itself a reference (a
// template parameter standing for one).
uint32_t Parser::Reference(char code, uint32_t inner) {
  const Node::Kind kind = nodes_[inner].kind;
  if (kind == Node::kRef) return inner;
  if (kind == Node::kRvalueRef) return code == 'O' ? inner : Add(Node::kRef, nodes_[inner].left);
  return Add(code == 'R' ? Node::kRef : Node::kRvalueRef, inner);
}

uint32_t Parser::Type() {
  struct Nesting {
    int& depth;
    explicit Nesting(int& d) : depth(++d) {}
    ~Nesting() { --depth; }
  } nesting(type_depth_);
  if (type_depth_ > kMaxTypeDepth) return Fail();
  const char c = Peek();
  if (const char* builtin = BuiltinType(c)) {
    ++at_;
    return Text(builtin);
  }
  uint32_t type;
  switch (c) {
    case 'K': {
      ++at_;
      while (Eat('K')) {
      }  // one qualified type, one substitution candidate, as libiberty reads them
      if (Peek() == 'V' || Peek() == 'r') return Fail();
      uint32_t inner = Type();
      if (!ok_) return 0;
      const Node::Kind kind = nodes_[inner].kind;
      if (kind == Node::kRef || kind == Node::kRvalueRef) return Fail();
      type = kind == Node::kConst ? inner : Add(Node::kConst, inner);  // const const: one
      break;
    }
    case 'P': {
      ++at_;
      uint32_t inner = Type();
      if (!ok_) return 0;
      type = Add(Node::kPointer, inner);
      break;
    }
    case 'R':
    case 'O': {
      ++at_;
      // libiberty collapses a reference to a reference only where the inner one is a template
      // parameter standing for one; others (which compilers do not write) are left to it.
      const bool template_param = Peek() == 'T';
      uint32_t inner = Type();
      if (!ok_) return 0;
      const Node::Kind kind = nodes_[inner].kind;
      if (!template_param && (kind == Node::kRef || kind == Node::kRvalueRef)) return Fail();
      type = Reference(c, inner);
      break;
    }
    case 'D':
      if (Peek(1) == 'n') {
        at_ += 2;
        return Text("decltype(nullptr)");
      }
      if (Peek(1) == 'i' || Peek(1) == 's') {
        at_ += 2;
        return Text(in_[at_ - 1] == 'i' ? "char32_t" : "char16_t");
      }
      return Fail();
    case 'T': {
      ++at_;
      size_t index;
      // Only in a function template's signature, where they are its own arguments.
      if (!SeqId(&index) || function_args_ < 0) return Fail();
      const uint32_t list = static_cast<uint32_t>(function_args_);
      if (index >= lists_[list] || Peek() == 'I') return Fail();
      type = lists_[list + 1 + index];
      break;
    }
    case 'N': {
      std::string_view last;
      bool ends_in_template = false, ctor_or_dtor = false, const_member = false;
      type = NestedName(&last, &ends_in_template, &ctor_or_dtor, &const_member);
      if (ctor_or_dtor || const_member) return Fail();
      break;
    }
    case 'S': {
      if (Peek(1) == 't') {
        at_ += 2;
        std::string_view identifier;
        uint32_t name = SourceName(&identifier);
        if (!ok_) return 0;
        type = Add(Node::kNested, Text("std"), name);
        if (Peek() == 'I') {
          substitutions_.push_back(type);
          uint32_t args = TemplateArgs();
          type = Add(Node::kTemplate, type, args);
        }
        break;
      }
      ++at_;
      uint32_t replaced;
      if (Eat('a')) {
        replaced = Text("std::allocator");
      } else if (Eat('b')) {
        replaced = Text("std::basic_string");
      } else {
        size_t index;
        if (!SeqId(&index) || index >= substitutions_.size()) return Fail();
        replaced = substitutions_[index];
      }
      if (Peek() != 'I') return replaced;  // a substitution is not a candidate again
      uint32_t args = TemplateArgs();
      type = Add(Node::kTemplate, replaced, args);
      break;
    }
    default: {
      if (c < '1' || c > '9') return Fail();
      std::string_view identifier;
      type = SourceName(&identifier);
      if (ok_ && Peek() == 'I') {
        substitutions_.push_back(type);
        uint32_t args = TemplateArgs();
        type = Add(Node::kTemplate, type, args);
      }
      break;
    }
  }
  if (!ok_) return 0;
  substitutions_.push_back(type);
  return type;
}

uint32_t Parser::UnqualifiedName(std::string_view* last_identifier, bool* ctor_or_dtor) {
  const char c = Peek();
  *ctor_or_dtor = false;
  last_was_operator_ = false;
  if (c >= '1' && c <= '9') {
    uint32_t name = SourceName(last_identifier);
    if (Peek() == 'B') return Fail();  // ABI tag
    return name;
  }
  if ((c == 'C' && Peek(1) >= '1' && Peek(1) <= '4') ||
      (c == 'D' && (Peek(1) == '0' || Peek(1) == '1' || Peek(1) == '2' || Peek(1) == '4'))) {
    if (last_identifier->empty()) return Fail();
    at_ += 2;
    *ctor_or_dtor = true;
    return c == 'C' ? Text(*last_identifier) : OwnedText("~" + std::string(*last_identifier));
  }
  if (c >= 'a' && c <= 'z') {
    const char* name = OperatorName(c, Peek(1));
    if (name == nullptr) return Fail();
    at_ += 2;
    if (Peek() == 'I' || Peek() == 'B') return Fail();
    *last_identifier = {};
    last_was_operator_ = true;
    return Text(name);
  }
  return Fail();
}

// N [K] <component>+ E. Every prefix but the whole name is a substitution candidate, except
// one made by a substitution alone.
uint32_t Parser::NestedName(std::string_view* last_identifier, bool* ends_in_template,
                            bool* ctor_or_dtor, bool* const_member) {
  if (!Eat('N')) return Fail();
  *const_member = Eat('K');
  if (Peek() == 'V' || Peek() == 'r' || Peek() == 'R' || Peek() == 'O' || Peek() == 'K') {
    return Fail();
  }
  int64_t name = -1;
  bool by_substitution = false;
  while (ok_ && !Eat('E')) {
    if (at_ >= in_.size()) return Fail();
    by_substitution = false;
    *ends_in_template = false;
    const char c = Peek();
    if (c == 'S') {
      if (name >= 0) return Fail();
      by_substitution = true;
      if (Peek(1) == 't') {
        at_ += 2;
        name = Text("std");
        *last_identifier = {};
      } else if (Peek(1) == 'a' || Peek(1) == 'b') {
        const bool allocator = Peek(1) == 'a';
        at_ += 2;
        name = Text(allocator ? "std::allocator" : "std::basic_string");
        *last_identifier = allocator ? "allocator" : "basic_string";
      } else {
        ++at_;
        size_t index;
        if (!SeqId(&index) || index >= substitutions_.size()) return Fail();
        name = substitutions_[index];
        *last_identifier = {};
      }
    } else if (c == 'I') {
      if (name < 0) return Fail();
      uint32_t args = TemplateArgs();
      if (!ok_) return 0;
      name = Add(Node::kTemplate, static_cast<uint32_t>(name), args);
      *ends_in_template = true;
    } else {
      uint32_t component = UnqualifiedName(last_identifier, ctor_or_dtor);
      if (!ok_) return 0;
      // Constructors, destructors and operators end a name (or come before its arguments).
      if ((last_was_operator_ || *ctor_or_dtor) && Peek() != 'E' && Peek() != 'I') {
        return Fail();
      }
      name = name < 0 ? component : Add(Node::kNested, static_cast<uint32_t>(name), component);
    }
    if (!by_substitution && Peek() != 'E') substitutions_.push_back(static_cast<uint32_t>(name));
  }
  // A substitution alone ("NStE") names nothing.
  if (!ok_ || name < 0 || by_substitution) return Fail();
  return static_cast<uint32_t>(name);
}

void Parser::Print(uint32_t id) {
  if (nodes_[id].printed) {
    const Node& n = nodes_[id];
    const size_t at = out_.size();
    out_.resize(at + n.printed_size);
    std::memcpy(&out_[at], &out_[n.printed_at], n.printed_size);
    return;
  }
  const size_t from = out_.size();
  const Node n = nodes_[id];
  switch (n.kind) {
    case Node::kText:
      out_ += n.text;
      break;
    case Node::kNested:
      Print(n.left);
      out_ += "::";
      Print(n.right);
      break;
    case Node::kTemplate: {
      Print(n.left);
      if (out_.back() == '<') out_ += ' ';  // as libiberty: never "<<"
      out_ += '<';
      const uint32_t count = lists_[n.right];
      for (uint32_t k = 0; k < count; ++k) {
        if (k != 0) out_ += ", ";
        Print(lists_[n.right + 1 + k]);
      }
      if (out_.back() == '>') out_ += ' ';
      out_ += '>';
      break;
    }
    case Node::kPointer:
    case Node::kRef:
    case Node::kRvalueRef:
    case Node::kConst:
      // Modifiers follow their type: "char const*", "int&&".
      Print(n.left);
      out_ += n.kind == Node::kPointer ? "*"
              : n.kind == Node::kRef   ? "&"
              : n.kind == Node::kConst ? " const"
                                       : "&&";
      break;
  }
  Node& done = nodes_[id];
  done.printed = true;
  done.printed_at = static_cast<uint32_t>(from);
  done.printed_size = static_cast<uint32_t>(out_.size() - from);
}

std::optional<std::string> Parser::Demangle() {
  if (in_.size() < 3 || in_[0] != '_' || in_[1] != 'Z' || in_.size() > 0xffffff) {
    return std::nullopt;
  }
  if (in_.find('.') != std::string_view::npos) return std::nullopt;  // clone suffixes
  at_ = 2;
  std::string_view last;
  bool ends_in_template = false, ctor_or_dtor = false, const_member = false;
  uint32_t name;
  if (Peek() == 'N') {
    name = NestedName(&last, &ends_in_template, &ctor_or_dtor, &const_member);
  } else if ((Peek() == 'S' && Peek(1) == 't') || (Peek() >= '1' && Peek() <= '9')) {
    const bool in_std = Peek() == 'S';
    if (in_std) at_ += 2;
    name = SourceName(&last);
    if (!ok_) return std::nullopt;
    if (in_std) name = Add(Node::kNested, Text("std"), name);
    if (Peek() == 'I') {
      substitutions_.push_back(name);
      uint32_t args = TemplateArgs();
      name = Add(Node::kTemplate, name, args);
      ends_in_template = true;
    }
  } else {
    return std::nullopt;
  }
  if (!ok_) return std::nullopt;
  if (at_ == in_.size()) {  // a variable
    if (const_member) return std::nullopt;
    Print(name);
    return out_;
  }
  // A function template's signature starts with its return type (not a constructor's).
  int64_t return_type = -1;
  if (ends_in_template && !ctor_or_dtor) {
    function_args_ = nodes_[name].right;
    return_type = Type();
  }
  // "v" alone is an empty list; a parameter that stands for void (T_) is printed as one.
  const bool no_params = in_.size() - at_ == 1 && in_[at_] == 'v';
  const size_t first_param = pending_.size();
  while (ok_ && at_ < in_.size()) {
    if (Peek() == 'v' && !no_params) return std::nullopt;  // void among other parameters
    uint32_t param = Type();
    pending_.push_back(param);
    if (pending_.size() - first_param > kMaxListLength) return std::nullopt;
  }
  if (!ok_ || pending_.size() == first_param) return std::nullopt;
  if (return_type >= 0) {
    Print(static_cast<uint32_t>(return_type));
    out_ += ' ';
  }
  Print(name);
  out_ += '(';
  if (!no_params) {
    for (size_t k = first_param; k < pending_.size(); ++k) {
      if (k != first_param) out_ += ", ";
      Print(pending_[k]);
    }
  }
  out_ += ')';
  if (const_member) out_ += " const";
  return out_;
}

}  // namespace

std::optional<std::string> DemangleItaniumSubset(std::string_view mangled) {
  thread_local Parser parser;  // its vectors keep their capacity from name to name
  parser.Reset(mangled);
  return parser.Demangle();
}

}  // namespace stacksym
