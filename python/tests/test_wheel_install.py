"""The wheel of `make wheel` where nothing of this project's build is.

The wheel (CTXBENCH_WHEEL; `make test-wheel` builds it and sets it) must carry a
static engine for each arch and work on a system without a compiler, Boost
or this checkout:

* its ELF files are read here: each is static and of the arch it is filed under;
* it is installed into a fresh venv inside a minimal Debian root
  (clean_root.py: debootstrap minbase, entered with unshare + chroot), where
  `ctxbench run --quick`, `show`, `compare` and `report` run, and the aarch64
  and riscv64 engines from the wheel run the quick suite under qemu-user
  (binfmt). The root has no index to install from: the dependencies' wheels
  are downloaded here by pip first (a wheelhouse), and the root's pip installs
  from it with --no-index;
* installed into a venv outside this checkout, its `ctxbench run --host` to an
  aarch64 "host" (an sshd on 127.0.0.1 whose sessions run in an aarch64 root
  under qemu-user) copies the wheel's aarch64 engine, with nothing built.

Where the wheel is not given, or a root cannot be built (not root, no
debootstrap, no mirror, no binfmt for qemu), the tests skip and say why.
"""

from __future__ import annotations

import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from clean_root import ROOTS, binfmt_reason, build_root, enter, enter_script
from servers import SSHServer, sshd_binary

HOST_ARCH = platform.machine()
ARCHES = ("x86_64", "aarch64", "riscv64")
FOREIGN = tuple(arch for arch in ARCHES if arch != HOST_ARCH)
ELF_MACHINE = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64", "EM_RISCV": "riscv64"}
# Inside the root: the wheel, the wheelhouse and the venv.
INSIDE = "/opt/ctxbench-test"
ROOT_ENV = {
    "PATH": f"{INSIDE}/venv/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
}
STEP_TIMEOUT_S = 900


@pytest.fixture(scope="module")
def wheel() -> Path:
    value = os.environ.get("CTXBENCH_WHEEL")
    if not value:
        pytest.skip("CTXBENCH_WHEEL is not set: `make test-wheel` builds the wheel and runs these")
    path = Path(value)
    if not path.is_file():
        pytest.fail(f"CTXBENCH_WHEEL={value} is not a file: run `make wheel`")
    return path


def wheel_members(wheel: Path) -> dict[str, bytes]:
    """The wheel's engines and helpers: package path -> bytes."""
    with zipfile.ZipFile(wheel) as archive:
        return {
            name: archive.read(name)
            for name in archive.namelist()
            if name.startswith(("ctxbench/bin/", "ctxbench/engines/")) and not name.endswith("/")
        }


def test_every_engine_in_the_wheel_is_static_and_of_its_arch(wheel):
    platform_tag = wheel.name.removesuffix(".whl").split("-")[-1]
    for tag in platform_tag.split("."):
        assert tag.startswith("manylinux") and tag.endswith(f"_{HOST_ARCH}"), wheel.name
    members = wheel_members(wheel)
    found: dict[str, set[str]] = {}
    for name, data in members.items():
        parts = name.split("/")
        arch = HOST_ARCH if parts[1] == "bin" else parts[2]
        elf = ELFFile(io.BytesIO(data))
        assert ELF_MACHINE.get(elf["e_machine"]) == arch, f"{name}: {elf['e_machine']}"
        segments = [segment["p_type"] for segment in elf.iter_segments()]
        assert "PT_INTERP" not in segments, f"{name} is dynamically linked"
        found.setdefault(arch, set()).add(parts[-1])
    for arch in ARCHES:
        assert {"ctxbench-engine", "ctxbench-exit0", "ctxbench-forkloop"} <= found.get(arch, set())


