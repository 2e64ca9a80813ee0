/* stacksym demo workload: a small multi-threaded program with a recognizable hot path.
 *
 *   crunch  (2 threads): crunch_thread → compute_checksums → checksum_block
 *                        → mix_round (inlined) ........................ the hot path, ~60%
 *   sorter  (1 thread):  sort_thread → sort_batches → qsort (libc) → compare_values
 *   writer  (1 thread):  io_thread → write_chunks → write(2) → kernel
 *
 * Usage: workload [SECONDS]   (default 5). Prints its own run time and a checksum, so that
 * the work cannot be optimized away and profiling overhead can be read off.
 * Build with frame pointers, leaf functions included, so every stack walker can follow it:
 *   clang -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread \
 *     -o workload workload.c
 * (GCC 12 builds leaf functions without a frame even when asked not to, which hides the
 * caller of the hot leaf from frame-pointer unwinding; clang honours the flag.)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* noipa: GCC would otherwise see that the checksum functions are pure and compute them once. */
#if defined(__GNUC__) && !defined(__clang__)
#define NOT_INLINED __attribute__((noinline, noipa))
#else
#define NOT_INLINED __attribute__((noinline))
#endif

static volatile int stop_flag;
static volatile uint64_t sink;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One round of a 64-bit mixing function; always inlined into checksum_block. */
static inline __attribute__((always_inline)) uint64_t mix_round(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

NOT_INLINED uint64_t checksum_block(const uint64_t* block, size_t n) {
  uint64_t h = 0;
  for (size_t i = 0; i < n; i++) h = mix_round(h, block[i]);
  return h;
}

NOT_INLINED uint64_t compute_checksums(const uint64_t* data, size_t n) {
  uint64_t total = 0;
  for (size_t off = 0; off + 512 <= n; off += 512) total += checksum_block(data + off, 512);
  return total;
}

static void* crunch_thread(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "crunch");
  static uint64_t data[1 << 14];
  for (size_t i = 0; i < sizeof data / sizeof data[0]; i++) data[i] = i * 2654435761u;
  uint64_t total = 0;
  while (!stop_flag) {
    total += compute_checksums(data, sizeof data / sizeof data[0]);
    data[total % (sizeof data / sizeof data[0])] ^= total; /* new input every round */
  }
  sink += total;
  return NULL;
}

NOT_INLINED int compare_values(const void* a, const void* b) {
  uint32_t x = *(const uint32_t*)a, y = *(const uint32_t*)b;
  return (x > y) - (x < y);
}

NOT_INLINED void sort_batches(uint32_t* values, size_t n, uint32_t* seed) {
  for (size_t i = 0; i < n; i++) values[i] = *seed = *seed * 1103515245u + 12345u;
  qsort(values, n, sizeof values[0], compare_values);
}

static void* sort_thread(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "sorter");
  static uint32_t values[4096];
  uint32_t seed = 1;
  while (!stop_flag) sort_batches(values, sizeof values / sizeof values[0], &seed);
  sink += values[0];
  return NULL;
}

NOT_INLINED void write_chunks(int fd) {
  static char chunk[256];
  for (int i = 0; i < 64; i++) {
    if (write(fd, chunk, sizeof chunk) < 0) return;
  }
}

static void* io_thread(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "writer");
  int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  while (!stop_flag) write_chunks(fd);
  close(fd);
  return NULL;
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 5.0;
  if (!(seconds > 0) || seconds > 3600) {
    fprintf(stderr, "usage: %s [SECONDS]   (0 < SECONDS <= 3600)\n", argv[0]);
    return 2;
  }
  void* (*bodies[])(void*) = {crunch_thread, crunch_thread, sort_thread, io_thread};
  enum { kThreads = sizeof bodies / sizeof bodies[0] };
  pthread_t threads[kThreads];
  double start = now_seconds();
  for (int i = 0; i < kThreads; i++) {
    if (pthread_create(&threads[i], NULL, bodies[i], NULL) != 0) {
      perror("pthread_create");
      return 1;
    }
  }
  while (now_seconds() - start < seconds) usleep(10000);
  stop_flag = 1;
  for (int i = 0; i < kThreads; i++) pthread_join(threads[i], NULL);
  printf("workload: %d threads ran %.3f s (checksum %llx)\n", kThreads, now_seconds() - start,
         (unsigned long long)sink);
  return 0;
}
