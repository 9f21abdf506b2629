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

from ctxbench.records.environment import Environment


def warnings(env: Environment) -> list[str]:
    """One sentence per thing on the measuring task's system calls."""
    sandbox = env.sandbox
    if sandbox is None:
        return []
    out: list[str] = []
    if sandbox.seccomp_mode == "filter":
        filters = sandbox.seccomp_filters
        count = f"{filters} seccomp filter(s)" if filters is not None else "a seccomp filter"
        out.append(
            f"the measuring process ran under {count}: every system call here pays the filter, "
            "so the system-call and kernel-switch figures include it"
        )
    elif sandbox.seccomp_mode == "strict":
        out.append("the measuring process ran in strict seccomp mode")
    if sandbox.traced:
        out.append(
            f"the measuring process was traced by process {sandbox.tracer_pid}: "
            "a tracer that stops on system calls (strace) adds its stops to every one"
        )
    if sandbox.audit_state in ("enabled", "locked") and sandbox.audit_rules:
        out.append(
            f"syscall auditing was on with {sandbox.audit_rules} rule(s): system calls may take "
            "the kernel's audit path"
        )
    if sandbox.tracepoints_recording:
        out.append(
            f"{sandbox.tracepoints_enabled} tracepoint event(s) were enabled in tracefs and "
            "recording: every switch or system call that fires one writes an event, so the "
            "switch figures include it"
        )
    return out
