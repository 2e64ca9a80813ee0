#include "base/itanium_subset.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

namespace stacksym {
namespace {

// Bounds the recursion of parsing and printing templates inside templates. Real names nest
// up to about 40 deep (boost::proto, boost::spirit); libiberty gives up on some of those
// nested 19 or more deep, which the subset still demangles (as llvm-cxxfilt does).
constexpr int kMaxTemplateDepth = 64;
// Types inside types (pointers to pointers, ...): bounds the recursion of parsing and printing.
constexpr int kMaxTypeDepth = 256;
// Parameters of a function, arguments of a template: libiberty gives up past about a thousand
// (real names have a handful).
constexpr size_t kMaxListLength = 256;
// const, volatile and restrict written in one run ("VK"); more is no name a compiler writes.
constexpr size_t kMaxQualifiers = 8;
// Printing recursion (nodes inside nodes): libiberty gives up at 1024.
constexpr int kMaxPrintDepth = 512;

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

// D <letter>: the builtin types spelt with two characters.
const char* DBuiltinType(char c) {
  switch (c) {
    case 'n':
      return "decltype(nullptr)";
    case 'i':
      return "char32_t";
    case 's':
      return "char16_t";
    case 'u':
      return "char8_t";
    default:
      return nullptr;
  }
}

// The suffix libiberty prints after an integer literal of these types ("5ul"); others are
// printed as a cast ("(short)5").
const char* IntegerLiteralSuffix(char type) {
  switch (type) {
    case 'i':
      return "";
    case 'j':
      return "u";
    case 'l':
      return "l";
    case 'm':
      return "ul";
    case 'x':
      return "ll";
    case 'y':
      return "ull";
    default:
      return nullptr;
  }
}

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

// The bytes compilers write in identifiers (libiberty takes any byte, then fails elsewhere).
constexpr std::array<bool, 256> kIdentifierByte = [] {
  std::array<bool, 256> table{};
  for (int c = 'a'; c <= 'z'; ++c) table[static_cast<size_t>(c)] = true;
  for (int c = 'A'; c <= 'Z'; ++c) table[static_cast<size_t>(c)] = true;
  for (int c = '0'; c <= '9'; ++c) table[static_cast<size_t>(c)] = true;
  table['_'] = table['$'] = true;
  return table;
}();

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Counts one level of recursion for as long as it lives.
class DepthGuard {
 public:
  explicit DepthGuard(int& depth) : depth_(++depth) {}
  ~DepthGuard() { --depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  int& depth_;
};

// How libiberty prints a qualifier: 'K', 'V' or 'r'.
const char* QualifierText(char q) {
  return q == 'K' ? " const" : q == 'V' ? " volatile" : " restrict";
}

// GCC's name for an anonymous namespace, which libiberty prints "(anonymous namespace)".
bool IsAnonymousNamespace(std::string_view id) {
  return id.size() >= 10 && id.substr(0, 8) == "_GLOBAL_" &&
         (id[8] == '.' || id[8] == '_' || id[8] == '$') && id[9] == 'N';
}

// The standard substitutions Ss, Si, So, Sd: libiberty's short text, and the full one it
// prints where a constructor or destructor follows (with the name that one then takes).
struct StandardStream {
  char code;
  const char* simple;
  const char* full;
  const char* last_name;
};
constexpr StandardStream kStandardStreams[] = {
    {'s', "std::string", "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
     "basic_string"},
    {'i', "std::istream", "std::basic_istream<char, std::char_traits<char> >", "basic_istream"},
    {'o', "std::ostream", "std::basic_ostream<char, std::char_traits<char> >", "basic_ostream"},
    {'d', "std::iostream", "std::basic_iostream<char, std::char_traits<char> >", "basic_iostream"},
};
const StandardStream* FindStandardStream(char code) {
  for (const StandardStream& s : kStandardStreams) {
    if (s.code == code) return &s;
  }
  return nullptr;
}

// A parsed name as a tree whose shared nodes are the substitutions. Each node's text is
// printed once; a later reference copies it from the output.
struct Node {
  enum Kind : uint8_t {
    kText,           // text
    kDestructor,     // "~" text
    kInteger,        // ["-"] text suffix: a literal of int, unsigned, long, ... ("5ul")
    kLiteral,        // "(" left ")" ["-"] text: a literal printed as a cast ("(short)5")
    kNested,         // left "::" right
    kTemplate,       // left "<" arguments (list right) ">"
    kTagged,         // left "[abi:" text "]"
    kConversion,     // "operator " left
    kPointer,        // left "*"
    kRef,            // left "&"
    kRvalueRef,      // left "&&"
    kQualified,      // left and its qualifiers (" const", ...)
    kFunction,       // left (the return type) " (" parameters (list right) ")"
    kPack,           // a template argument pack (list right), printed where it is an argument
    kExpansion,      // a pack expansion: its elements (list right) joined by ", "
    kArray,          // left " [" text "]"
    kMemberPointer,  // right " " left "::*", or a member function's "ret (left::*)(params)"
  };
  Kind kind = kText;
  bool negative = false;  // kInteger, kLiteral
  bool printed = false;
  uint8_t qualifier_count = 0;  // kQualified
  char qualifiers[3] = {};      // kQualified: 'K', 'V', 'r' outermost first, once each
  bool mapped = false;          // kPack: made by a modifier over each element
  uint32_t left = 0;
  uint32_t right = 0;
  std::string_view text;
  std::string_view suffix;  // kInteger
  uint32_t printed_at = 0, printed_size = 0;
};

// What names a scope or a template: not a type built from others.
bool IsName(Node::Kind kind) {
  return kind == Node::kText || kind == Node::kNested || kind == Node::kTemplate ||
         kind == Node::kTagged;
}

bool IsModifier(Node::Kind kind) {
  return kind == Node::kPointer || kind == Node::kRef || kind == Node::kRvalueRef ||
         kind == Node::kQualified;
}

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
    marks_.clear();
    print_depth_ = 0;
    stale_at_ = std::string::npos;
    function_args_ = -1;
    out_.clear();
  }
  std::optional<std::string> Demangle();

