#!/usr/bin/env bash
# Cross-builds ctxbench's assembly switch and its GoogleTest-free self-test
# for aarch64 and riscv64 (the toolchain files in engine/cmake) and runs the
# self-test under qemu-user: the same register/alignment/argument/1M-switch/
# chain checks as the native GoogleTest cases. Exits non-zero if any build or
# check fails.
#   uswitch_cross.sh BUILD_DIR [ARCH...]   (default ARCH: aarch64 riscv64)
# Builds into BUILD_DIR/uswitch-ARCH; only the self-test target is built.
set -euo pipefail
build=${1:?usage: uswitch_cross.sh BUILD_DIR [ARCH...]}
shift
arches=("$@")
[ ${#arches[@]} -gt 0 ] || arches=(aarch64 riscv64)
root=$(cd "$(dirname "$0")/../.." && pwd)
status=0
for arch in "${arches[@]}"; do
  toolchain="$root/engine/cmake/toolchain-$arch-linux.cmake"
  dir="$build/uswitch-$arch"
  if [ ! -f "$toolchain" ]; then
    echo "uswitch_cross: no toolchain file for '$arch' ($toolchain)" >&2
    exit 2
  fi
  if ! command -v "qemu-$arch" >/dev/null; then
    echo "uswitch_cross: qemu-$arch missing; install Debian package qemu-user" >&2
    exit 1
  fi
  echo "uswitch_cross: building for $arch in $dir"
  cmake -S "$root/engine" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTXBENCH_WERROR=ON \
    -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCTXBENCH_TESTS=OFF >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log" >&2; status=1; continue; }
  cmake --build "$dir" --target ctxbench-uswitch-selftest || { status=1; continue; }
  echo "uswitch_cross: running the self-test under qemu-$arch"
  "qemu-$arch" "$dir/ctxbench-uswitch-selftest" | grep -v '^\.\.\.' || status=1
done
exit $status
