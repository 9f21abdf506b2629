/* The host's slow spells, seen by the pipe switch and the host reference at
 * once, for bench/spells.py.
 *
 *   spells SECONDS CPU
 *
 * Two threads pinned to CPU play ping-pong over two pipes (one switch per
 * hand-off, as ctxbench's switch.pipe between=threads cpus=same). Until
 * SECONDS have passed, the main thread times 128 getppid system calls (the
 * engine's host reference) and then a batch of 1500 round trips (about 10 ms
 * here), and prints one line per batch:
 *
 *   MS_SINCE_START REFERENCE_NS NS_PER_SWITCH
 *
 * Timed with CLOCK_MONOTONIC_RAW. No statistics here: spells.py does them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];
static int cpu;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void pin(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    perror("sched_setaffinity");
    exit(2);
  }
}

static void* partner(void* unused) {
  (void)unused;
  pin();
  char c;
  while (read(ping[0], &c, 1) == 1)
    if (write(pong[1], &c, 1) != 1) break;
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: spells SECONDS CPU\n");
    return 2;
  }
  const double seconds = atof(argv[1]);
  cpu = atoi(argv[2]);
  if (pipe(ping) != 0 || pipe(pong) != 0) {
    perror("pipe");
    return 1;
  }
  pin();
  pthread_t thread;
  if (pthread_create(&thread, NULL, partner, NULL) != 0) return 1;
  const int round_trips = 1500;
  char c = 'x';
  const double start = now_ns();
  while (now_ns() - start < seconds * 1e9) {
    const double r0 = now_ns();
    for (int i = 0; i < 128; ++i) syscall(SYS_getppid);
    const double r1 = now_ns();
    for (int i = 0; i < round_trips; ++i)
      if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) return 1;
    const double s1 = now_ns();
    printf("%.1f %.0f %.1f\n", (r0 - start) / 1e6, r1 - r0, (s1 - r1) / round_trips / 2);
  }
  close(ping[1]);
  pthread_join(thread, NULL);
  return ferror(stdout) || fflush(stdout) != 0;
}
