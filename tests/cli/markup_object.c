/* An object file (compiled with -c: no build ID note) that llvm_markup_test places under a
 * .build-id/ path, as LLVM's markup tests place theirs: functions only, all in .text, so that
 * llvm-symbolizer and the drop-in look offsets up among the same symbols. An inline chain
 * (twice inlined into step) for {{{bt}}}. */
static inline __attribute__((always_inline)) int twice(int x) { return x * 2 + (x >> 3); }

static inline __attribute__((always_inline)) int around(int x) {
  int s = 0;
  for (int i = 0; i < x; ++i) s += twice(i ^ x);
  return s;
}

__attribute__((noinline)) int step(int n) { return around(n) - n; }

__attribute__((noinline)) int walk(int n) {
  int t = 0;
  for (int i = 0; i < n; ++i) t += step(i) & 7;
  return t;
}
