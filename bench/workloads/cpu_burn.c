// CPU-bound workload for bench/record_overhead.sh: THREADS threads each run a fixed amount of
// work through a few call levels (so stacks have depth), then the program prints its own
// wall-clock run time. Fixed work, not fixed time: profiling overhead shows as a longer time.
//   cpu_burn [KILO_ITERATIONS] [THREADS]   (an iteration is 1000 multiply-adds)
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long g_iterations;

__attribute__((noinline)) static uint64_t burn_leaf(uint64_t x) {
  for (int i = 0; i < 1000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}
__attribute__((noinline)) static uint64_t burn_mid(uint64_t x) { return burn_leaf(x) ^ (x >> 7); }
__attribute__((noinline)) static uint64_t burn_top(uint64_t x) { return burn_mid(x) + 1; }

static void* worker(void* arg) {
  uint64_t x = (uintptr_t)arg;
  for (long i = 0; i < g_iterations; ++i) x = burn_top(x);
  return (void*)(uintptr_t)x;
}

int main(int argc, char** argv) {
  double kilo = argc > 1 ? atof(argv[1]) : 300.0;
  long threads = argc > 2 ? atol(argv[2]) : sysconf(_SC_NPROCESSORS_ONLN);
  if (threads < 1) threads = 1;
  g_iterations = (long)(kilo * 1000.0);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  pthread_t t[256];
  if (threads > 256) threads = 256;
  for (long i = 0; i < threads; ++i) pthread_create(&t[i], NULL, worker, (void*)(uintptr_t)i);
  uint64_t sum = 0;
  for (long i = 0; i < threads; ++i) {
    void* r;
    pthread_join(t[i], &r);
    sum += (uintptr_t)r;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("elapsed_s %.4f checksum %llu\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9,
         (unsigned long long)sum);
  return 0;
}
