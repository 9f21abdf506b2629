"""Minimal Debian roots for the wheel's tests, entered without a daemon.

A root is made once by ``debootstrap --variant=minbase`` under build/clean-root/
(kept between test sessions: building one takes minutes) and entered with
``unshare --mount`` + ``chroot``: /proc, /sys and /dev are mounted inside a
mount namespace of the command's own, so nothing is left mounted on the host.

* the host's arch: minbase plus python3-venv. No compiler, no Boost, no
  build tree: what a user's fresh Debian has.
* a foreign arch (aarch64): debootstrap's first stage only (``--foreign``):
  the packages unpacked, not configured, which is a whole userland (sh,
  uname, mktemp, tar) whose programs run under qemu-user through binfmt.
  That is enough for a host that ``ctxbench run --host`` reaches over ssh.

Building needs root, debootstrap and a Debian mirror; ``build_root`` returns
why it could not, for the tests to skip with.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = Path(os.environ.get("CTXBENCH_CLEAN_ROOT", REPO / "build" / "clean-root"))
MIRROR = os.environ.get("CTXBENCH_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# Debian's names of the archs (uname -m -> dpkg).
DEBIAN_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "riscv64": "riscv64"}
DEBOOTSTRAP_TIMEOUT_S = 1800

# Runs "$@" inside the root $1 with /proc, /sys and /dev, in a mount namespace
# of its own (so the mounts end with the command).
ENTER = r"""
root=$1; shift
exec unshare --mount --propagation private -- /bin/sh -c '
  root=$1; shift
  mount -t proc proc "$root/proc" && mount --rbind /sys "$root/sys" &&
    mount --rbind /dev "$root/dev" || exit 125
  exec chroot "$root" "$@"' sh "$root" "$@"
"""


def host_suite() -> str:
    """This Debian's codename (the root is of the same release), bookworm elsewhere."""
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("VERSION_CODENAME=") and line.split("=", 1)[1]:
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return "bookworm"


def binfmt_reason(arch: str) -> str | None:
    """Why programs of ``arch`` would not run here through binfmt, or None."""
    if arch == platform.machine():
        return None
    entry = Path(f"/proc/sys/fs/binfmt_misc/qemu-{arch}")
    try:
        enabled = entry.read_text().splitlines()[0] == "enabled"
    except (OSError, IndexError):
        enabled = False
    if not enabled:
        return (
            f"{arch} programs do not run here: no enabled binfmt entry qemu-{arch} "
            "(install Debian's qemu-user-static and binfmt-support; in a container, mount "
            f"binfmt_misc on /proc/sys/fs/binfmt_misc and run update-binfmts --enable qemu-{arch})"
        )
    return None


def build_root(arch: str, include: tuple[str, ...] = ()) -> tuple[Path, str | None]:
    """The root for ``arch`` (built if not yet there) and None, or why it cannot be had."""
    root = ROOTS / arch
    if (root / ".complete").is_file():
        return root, None
    if os.geteuid() != 0:
        return root, "building a Debian root (debootstrap, chroot) needs root"
    if shutil.which("debootstrap") is None:
        return root, "debootstrap is not installed: install Debian's debootstrap"
    reason = binfmt_reason(arch)
    if reason:
        return root, reason
    building = root.with_name(f"{arch}.building")
    shutil.rmtree(building, ignore_errors=True)
    building.parent.mkdir(parents=True, exist_ok=True)
    argv = ["debootstrap", "--variant=minbase", f"--arch={DEBIAN_ARCH[arch]}"]
    if arch != platform.machine():
        argv.append("--foreign")
    if include:
        argv.append("--include=" + ",".join(include))
    argv += [host_suite(), str(building), MIRROR]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=DEBOOTSTRAP_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        done = None
    if done is None or done.returncode != 0:
        log = "" if done is None else (done.stdout + done.stderr).strip().splitlines()[-1:]
        shutil.rmtree(building, ignore_errors=True)
        return root, f"debootstrap of a {arch} root from {MIRROR} failed: {log}"
    # The downloaded packages are not needed once unpacked.
    for deb in (building / "var" / "cache" / "apt" / "archives").glob("*.deb"):
        deb.unlink()
    (building / ".complete").write_text(" ".join(argv) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    building.rename(root)
    return root, None


def enter(root: Path, *argv: str, **options) -> subprocess.CompletedProcess[str]:
    """Runs argv inside root (see ENTER); options go to subprocess.run."""
    options.setdefault("capture_output", True)
    options.setdefault("text", True)
    return subprocess.run(["/bin/sh", "-c", ENTER, "enter", str(root), *argv], **options)


def enter_script(path: Path) -> Path:
    """ENTER as a script file (``enter ROOT CMD...``), for sshd's ForceCommand."""
    path.write_text("#!/bin/sh\n" + ENTER)
    path.chmod(0o755)
    return path
