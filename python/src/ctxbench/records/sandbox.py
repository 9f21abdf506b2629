"""What the environment record says sits on every system call of the run.

The engine's env record carries a ``sandbox`` block (schema/record.schema.json):
the measuring task's seccomp mode and filter count, its tracer, the
kernel's syscall auditing where it could be read, and the tracepoints enabled
through tracefs (an enabled event fires on every switch or call that passes
it). A run measured under a
filter, a tracer or auditing pays for it in every system-call and kernel-switch
figure; these warnings say so where the run's figures are shown. A record from
an engine before the block has no warnings (nothing is known, nothing is said).
"""

from __future__ import annotations

from typing import Any


def warnings(env: dict[str, Any]) -> list[str]:
    """One sentence per thing on the measuring task's system calls."""
    sandbox = env.get("sandbox") or {}
    out: list[str] = []
    seccomp = sandbox.get("seccomp") or {}
    if seccomp.get("mode") == "filter":
        filters = seccomp.get("filters")
        count = f"{filters} seccomp filter(s)" if filters is not None else "a seccomp filter"
        out.append(
            f"the measuring process ran under {count}: every system call here pays the filter, "
            "so the system-call and kernel-switch figures include it"
        )
    elif seccomp.get("mode") == "strict":
        out.append("the measuring process ran in strict seccomp mode")
    if sandbox.get("traced"):
        out.append(
            f"the measuring process was traced by process {sandbox.get('tracer_pid')}: "
            "a tracer that stops on system calls (strace) adds its stops to every one"
        )
    audit = sandbox.get("audit") or {}
    if audit.get("state") in ("enabled", "locked") and audit.get("rules"):
        out.append(
            f"syscall auditing was on with {audit['rules']} rule(s): system calls may take "
            "the kernel's audit path"
        )
    tracepoints = sandbox.get("tracepoints") or {}
    if tracepoints.get("recording"):
        out.append(
            f"{tracepoints.get('enabled')} tracepoint event(s) were enabled in tracefs and "
            "recording: every switch or system call that fires one writes an event, so the "
            "switch figures include it"
        )
    return out
