"""Words for a profile: what the program did, what it cost, what would change it.

Text for the terminal and the report, and the JSON documents of ``profile
--json`` and ``profile --compare --json`` (``JsonObject``s built here from
the types: the profile as its record was written, ``Profile.raw``).
"""

from __future__ import annotations

import html

from ctxbench.analysis import profile_price as pp
from ctxbench.analysis.profile_price import (
    Counterfactual,
    CountRow,
    Figure,
    NotPriced,
    Part,
    Price,
)
from ctxbench.records.profile import InPlace, Latency, Profile
from ctxbench.records.strict_json import JsonObject

KIND_WORDS = {
    "hand_off": "hand-offs (wake-ups of its tasks)",
    "syscall": "other system calls (kernel entry and exit)",
    "minor_fault": "minor page faults",
    "thread": "threads created",
    "process": "processes created",
    "signal": "signals",
    "cross_cpu_wait": "cross-CPU wake-ups",
}
# What is not priced, and why: by the reason's code (analysis.profile_price),
# a count not counted by the count's name.
NOT_PRICED_WHY = {
    pp.NO_FIGURE_ALONE: "no figure measures a preemption alone",
    pp.WAITS_FOR_IO: "waits for I/O",
}
NOT_COUNTED_WHY = {
    "syscalls": "system calls were not counted",
    "wakeups": "wake-ups were not counted",
}
# A counterfactual's change (its code), and what its figures leave out.
CHANGE_WORDS = {
    pp.USER_LEVEL: (
        "the hand-offs as user-level switches",
        "the work that would move into the program's own scheduler, and a "
        "blocking call's wait, which a fiber cannot make without a thread",
    ),
    pp.PINNED: (
        "the cross-CPU wake-ups made same-CPU (pinning)",
        "that one CPU then runs both sides, one after the other",
    ),
    pp.SECCOMP_FILTER: (
        "the system calls under a container-like seccomp filter",
        "calls the filter treats apart: measured on getppid only",
    ),
}
NOT_INCLUDED = "what caches and TLBs lose to switching (indirect cost)"
COUNT_ROWS = [
    ("context_switches", "context switches"),
    ("voluntary_switches", "  voluntary (it waited)"),
    ("involuntary_switches", "  involuntary (preempted)"),
    ("wakeups", "wake-ups of its tasks"),
    ("wakeups_same_cpu", "  same-CPU"),
    ("wakeups_cross_cpu", "  cross-CPU"),
    ("wakeups_idle_target", "  found the target CPU idle"),
    ("wakeups_busy_target", "  found it running a task"),
    ("migrations", "migrations"),
    ("syscalls", "system calls"),
    ("minor_faults", "minor faults"),
    ("major_faults", "major faults"),
    ("threads_created", "threads created"),
    ("processes_created", "processes created"),
    ("signals", "signals"),
]


def _seconds(value: float | None) -> str:
    if value is None:
        return "?"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.1f} µs"


def _ns(value: float) -> str:
    return f"{value / 1e3:.1f} µs" if value >= 1e3 else f"{value:.0f} ns"


def _latency(group: Latency | None) -> str:
    if group is None:
        return "none"
    return (
        f"median {_us(group.median_us)} (p10 {_us(group.p10_us)}, p90 {_us(group.p90_us)},"
        f" max {_us(group.max_us)}) of {group.n:,}"
    )


def _us(value: float) -> str:
    return f"{value:.1f} µs" if value < 1000 else f"{value / 1e3:.2f} ms"


def in_place_text(price: Price, traced: InPlace | None) -> list[str]:
    """The program's own wake-ups beside the figures that price them."""
    if traced is None:
        return []
    lines = []
    pairs = (
        ("same-CPU", traced.same_cpu, price.hand_off_figure),
        ("cross-CPU", traced.cross_cpu, price.wait.figure if price.wait else None),
    )
    for words, group, figure in pairs:
        if group is None or figure is None:
            continue
        ratio = group.median_us * 1e3 / figure.median_ns
        lines.append(
            f"  in place, its {words} wake-ups: median {_us(group.median_us)} of {group.n:,};"
            f" this machine's {words} {figure.probe} figure {_ns(figure.median_ns)}"
            f" ({ratio:.2f}x)"
        )
    if lines:
        lines.append(
            "    the difference: in place runs from the wake to the woken task on a CPU, in this"
            " program under its own load; the figure from the waker's call to the woken side's"
            " return from its call (both calls' own work), in a ping-pong of two threads"
        )
    return lines


def _target(profile: Profile) -> str:
    """The command profiled, or the process attached to."""
    command = profile.target.command
    return " ".join(command) if command else f"PID {profile.target.pid}"


