// Blocking workload for bench/off_cpu_overhead.py: THREADS threads each loop over a little
// work in nested calls, a short critical section under one shared mutex (contended: futex
// waits) and a 50 µs nanosleep; the threads' completed loops per second are the throughput
// ("ops_per_s N"). It waits DELAY seconds first (for a profiler to attach by pid) and stays
// LINGER seconds after (for one that names the stacks from the live process at its end).
//   blocking [SECONDS] [DELAY] [LINGER] [THREADS]
// Built -O2 without frame pointers, as Debian builds its programs: only .eh_frame gives the
// callers of the waiting code.
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop;
static uint64_t shared;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) static uint64_t work(uint64_t x, int n) {
  for (int i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

__attribute__((noinline)) static void update_shared(uint64_t x) {
  pthread_mutex_lock(&lock);
  shared = work(shared ^ x, 2000);
  pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) static void pause_briefly(void) {
  struct timespec ts = {0, 50000};
  nanosleep(&ts, NULL);
}

__attribute__((noinline)) static uint64_t step(uint64_t x) {
  x = work(x, 4000);
  update_shared(x);
  pause_briefly();
  return x + 1;
}

__attribute__((noinline)) static void* worker(void* arg) {
  uint64_t x = (uintptr_t)arg, loops = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    x = step(x);
    ++loops;
  }
  return (void*)(uintptr_t)loops;
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 2;
  double delay = argc > 2 ? atof(argv[2]) : 0;
  double linger = argc > 3 ? atof(argv[3]) : 0;
  int threads = argc > 4 ? atoi(argv[4]) : 4;
  if (threads < 1 || threads > 64) threads = 4;
  if (delay > 0) usleep((useconds_t)(delay * 1e6));
  pthread_t t[64];
  double start = now();
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, worker, (void*)(uintptr_t)i);
  usleep((useconds_t)(seconds * 1e6));
  atomic_store(&stop, 1);
  uint64_t loops = 0;
  for (int i = 0; i < threads; ++i) {
    void* r;
    pthread_join(t[i], &r);
    loops += (uintptr_t)r;
  }
  printf("ops_per_s %.0f\n", (double)loops / (now() - start));
  fflush(stdout);
  if (linger > 0) usleep((useconds_t)(linger * 1e6));
  return 0;
}
