"""Self-contained HTML report of stored runs: tables and plotly plots, offline.

Renders only from stored records (``StoredRun``); measures nothing. The page
carries plotly.js inline (gzip-compressed, docs/report.md "Size") and makes no
network request. Every string that
comes from a record reaches the page escaped, its control and bidi-override
characters replaced as the terminal views do (units.terminal_text): Jinja2 autoescapes the HTML,
figure data travels as JSON in ``<script type="application/json">`` with
``<``, ``>`` and ``&`` escaped, and labels given to plotly (which
understands a few HTML tags) are HTML-escaped first.

Plots:
* per family: the median of each variant with its confidence interval,
  one trace per run; log scale where the family spans more than a factor 20;
* per family: the distribution of the per-operation samples (box plots);
* switch.ring: a heatmap of the corrected cost per switch over processes x
  working set (lmbench lat_ctx's grid);
* matrix.*: a heatmap of each CPU-pair matrix, CPUs in topology order with
  the groups that share an LLC, a NUMA node or a core outlined, and a table
  of per-class medians (per-class ratios in the comparison when several runs
  have the matrix);
* several runs: the ratio of medians with its bootstrap CI against the
  first run, one marker style for significant and one for not.
"""

from __future__ import annotations

import base64
import gzip
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from ctxbench import __version__, units
from ctxbench.analysis.explain.explanation import explain
from ctxbench.analysis.summary.build import is_remainder, run_name, section_id, summarize
from ctxbench.records import matrix
from ctxbench.records.envdiff import flatten_env
from ctxbench.records.runs import StoredRun
from ctxbench.riscv.answer import is_lab_run, lab_answer, lab_targets, measured
from ctxbench.riscv.catalog import CALLS
from ctxbench.riscv.report import parts_rows
from ctxbench.views.compare.comparison import (
    cell_words,
    describe,
    excluded_words,
    summary_lines,
    why_not_words,
)
from ctxbench.views.explain.explanation import (
    missing_words,
    not_explained_words,
    note_words,
    source_words,
)
from ctxbench.views.explain.phases import traced_line
from ctxbench.views.reasons import reason_sentences
from ctxbench.views.report_families import (
    BLOCK_LEGEND,
    FamilySection,
    distribution_figure,
    families_of,
    matrix_views,
    median_figure,
    probe_groups,
    ring_figures,
)
from ctxbench.views.report_figures import (
    Figures,
)
from ctxbench.views.summary import why
from ctxbench.views.summary.answers import sentences
from ctxbench.views.summary.report import (
    comparison_figure,
    ladder_labels,
    point_text,
    summary_figures,
)


def build_context(
    runs: list[StoredRun], title: str | None = None, comparison: Any = None
) -> dict[str, object]:
    """COMPARISON: the runs' comparison (``compare``'s, judged with the
    machine's history); without one, ``compare_runs`` of the runs alone."""
    figures = Figures()
    names = [run_name(i, run) for i, run in enumerate(runs)]
    summary = summarize(runs, comparison=comparison)
    summary_view = summary_figures(figures, summary, runs)
    comparison = summary.machines.comparison if summary.machines else None
    if comparison is not None and not _shares_a_figure(comparison):
        # e.g. a default run beside a RISC-V lab run (what `make run` reports):
        # no variant is in two runs, so the comparison would be a table of
        # "not in this run"; each run's own sections say it all
        comparison = None
    sections = _family_sections(figures, runs, names)
    env_rows, differing = _env_rows(runs, comparison)
    notes = [
        (name, result)
        for name, run in zip(names, runs, strict=True)
        for result in run.results
        if result.verdict.status != "ok"
    ]
    return {
        "title": title or "ctxbench report",
        "summary": summary_view,
        "why": {run.name: why.run_why(run) for run in summary.runs},
        "terms": why.terms(summary.runs[0].ladder) if summary.runs else [],
        "no_ratio_words": why.no_ratio_words,
        "ladder_labels": ladder_labels(summary),
        "point_text": point_text,
        "answer_sentences": sentences,
        "reason_sentences": reason_sentences,
        "is_remainder": is_remainder,
        "traced_line": traced_line,
        "missing_words": missing_words,
        "note_words": note_words,
        "source_words": source_words,
        "not_explained_words": not_explained_words,
        "version": __version__,
        "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "runs": list(zip(names, runs, strict=True)),
        "env_rows": env_rows,
        "n_differing": len(differing),
        "sections": sections,
        "ring_plots": ring_figures(figures, runs),
        "matrix_views": matrix_views(figures, runs),
        "matrix_legend": BLOCK_LEGEND,
        "class_label": matrix.CLASS_LABEL,
        "labs": _labs(names, runs),
        "explained": [
            (name, explained)
            for name, run in zip(names, runs, strict=True)
            if (explained := explain(run.results, run.run_id)).explanations or explained.fork
        ],
        "comparison": comparison,
        "comparison_plot": comparison_figure(figures, comparison) if comparison else None,
        "notes": notes,
        "units": units,
        "describe": describe,
        "cell_words": cell_words,
        "excluded_words": excluded_words,
        "why_not_words": why_not_words,
        "summary_lines": summary_lines(comparison) if comparison else [],
        "letter": units.run_letter,
        "plotly_js": Markup(packed(chart_library())),
        "plot_template": figures.template_json(),
    }


