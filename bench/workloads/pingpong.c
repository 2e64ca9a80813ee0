// Context-switch-heavy workload for bench/off_cpu_overhead.py: two threads bounce a byte
// through two pipes as fast as they can; every round trip is two sleeps and two wake-ups. It
// waits DELAY seconds (for a profiler to attach by pid), bounces for SECONDS, prints the
// round trips per second it managed ("ops_per_s N") and stays LINGER seconds more (a profiler
// that names the stacks at its end, from the live process, needs it then).
//   pingpong [SECONDS] [DELAY] [LINGER]
// Built -O2 without frame pointers, as Debian builds its programs.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) static int pass_on(int in, int out) {
  char c;
  if (read(in, &c, 1) != 1) return 0;
  return write(out, &c, 1) == 1;
}

__attribute__((noinline)) static void* peer_main(void* arg) {
  (void)arg;
  while (pass_on(ab[0], ba[1])) {
  }
  return NULL;
}

__attribute__((noinline)) static uint64_t bounce(double seconds) {
  uint64_t trips = 0;
  double end = now() + seconds;
  char c = 'x';
  while ((trips & 255) != 0 || now() < end) {
    if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) break;
    ++trips;
  }
  return trips;
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 2;
  double delay = argc > 2 ? atof(argv[2]) : 0;
  double linger = argc > 3 ? atof(argv[3]) : 0;
  if (pipe(ab) != 0 || pipe(ba) != 0) return 1;
  pthread_t peer;
  pthread_create(&peer, NULL, peer_main, NULL);
  if (delay > 0) usleep((useconds_t)(delay * 1e6));
  double start = now();
  uint64_t trips = bounce(seconds);
  double took = now() - start;
  close(ab[1]);
  pthread_join(peer, NULL);
  printf("ops_per_s %.0f\n", (double)trips / took);
  fflush(stdout);
  if (linger > 0) usleep((useconds_t)(linger * 1e6));
  return 0;
}
