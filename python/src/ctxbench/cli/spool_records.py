"""The spool's lines beyond the engine's records, and reading a spool back.

A spool holds the engine's records as JSON Lines, as ``run --json`` does,
and two kinds of line of its own, each starting with ``@`` (never the start
of a JSON record):

* ``@partial {record}``: a variant as it stood after a round of interleaved
  rounds (the engine's ``@partial``), written as it arrives so a kill of
  ctxbench loses no round; the variant's own record, where it came,
  supersedes it.
* ``@repeat {"repeat": k, "of": n}``: the records after it are repeat k of
  n of ``run --repeat``; such a spool is stored as one run with its
  repeats, as the finished run would have been (``repeats.merge_repeats``).
* ``@ab {"round": k, "arm": "A", "of": n, "wrapper": CMD}``: the records
  after it are one arm's engine process of round k of n of `run
  --ab-wrapper CMD`; such a spool is stored as one A/B run of its whole
  rounds, as the finished run would have been (``acquire.ab.merge_ab``).

``read_run`` reads a file of either kind: a plain one as ``import`` always
did, a spool by these rules.
"""

from __future__ import annotations

import io
import json
from typing import IO, Any

from ctxbench.errors import RecordError
from ctxbench.records.naming import params_key
from ctxbench.records.reading import MAX_INPUT_BYTES, read_records
from ctxbench.records.runs import RunRecords, group_run
from ctxbench.records.schema import record_problem
from ctxbench.records.strict_json import dumps, loads_record

PARTIAL = "@partial "
REPEAT = "@repeat "
AB = "@ab "


def partial_line(record: dict[str, Any]) -> str:
    return PARTIAL + dumps(record) + "\n"


def repeat_line(number: int, count: int) -> str:
    return REPEAT + json.dumps({"repeat": number, "of": count}) + "\n"


def ab_line(number: int, arm: str, count: int, wrapper: str) -> str:
    return AB + json.dumps({"round": number, "arm": arm, "of": count, "wrapper": wrapper}) + "\n"


def read_run(stream: IO[bytes], origin: str, notes: list[str] | None = None) -> RunRecords:
    """The run in STREAM (at most MAX_INPUT_BYTES): engine JSON Lines, or a
    spool with its own lines. Any problem raises RecordError naming ORIGIN."""
    data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise RecordError(
            f"{origin}: larger than {MAX_INPUT_BYTES // 2**20} MiB; one run is far smaller "
            "(import one run per file)"
        )
    if not (data.startswith(b"@") or b"\n@" in data):
        return group_run(read_records(io.BytesIO(data), origin, notes), origin)
    return _spool_run(data, origin, notes)


