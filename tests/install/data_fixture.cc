// Fixture for the drop-in's DATA and FRAME answers (install_test.sh dropin_llvm16): variables
// with fixed addresses of every kind the declaration lookup distinguishes, and functions with
// locals (parameters, arrays, blocks, an inlined function with its own locals). Compiled by
// the test itself with g++ (DWARF 5, whose DW_AT_decl_file is often DW_FORM_implicit_const,
// DWARF 4, -O0 and -O2) and clang++ (DWARF 5 with DW_OP_addrx), then asked about at and inside
// each variable and along the code.
#include <cstdio>
#include <cstring>

int g_int = 1;                     // plain global
static int s_table[20] = {1};      // file-static array (upper bound in DW_FORM_data1)
char g_big[300] = "x";             // upper bound in DW_FORM_data2
char g_mid[200] = "m";             // upper bound 199 in DW_FORM_data1: LLVM reads it as -57
int g_matrix[3][4] = {{1}};        // two subranges
const char* g_ptr = "hello";       // pointer
const char g_rodata[] = "rodata";  // in .rodata
struct Pair {
  int a;
  double b;
} g_pair = {1, 2};
struct Empty {};
Empty g_empty;                  // size 1 in C++
__thread int g_tls = 4;         // TLS: no fixed address, no answer from DWARF
typedef volatile long Counter;  // through a typedef and a qualifier
Counter g_counter = 7;

namespace ns {
int nsv = 3;  // declaration in the namespace, definition with DW_AT_specification
struct S {
  static long member;  // class static
};
long S::member = 5;
namespace {
int anon = 9;
}
}  // namespace ns

__attribute__((noinline)) int Bump(int x) {
  static int counter = 0;  // static in a function
  counter += x;
  return counter + s_table[x % 20] + g_big[x % 300] + g_mid[x % 200] + g_tls + ns::anon;
}

static inline int Inlined(int a) {
  int scratch[4];
  std::memset(scratch, a, sizeof scratch);
  return scratch[1] + a;
}

__attribute__((noinline)) int Locals(int x, const char* s) {
  char buf[32];
  std::strncpy(buf, s, sizeof buf - 1);
  buf[31] = 0;
  long y = x * 2;
  for (int i = 0; i < 2; ++i) {
    Pair p = {i, 1.0};
    y += p.a + Inlined(i);
  }
  return Inlined(x) + buf[3] + static_cast<int>(y);
}

__attribute__((noinline)) void Sink(long* p) { std::printf("%ld\n", *p); }

// At -O1/-O2 gcc keeps `a` in a register, then on the stack: a location list whose second
// entry is DW_OP_fbreg (FRAME takes its offset; in split DWARF from .debug_loclists.dwo or
// DWARF 4's .debug_loc.dwo).
__attribute__((noinline)) long Spill(long a, long b) {
  long t = a * b;
  long arr[4] = {a, b, t, a + b};
  Sink(&arr[1]);
  t += arr[2];
  return t;
}

int main(int argc, char** argv) {
  if (argc > 5) return Locals(argc, argv[0]) + static_cast<int>(Spill(argc, 2));
  std::printf("%p %p %p %p\n", static_cast<void*>(&ns::nsv), static_cast<void*>(&ns::S::member),
              static_cast<const void*>(g_rodata), static_cast<void*>(&g_empty));
  return Bump(argc) + g_int + *g_ptr + g_pair.a + g_matrix[argc % 3][1] + int(g_counter);
}
