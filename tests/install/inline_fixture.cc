// Built by tests/install/install_test.sh (step dropin_llvm16) with g++ and clang++ at -O2:
// inline chains (add inlined into mid inlined into work and Box::get) and loops, where gcc
// writes line-table discriminators (clang with -fdebug-info-for-profiling), for the
// drop-in's JSON CODE answers (Discriminator, StartFileName, StartLine, StartAddress).
// noipa: no ".isra" clones, whose names LLVM demangles differently ("(.isra.0)").
#include <cstdio>

static inline int add(int a, int b) { return a * b + (a ^ b); }

static inline __attribute__((always_inline)) int mid(int x) {
  int s = 0;
  for (int i = 0; i < x; ++i) s += add(i, x) > 3 ? add(x, i) : i;
  return s;
}

template <typename T>
struct Box {
  T v;
  __attribute__((noipa)) T get(int k) const {
    T r = v;
    for (int i = 0; i < k; i++) r += (i & 1) ? mid(i) : v;
    return r;
  }
};

__attribute__((noipa)) int work(int n) {
  int t = 0;
  for (int i = 0; i < n; ++i) {
    if (i % 3)
      t += mid(i);
    else
      t -= mid(n - i);
  }
  return t;
}

int main(int argc, char**) {
  Box<long> b{argc};
  std::printf("%d %ld\n", work(argc * 10), b.get(argc));
  return 0;
}