def _family_sections(
    figures: Figures, runs: list[StoredRun], names: list[str]
) -> list[FamilySection]:
    """One section per (family, unit): its plots, one table per run that has it."""
    sections = []
    ids: set[str] = set()
    families = families_of(runs)
    for family, unit in families:
        per_run = [
            [r for r in run.results if r.family == family and r.unit == unit] for run in runs
        ]
        # The first section of a family answers to the summary's links (section_id).
        anchor = section_id(family)
        if anchor in ids:
            anchor = f"{anchor}-{len(ids)}"
        ids.add(anchor)
        section = FamilySection(
            family=family,
            unit=unit,
            id=anchor,
            median_plot=median_figure(figures, family, unit, per_run, names),
            distribution_plot=distribution_figure(figures, family, unit, per_run, names),
            nav_label=family
            if sum(1 for f, _ in families if f == family) == 1
            else f"{family} ({unit})",
        )
        for name, results in zip(names, per_run, strict=True):
            if results:
                section.tables.append((name, probe_groups(results)))
        sections.append(section)
    return sections


@dataclass(frozen=True)
class EnvRow:
    """One key of the environment: each run's value (None: absent), and whether they differ."""

    key: str
    values: list[str | None]
    differs: bool


def _env_rows(runs: list[StoredRun], comparison: Any) -> tuple[list[EnvRow], set[str]]:
    """The environment's keys, each run's value, the differing ones first;
    and the keys that differ (as the comparison found them)."""
    envs = [flatten_env(run.env) for run in runs]
    env_keys = comparison.env.keys if comparison else list(envs[0])
    differing = set(comparison.env.differing) if comparison else set()
    env_rows = [EnvRow(key, [env.get(key) for env in envs], key in differing) for key in env_keys]
    env_rows.sort(key=lambda row: not row.differs)
    return env_rows, differing


# plotly.js's cartesian bundle (scatter, bar, box, heatmap), fetched by `make
# plotly-js` into the package (scripts/plotly_js.sh).
CHART_LIBRARY = "plotly-cartesian.min.js"


def _cartesian_bundle() -> Any:
    return resources.files("ctxbench") / "assets" / CHART_LIBRARY


def has_cartesian_bundle() -> bool:
    return _cartesian_bundle().is_file()


def chart_library() -> str:
    """plotly.js for the page: the cartesian bundle where it is installed, else
    the full bundle the plotly package carries (about 1.3 MB more, packed)."""
    if has_cartesian_bundle():
        return _cartesian_bundle().read_text("utf-8")
    return get_plotlyjs()


def packed(script: str) -> str:
    """SCRIPT gzip-compressed and base64-encoded (the page unpacks it with the
    browser's DecompressionStream); mtime 0, so a report renders the same."""
    return base64.b64encode(gzip.compress(script.encode("utf-8"), 9, mtime=0)).decode("ascii")


def _shares_a_figure(comparison: Any) -> bool:
    """Whether some variant (or CPU-pair matrix) has a figure in two runs."""
    if comparison.matrices:
        return True
    return any(sum(cell.median is not None for cell in row.cells) >= 2 for row in comparison.rows)


def _labs(names: list[str], runs: list[StoredRun]) -> list[dict[str, object]]:
    """The RISC-V trap lab's answer per lab run: its lines, and each call's
    parts per simulator (ctxbench.riscv.answer, as show prints them)."""
    labs = []
    for name, run in zip(names, runs, strict=True):
        if not is_lab_run(run.results):
            continue
        targets = measured(lab_targets(run.results))
        labs.append(
            {
                "name": name,
                "answer": lab_answer(run.results),
                "calls": [(call, *parts_rows(targets, call)) for call in CALLS] if targets else [],
            }
        )
    return labs


def _page_text(value: Any) -> Any:
    """Every value the page shows, as the terminal views show it: control and
    bidirectional-override characters replaced (units.terminal_text), so a
    hostname cannot reorder what is read or send escapes to `cat report.html`."""
    if isinstance(value, Markup):  # made here: the chart library, figures (cleaned when made)
        return value
    return units.terminal_text(value) if isinstance(value, str) else value


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("ctxbench", "templates"),
        autoescape=True,
        finalize=_page_text,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(runs: list[StoredRun], title: str | None = None, comparison: Any = None) -> str:
    if not runs:
        raise ValueError("a report needs at least one run")
    context = build_context(runs, title, comparison)
    return _environment().get_template("report.html.j2").render(context)
