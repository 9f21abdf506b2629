/* Minimal reference loops for bench/peers.py: the classic "time N calls in a
 * tight loop" measurement, written without any of ctxbench's harness, so the
 * engine's figures can be held against the plainest possible code.
 *
 *   ref_loops MODE [CALLS_PER_BATCH] [BATCHES] [threaded]
 *
 * MODE: read (libc read of 1 byte from /dev/zero), read_syscall (the same
 * through syscall(SYS_read)), write (libc write of 1 byte to /dev/null),
 * write_syscall, getppid (libc getppid), getppid_syscall
 * (syscall(SYS_getppid)), fork (fork + _exit(0) in the child + waitpid),
 * condvar and condvar_doors (a thread hand-off, below).
 *
 * Prints one line: MODE median_ns_per_call min_ns_per_call, where the
 * median and minimum are over BATCHES batches, each timed with
 * CLOCK_MONOTONIC around CALLS_PER_BATCH calls. No pinning, no warm-up
 * beyond one untimed batch: that is the point. With "threaded" the process
 * first starts one thread that only sleeps: a multi-threaded process shares
 * its descriptor table, so the kernel's fd lookup in read/write takes a
 * reference on the file instead of its single-threaded fast path.
 *
 * The two condvar modes time a round trip between the main thread and one
 * partner thread and print ns per switch (half a round trip); run them under
 * taskset -c CPU for one CPU. condvar is the protocol of Bendersky's
 * thread-switch-condvar: one mutex held by both sides except inside
 * pthread_cond_wait, one condition variable, each side waits then signals,
 * no flag. condvar_doors is the engine's switch.condvar protocol: one mutex,
 * one condition variable and one flag per direction; to send, lock, set the
 * flag, signal, unlock; to receive, lock, wait until the flag is set, clear
 * it, unlock. Measuring both in the same loop tells how much of a gap to the
 * peer is the protocol and how much the engine. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static int zero_fd = -1, null_fd = -1;
static char byte;

static int fork_once(void) {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  if (pid < 0) return -1;
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* One tight loop per mode, so nothing but the call itself is in it. */
#define LOOP(CALL, OK)              \
  {                                 \
    for (long i = 0; i < calls; ++i) \
      if (!((CALL)OK)) return -1;   \
    return 0;                       \
  }

static int batch(const char* mode, long calls) {
  if (!strcmp(mode, "read")) LOOP(read(zero_fd, &byte, 1), == 1)
  if (!strcmp(mode, "read_syscall")) LOOP(syscall(SYS_read, zero_fd, &byte, 1), == 1)
  if (!strcmp(mode, "write")) LOOP(write(null_fd, &byte, 1), == 1)
  if (!strcmp(mode, "write_syscall")) LOOP(syscall(SYS_write, null_fd, &byte, 1), == 1)
  if (!strcmp(mode, "getppid")) LOOP(getppid(), > 0)
  if (!strcmp(mode, "getppid_syscall")) LOOP(syscall(SYS_getppid), > 0)
  if (!strcmp(mode, "fork")) LOOP(fork_once(), == 0)
  return -2;
}

/* ---- thread hand-off over a condition variable ---- */
static pthread_mutex_t cv_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv_one = PTHREAD_COND_INITIALIZER;
static pthread_cond_t cv_door[2] = {PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};
static int cv_flag[2];
static long cv_round_trips; /* the partner's whole count, every batch included */
static int cv_done;         /* set by main at the end: a partner left waiting by a
                               spurious wake-up (the protocol has no flag) leaves */

static void door_post(int door) {
  pthread_mutex_lock(&cv_mutex);
  cv_flag[door] = 1;
  pthread_cond_signal(&cv_door[door]);
  pthread_mutex_unlock(&cv_mutex);
}

static void door_wait(int door) {
  pthread_mutex_lock(&cv_mutex);
  while (!cv_flag[door]) pthread_cond_wait(&cv_door[door], &cv_mutex);
  cv_flag[door] = 0;
  pthread_mutex_unlock(&cv_mutex);
}