def counts_text(profile: Profile) -> str:
    counts = profile.counts
    lines = [f"Profile of {_target(profile)}: {profile.ended}, {profile.wall_s:.3f} s wall"]
    user, system = profile.cpu_user_s, profile.cpu_system_s
    if user is not None and system is not None:
        lines.append(f"CPU time {user + system:.3f} s (user {user:.3f} s, system {system:.3f} s)")
    if profile.run_queue_wait_s is not None:
        lines.append(f"waited for a CPU {profile.run_queue_wait_s:.3f} s")
    lines.append("")
    for key, words in COUNT_ROWS:
        if not counts.holds(key):
            continue  # a schema-1 profile: counted before --trace existed
        value = getattr(counts, key)
        shown = f"{value:,}" if value is not None else "not counted"
        if value is None and key in ("wakeups_idle_target", "wakeups_busy_target"):
            shown += " (profile --trace counts it)"
        lines.append(f"  {words:<28} {shown}")
    top = profile.syscalls_by_call[:5]
    if top:
        lines.append("  most frequent calls: " + ", ".join(f"{c.name} {c.count:,}" for c in top))
    traced = profile.wakeup_latency
    if traced is not None:
        lines.append("")
        lines.append("Its wake-ups in place (--trace), from the wake to the woken task running:")
        for words, group in (
            ("all", traced.all),
            ("same-CPU", traced.same_cpu),
            ("cross-CPU", traced.cross_cpu),
            ("target CPU idle", traced.idle_target),
            ("target CPU busy", traced.busy_target),
        ):
            lines.append(f"  {words:<28} {_latency(group)}")
    lost = profile.samples.lost
    if lost:
        lines.append(f"  {lost:,} samples lost: the splits are short by as many events")
    return "\n".join(lines) + "\n"


def _why(item: NotPriced) -> str:
    if item.why == pp.NOT_COUNTED:
        return NOT_COUNTED_WHY[item.kind]
    return NOT_PRICED_WHY[item.why]


def price_text(
    price: Price, counterfactuals: list[Counterfactual], traced: InPlace | None = None
) -> str:
    lines = [
        "",
        f"What it cost, priced with this machine's stored figures (hand-offs as {price.primitive}"
        f" between {price.between}, from its calls: "
        + ", ".join(f"{k} {v:,}" for k, v in price.primitive_calls.items())
        + "):",
    ]
    for part in price.parts:
        if not part.count:
            continue
        if part.figure is None:
            lines.append(f"  {KIND_WORDS[part.kind]:<44} {part.count:>10,} × no stored figure")
            continue
        low, high = part.interval_s or (0.0, 0.0)
        lines.append(
            f"  {KIND_WORDS[part.kind]:<44} {part.count:>10,} × {_ns(part.figure.median_ns):>9}"
            f" = {_seconds(part.cpu_s)} ({_seconds(low)}–{_seconds(high)})"
        )
    low, high = price.interval_s
    priced = [part for part in price.parts if part.count and part.figure]
    if priced:
        total = (
            f"  direct cost: {_seconds(price.estimate_s)} of CPU ({_seconds(low)}–{_seconds(high)})"
        )
        if price.share is not None:
            total += f", {price.share:.1%} of the program's CPU time"
        if price.missing:
            total += " (the parts with no stored figure left out)"
        lines.append(total)
    else:
        lines.append("  direct cost: not priced (no stored figure)")
    if price.wait and price.wait.figure:
        lines.append(
            f"  its {price.wait.count:,} cross-CPU wake-ups each wait about"
            f" {_ns(price.wait.figure.median_ns)} on this machine (latency, not CPU time)"
        )
    lines += in_place_text(price, traced)
    for item in price.not_priced:
        count = f" ({item.count:,})" if item.count else ""
        lines.append(f"  not priced: {item.kind}{count}: {_why(item)}")
    lines.append(
        "  not included: what caches and TLBs lose to switching (the indirect cost);"
        " ctxbench run switch.ring measures it by working-set size"
    )
    if price.missing:
        selection = " ".join(sorted({w.probe for w in price.missing}))
        lines.append(
            f"  no stored figure for {selection} on this machine: run `ctxbench run --quick "
            f"{selection}`, or profile with --measure"
        )
    if counterfactuals:
        lines.append("")
        lines.append("What would change it (from measured figures only):")
        for c in counterfactuals:
            verb = "saves" if c.saved_s >= 0 else "costs"
            used = ", ".join(f"{f.probe} {_ns(f.median_ns)}" for f in c.figures)
            of = "of CPU" if c.of == "cpu" else "of waiting (latency, not CPU)"
            name, leaves_out = CHANGE_WORDS[c.change]
            lines.append(f"  {name}: {verb} {_seconds(abs(c.saved_s))} {of} (figures: {used});")
            lines.append(f"    leaves out {leaves_out}")
    return "\n".join(lines) + "\n"


