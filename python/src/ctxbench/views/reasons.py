"""A verdict's reason codes in words: one sentence per code of the record schema.

The summary (``analysis.summary``) carries the codes of each point that is
not ok; the terminal, the report and ``show --json`` word them here.
"""

from __future__ import annotations

from collections.abc import Iterable

# One sentence per reason code of schema/record.schema.json ($defs.reason_code).
REASON_SENTENCES: dict[str, str] = {
    "too_few_switches": (
        "The kernel counted fewer context switches than this probe needs, so some "
        "operations did not switch and the figure understates a switch."
    ),
    "too_many_switches": (
        "The kernel counted more context switches than this probe makes, so other work "
        "preempted the measurement and its time may be in the figure."
    ),
    "count_mismatch": (
        "A kernel counter disagrees with the number of operations, so the operation "
        "measured is not quite the one intended."
    ),
    "migrated": (
        "A task ran on a CPU other than the one it was pinned to, so the placement "
        "this variant names did not hold throughout."
    ),
    "placement_unavailable": (
        "The CPUs this placement needs are not available to the run (too few CPUs, "
        "or no such pair in the topology)."
    ),
    "nonpositive_after_baseline": (
        "The baseline is not below the result, so what remains after subtracting it "
        "is noise, not a cost."
    ),
    "high_spread": (
        "The samples spread widely, so the median is less certain than its interval suggests."
    ),
    "timer_quantization": (
        "The measured batches were short next to the timer's resolution, so the clock's "
        "steps may show in the figure."
    ),
    "unstable": (
        "The samples do not form one figure (several modes or a wide middle half), "
        "so the machine was not steady while it was measured."
    ),
    "not_supported_here": "This machine, kernel or C library cannot do what the probe measures.",
    "permission_denied": (
        "The run lacked a permission the probe needs (often root, or write access to a device)."
    ),
    "built_without": "The engine was built without the library this probe needs.",
    "child_failed": (
        "A partner process or thread of the measurement failed, so no figure can be trusted."
    ),
    "timeout": "The measurement did not finish within its time limit.",
    "interrupted": "The run was stopped before this variant finished.",
    "error": "An error stopped the measurement (the record's detail says which).",
    "interference": (
        "Another task or the host took the CPU while this variant was measured, and "
        "re-taking its samples did not get clear of it, so the figure carries that time."
    ),
}


def reason_sentence(code: str) -> str:
    """The sentence for a reason code; an unknown code (a newer producer) says so."""
    return REASON_SENTENCES.get(code, f"Reason '{code}' (not known to this version of ctxbench).")


def reason_sentences(codes: Iterable[str]) -> list[str]:
    """The sentences for CODES, in their order."""
    return [reason_sentence(code) for code in codes]
