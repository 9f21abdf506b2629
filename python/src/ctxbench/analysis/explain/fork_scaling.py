"""How ``create.fork`` grows with the parent's size.

A least-squares line (scipy's linregress) of the fork's median over the parent's touched memory
(``parent_mib``), beside the minimal static parent's figure
(``create.fork_minimal_parent``). ``ctxbench.analysis.explain.explanation`` picks the figures and
holds the fit in ``Explained.fork``."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ForkScaling:
    points: list[tuple[float, float]]  # (parent_mib, median ns)
    slope_ns_per_mib: float | None
    intercept_ns: float | None
    slope_stderr: float | None
    minimal_parent_ns: float | None
    notes: list[str] = field(default_factory=list)


def fit_fork(points: list[tuple[float, float]], minimal: float | None) -> ForkScaling | None:
    """The line through POINTS ((parent_mib, median ns), sorted), beside the
    MINIMAL parent's figure; None when there is neither."""
    if not points and minimal is None:
        return None
    notes = []
    slope = intercept = stderr = None
    if len({x for x, _ in points}) >= 2:
        from scipy import stats as sps

        fit = sps.linregress([x for x, _ in points], [y for _, y in points])
        slope, intercept = float(fit.slope), float(fit.intercept)
        stderr = float(fit.stderr) if len(points) > 2 else None
    else:
        notes.append("fewer than two parent sizes measured: no slope")
    return ForkScaling(points, slope, intercept, stderr, minimal, notes)
