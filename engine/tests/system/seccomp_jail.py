"""Runs a command under a seccomp filter that refuses one system call, as
an outer sandbox (a container runtime's profile, systemd's
SystemCallFilter=) would: the tests' stand-in for such a sandbox.

    python seccomp_jail.py errno=NAME -- CMD [ARG...]   NAME fails with EPERM
    python seccomp_jail.py kill=NAME -- CMD [ARG...]    NAME kills the process (SIGSYS)

Every other call is allowed. The filter is classic BPF written here and
installed with prctl(2) through ctypes, then CMD is exec'd under it.
Exit status: CMD's; 2 for a usage error; 1 when the filter cannot be installed.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys

# The system calls the tests refuse, by architecture.
NUMBERS = {
    "x86_64": {"prctl": 157, "getppid": 110},
    "aarch64": {"prctl": 167, "getppid": 173},
}
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_KILL_PROCESS = 0x80000000
BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
BPF_RET_K = 0x06  # BPF_RET | BPF_K


class SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


def supported() -> bool:
    return platform.machine() in NUMBERS


def install(action: str, name: str) -> None:
    machine = platform.machine()
    number = NUMBERS[machine][name]
    verdict = SECCOMP_RET_ERRNO | errno.EPERM if action == "errno" else SECCOMP_RET_KILL_PROCESS
    program = [
        SockFilter(BPF_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        SockFilter(BPF_JEQ_K, 1, 0, AUDIT_ARCH[machine]),
        SockFilter(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),  # another ABI: not ours to judge
        SockFilter(BPF_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        SockFilter(BPF_JEQ_K, 0, 1, number),
        SockFilter(BPF_RET_K, 0, 0, verdict),
        SockFilter(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
    array = (SockFilter * len(program))(*program)
    fprog = SockFprog(len(program), array)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [
        ctypes.c_int,
        ctypes.c_ulong,
        ctypes.c_void_p,
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--" or "=" not in argv[0]:
        print("usage: seccomp_jail.py errno=NAME|kill=NAME -- CMD [ARG...]", file=sys.stderr)
        return 2
    action, name = argv[0].split("=", 1)
    if action not in ("errno", "kill") or name not in NUMBERS.get(platform.machine(), {}):
        print(f"seccomp_jail.py: cannot refuse {argv[0]} here", file=sys.stderr)
        return 2
    try:
        install(action, name)
    except OSError as error:
        print(f"seccomp_jail.py: {error}", file=sys.stderr)
        return 1
    os.execvp(argv[2], argv[2:])
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
