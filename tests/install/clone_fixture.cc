// Built by tests/install/install_test.sh (steps dropin and dropin_llvm16) with g++ -O2 and
// -O3: functions that gcc clones, so that the symbol table names them with clone suffixes
// (_Z...isra.0, .constprop.0, .part.0, .cold), which LLVM's demangler prints as
// "f(int) (.isra.0)" and libiberty as "f(int) [clone .isra.0]".
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

struct Big {
  int a[16];
};

// A by-value aggregate of which only two fields are read: .isra.
__attribute__((noinline)) static int Isra(Big b) { return b.a[3] * 7 + b.a[5]; }

// Always called with y == 5: .constprop.
__attribute__((noinline)) static int ConstProp(int x, int y) {
  for (int i = 0; i < y; ++i) x = x * 3 + i;
  return x;
}

// The unlikely branch goes to .cold.
__attribute__((noinline)) int Cold(int x) {
  if (__builtin_expect(x > 1000, 0)) throw std::runtime_error("too big");
  return x + 1;
}

// A cheap head inlined into the callers, the rest outlined as .part.
static int Part(int x) {
  if (x > 0) return x;
  volatile int s = 0;
  for (int i = 0; i < 100; ++i) s += i * x;
  std::printf("%d\n", static_cast<int>(s));
  return s;
}

namespace ns {
// A member function cloned too.
struct Widget {
  __attribute__((noinline)) static int Scale(Big b) { return b.a[1] * 3; }
};
}  // namespace ns

int main(int argc, char**) {
  Big b{};
  b.a[3] = argc;
  b.a[1] = argc + 2;
  return Isra(b) + ConstProp(argc, 5) + ConstProp(argc + 1, 5) + Cold(argc) + Part(argc) +
         Part(-argc) + ns::Widget::Scale(b);
}
