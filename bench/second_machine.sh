#!/usr/bin/env bash
# Record engine runs on a second, genuinely different machine: a QEMU guest
# (KVM where the host has hardware virtualization, TCG emulation otherwise)
# booting Debian's stock kernel (linux-image-amd64) with a busybox initramfs
# that holds nothing but the static engine.
#
#   bench/second_machine.sh [OUTDIR]     (default OUTDIR: second-machine-out)
#
# Writes OUTDIR/other_machine.jsonl (the selection of
# python/tests/fixtures/run_a.jsonl) and OUTDIR/other_machine_broad.jsonl (a
# broader --quick selection), each the engine's output unedited, plus
# OUTDIR/console.log (the guest's serial console).
#
# Needs root only to install QEMU when it is missing (apt-get); the kernel and
# busybox are fetched with `apt-get download` into a temporary directory and
# unpacked with `dpkg -x`, so nothing is installed under /boot and this
# machine's boot is untouched. Without hardware virtualization it falls back
# to TCG emulation (-cpu max), which is much slower (see ACCEL below).
#
# SELECTION="ARGS" (with NAME, default selection) records one run of
# `ctxbench-engine run --progress --json ARGS` instead, as OUTDIR/NAME.jsonl
# (python/tests/fixtures/no_idle_driver.jsonl was recorded so).
#
# Environment: SMP (vCPUs; default 2 under KVM, 1 under TCG, see below), MEM
# (default 2G), ENGINE_DIR (a directory holding the static ctxbench-engine,
# ctxbench-exit0 and ctxbench-forkloop; default: built here into build/x86_64
# as `make engines` does), ACCEL (kvm, tcg or auto: see below), QEMU_CPU
# (-cpu), BOOT_TIMEOUT (seconds, default 900), KERNEL_PKG (default
# linux-image-amd64).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-second-machine-out}
smp=${SMP:-}
mem=${MEM:-2G}
boot_timeout=${BOOT_TIMEOUT:-900}
kernel_pkg=${KERNEL_PKG:-linux-image-amd64}

# The two selections. NARROW is run_a.jsonl's command, so the two machines
# share probes; BROAD is a quick ladder from syscalls to process creation.
NARROW="'syscall.*' switch.pipe create.pthread_scope_process"
BROAD="'syscall.*' switch.pipe switch.futex 'uswitch.*' trap.signal trap.pagefault 'create.*' 'timer.*'"

tmp=$(mktemp -d /tmp/ctxbench-second-machine.XXXXXX)
qemu_pid=""
cleanup() {
  local rc=$?
  if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2> /dev/null; then
    kill "$qemu_pid" 2> /dev/null || true
    wait "$qemu_pid" 2> /dev/null || true
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- tools -----------------------------------------------------------------
if ! command -v qemu-system-x86_64 > /dev/null; then
  echo "second_machine: installing qemu-system-x86" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends qemu-system-x86
fi
for tool in apt-get dpkg dpkg-deb gzip file; do
  command -v "$tool" > /dev/null || {
    echo "second_machine: needs $tool" >&2
    exit 1
  }
done

# ---- the static engine -----------------------------------------------------
if [ -z "${ENGINE_DIR:-}" ]; then
  ENGINE_DIR=$here/build/x86_64
  cmake -S "$here/engine" -B "$ENGINE_DIR" -DCMAKE_BUILD_TYPE=Release -DCTXBENCH_WERROR=ON \
    -DCTXBENCH_STATIC=ON -DCTXBENCH_TESTS=OFF > /dev/null
  cmake --build "$ENGINE_DIR" -j "${JOBS:-2}" --target ctxbench-engine > /dev/null
fi
for f in ctxbench-engine ctxbench-exit0 ctxbench-forkloop; do
  [ -x "$ENGINE_DIR/$f" ] || {
    echo "second_machine: no $ENGINE_DIR/$f" >&2
    exit 1
  }
  if ! file -L "$ENGINE_DIR/$f" | grep -q 'statically linked'; then
    echo "second_machine: $ENGINE_DIR/$f is not statically linked (build with -DCTXBENCH_STATIC=ON)" >&2
    exit 1
  fi
done

# ---- Debian's kernel and busybox, unpacked in $tmp ---------------------------
mkdir -p "$tmp/debs" "$tmp/pkg"
(
  cd "$tmp/debs"
  # linux-image-amd64 is a metapackage: its one dependency is the image itself.
  apt-get download "$kernel_pkg" busybox-static > /dev/null 2>&1
  image=$(dpkg-deb -f ./"$kernel_pkg"_*.deb Depends | sed 's/ *(.*//; s/,.*//')
  case $image in
    linux-image-*) apt-get download "$image" > /dev/null 2>&1 ;;
    *) image=$kernel_pkg ;;
  esac
  for deb in ./busybox-static_*.deb ./"$image"_*.deb; do dpkg -x "$deb" "$tmp/pkg"; done
)
vmlinuz=$(find "$tmp/pkg/boot" -name 'vmlinuz-*' | head -1)
[ -n "$vmlinuz" ] || {
  echo "second_machine: no vmlinuz in the kernel package" >&2
  exit 1
}
echo "second_machine: kernel $(basename "$vmlinuz"), $(qemu-system-x86_64 --version | head -1)" >&2

