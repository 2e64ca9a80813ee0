// Fixture for the llvm-symbolizer drop-in test: each argument triggers one AddressSanitizer
// report (heap-use-after-free, global-buffer-overflow, stack-buffer-overflow) or one UBSan
// report (signed-overflow), with inlined C++ frames in the stack so the inline chains,
// demangled names and file:line:column answers are all compared.
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fixture {

int global_table[10] = {1, 2, 3};

__attribute__((noinline)) int ReadAt(const int* p, int i) { return p[i]; }

struct Holder {
  int* data;
  static inline int Peek(const Holder& h, int i) { return ReadAt(h.data, i); }
};

__attribute__((noinline)) int UseAfterFree() {
  Holder h{new int[8]()};
  delete[] h.data;
  return Holder::Peek(h, 3);
}

__attribute__((noinline)) int GlobalOverflow(int i) { return ReadAt(global_table, i); }

__attribute__((noinline)) int StackOverflow(int i) {
  int local[6] = {0};
  std::memset(local, 1, sizeof local);
  return ReadAt(local, i);
}

__attribute__((noinline)) int Overflow(int a) { return a + 0x7fffffff; }

}  // namespace fixture

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  int n = argc + 8;  // not a constant the compiler can see through
  if (!std::strcmp(argv[1], "use-after-free")) return fixture::UseAfterFree();
  if (!std::strcmp(argv[1], "global-overflow")) return fixture::GlobalOverflow(n);
  if (!std::strcmp(argv[1], "stack-overflow")) return fixture::StackOverflow(n - 4);
  if (!std::strcmp(argv[1], "signed-overflow")) return fixture::Overflow(n) & 1;
  return 2;
}
