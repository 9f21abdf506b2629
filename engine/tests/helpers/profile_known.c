/* A program whose events are known, for the tests of `ctxbench-engine
 * profile`: each mode does one thing a given number of times, and nothing
 * else but a C program's start and exit (which mode `none` does alone, so a
 * test takes the difference).
 *
 *   none                 starts and exits
 *   getppid K            K getppid calls (raw syscalls: libc caches nothing here)
 *   pages P              writes one byte to each of P fresh anonymous pages (P minor faults)
 *   threads T            creates and joins T threads, one after the other
 *   thread-pingpong N C  N round trips over two pipes between two threads;
 *   process-pingpong N C the same between two processes. C: "same" pins both
 *                        to the first allowed CPU (each round trip = two
 *                        voluntary switches and two same-CPU wake-ups),
 *                        "cross" each to its own (two cross-CPU wake-ups).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int to_partner[2], to_main[2];
static long round_trips;
static int partner_cpu = -1;

static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    perror("sched_setaffinity");
    exit(1);
  }
}

static void partner_loop(void) {
  char byte;
  if (partner_cpu >= 0) pin(partner_cpu);
  for (long i = 0; i < round_trips; ++i) {
    if (read(to_partner[0], &byte, 1) != 1 || write(to_main[1], &byte, 1) != 1) exit(1);
  }
}

static void* partner_thread(void* unused) {
  (void)unused;
  partner_loop();
  return NULL;
}

static void* nothing(void* unused) { return unused; }

static void main_loop(void) {
  char byte = 'x';
  for (long i = 0; i < round_trips; ++i)
    if (write(to_partner[1], &byte, 1) != 1 || read(to_main[0], &byte, 1) != 1) exit(1);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: profile_known none | getppid K | pages P | threads T | {thread,process}-pingpong N same|cross\n");
    return 2;
  }
  const char* mode = argv[1];
  const long n = argc > 2 ? atol(argv[2]) : 0;
  if (strcmp(mode, "none") == 0) return 0;
  if (strcmp(mode, "getppid") == 0) {
    for (long i = 0; i < n; ++i) syscall(SYS_getppid);
    return 0;
  }
  if (strcmp(mode, "pages") == 0) {
    const long page = sysconf(_SC_PAGESIZE);
    char* area = mmap(NULL, (size_t)(n * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED) return 1;
    madvise(area, (size_t)(n * page), MADV_NOHUGEPAGE); /* one fault a page, not one a 2 MiB */
    for (long i = 0; i < n; ++i) area[i * page] = 1;
    return 0;
  }
  if (strcmp(mode, "threads") == 0) {
    for (long i = 0; i < n; ++i) {
      pthread_t thread;
      if (pthread_create(&thread, NULL, nothing, NULL) != 0 || pthread_join(thread, NULL) != 0) return 1;
    }
    return 0;
  }
  const int threads = strcmp(mode, "thread-pingpong") == 0;
  if (!threads && strcmp(mode, "process-pingpong") != 0) {
    fprintf(stderr, "profile_known: unknown mode '%s'\n", mode);
    return 2;
  }
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof allowed, &allowed);
  int first = -1, second = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) {
      if (first < 0)
        first = cpu;
      else if (second < 0)
        second = cpu;
    }
  const int cross = argc > 3 && strcmp(argv[3], "cross") == 0;
  if (cross && second < 0) {
    fprintf(stderr, "profile_known: cross needs two allowed CPUs\n");
    return 2;
  }
  pin(first);
  partner_cpu = cross ? second : first;
  round_trips = n;
  if (pipe(to_partner) != 0 || pipe(to_main) != 0) return 1;
  if (threads) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, partner_thread, NULL) != 0) return 1;
    main_loop();
    pthread_join(thread, NULL);
    return 0;
  }
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    partner_loop();
    _exit(0);
  }
  main_loop();
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