static void* one_cv_partner(void* unused) {
  (void)unused;
  pthread_mutex_lock(&cv_mutex); /* held by main until its first wait */
  pthread_cond_signal(&cv_one);  /* the partner signals first */
  for (long i = 0; i < cv_round_trips && !cv_done; ++i) {
    pthread_cond_wait(&cv_one, &cv_mutex);
    pthread_cond_signal(&cv_one);
  }
  pthread_mutex_unlock(&cv_mutex);
  return NULL;
}

static void* doors_partner(void* unused) {
  (void)unused;
  for (long i = 0; i < cv_round_trips; ++i) {
    door_wait(0);
    door_post(1);
  }
  return NULL;
}

/* BATCHES + 1 batches (the first untimed) of CALLS round trips; per_call
 * gets ns per switch, two switches per round trip. */
static int condvar_batches(int doors, long calls, int batches, double* per_call) {
  cv_round_trips = calls * (long)(batches + 1);
  pthread_t partner;
  if (!doors) pthread_mutex_lock(&cv_mutex);
  if (pthread_create(&partner, NULL, doors ? doors_partner : one_cv_partner, NULL) != 0) return -1;
  for (int b = -1; b < batches; ++b) {
    const double start = now_ns();
    for (long i = 0; i < calls; ++i) {
      if (doors) {
        door_post(0);
        door_wait(1);
      } else {
        pthread_cond_wait(&cv_one, &cv_mutex);
        pthread_cond_signal(&cv_one);
      }
    }
    const double elapsed = now_ns() - start;
    if (b >= 0) per_call[b] = elapsed / (2.0 * (double)calls);
  }
  if (!doors) {
    cv_done = 1;
    pthread_cond_signal(&cv_one);
    pthread_mutex_unlock(&cv_mutex);
  }
  return pthread_join(partner, NULL) == 0 ? 0 : -1;
}

static void* sleeper(void* unused) {
  (void)unused;
  for (;;) pause();
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: ref_loops MODE [CALLS_PER_BATCH] [BATCHES]\n");
    return 2;
  }
  const char* mode = argv[1];
  const long calls = argc > 2 ? atol(argv[2]) : 10000;
  const int batches = argc > 3 ? atoi(argv[3]) : 31;
  if (calls <= 0 || batches <= 0) {
    fprintf(stderr, "ref_loops: CALLS_PER_BATCH and BATCHES must be positive\n");
    return 2;
  }
  if (argc > 4 && !strcmp(argv[4], "threaded")) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, sleeper, NULL) != 0) {
      fprintf(stderr, "ref_loops: pthread_create failed\n");
      return 1;
    }
  }
  zero_fd = open("/dev/zero", O_RDONLY);
  null_fd = open("/dev/null", O_WRONLY);
  if (zero_fd < 0 || null_fd < 0) {
    perror("ref_loops: open /dev/zero or /dev/null");
    return 1;
  }
  const int condvar = !strcmp(mode, "condvar"), doors = !strcmp(mode, "condvar_doors");
  if (!condvar && !doors && batch(mode, 1) == -2) {
    fprintf(stderr, "ref_loops: unknown mode '%s'\n", mode);
    return 2;
  }
  double* per_call = calloc((size_t)batches, sizeof *per_call);
  if (!per_call) return 1;
  if (condvar || doors) {
    if (condvar_batches(doors, calls, batches, per_call) != 0) {
      fprintf(stderr, "ref_loops: %s failed\n", mode);
      return 1;
    }
  }
  for (int b = -1; b < batches && !condvar && !doors; ++b) { /* batch -1: untimed warm-up */
    const double start = now_ns();
    if (batch(mode, calls) != 0) {
      fprintf(stderr, "ref_loops: %s failed\n", mode);
      return 1;
    }
    const double elapsed = now_ns() - start;
    if (b >= 0) per_call[b] = elapsed / (double)calls;
  }
  qsort(per_call, (size_t)batches, sizeof *per_call, compare_doubles);
  if (printf("%s %.2f %.2f\n", mode, per_call[batches / 2], per_call[0]) < 0 || fflush(stdout) != 0) return 1;
  free(per_call);
  return 0;
}
