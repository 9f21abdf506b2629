#!/usr/bin/env bash
# Records the runs that `compare --why`, `compare --pair` and `history --changes`
# are tested on (python/tests/fixtures/why/): pairs of quick runs in which one
# thing really changed between A and B, and two histories of 20 quick runs.
#
#   bench/why_fixtures.sh [OUTDIR]     (default OUTDIR: why-fixtures-out)
#
# Run it as root on a quiet machine (the project's quiet protocol: hold
# /work/QUIET while it runs). ENGINE (default build/engine/ctxbench-engine)
# and SECCOMP_EXEC (default: ctxbench-seccomp-exec beside the engine).
# SHARED=1: the machine is shared and cannot be made quiet, so everything runs
# in a cpu cgroup of its own with the largest weight (cgroup v1 cpu.shares
# 262144, or v2 cpu.weight 10000; removed afterwards): the engine resets its
# tasks' nice value, a cgroup's weight it keeps. Every run of A and of B gets
# the same, and the cgroup adds one level to the scheduler's pick.
#
# The pairs (each A then B, back to back):
#   seccomp_{a,b}     B runs under `ctxbench-seccomp-exec allow --` (a filter
#                     evaluated on every system call)
#   tracepoints_{a,b} B runs while a tracefs instance records sched_switch and
#                     sched_wakeup (the instance is removed afterwards); both
#                     with --trace
#   policy_{a,b}      --param policy=normal against policy=batch (--trace)
#   between_{a,b}     --between threads against --between threads,processes
#                     (B holds the thread twin its own address-space part needs)
#   affinity_{a,b}    --cpus same (pinned to one CPU) against --cpus any (no affinity)
#   host              the selection of fixtures/other_machine.jsonl (the QEMU
#                     guest of bench/second_machine.sh), on this machine
#   idle_{free,held}  a default cross-CPU run (idle free and held variants, as
#                     root) against one with --hold-idle
# The histories, each 20 runs of one selection:
#   history_change/NN.jsonl   runs 11 to 20 under `ctxbench-seccomp-exec allow --`
#   history_same/NN.jsonl     20 identical runs
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-why-fixtures-out}
engine=${ENGINE:-$here/build/engine/ctxbench-engine}
seccomp=${SECCOMP_EXEC:-$(dirname "$engine")/ctxbench-seccomp-exec}
tracefs=/sys/kernel/tracing
instance=$tracefs/instances/ctxbench-why-$$
mounted_here=""

cgroup=""
remove_instance() {
  if [ -d "$instance" ]; then
    echo 0 > "$instance/tracing_on" || true
    : > "$instance/set_event" || true
    rmdir "$instance" || true
  fi
  if [ -n "$mounted_here" ]; then umount "$tracefs" || true; fi
  mounted_here=""
}
cleanup() {
  remove_instance
  if [ -n "$cgroup" ] && [ -d "$cgroup" ]; then
    echo $$ > "$(dirname "$cgroup")/cgroup.procs" || true
    rmdir "$cgroup" || true
  fi
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || {
  echo "why_fixtures: run as root (idle=held, the traced pass and tracefs need it)" >&2
  exit 2
}
mkdir -p "$out/history_change" "$out/history_same"
if [ -n "${SHARED:-}" ]; then
  if [ -d /sys/fs/cgroup/cpu ]; then
    cgroup=/sys/fs/cgroup/cpu/ctxbench-why-$$
    mkdir "$cgroup" && echo 262144 > "$cgroup/cpu.shares"
  else
    cgroup=/sys/fs/cgroup/ctxbench-why-$$
    mkdir "$cgroup" && echo 10000 > "$cgroup/cpu.weight"
  fi
  echo $$ > "$cgroup/cgroup.procs"
fi
run() { # FILE ARGS...: one quick run, the engine's output unedited
  local file=$1
  shift
  "$@" --quick --json --out "$out/$file"
  echo "why_fixtures: $file $(date -u +%H:%M:%S)" >&2
}

SWITCH=(switch.pipe --between threads --cpus same --param policy=normal)
run seccomp_a.jsonl "$engine" run syscall.enosys syscall.getppid "${SWITCH[@]}"
run seccomp_b.jsonl "$seccomp" allow -- "$engine" run syscall.enosys syscall.getppid "${SWITCH[@]}"

if [ ! -e "$tracefs/set_event" ]; then
  mount -t tracefs nodev "$tracefs"
  mounted_here=yes
fi
TRACED=(syscall.enosys switch.pipe --between threads --cpus same,cross --param policy=normal --param idle=free --trace)
run tracepoints_a.jsonl "$engine" run "${TRACED[@]}"
mkdir "$instance"
echo sched:sched_switch > "$instance/set_event"
echo sched:sched_wakeup >> "$instance/set_event"
echo 1 > "$instance/tracing_on"
run tracepoints_b.jsonl "$engine" run "${TRACED[@]}"
remove_instance

POLICY=(syscall.enosys switch.pipe --between threads --cpus same --trace)
run policy_a.jsonl "$engine" run "${POLICY[@]}" --param policy=normal
run policy_b.jsonl "$engine" run "${POLICY[@]}" --param policy=batch

BETWEEN=(syscall.enosys switch.futex switch.pipe --cpus same --param policy=normal)
run between_a.jsonl "$engine" run "${BETWEEN[@]}" --between threads
run between_b.jsonl "$engine" run "${BETWEEN[@]}" --between threads,processes

run affinity_a.jsonl "$engine" run syscall.enosys switch.burst switch.pipe --between threads --param policy=normal --cpus same
run affinity_b.jsonl "$engine" run syscall.enosys switch.burst switch.pipe --between threads --param policy=normal --cpus any

run idle_free.jsonl "$engine" run syscall.enosys switch.pipe switch.futex --cpus cross --param policy=normal
run idle_held.jsonl "$engine" run syscall.enosys switch.pipe switch.futex --cpus cross --param policy=normal --hold-idle

# This machine against the QEMU guest of bench/second_machine.sh
# (fixtures/other_machine.jsonl): the guest's selection, here.
run host.jsonl "$engine" run 'syscall.*' switch.pipe create.pthread_scope_process

HISTORY=(syscall.enosys syscall.getppid syscall.read uswitch.asm timer.rdtscp switch.pipe --between threads --cpus same --param policy=normal)
for n in $(seq -w 1 20); do
  run "history_same/$n.jsonl" "$engine" run "${HISTORY[@]}"
done
for n in $(seq -w 1 20); do
  if [ "$n" -ge 11 ]; then
    run "history_change/$n.jsonl" "$seccomp" allow -- "$engine" run "${HISTORY[@]}"
  else
    run "history_change/$n.jsonl" "$engine" run "${HISTORY[@]}"
  fi
done