def _figure_dict(f: Figure | None) -> JsonObject | None:
    if f is None:
        return None
    return {
        "probe": f.probe,
        "params": f.params,
        "median_ns": f.median_ns,
        "interval_ns": [f.low_ns, f.high_ns],
        "run_id": f.run_id,
        "status": f.status,
    }


def _part_dict(p: Part) -> JsonObject:
    return {
        "kind": p.kind,
        "count": p.count,
        "seconds": p.cpu_s,
        "interval_s": list(p.interval_s) if p.interval_s else None,
        "figure": _figure_dict(p.figure),
    }


def price_dict(price: Price) -> JsonObject:
    """A profile's price as --json writes it."""
    low, high = price.interval_s
    return {
        "primitive": price.primitive,
        "primitive_calls": price.primitive_calls,
        "between": price.between,
        "estimate_cpu_s": price.estimate_s,
        "interval_cpu_s": [low, high],
        "program_cpu_s": price.program_cpu_s,
        "share_of_cpu": price.share,
        "parts": [_part_dict(p) for p in price.parts],
        "cross_cpu_wait": _part_dict(price.wait) if price.wait else None,
        "not_priced": [
            {"kind": item.kind, "count": item.count, "why": _why(item)} for item in price.not_priced
        ],
        "missing": [{"probe": w.probe, "params": dict(w.params)} for w in price.missing],
        "not_included": NOT_INCLUDED,
    }


def _counterfactual_dict(c: Counterfactual) -> JsonObject:
    name, leaves_out = CHANGE_WORDS[c.change]
    return {
        "name": name,
        "saved_s": c.saved_s,
        "of": c.of,
        "figures": [
            {"probe": f.probe, "params": f.params, "median_ns": f.median_ns} for f in c.figures
        ],
        "leaves_out": leaves_out,
    }


def profile_dict(
    profile: Profile, price: Price | None, counterfactuals: list[Counterfactual]
) -> JsonObject:
    """A profile with its price and counterfactuals, as `profile --json` writes it
    (the profile as its record was written)."""
    return {
        "schema": 1,
        "kind": "priced_profile",
        "profile": profile.raw,
        "price": price_dict(price) if price else None,
        "counterfactuals": [_counterfactual_dict(c) for c in counterfactuals],
    }


def comparison_dict(
    a: Profile, b: Profile, rows: list[CountRow], prices: tuple[Price, Price]
) -> JsonObject:
    """Two profiles side by side, as `profile --compare --json` writes them."""
    return {
        "schema": 1,
        "kind": "profile_comparison",
        "a": a.run_id,
        "b": b.run_id,
        "rows": [{"name": n, "a": x, "b": y} for n, x, y in rows],
        "prices": [price_dict(p) for p in prices],
    }


def compare_text(a: Profile, b: Profile, rows: list[CountRow], prices: tuple[Price, Price]) -> str:
    lines = [
        f"A {a.run_id}  {_target(a)}",
        f"B {b.run_id}  {_target(b)}",
        "",
        f"  {'':<24} {'A':>14} {'B':>14} {'B / A':>8}",
    ]
    for name, x, y in rows:
        ratio = f"{y / x:.2f}x" if x and y is not None else "-"
        show = [("not counted" if v is None else f"{v:,}") for v in (x, y)]
        lines.append(f"  {name:<24} {show[0]:>14} {show[1]:>14} {ratio:>8}")
    pa, pb = prices
    lines.append("")
    for label, p in (("A", pa), ("B", pb)):
        low, high = p.interval_s
        share = f", {p.share:.1%} of its CPU" if p.share is not None else ""
        cost = f"{_seconds(p.estimate_s)} ({_seconds(low)}–{_seconds(high)})"
        if not any(part.count and part.figure for part in p.parts):
            cost, share = "not priced (no stored figure of its machine)", ""
        lines.append(f"  direct cost {label}: {cost}{share}")
    return "\n".join(lines) + "\n"


def profile_html(sections: list[tuple[str, str]], title: str | None) -> str:
    """A self-contained HTML page of profiles: each (heading, the text `show`
    prints), as it prints it."""
    heading = title or "ctxbench profile"
    body = "".join(
        f"<h2>{html.escape(name)}</h2>\n<pre>{html.escape(text)}</pre>\n" for name, text in sections
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(heading)}</title>"
        "<style>body{font-family:sans-serif;margin:2em;max-width:72em}"
        "pre{background:#f6f6f6;padding:1em;overflow-x:auto}</style></head>\n"
        f"<body><h1>{html.escape(heading)}</h1>\n{body}</body></html>\n"
    )
