#!/usr/bin/env bash
# Installs the Debian packages a part of ctxbench needs, once. As root it runs
# apt-get for whatever is missing; as anyone else it names the missing
# packages and the command to install them, and fails.
#   scripts/deps.sh GROUP...   groups: engine cross riscv browser report servers wheel
set -euo pipefail

declare -A group
group[engine]="build-essential cmake ninja-build pkg-config libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev libboost-context-dev libboost-fiber-dev libseccomp-dev strace util-linux clang-format python3-venv"
group[cross]="g++-aarch64-linux-gnu g++-riscv64-linux-gnu qemu-user"
group[riscv]="gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf device-tree-compiler qemu-system-misc binutils-riscv64-unknown-elf"
group[browser]="chromium"
# The report's chart library comes from npm (scripts/plotly_js.sh).
group[report]="npm"
# make test-wheel: a minimal Debian root, and foreign engines run through binfmt.
group[wheel]="debootstrap qemu-user-static binfmt-support"
# The tests of `run --host` and of the PostgreSQL store start their own sshd and
# PostgreSQL server in a temp dir (no system service is used); ssh is the client.
group[servers]="openssh-client openssh-server postgresql"

wanted=()
for g in "$@"; do
  [[ -n "${group[$g]:-}" ]] || { echo "deps.sh: unknown group '$g' (use: ${!group[*]})" >&2; exit 2; }
  for p in ${group[$g]}; do wanted+=("$p"); done
done

missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -eq 0 ]]; then
  echo "deps.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2
  apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
else
  echo "deps.sh: missing Debian packages: ${missing[*]}; install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