 private:
  struct NameEnd {
    std::string_view last_identifier;  // the name a constructor or destructor after it takes
    bool ends_in_template = false;
    bool ctor_dtor_or_conversion = false;  // no return type, even as a template
    bool ends_name = false;                // a constructor, destructor or operator
  };

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
    Node& n = nodes_.emplace_back();
    n.kind = kind;
    n.left = left;
    n.right = right;
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  uint32_t Text(std::string_view text, Node::Kind kind = Node::kText) {
    uint32_t id = Add(kind);
    nodes_[id].text = text;
    return id;
  }
  // The pending nodes from `base` on, as a list in lists_ (count, then the nodes).
  uint32_t TakeList(size_t base) {
    uint32_t list = static_cast<uint32_t>(lists_.size());
    lists_.push_back(static_cast<uint32_t>(pending_.size() - base));
    lists_.insert(lists_.end(), pending_.begin() + static_cast<ptrdiff_t>(base), pending_.end());
    pending_.resize(base);
    return list;
  }
  Node::Kind KindOf(uint32_t id) const { return nodes_[id].kind; }
  // libiberty prints a function's return type that is (a pointer to) a function, an array or
  // a pointer to member inside out, "void (*f())(int)"; those, and expansions, are left to it.
  bool ReturnTypeInReach(uint32_t type) const {
    if (KindOf(type) == Node::kExpansion) return false;
    size_t steps = 0;
    while (IsModifier(KindOf(type)) && ++steps < kMaxPrintDepth) type = nodes_[type].left;
    return KindOf(type) != Node::kFunction && KindOf(type) != Node::kArray &&
           KindOf(type) != Node::kMemberPointer;
  }

  bool Number(size_t* value);
  bool Digits(std::string_view* digits);
  bool SeqId(size_t* index);
  bool Identifier(std::string_view* identifier);
  uint32_t SourceName(std::string_view* identifier);
  uint32_t AbiTags(uint32_t name);
  uint32_t TemplateArgs();
  // An unscoped template name followed by its arguments: the name is a substitution
  // candidate, then the template.
  uint32_t CandidateWithArgs(uint32_t name) {
    substitutions_.push_back(name);
    const uint32_t args = TemplateArgs();
    return Add(Node::kTemplate, name, args);
  }
  uint32_t Literal();
  uint32_t Type();
  uint32_t QualifiedType();
  uint32_t ModifiedType(char code);
  uint32_t MemberPointerType();
  uint32_t ArrayType();
  uint32_t PackExpansionType();
  uint32_t TemplateParamType();
  uint32_t StdType();
  uint32_t SubstitutionType(bool* candidate);
  uint32_t ValueType();
  uint32_t Qualify(const char* qualifiers, size_t count, uint32_t inner);
  uint32_t Reference(char code, uint32_t inner, bool collapse);
  uint32_t Modify(char code, uint32_t inner, bool collapse);
  template <typename Each>
  uint32_t MapPack(uint32_t pack, Each each);
  uint32_t FunctionType();
  uint32_t Substitution(bool prefix, std::string_view* last_identifier);
  uint32_t NestedName(NameEnd* end, std::string_view* member_qualifiers);
  uint32_t UnqualifiedName(NameEnd* end);
  void Print(uint32_t id);
  void PrintList(uint32_t list);
  void PrintModifiers(uint32_t outermost, uint32_t base);
  void PrintFunction(uint32_t function, uint32_t outermost_modifier);
  void PrintArray(uint32_t array, uint32_t outermost_modifier);
  void PrintQualifiers(const Node& n);