# ---- the accelerator ------------------------------------------------------
# ACCEL=kvm|tcg|auto (default auto). A stock kernel boots under KVM only where
# the host has hardware virtualization (vmx/svm in /proc/cpuinfo): a /dev/kvm
# without it is PVM (kvm_pvm, as in Firecracker guests booted with
# nested_pvm=1), which boots only kernels built as PVM guests, and the Debian
# kernel hangs there before its first message. Then TCG: -cpu max emulated,
# each vCPU a host thread, much slower than hardware, and as real a machine.
accel_mode=${ACCEL:-auto}
if [ "$accel_mode" = auto ]; then
  accel_mode=tcg
  if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -q -w -E 'vmx|svm' /proc/cpuinfo; then accel_mode=kvm; fi
fi
case $accel_mode in
  # -cpu host minus IA32_ARCH_CAPABILITIES: under a KVM that is itself a
  # guest (nested), setting that MSR can fail and QEMU aborts at start.
  kvm) accel=(-enable-kvm -cpu "${QEMU_CPU:-host,-arch-capabilities}") ;;
  tcg) accel=(-accel "tcg,thread=multi" -cpu "${QEMU_CPU:-max}") ;;
  *)
    echo "second_machine: ACCEL must be kvm, tcg or auto" >&2
    exit 1
    ;;
esac
# Under TCG with two vCPUs the guest kernel (6.1) offered no TSC clocksource in
# our runs, only hpet and acpi_pm: every clock read became an emulated HPET
# MMIO access and the engine's timer cost about 1.2 us. With one vCPU it keeps
# the TSC (timer overhead about 0.2 us), and no second TCG thread competes
# with the first for this machine's CPUs.
if [ -z "$smp" ]; then
  smp=2
  [ "$accel_mode" = kvm ] || smp=1
fi
echo "second_machine: accelerator $accel_mode (${accel[*]}), $smp vCPU(s), $mem" >&2

# ---- what the guest runs ------------------------------------------------------
if [ -n "${SELECTION:-}" ]; then
  names=("${NAME:-selection}.jsonl")
  guest_runs="ctxbench-engine run --progress --json --out /tmp/${names[0]} $SELECTION > /dev/console 2>&1
send ${names[0]}
"
else
  names=(other_machine.jsonl other_machine_broad.jsonl)
  guest_runs="ctxbench-engine run --progress --quick --json --out /tmp/other_machine.jsonl $NARROW > /dev/console 2>&1
send other_machine.jsonl
ctxbench-engine run --progress --quick --json --out /tmp/other_machine_broad.jsonl $BROAD > /dev/console 2>&1
send other_machine_broad.jsonl
"
fi

# ---- the initramfs -----------------------------------------------------------
root=$tmp/root
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,etc,opt/ctxbench}
cp "$tmp/pkg/bin/busybox" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
cp "$ENGINE_DIR"/ctxbench-engine "$ENGINE_DIR"/ctxbench-exit0 "$ENGINE_DIR"/ctxbench-forkloop "$root/opt/ctxbench/"
# The engine's own passwd lookups, if any, find root.
echo 'root:x:0:0:root:/root:/bin/sh' > "$root/etc/passwd"
echo 'root:x:0:' > "$root/etc/group"
cat > "$root/init" << EOF
#!/bin/sh
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
hostname qemu-$accel_mode
export PATH=/bin:/sbin:/opt/ctxbench
# Data leave by the second serial port, framed, never mixed with the console.
stty -F /dev/ttyS1 raw -echo
send() {
  echo "@@ctxbench-begin \$1" > /dev/ttyS1
  cat "/tmp/\$1" > /dev/ttyS1
  echo "@@ctxbench-end \$1 \$(wc -l < "/tmp/\$1")" > /dev/ttyS1
}
echo "second_machine: recording in the guest" > /dev/console
${guest_runs}echo "@@ctxbench-done" > /dev/ttyS1
sync
sleep 1
poweroff -f
EOF
chmod +x "$root/init"
# busybox's own cpio packs it (the host need not have cpio); -R 0:0: root owns all.
(cd "$root" && find . | "$tmp/pkg/bin/busybox" cpio -o -H newc -R 0:0 2> /dev/null | gzip -1) > "$tmp/initrd.gz"

# ---- boot ------------------------------------------------------------------
mkdir -p "$out"
timeout --foreground -k 10 "$boot_timeout" qemu-system-x86_64 "${accel[@]}" -smp "$smp" -m "$mem" \
  -kernel "$vmlinuz" -initrd "$tmp/initrd.gz" -append 'console=ttyS0 quiet panic=-1' \
  -display none -no-reboot -nodefaults \
  -serial "file:$out/console.log" -serial "file:$tmp/data.txt" &
qemu_pid=$!
wait "$qemu_pid" || {
  echo "second_machine: qemu failed or timed out (console: $out/console.log)" >&2
  exit 1
}
qemu_pid=""

# ---- extract ---------------------------------------------------------------
tr -d '\r' < "$tmp/data.txt" > "$tmp/data.lf"
grep -q '^@@ctxbench-done' "$tmp/data.lf" || {
  echo "second_machine: the guest did not finish (console: $out/console.log)" >&2
  exit 1
}
for name in "${names[@]}"; do
  awk -v n="$name" '$0 == "@@ctxbench-begin " n {on = 1; next}
    on && index($0, "@@ctxbench-end " n " ") == 1 {exit}
    on {print}' "$tmp/data.lf" > "$out/$name"
  want=$(sed -n "s/^@@ctxbench-end $name //p" "$tmp/data.lf")
  got=$(wc -l < "$out/$name")
  [ "$want" = "$got" ] || {
    echo "second_machine: $name: $got lines arrived, the guest sent $want" >&2
    exit 1
  }
  echo "second_machine: $out/$name ($got lines)" >&2
done
