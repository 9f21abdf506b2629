"""The gate's exit status, one rule for every gate: 0 passed, 1 failed, 4 neither."""

from __future__ import annotations

from ctxbench.analysis.compare.gate import FAILED, PASSED

EXIT_INCONCLUSIVE = 4  # neither passed nor failed (docs/cli.md)


def gate_status(outcome: str) -> int:
    """The exit status of a gate whose outcome is OUTCOME (analysis.compare.gate's)."""
    return {PASSED: 0, FAILED: 1}.get(outcome, EXIT_INCONCLUSIVE)