def root_python_version(root: Path) -> str:
    done = enter(
        root, "python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])", env=ROOT_ENV
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def make_wheelhouse(wheel: Path, python_version: str) -> Path:
    """The wheel and its dependencies' wheels for ``python_version``, downloaded by pip."""
    house = ROOTS / "wheelhouse"
    house.mkdir(parents=True, exist_ok=True)
    for old in house.glob("ctxbench-*.whl"):
        old.unlink()
    download = ["pip", "download", "-q", "-d", str(house), "--only-binary=:all:"]
    done = subprocess.run(
        [sys.executable, "-m", *download, "--python-version", python_version, str(wheel)],
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"pip could not download the wheel's dependencies: {done.stderr.strip()}")
    return house


def install_wheel(python: str, house: Path, wheel_name: str, venv: str, run) -> None:
    """A fresh venv at ``venv`` with the wheel from ``house`` installed, no index used."""
    done = run(
        "/bin/sh",
        "-c",
        f'rm -rf "{venv}" && {python} -m venv "{venv}" && "{venv}/bin/pip" install -q '
        f'--no-index --find-links "{house}" "{house}/{wheel_name}"',
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def clean_root(wheel) -> Path:
    """The host arch's minbase root with the wheel installed in a fresh venv."""
    root, reason = build_root(HOST_ARCH, include=("python3-venv",))
    if reason:
        pytest.skip(f"no clean root: {reason}")
    house = make_wheelhouse(wheel, root_python_version(root))
    inside = root / INSIDE.lstrip("/")
    shutil.rmtree(inside / "wheelhouse", ignore_errors=True)
    shutil.copytree(house, inside / "wheelhouse")
    shutil.rmtree(root / "root" / ".local" / "share" / "ctxbench", ignore_errors=True)

    def run(*argv: str):
        return enter(root, *argv, env=ROOT_ENV, timeout=STEP_TIMEOUT_S)

    install_wheel("python3", Path(f"{INSIDE}/wheelhouse"), wheel.name, f"{INSIDE}/venv", run)
    return root


def in_root(root: Path, *argv: str, env: dict[str, str] | None = None):
    done = enter(root, *argv, env={**ROOT_ENV, **(env or {})}, timeout=STEP_TIMEOUT_S)
    assert done.returncode == 0, f"{' '.join(argv)}: {done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done


def stored_run(root: Path, ref: str) -> dict:
    return json.loads(in_root(root, "ctxbench", "show", "--json", ref).stdout)


def env_record(run: dict) -> dict:
    return next(record for record in run["records"] if record["kind"] == "env")


def test_the_root_has_no_compiler_boost_or_build_tree(clean_root):
    found = enter(
        clean_root,
        "/bin/sh",
        "-c",
        "command -v cc gcc g++ c++ clang cmake; "
        "find / -xdev \\( -name 'libboost*' -o -name pyproject.toml -o -name CMakeCache.txt \\) "
        "-not -path '/opt/ctxbench-test/*' -print",
        env=ROOT_ENV,
    )
    assert found.stdout.strip() == ""


def test_quick_run_show_compare_report_from_the_wheel(clean_root):
    first = in_root(clean_root, "ctxbench", "run", "--quick", "--label", "first")
    assert "Traceback" not in first.stdout
    in_root(clean_root, "ctxbench", "run", "syscall", "switch.pipe", "--quick", "--label", "second")
    run = stored_run(clean_root, "first")
    assert env_record(run)["arch"] == HOST_ARCH
    assert any(record["kind"] == "result" for record in run["records"])
    shown = in_root(clean_root, "ctxbench", "show", "latest")
    assert "second" in shown.stdout
    compared = in_root(clean_root, "ctxbench", "compare", "first", "second")
    assert "bare system call" in compared.stdout  # syscall.getpid is in both runs
    in_root(clean_root, "ctxbench", "report", "first", "second", "-o", "/tmp/report.html")
    report = clean_root / "tmp" / "report.html"
    assert report.read_text().lstrip().lower().startswith("<!doctype html")


@pytest.mark.parametrize("arch", FOREIGN)
def test_the_wheels_foreign_engines_run_the_quick_suite_under_qemu(clean_root, arch):
    reason = binfmt_reason(arch)
    if reason:
        pytest.skip(reason)
    package = in_root(
        clean_root, "python", "-c", "import ctxbench, os; print(os.path.dirname(ctxbench.__file__))"
    ).stdout.strip()
    engine = f"{package}/engines/{arch}/ctxbench-engine"
    quick = ["ctxbench", "run", "--quick", "--label", arch]
    in_root(clean_root, *quick, env={"CTXBENCH_ENGINE": engine})
    run = stored_run(clean_root, arch)
    assert env_record(run)["arch"] == arch
    results = [record for record in run["records"] if record["kind"] == "result"]
    assert results and run["run"]["complete"]


# What the aarch64 "host" does with a session: the client's command in the
# aarch64 root; the stream `tar -x` unpacks (the engine ctxbench copies) is kept.
REMOTE_SESSION = """#!/bin/sh
command="$SSH_ORIGINAL_COMMAND"
if [ "${{command#tar -x}}" != "$command" ]; then
  tee "{kept}" | "{enter}" "{root}" /usr/bin/env -u TMPDIR /bin/sh -c "$command"
else
  exec "{enter}" "{root}" /usr/bin/env -u TMPDIR /bin/sh -c "$command"
fi
"""


def test_host_run_to_aarch64_copies_the_wheels_engine(wheel, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("entering the aarch64 root (chroot) needs root")
    sshd = sshd_binary()
    if sshd is None:
        pytest.skip("OpenSSH server (sshd) is not installed: install Debian's openssh-server")
    root, reason = build_root("aarch64")
    if reason:
        pytest.skip(f"no aarch64 root: {reason}")
    version = "{}.{}".format(*sys.version_info[:2])
    house = make_wheelhouse(wheel, version)
    venv = tmp_path / "venv"
    install_wheel(
        sys.executable,
        house,
        wheel.name,
        str(venv),
        lambda *argv: subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path),
    )
    kept = tmp_path / "copied.tar"
    session = tmp_path / "session.sh"
    session.write_text(
        REMOTE_SESSION.format(kept=kept, enter=enter_script(tmp_path / "enter"), root=root)
    )
    session.chmod(0o755)
    server = SSHServer(sshd, force_command=str(session))
    # The installed command, away from this checkout and its settings.
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CTXBENCH_", "PYTHON"))
    }

    def ctxbench(*argv: str) -> subprocess.CompletedProcess[str]:
        command = [str(venv / "bin" / "ctxbench"), *argv, "--db", str(tmp_path / "s.db")]
        return subprocess.run(
            command,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=environment,
            timeout=STEP_TIMEOUT_S,
            check=False,
        )

    server.start()
    try:
        selection = ["syscall.getpid", "create.posix_spawn", "--quick"]
        done = ctxbench("run", *selection, "--host", "alpha", "--ssh-config", str(server.config))
    finally:
        server.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    with tarfile.open(kept) as archive:
        copied = archive.extractfile("ctxbench-engine").read()
    assert copied == wheel_members(wheel)["ctxbench/engines/aarch64/ctxbench-engine"]
    shown = ctxbench("show", "--json", "latest")
    assert shown.returncode == 0, shown.stderr
    run = json.loads(shown.stdout)
    assert env_record(run)["arch"] == "aarch64"
    assert {r["probe"] for r in run["records"] if r["kind"] == "result"} == {
        "syscall.getpid",
        "create.posix_spawn",
    }
