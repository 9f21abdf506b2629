"""Words for a profile: what the program did, what it cost, what would change it."""

from __future__ import annotations

import html
from typing import Any

from ctxbench.analysis.profile_price import Counterfactual, Price
from ctxbench.records.profile import InPlace, Latency, in_place

KIND_WORDS = {
    "hand_off": "hand-offs (wake-ups of its tasks)",
    "syscall": "other system calls (kernel entry and exit)",
    "minor_fault": "minor page faults",
    "thread": "threads created",
    "process": "processes created",
    "signal": "signals",
    "cross_cpu_wait": "cross-CPU wake-ups",
}
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


def counts_text(profile: dict[str, Any]) -> str:
    counts = profile["counts"]
    target = profile["target"]
    what = " ".join(target["command"]) if target["command"] else f"PID {target['pid']}"
    lines = [f"Profile of {what}: {profile['ended']}, {profile['wall_s']:.3f} s wall"]
    user, system = profile["cpu_user_s"], profile["cpu_system_s"]
    if user is not None and system is not None:
        lines.append(f"CPU time {user + system:.3f} s (user {user:.3f} s, system {system:.3f} s)")
    if profile["run_queue_wait_s"] is not None:
        lines.append(f"waited for a CPU {profile['run_queue_wait_s']:.3f} s")
    lines.append("")
    for key, words in COUNT_ROWS:
        if key not in counts:
            continue  # a schema-1 profile: counted before --trace existed
        value = counts[key]
        shown = f"{value:,}" if value is not None else "not counted"
        if value is None and key in ("wakeups_idle_target", "wakeups_busy_target"):
            shown += " (profile --trace counts it)"
        lines.append(f"  {words:<28} {shown}")
    top = profile["syscalls_by_call"][:5]
    if top:
        lines.append(
            "  most frequent calls: " + ", ".join(f"{c['name']} {c['count']:,}" for c in top)
        )
    traced = in_place(profile)
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
    lost = profile["samples"]["lost"]
    if lost:
        lines.append(f"  {lost:,} samples lost: the splits are short by as many events")
    return "\n".join(lines) + "\n"


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
    for kind, count, why in price.not_priced:
        lines.append(f"  not priced: {kind}{f' ({count:,})' if count else ''}: {why}")
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
            lines.append(f"  {c.name}: {verb} {_seconds(abs(c.saved_s))} {of} (figures: {used});")
            lines.append(f"    leaves out {c.leaves_out}")
    return "\n".join(lines) + "\n"


def profile_dict(
    profile: dict[str, Any], price: Price | None, counterfactuals: list[Counterfactual]
) -> dict[str, Any]:
    return {
        "schema": 1,
        "kind": "priced_profile",
        "profile": profile,
        "price": price.as_dict() if price else None,
        "counterfactuals": [
            {
                "name": c.name,
                "saved_s": c.saved_s,
                "of": c.of,
                "figures": [
                    {"probe": f.probe, "params": f.params, "median_ns": f.median_ns}
                    for f in c.figures
                ],
                "leaves_out": c.leaves_out,
            }
            for c in counterfactuals
        ],
    }


def compare_text(
    a: dict[str, Any],
    b: dict[str, Any],
    rows: list[tuple[str, int | None, int | None]],
    prices: tuple[Price, Price],
) -> str:
    lines = [
        f"A {a['run_id']}  {' '.join(a['target']['command'] or ['PID', str(a['target']['pid'])])}",
        f"B {b['run_id']}  {' '.join(b['target']['command'] or ['PID', str(b['target']['pid'])])}",
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