def _spool_run(data: bytes, origin: str, notes: list[str] | None) -> RunRecords:
    """A spool's run: its records, partials and repeat marks put together."""
    # Each line is checked as read_records checks a line of engine JSON Lines.
    lines = data.splitlines(keepends=True)
    repeats: list[list[tuple[bool, dict[str, Any]]]] = []
    asked = 0
    arms: list[dict[str, Any]] = []  # each @ab mark, the process after it repeats' same index
    for number, raw in enumerate(lines, start=1):
        text = raw.lstrip(b"\xef\xbb\xbf") if number == 1 else raw
        if text.startswith(AB.encode()):
            try:
                mark = json.loads(text[len(AB) :])
                arms.append(
                    {"round": int(mark["round"]), "arm": str(mark["arm"]),
                     "of": int(mark["of"]), "wrapper": str(mark["wrapper"])}
                )  # fmt: skip
            except (ValueError, KeyError, TypeError):
                raise RecordError(f"{origin}, line {number}: an A/B mark that is not one") from None
            repeats.append([])
            continue
        if text.startswith(REPEAT.encode()):
            try:
                asked = max(asked, int(json.loads(text[len(REPEAT) :])["of"]))
            except (ValueError, KeyError, TypeError):
                raise RecordError(
                    f"{origin}, line {number}: a repeat mark that is not one"
                ) from None
            repeats.append([])
            continue
        partial = text.startswith(PARTIAL.encode())
        body = text[len(PARTIAL) :] if partial else text
        if not body.strip():
            continue
        where = f"{origin}, line {number}"
        try:
            record = loads_record(body.decode("utf-8"))
        except ValueError as error:  # UnicodeDecodeError too
            if number == len(lines) and not raw.endswith(b"\n"):
                _note(notes, f"{where}: the last line is cut short; it was dropped")
                break
            raise RecordError(f"{where}: {error}; expected engine JSON Lines") from None
        problem = record_problem(record)
        if problem is not None:
            raise RecordError(f"{where}: not a ctxbench record: {problem}")
        # The engine's stdout (records) and stderr (@partial) are read apart:
        # a round may come before the env record it belongs with.
        if not repeats or (record["kind"] == "env" and _has_env(repeats[-1])):
            repeats.append([])
        repeats[-1].append((partial, record))
    if arms:
        return group_run(_ab_run(arms, repeats, origin), origin)
    runs = [_settled(records) for records in repeats if records]
    if len(runs) <= 1 or not asked:
        # One engine run; or several without repeat marks (not a --repeat
        # spool), which group_run refuses as more than one run.
        return group_run([record for run in runs for record in run], origin)
    from ctxbench.acquire.repeats import merge_repeats

    if any(not any(r["kind"] == "env" for r in run) for run in runs):
        raise RecordError(f"{origin}: a repeat without its env record")
    merged = merge_repeats(runs, asked=max(asked, len(runs)))
    return group_run(merged, origin)


def _ab_run(
    arms: list[dict[str, Any]], processes: list[list[tuple[bool, dict[str, Any]]]], origin: str
) -> list[dict[str, Any]]:
    """An A/B spool's whole rounds as one run (``acquire.ab.merge_ab``): the
    process after each @ab mark is that round's arm; a round whose two arms
    did not both finish (a run_end, not interrupted) is left out, as the run
    itself leaves it."""
    from ctxbench.acquire.ab import merge_ab

    if len(processes) != len(arms) or any(a["arm"] not in ("A", "B") for a in arms):
        raise RecordError(f"{origin}: records before the first A/B mark, or an arm not A or B")
    rounds: dict[int, dict[str, list[dict[str, Any]]]] = {}
    for mark, records in zip(arms, processes, strict=True):
        rounds.setdefault(mark["round"], {"A": [], "B": []})[mark["arm"]] = _settled(records)
    whole = [rounds[k] for k in sorted(rounds) if all(_ended(rounds[k][arm]) for arm in "AB")]
    try:
        return merge_ab(whole, arms[0]["wrapper"], arms[0]["of"], interrupted=True)
    except ValueError as error:
        raise RecordError(f"{origin}: {error}; nothing of this A/B run can be stored") from None


def _ended(records: list[dict[str, Any]]) -> bool:
    return any(r["kind"] == "run_end" and not r.get("interrupted") for r in records)


def _has_env(records: list[tuple[bool, dict[str, Any]]]) -> bool:
    return any(record["kind"] == "env" for _, record in records)


def _settled(records: list[tuple[bool, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One engine run's records: a variant's own record where it came, else
    its last @partial (the rounds it had when ctxbench stopped hearing)."""
    finals = {_variant(r) for partial, r in records if not partial and r["kind"] == "result"}
    latest: dict[Any, dict[str, Any]] = {}
    for partial, record in records:
        if partial and record["kind"] == "result":
            latest[_variant(record)] = record
    settled = [record for partial, record in records if not partial]
    ends = [i for i, r in enumerate(settled) if r["kind"] == "run_end"]
    extra = [r for key, r in latest.items() if key not in finals]
    at = ends[0] if ends else len(settled)
    return settled[:at] + extra + settled[at:]


def _variant(record: dict[str, Any]) -> Any:
    """A result's variant: its index in the run, or (older engines) its probe and params."""
    if "variant_index" in record:
        return record["variant_index"]
    return record["probe"], params_key(record["params"])


def _note(notes: list[str] | None, text: str) -> None:
    if notes is not None:
        notes.append(text)