  std::string_view in_;
  size_t at_ = 0;
  bool ok_ = true;
  bool from_substitution_ = false;  // the last Type() was a substitution reference
  int depth_ = 0;                   // templates
  int type_depth_ = 0;              // types
  std::vector<Node> nodes_;
  std::vector<uint32_t> substitutions_;
  std::vector<uint32_t> lists_;    // argument lists: count, then the nodes
  std::vector<uint32_t> pending_;  // arguments being parsed (nested lists stack up)
  std::vector<size_t> marks_;      // PrintList's ", " positions (nested lists stack up)
  int64_t function_args_ = -1;     // the function template's argument list in lists_
  int print_depth_ = 0;
  // libiberty takes back an empty list's ", " without forgetting that the last character it
  // printed was a space: right after that, no space goes between "> >".
  size_t stale_at_ = std::string::npos;
  char LastChar() const { return out_.size() == stale_at_ ? ' ' : out_.back(); }
  std::string out_;
};

// A length or an index: bounded by the name's size.
bool Parser::Number(size_t* value) {
  if (!IsDigit(Peek())) return false;
  size_t v = 0;
  while (IsDigit(Peek())) {
    v = v * 10 + static_cast<size_t>(in_[at_++] - '0');
    if (v > in_.size()) return false;
  }
  *value = v;
  return true;
}

// A literal's value, printed as written (any number of digits).
bool Parser::Digits(std::string_view* digits) {
  const size_t from = at_;
  while (IsDigit(Peek())) ++at_;
  *digits = in_.substr(from, at_ - from);
  return at_ > from;
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

bool Parser::Identifier(std::string_view* identifier) {
  size_t length;
  if (!Number(&length) || length == 0 || length > in_.size() - at_) return false;
  const std::string_view id = in_.substr(at_, length);
  at_ += length;
  for (char c : id) {
    if (!kIdentifierByte[static_cast<unsigned char>(c)]) return false;
  }
  *identifier = id;
  return true;
}

uint32_t Parser::SourceName(std::string_view* identifier) {
  std::string_view id;
  if (!Identifier(&id)) return Fail();
  if (IsAnonymousNamespace(id)) {
    *identifier = {};  // no constructor is named after it
    return Text("(anonymous namespace)");
  }
  *identifier = id;
  return Text(id);
}

// B <source-name>, any number of them: "name[abi:cxx11]".
uint32_t Parser::AbiTags(uint32_t name) {
  while (ok_ && Eat('B')) {
    std::string_view tag;
    // A tag named like an anonymous namespace is printed as one by libiberty: left to it.
    if (!Identifier(&tag) || IsAnonymousNamespace(tag)) return Fail();
    name = Add(Node::kTagged, name);
    nodes_[name].text = tag;
  }
  return name;
}

// L <type> [n] <digits> E, as libiberty prints it: "5", "5ul", "true", "(short)5", "(E)2".
uint32_t Parser::Literal() {
  const char type = Peek();
  if (const char* suffix = IntegerLiteralSuffix(type)) {
    ++at_;
    const bool negative = Eat('n');
    std::string_view digits;
    if (!Digits(&digits) || !Eat('E')) return Fail();
    uint32_t id = Text(digits, Node::kInteger);
    nodes_[id].negative = negative;
    nodes_[id].suffix = suffix;
    return id;
  }
  if (type == 'b' && (Peek(1) == '0' || Peek(1) == '1') && Peek(2) == 'E') {
    at_ += 3;
    return Text(in_[at_ - 2] == '1' ? "true" : "false");
  }
  // Floating-point values (printed in hex, in brackets), external names (L_Z), void and
  // "..." are left to libiberty.
  if (type == 'f' || type == 'd' || type == 'e' || type == 'g' || type == '_' || type == 'Z' ||
      type == 'v' || type == 'z' || type == 'T') {
    return Fail();
  }
  const bool null_pointer = type == 'D' && Peek(1) == 'n';
  const uint32_t cast = ValueType();
  if (!ok_) return 0;
  if (null_pointer && Eat('E')) return cast;  // "LDnE": the type alone
  if (!IsName(KindOf(cast))) return Fail();
  const bool negative = Eat('n');
  std::string_view digits;
  if (!Digits(&digits) || !Eat('E')) return Fail();
  uint32_t id = Add(Node::kLiteral, cast);
  nodes_[id].negative = negative;
  nodes_[id].text = digits;
  return id;
}

uint32_t Parser::TemplateArgs() {
  if (!Eat('I') || ++depth_ > kMaxTemplateDepth) return Fail();
  const size_t base = pending_.size();
  bool in_pack = false;
  size_t pack_base = 0;
  while (ok_) {
    if (Eat('E')) {
      if (!in_pack) break;
      // The pack's arguments become one argument of the template (not a substitution).
      const uint32_t list = TakeList(pack_base);
      const uint32_t pack = Add(Node::kPack, 0, list);
      pending_.push_back(pack);
      in_pack = false;
      continue;
    }
    if (at_ >= in_.size()) return Fail();
    if (Eat('J')) {
      if (in_pack) return Fail();  // a pack in a pack
      in_pack = true;
      pack_base = pending_.size();
      continue;
    }
    const uint32_t arg = Eat('L') ? Literal() : ValueType();
    if (!ok_) return 0;
    pending_.push_back(arg);
    if (pending_.size() - base > kMaxListLength) return Fail();
  }
  if (!ok_) return 0;
  --depth_;
  return TakeList(base);
}

// R or O applied to `inner`. Where `inner` was written as a template parameter standing for a
// reference, the two collapse as C++ does (& + && = &); libiberty collapses no others.
uint32_t Parser::Reference(char code, uint32_t inner, bool collapse) {
  const Node::Kind kind = KindOf(inner);
  if (kind == Node::kMemberPointer) return Fail();
  if (kind == Node::kRef || kind == Node::kRvalueRef) {
    if (!collapse) return Fail();
    if (kind == Node::kRef) return inner;
    return code == 'O' ? inner : Add(Node::kRef, nodes_[inner].left);
  }
  return Add(code == 'R' ? Node::kRef : Node::kRvalueRef, inner);
}

// const, volatile and restrict over `inner`, printed after it innermost first; a qualifier
// `inner` already has outside any pointer or reference is printed once (as libiberty does).
uint32_t Parser::Qualify(const char* qualifiers, size_t count, uint32_t inner) {
  const Node in = nodes_[inner];
  if (in.kind == Node::kRef || in.kind == Node::kRvalueRef || in.kind == Node::kFunction ||
      in.kind == Node::kExpansion || in.kind == Node::kArray || in.kind == Node::kMemberPointer) {
    return Fail();
  }
  char all[kMaxQualifiers + 3];
  size_t total = 0;
  for (size_t k = 0; k < count; ++k) all[total++] = qualifiers[k];
  uint32_t base = inner;
  if (in.kind == Node::kQualified) {
    for (size_t k = 0; k < in.qualifier_count; ++k) all[total++] = in.qualifiers[k];
    base = in.left;
  }
  uint32_t id = Add(Node::kQualified, base);
  Node& n = nodes_[id];
  for (size_t k = 0; k < total; ++k) {
    if (std::memchr(n.qualifiers, all[k], n.qualifier_count) == nullptr) {
      n.qualifiers[n.qualifier_count++] = all[k];
    }
  }
  return id;
}

// A modifier ('P', 'R', 'O', or qualifiers) over `inner`; over a pack, over each of its
// elements (as libiberty prints an expansion's pattern for each element).
uint32_t Parser::Modify(char code, uint32_t inner, bool collapse) {
  if (code == 'P') {
    if (KindOf(inner) == Node::kMemberPointer) return Fail();
    return Add(Node::kPointer, inner);
  }
  return Reference(code, inner, collapse);
}

// A modifier over a pack, as the pattern of an expansion: the pack of `each` element. A pack
// reached through a substitution of a modified one is printed otherwise by libiberty.
template <typename Each>
uint32_t Parser::MapPack(uint32_t pack, Each each) {
  if (nodes_[pack].mapped && from_substitution_) return Fail();
  const uint32_t list = nodes_[pack].right;
  const size_t first = pending_.size();
  for (uint32_t k = 0; k < lists_[list] && ok_; ++k) pending_.push_back(each(lists_[list + 1 + k]));
  if (!ok_) return 0;
  const uint32_t mapped = Add(Node::kPack, 0, TakeList(first));
  nodes_[mapped].mapped = true;
  return mapped;
}

uint32_t Parser::FunctionType() {
  // F [Y] <return type> <parameters> E; ref-qualified ones ("RE", "OE") are left to libiberty.
  Eat('Y');
  const uint32_t return_type = ValueType();
  if (!ok_) return 0;
  if (!ReturnTypeInReach(return_type)) return Fail();
  const size_t first = pending_.size();
  const bool no_params = Peek() == 'v' && Peek(1) == 'E';
  if (no_params) ++at_;
  while (ok_ && !Eat('E')) {
    if (at_ >= in_.size() || Peek() == 'v' ||
        ((Peek() == 'R' || Peek() == 'O') && Peek(1) == 'E')) {
      return Fail();
    }
    const uint32_t param = ValueType();
    pending_.push_back(param);
    if (pending_.size() - first > kMaxListLength) return Fail();
  }
  if (!ok_) return 0;
  if (!no_params && pending_.size() == first) return Fail();
  const uint32_t params = TakeList(first);
  return Add(Node::kFunction, return_type, params);
}

// S_, S<n>_, Sa, Sb, Ss, Si, So, Sd after the 'S'. In a prefix, Ss.. followed by a constructor or
// destructor is printed in full and names it.
uint32_t Parser::Substitution(bool prefix, std::string_view* last_identifier) {
  const char c = Peek();
  if (c == 'a' || c == 'b') {
    ++at_;
    *last_identifier = c == 'a' ? "allocator" : "basic_string";
    return Text(c == 'a' ? "std::allocator" : "std::basic_string");
  }
  if (const StandardStream* s = FindStandardStream(c)) {
    ++at_;
    const bool full = prefix && (Peek() == 'C' || Peek() == 'D');
    *last_identifier = full ? s->last_name : std::string_view();
    return Text(full ? s->full : s->simple);
  }
  size_t index;
  if (!SeqId(&index) || index >= substitutions_.size()) return Fail();
  *last_identifier = {};
  return substitutions_[index];
}

// A type that stands for one: not a template argument pack.
uint32_t Parser::ValueType() {
  uint32_t type = Type();
  if (ok_ && KindOf(type) == Node::kPack) return Fail();
  return type;
}

// <type>: one production per leading character. A type built here is a substitution
// candidate; builtin types and references to substitutions are not.
uint32_t Parser::Type() {
  const DepthGuard nesting(type_depth_);
  if (type_depth_ > kMaxTypeDepth) return Fail();
  from_substitution_ = false;
  const char c = Peek();
  if (const char* builtin = BuiltinType(c)) {
    ++at_;
    return Text(builtin);
  }
  uint32_t type;
  switch (c) {
    case 'r':
    case 'V':
    case 'K':
      type = QualifiedType();
      break;
    case 'P':
    case 'R':
    case 'O':
      ++at_;
      type = ModifiedType(c);
      break;
    case 'F':
      ++at_;
      type = FunctionType();
      break;
    case 'M':
      ++at_;
      type = MemberPointerType();
      break;
    case 'A':
      ++at_;
      type = ArrayType();
      break;
    case 'D':
      if (const char* builtin = DBuiltinType(Peek(1))) {
        at_ += 2;
        return Text(builtin);
      }
      if (Peek(1) != 'p') return Fail();
      at_ += 2;
      type = PackExpansionType();
      break;
    case 'T':
      ++at_;
      type = TemplateParamType();
      break;
    case 'N': {
      NameEnd end;
      std::string_view member_qualifiers;
      type = NestedName(&end, &member_qualifiers);
      if (end.ends_name || !member_qualifiers.empty()) return Fail();
      break;
    }
    case 'S': {
      if (Peek(1) == 't') {
        at_ += 2;
        type = StdType();
        break;
      }
      ++at_;
      bool candidate = true;
      type = SubstitutionType(&candidate);
      if (!candidate) return type;
      break;
    }
    default: {
      if (c < '1' || c > '9') return Fail();
      std::string_view identifier;
      type = SourceName(&identifier);
      type = AbiTags(type);
      if (ok_ && Peek() == 'I') type = CandidateWithArgs(type);
      break;
    }
  }
  if (!ok_) return 0;
  substitutions_.push_back(type);
  from_substitution_ = false;
  return type;
}

// <CV-qualifiers> <type>, over each element of a pack.
uint32_t Parser::QualifiedType() {
  char qualifiers[kMaxQualifiers];
  size_t count = 0;
  while (Peek() == 'r' || Peek() == 'V' || Peek() == 'K') {
    if (count == kMaxQualifiers) return Fail();
    qualifiers[count++] = in_[at_++];
  }
  if (Peek() == 'F') return Fail();  // a member function's qualifiers: left to libiberty
  const uint32_t inner = Type();
  if (!ok_) return 0;
  if (KindOf(inner) == Node::kPack) {
    return MapPack(inner, [&](uint32_t element) { return Qualify(qualifiers, count, element); });
  }
  return Qualify(qualifiers, count, inner);
}

// P, R or O <type> (code): a pointer, reference or rvalue reference, over each element of a
// pack.
uint32_t Parser::ModifiedType(char code) {
  // libiberty collapses a reference to a reference only where the inner one is a template
  // parameter standing for one; others (which compilers do not write) are left to it.
  const bool template_param = Peek() == 'T';
  const uint32_t inner = Type();
  if (!ok_) return 0;
  if (KindOf(inner) == Node::kExpansion) return Fail();
  if (KindOf(inner) == Node::kPack) {
    // References collapse where the pattern's inner type is the parameter itself; over
    // another modifier libiberty does not collapse them ("char const&&&").
    const bool collapse = !nodes_[inner].mapped;
    return MapPack(inner, [&](uint32_t element) { return Modify(code, element, collapse); });
  }
  return Modify(code, inner, template_param);
}

// M <class> <member type>: "long C::*", "void (C::*)(int)".
uint32_t Parser::MemberPointerType() {
  const uint32_t owner = ValueType();
  if (!ok_) return 0;
  if (!IsName(KindOf(owner))) return Fail();                           // no class
  if (Peek() == 'K' || Peek() == 'V' || Peek() == 'r') return Fail();  // const member fns
  const uint32_t member = ValueType();
  if (!ok_) return 0;
  const Node::Kind kind = KindOf(member);
  if (kind == Node::kRef || kind == Node::kRvalueRef || kind == Node::kExpansion ||
      kind == Node::kArray || kind == Node::kMemberPointer ||
      (kind != Node::kFunction && !ReturnTypeInReach(member))) {
    return Fail();
  }
  return Add(Node::kMemberPointer, owner, member);
}

// A [<digits>] _ <element type>: "int [3]", "T []".
uint32_t Parser::ArrayType() {
  std::string_view dimension;
  if (!Eat('_') && (!Digits(&dimension) || !Eat('_'))) return Fail();
  const uint32_t element = ValueType();
  if (!ok_) return 0;
  const Node::Kind kind = KindOf(element);
  if (kind == Node::kArray || kind == Node::kExpansion || kind == Node::kMemberPointer ||
      !ReturnTypeInReach(element)) {
    return Fail();
  }
  const uint32_t type = Add(Node::kArray, element);
  nodes_[type].text = dimension;
  return type;
}

// Dp <pattern>: the expansion of a template argument pack.
uint32_t Parser::PackExpansionType() {
  const uint32_t pattern = Type();
  if (!ok_) return 0;
  // An expansion of anything but a template argument pack (a function parameter pack) is
  // printed "pattern..." by libiberty: left to it.
  if (KindOf(pattern) != Node::kPack) return Fail();
  return Add(Node::kExpansion, 0, nodes_[pattern].right);
}

// T [<number>] _: a template parameter, only in a function template's signature, where the
// parameters are its own arguments.
uint32_t Parser::TemplateParamType() {
  size_t index;
  if (!SeqId(&index) || function_args_ < 0) return Fail();
  const uint32_t list = static_cast<uint32_t>(function_args_);
  if (index >= lists_[list] || Peek() == 'I') return Fail();
  return lists_[list + 1 + index];
}

// St <source name> [<template args>]: a name in std::.
uint32_t Parser::StdType() {
  std::string_view identifier;
  uint32_t name = SourceName(&identifier);
  if (!ok_) return 0;
  name = AbiTags(name);
  const uint32_t type = Add(Node::kNested, Text("std"), name);
  if (ok_ && Peek() == 'I') return CandidateWithArgs(type);
  return type;
}

// S <seq-id> _ or S <abbreviation>, with template arguments or without. A substitution is not
// a candidate again (*candidate false); with arguments, the template is.
uint32_t Parser::SubstitutionType(bool* candidate) {
  std::string_view ignored;
  const bool standard = Peek() >= 'a' && Peek() <= 'z';
  const uint32_t replaced = Substitution(false, &ignored);
  if (!ok_) return 0;
  if (Peek() != 'I') {
    // One standing for an expansion is printed otherwise by libiberty.
    if (KindOf(replaced) == Node::kExpansion) return Fail();
    from_substitution_ = !standard;
    *candidate = false;
    return replaced;
  }
  if (!IsName(KindOf(replaced))) return Fail();
  const uint32_t args = TemplateArgs();
  return Add(Node::kTemplate, replaced, args);
}

uint32_t Parser::UnqualifiedName(NameEnd* end) {
  const char c = Peek();
  end->ends_name = false;
  end->ctor_dtor_or_conversion = false;
  uint32_t name;
  if (c >= '1' && c <= '9') {
    name = SourceName(&end->last_identifier);
  } else if (c == 'L' && Peek(1) >= '1' && Peek(1) <= '9') {
    ++at_;  // internal linkage: printed as any name
    name = SourceName(&end->last_identifier);
    if (Peek() == '_') return Fail();  // a discriminator
  } else if ((c == 'C' && Peek(1) >= '1' && Peek(1) <= '5') ||
             (c == 'D' && (Peek(1) == '0' || Peek(1) == '1' || Peek(1) == '2' || Peek(1) == '4' ||
                           Peek(1) == '5'))) {
    if (end->last_identifier.empty()) return Fail();
    at_ += 2;
    end->ends_name = end->ctor_dtor_or_conversion = true;
    name = Text(end->last_identifier, c == 'C' ? Node::kText : Node::kDestructor);
  } else if (c == 'c' && Peek(1) == 'v') {
    at_ += 2;
    const uint32_t type = ValueType();
    if (!ok_ || Peek() == 'I') return Fail();  // templated conversions: left to libiberty
    name = Add(Node::kConversion, type);
    end->last_identifier = {};
    end->ends_name = end->ctor_dtor_or_conversion = true;
  } else if (c >= 'a' && c <= 'z') {
    const char* op = OperatorName(c, Peek(1));
    if (op == nullptr) return Fail();
    at_ += 2;
    end->last_identifier = {};
    end->ends_name = true;
    name = Text(op);
  } else {
    return Fail();
  }
  return Peek() == 'B' ? AbiTags(name) : name;
}

// N [r][V][K] <component>+ E. Every prefix but the whole name is a substitution candidate,
// except one made by a substitution alone.
uint32_t Parser::NestedName(NameEnd* end, std::string_view* member_qualifiers) {
  if (!Eat('N')) return Fail();
  const size_t qualifiers_from = at_;
  Eat('r');
  Eat('V');
  Eat('K');
  *member_qualifiers = in_.substr(qualifiers_from, at_ - qualifiers_from);
  if (Peek() == 'V' || Peek() == 'r' || Peek() == 'R' || Peek() == 'O' || Peek() == 'K') {
    return Fail();  // ref-qualifiers, qualifiers out of order
  }
  int64_t name = -1;
  bool by_substitution = false;
  end->last_identifier = {};
  while (ok_ && !Eat('E')) {
    if (at_ >= in_.size()) return Fail();
    by_substitution = false;
    end->ends_in_template = false;
    const char c = Peek();
    if (c == 'S' && Peek(1) == 't') {
      if (name >= 0) return Fail();
      at_ += 2;
      by_substitution = true;
      name = Text("std");
      end->last_identifier = {};
    } else if (c == 'S') {
      if (name >= 0) return Fail();
      ++at_;
      by_substitution = true;
      name = Substitution(true, &end->last_identifier);
      if (!ok_) return 0;
      const Node::Kind kind = KindOf(static_cast<uint32_t>(name));
      if (!IsName(kind)) return Fail();  // a type as a scope: printed otherwise by libiberty
    } else if (c == 'T') {
      // A template parameter as the scope ("NT_10value_typeE" in a function template's
      // signature): the argument it stands for, when that is a name. Unlike a substitution,
      // it is a substitution candidate itself.
      if (name >= 0 || function_args_ < 0) return Fail();
      ++at_;
      size_t index;
      if (!SeqId(&index)) return Fail();
      const uint32_t list = static_cast<uint32_t>(function_args_);
      if (index >= lists_[list] || Peek() == 'I') return Fail();
      const uint32_t argument = lists_[list + 1 + index];
      if (!IsName(KindOf(argument))) return Fail();
      name = argument;
      end->last_identifier = {};
    } else if (c == 'I') {
      // Arguments of arguments ("C1IiEIiE"): libiberty then looks no further for a
      // constructor and prints a return type; left to it.
      if (name < 0 || KindOf(static_cast<uint32_t>(name)) == Node::kTemplate) return Fail();
      const uint32_t args = TemplateArgs();
      if (!ok_) return 0;
      name = Add(Node::kTemplate, static_cast<uint32_t>(name), args);
      end->ends_in_template = true;
    } else {
      const uint32_t component = UnqualifiedName(end);
      if (!ok_) return 0;
      // Constructors, destructors and operators end a name (or come before its arguments).
      if (end->ends_name && Peek() != 'E' && Peek() != 'I') return Fail();
      name = name < 0 ? component : Add(Node::kNested, static_cast<uint32_t>(name), component);
    }
    if (!by_substitution && Peek() != 'E') substitutions_.push_back(static_cast<uint32_t>(name));
  }
  // A substitution alone ("NStE") names nothing.
  if (!ok_ || name < 0 || by_substitution) return Fail();
  return static_cast<uint32_t>(name);
}

// libiberty's argument lists: ", " between each argument and the rest, taken back when the
// rest printed nothing (empty packs): "a<, int>", "f<int>".
void Parser::PrintList(uint32_t list) {
  const uint32_t count = lists_[list];
  const size_t marks_base = marks_.size();
  for (uint32_t k = 0; k < count; ++k) {
    if (k != 0) {
      out_ += ", ";
      marks_.push_back(out_.size());
    }
    const uint32_t element = lists_[list + 1 + k];
    if (KindOf(element) == Node::kPack) {
      PrintList(nodes_[element].right);
    } else {
      Print(element);
    }
  }
  int taken_back = 0;
  while (marks_.size() > marks_base) {
    const size_t mark = marks_.back();
    marks_.pop_back();
    if (out_.size() == mark) {
      out_.resize(mark - 2);
      stale_at_ = out_.size();
      ++taken_back;
    }
  }
  // Two or more empty arguments last ("IJEJEE"): whether libiberty takes back the earlier
  // ", " depends on where its 256-byte print buffer was flushed. Left to it.
  if (taken_back > 1) ok_ = false;
  marks_.resize(marks_base);
}

void Parser::PrintQualifiers(const Node& n) {
  for (size_t k = n.qualifier_count; k-- > 0;) out_ += QualifierText(n.qualifiers[k]);
}

// The modifiers from `outermost` down to `base` (exclusive), innermost first: "* const&".
void Parser::PrintModifiers(uint32_t outermost, uint32_t base) {
  uint32_t chain[kMaxPrintDepth];
  size_t length = 0;
  for (uint32_t m = outermost; m != base; m = nodes_[m].left) {
    if (length == kMaxPrintDepth) {
      ok_ = false;
      return;
    }
    chain[length++] = m;
  }
  while (length-- > 0) {
    const Node& m = nodes_[chain[length]];
    switch (m.kind) {
      case Node::kPointer:
        out_ += '*';
        break;
      case Node::kRef:
        out_ += '&';
        break;
      case Node::kRvalueRef:
        out_ += "&&";
        break;
      default:
        PrintQualifiers(m);
        break;
    }
  }
}

// A function type under modifiers: "void (* const&)(int)".
void Parser::PrintFunction(uint32_t function, uint32_t outermost_modifier) {
  const Node f = nodes_[function];
  Print(f.left);
  out_ += ' ';
  if (outermost_modifier != function) {
    out_ += '(';
    PrintModifiers(outermost_modifier, function);
    out_ += ')';
  }
  out_ += '(';
  PrintList(f.right);
  out_ += ')';
}

// An array type under modifiers: "int (&) [3]".
void Parser::PrintArray(uint32_t array, uint32_t outermost_modifier) {
  const Node a = nodes_[array];
  Print(a.left);
  if (outermost_modifier != array) {
    out_ += " (";
    PrintModifiers(outermost_modifier, array);
    out_ += ')';
  }
  out_ += " [";
  out_ += a.text;
  out_ += ']';
}

void Parser::Print(uint32_t id) {
  const DepthGuard nesting(print_depth_);
  if (print_depth_ > kMaxPrintDepth) {
    ok_ = false;  // Demangle() then answers nothing
    return;
  }
  if (nodes_[id].printed) {
    const Node& n = nodes_[id];
    out_.append(out_, n.printed_at, n.printed_size);  // std::string copes with its own bytes
    return;
  }
  const size_t from = out_.size();
  const Node n = nodes_[id];
  switch (n.kind) {
    case Node::kText:
      out_ += n.text;
      break;
    case Node::kDestructor:
      out_ += '~';
      out_ += n.text;
      break;
    case Node::kInteger:
      if (n.negative) out_ += '-';
      out_ += n.text;
      out_ += n.suffix;
      break;
    case Node::kLiteral:
      out_ += '(';
      Print(n.left);
      out_ += ')';
      if (n.negative) out_ += '-';
      out_ += n.text;
      break;
    case Node::kNested:
      Print(n.left);
      out_ += "::";
      Print(n.right);
      break;
    case Node::kTemplate:
      Print(n.left);
      if (!out_.empty() && LastChar() == '<') out_ += ' ';  // as libiberty: never "<<"
      out_ += '<';
      PrintList(n.right);
      if (LastChar() == '>') out_ += ' ';
      out_ += '>';
      break;
    case Node::kTagged:
      Print(n.left);
      out_ += "[abi:";
      out_ += n.text;
      out_ += ']';
      break;
    case Node::kConversion:
      out_ += "operator ";
      Print(n.left);
      break;
    case Node::kPointer:
    case Node::kRef:
    case Node::kRvalueRef:
    case Node::kQualified: {
      uint32_t base = n.left;
      while (IsModifier(KindOf(base))) base = nodes_[base].left;
      if (KindOf(base) == Node::kFunction) {
        PrintFunction(base, id);
        break;
      }
      if (KindOf(base) == Node::kArray) {
        PrintArray(base, id);
        break;
      }
      // Modifiers follow their type: "char const*", "int&&".
      Print(n.left);
      if (n.kind == Node::kQualified) {
        PrintQualifiers(n);
      } else {
        out_ += n.kind == Node::kPointer ? "*" : n.kind == Node::kRef ? "&" : "&&";
      }
      break;
    }
    case Node::kFunction:
      PrintFunction(id, id);
      break;
    case Node::kArray:
      PrintArray(id, id);
      break;
    case Node::kMemberPointer: {
      const Node member = nodes_[n.right];
      if (member.kind == Node::kFunction) {
        Print(member.left);
        out_ += " (";
        Print(n.left);
        out_ += "::*)(";
        PrintList(member.right);
        out_ += ')';
      } else {
        Print(n.right);
        if (LastChar() != '(') out_ += ' ';
        Print(n.left);
        out_ += "::*";
      }
      break;
    }
    case Node::kPack:
      PrintList(n.right);
      break;
    case Node::kExpansion: {
      const uint32_t count = lists_[n.right];
      for (uint32_t k = 0; k < count; ++k) {
        if (k != 0) out_ += ", ";
        Print(lists_[n.right + 1 + k]);
      }
      break;
    }
  }
  Node& done = nodes_[id];
  done.printed = true;
  done.printed_at = static_cast<uint32_t>(from);
  done.printed_size = static_cast<uint32_t>(out_.size() - from);
}

// Clone suffixes as libiberty reads them: groups of "." [a-z0-9_]+ then ("." [0-9]+)*, each
// printed " [clone <group>]" after the name. False if anything else follows the name.
bool CloneSuffixes(std::string_view s, std::vector<std::string_view>* groups) {
  auto word = [&](size_t p) {
    return p < s.size() && ((s[p] >= 'a' && s[p] <= 'z') || IsDigit(s[p]) || s[p] == '_');
  };
  size_t p = 0;
  while (p < s.size() && s[p] == '.' && word(p + 1)) {
    const size_t start = p;
    p += 2;
    while (word(p)) ++p;
    while (p + 1 < s.size() && s[p] == '.' && IsDigit(s[p + 1])) {
      p += 2;
      while (p < s.size() && IsDigit(s[p])) ++p;
    }
    groups->push_back(s.substr(start, p - start));
  }
  return p == s.size();
}

std::optional<std::string> Parser::Demangle() {
  if (in_.size() < 3 || in_[0] != '_' || in_[1] != 'Z' || in_.size() > 0xffffff) {
    return std::nullopt;
  }
  std::vector<std::string_view> clones;
  if (size_t dot = in_.find('.'); dot != std::string_view::npos) {
    if (!CloneSuffixes(in_.substr(dot), &clones)) return std::nullopt;
    in_ = in_.substr(0, dot);
  }
  at_ = 2;
  NameEnd end;
  std::string_view member_qualifiers;
  uint32_t name;
  if (Peek() == 'N') {
    name = NestedName(&end, &member_qualifiers);
  } else {
    const bool in_std = Peek() == 'S' && Peek(1) == 't';
    if (in_std) at_ += 2;
    if (Peek() == 'C' || Peek() == 'D' || (Peek() == 'c' && Peek(1) == 'v')) return std::nullopt;
    name = UnqualifiedName(&end);
    if (!ok_) return std::nullopt;
    if (in_std) name = Add(Node::kNested, Text("std"), name);
    if (Peek() == 'I') {
      name = CandidateWithArgs(name);
      end.ends_in_template = true;
    }
  }
  if (!ok_) return std::nullopt;
  auto finish = [&]() -> std::optional<std::string> {
    if (!ok_) return std::nullopt;
    for (std::string_view clone : clones) {
      out_ += " [clone ";
      out_ += clone;
      out_ += ']';
    }
    return out_;
  };
  if (at_ == in_.size()) {  // a variable
    if (!member_qualifiers.empty()) return std::nullopt;
    Print(name);
    return finish();
  }
  // A function template's signature starts with its return type (not a constructor's).
  int64_t return_type = -1;
  if (end.ends_in_template) function_args_ = nodes_[name].right;
  if (end.ends_in_template && !end.ctor_dtor_or_conversion) {
    return_type = ValueType();
    if (!ok_) return std::nullopt;
    if (!ReturnTypeInReach(static_cast<uint32_t>(return_type))) return std::nullopt;
  }
  // "v" alone is an empty list; a parameter that stands for void (T_) is printed as one.
  const bool no_params = in_.size() - at_ == 1 && in_[at_] == 'v';
  const size_t first_param = pending_.size();
  if (no_params) {
    ++at_;
  } else {
    while (ok_ && at_ < in_.size()) {
      if (Peek() == 'v') return std::nullopt;  // void among other parameters
      const uint32_t param = ValueType();
      pending_.push_back(param);
      if (pending_.size() - first_param > kMaxListLength) return std::nullopt;
    }
    if (!ok_ || pending_.size() == first_param) return std::nullopt;
  }
  const uint32_t params = TakeList(first_param);
  if (return_type >= 0) {
    Print(static_cast<uint32_t>(return_type));
    out_ += ' ';
  }
  Print(name);
  out_ += '(';
  PrintList(params);
  out_ += ')';
  // Member function qualifiers, innermost first as libiberty prints them.
  for (size_t k = member_qualifiers.size(); k-- > 0;) out_ += QualifierText(member_qualifiers[k]);
  return finish();
}

}  // namespace

std::optional<std::string> DemangleItaniumSubset(std::string_view mangled) {
  thread_local Parser parser;  // its vectors keep their capacity from name to name
  parser.Reset(mangled);
  return parser.Demangle();
}

}  // namespace stacksym
