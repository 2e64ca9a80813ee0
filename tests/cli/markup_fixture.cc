// Symbolized by llvm_markup_test through --filter-markup, by the drop-in and by
// llvm-symbolizer 16: inline chains (scale inlined into accumulate inlined into
// markup::Worker::run) for {{{bt}}}, mangled names for {{{pc}}}, and globals in .data, .bss and
// .rodata for {{{data}}}. noipa: no clones, whose names LLVM writes its own way.
#include <cstdio>

int g_counter = 7;
long g_table[32];
const char g_message[] = "markup fixture";

static inline __attribute__((always_inline)) int scale(int a, int b) { return a * b + (a ^ b); }

static inline __attribute__((always_inline)) int accumulate(int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += scale(i, n) > 3 ? scale(n, i) : i;
  return s;
}

namespace markup {
struct Worker {
  int base;
  __attribute__((noipa)) long run(int n) const {
    long r = base;
    for (int i = 0; i < n; i++) {
      r += (i & 1) ? accumulate(i) : g_counter;
      g_table[i & 31] += r;
    }
    return r;
  }
};
}  // namespace markup

__attribute__((noipa)) int tally(int n) {
  static int calls = 0;
  ++calls;
  return accumulate(n) + calls;
}

int main(int argc, char**) {
  markup::Worker w{argc};
  std::printf("%s %d %ld\n", g_message, tally(argc * 10), w.run(argc));
  return 0;
}
