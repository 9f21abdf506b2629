/* ctxbench-forkloop: the minimal parent for create.fork_minimal_parent. A
 * static program with no libraries to map, so fork copies almost nothing but
 * the kernel's own per-process state: the figure beside create.fork (whose
 * parent is the engine, with its libraries, heap and threads' stacks) shows
 * what the parent's size costs.
 *
 * Protocol on stdin and stdout (pipes from the engine): read a 64-bit count
 * k; fork k children that each _exit(0) at once, reaping each before the
 * next fork; write one status byte (0: every child exited 0; 1: a child
 * failed; 2: fork failed; 3: waitpid failed). Exit 0 at end of input. The
 * engine times from its write of k to the status byte, so one pipe round
 * trip is spread over k forks (k is calibrated to last milliseconds). */
#include <errno.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

static int read_count(uint64_t *count) {
  size_t got = 0;
  while (got < sizeof *count) {
    const ssize_t n = read(0, (char *)count + got, sizeof *count - got);
    if (n == 0) return 0;
    if (n < 0) {
      if (errno == EINTR) continue;
      return 0;
    }
    got += (size_t)n;
  }
  return 1;
}

static unsigned char fork_exit_wait(uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) {
    const pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) _exit(0);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
      if (errno != EINTR) return 3;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  return 0;
}

int main(void) {
  uint64_t count = 0;
  while (read_count(&count)) {
    const unsigned char status = fork_exit_wait(count);
    while (write(1, &status, 1) != 1)
      if (errno != EINTR) return 1;
  }
  return 0;
}
