"""Other work beside a measurement: `stress-ng --cpu 1`, for the bench scripts' --load.

    from cpu_hog import cpu_hog
    with cpu_hog(load):
        ...  # the measurement

The hog runs in a session of its own, so that it and its workers are stopped
together however the block ends: normally, on an exception, on Ctrl-C, or on
SIGTERM to the script (turned into SystemExit while the block runs, so the
cleanup runs too). No stray process is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator


def stop_group(hog: subprocess.Popen[bytes]) -> None:
    """Stop HOG and every process of its group (it leads a session of its own)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(hog.pid, signal.SIGTERM)
    try:
        hog.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(hog.pid, signal.SIGKILL)
        hog.wait()
    # Workers that outlived their parent are still in its process group.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(hog.pid, signal.SIGKILL)


@contextlib.contextmanager
def cpu_hog(load: bool, settle_s: float = 1.0) -> Iterator[None]:
    """`stress-ng --cpu 1` beside the block when `load`; nothing otherwise."""
    if not load:
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)

    def terminated(signum: int, _frame: object) -> None:
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, terminated)
    hog = subprocess.Popen(
        ["stress-ng", "--cpu", "1", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        time.sleep(settle_s)
        if hog.poll() is not None:
            raise RuntimeError(f"stress-ng exited {hog.returncode} at once")
        yield
    finally:
        stop_group(hog)
        signal.signal(signal.SIGTERM, previous)
