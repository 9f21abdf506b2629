#!/usr/bin/env bash
# Runs the cross-built engines (aarch64, riscv64) under qemu-user: the
# assembly switch's self-test (registers, FP control, alignment, argument,
# 1M switches, a chain of 1000 contexts), then a smoke set of probes whose
# records must validate against the schema.
#   cross_smoke.sh BUILD_DIR PYTHON
set -euo pipefail
build=${1:?usage: cross_smoke.sh BUILD_DIR PYTHON}
python=${2:?usage: cross_smoke.sh BUILD_DIR PYTHON}
here=$(cd "$(dirname "$0")/../.." && pwd)
status=0
for arch in aarch64 riscv64; do
  engine="$build/$arch/ctxbench-engine"
  out="$build/$arch/smoke.jsonl"
  if ! command -v "qemu-$arch" >/dev/null; then
    echo "cross_smoke: qemu-$arch missing; install Debian package qemu-user" >&2
    exit 1
  fi
  echo "cross_smoke: $arch under qemu-$arch"
  "qemu-$arch" "$build/$arch/ctxbench-uswitch-selftest" | grep -v '^\.\.\.' || status=1
  "qemu-$arch" "$engine" run --quick --json 'timer.*' syscall.getpid switch.pipe uswitch.asm --cpus same > "$out"
  "$python" "$here/scripts/validate_records.py" --no-failed "$out" || status=1
  # Cross builds have no Boost: its probes must still list, as unsupported, saying why.
  "qemu-$arch" "$engine" list --json | "$python" -c '
import json, sys
boost = [p for p in json.load(sys.stdin) if "boost" in p["name"] or p["name"] == "create.fiber"]
bad = [p["name"] for p in boost if p["supported"] or p["reason"] != "built without Boost.Context/Boost.Fiber"]
print(f"  {len(boost)} Boost probes listed as unsupported: built without Boost.Context/Boost.Fiber")
sys.exit(1 if bad or not boost else 0)' || status=1
  "$python" - "$out" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["kind"] == "env":
        print(f"  env: arch {r['arch']}, timer {r['cpu']['tsc']['timer']}")
    if r["kind"] == "result":
        s = r["summary"]
        figure = f"{s['median']:.1f} {r['unit']}" if s else "-"
        print(f"  {r['probe']:<34} {figure:>14}  {r['verdict']['status']}")
PY
done
exit $status
