"""The record contract: JSON Schema validation and grouping of records into runs.

A run is one ``env`` record, one ``result`` record per probe variant and one
``run_end`` record (absent when the producer was killed), all with the same
``run_id``. The schema (``schema/record.schema.json``, JSON Schema 2020-12) is
shared with the C++ engine; the wheel carries it as package data (an
installed ctxbench has no repository beside it), a source checkout reads
it from schema/.

Records come from other machines and other programs, so reading them is
strict: JSON that Python would accept but no producer of records writes is
refused, one line naming the file, the line and the problem, before anything
is stored — NaN, Infinity and numbers beyond ±1e18 (1e999 would become
infinity), integers of more than 19 digits, nesting deeper than 32 levels,
a key twice in one object, lone UTF-16 surrogates, and a summary that
contradicts the record's own samples. Input is read line by line with a
stated limit (``MAX_LINE_BYTES`` per line, ``MAX_INPUT_BYTES`` in all), so
neither a huge file nor an endless one (/dev/zero) is ever held in memory.
"""

from __future__ import annotations

import datetime
import io
import json
import math
import re
import statistics
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import IO, Any

from ctxbench.errors import RecordError
from ctxbench.units import params_text

SCHEMA_VERSION = 1
KINDS = ("env", "result", "run_end")
STATUSES = ("ok", "suspect", "unsupported", "failed")


SCHEMA_FILE = "record.schema.json"

# What a record may hold (see the module's docstring). A full run of the
# whole catalogue is about 0.3 MiB, its longest line a few KiB.
MAX_LINE_BYTES = 4 * 1024 * 1024
MAX_INPUT_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 32
MAX_NUMBER = 1e18
MAX_INT_DIGITS = 19


def data_path(name: str) -> Path:
    """A file of schema/: the installed package's copy (wheel data), else
    schema/ of a source checkout."""
    packaged = Path(str(resources.files("ctxbench").joinpath("data", name)))
    if packaged.is_file():
        return packaged
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "schema" / name
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{name} is neither in the package nor in a source checkout")


def schema_path() -> Path:
    return data_path(SCHEMA_FILE)


@cache
def schema() -> dict[str, Any]:
    return json.loads(schema_path().read_text("utf-8"))


@cache
def _validator(kind: str | None) -> Any:
    """A jsonschema validator of one kind of record (jsonschema is imported
    here, by the commands that check records, not by every command)."""
    import jsonschema

    whole = schema()
    if kind is None:
        target = whole
    else:
        # One kind's definition, with the shared $defs, so that an error names
        # the field that is wrong instead of "not valid under any of oneOf".
        target = {"$schema": whole["$schema"], "$ref": f"#/$defs/{kind}", "$defs": whole["$defs"]}
    cls = jsonschema.validators.validator_for(whole)
    return cls(target)


class _Refused(ValueError):
    """A JSON text that parses but holds what no record may hold."""


class _NotJson(ValueError):
    """A text that is not JSON at all."""


def _refuse_constant(name: str) -> float:
    raise _Refused(f"{name} is not a number a record may hold")


def _strict_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        raise _Refused(f"number {text[:30]} is not finite or beyond ±{MAX_NUMBER:g}")
    return value


def _strict_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    value = int(text)
    if abs(value) > MAX_NUMBER:
        raise _Refused(f"number {text} is beyond ±{MAX_NUMBER:g}")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Refused(f"key '{_shown(key)}' appears twice in one object")
        result[key] = value
    return result


_SURROGATE = re.compile("[\ud800-\udfff]")


def _shown(text: str, limit: int = 40) -> str:
    """A piece of untrusted text for an error message: escaped, short."""
    return text[:limit].encode("unicode_escape").decode("ascii")


def _check_tree(value: Any) -> None:
    """Depth and strings of a parsed record (iterative: no recursion to exhaust)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > MAX_DEPTH:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
            for key, child in item.items():
                stack.append((key, depth))
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            if depth > MAX_DEPTH:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str) and _SURROGATE.search(item):
            raise _Refused("a string holds a lone UTF-16 surrogate (not a character)")


def loads_record(text: str) -> Any:
    """Parse one line of JSON strictly; raises ValueError (with a one-line message)."""
    try:
        value = json.loads(
            text,
            parse_float=_strict_float,
            parse_int=_strict_int,
            parse_constant=_refuse_constant,
            object_pairs_hook=_unique_keys,
        )
    except RecursionError:
        raise _Refused(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as error:
        raise _NotJson(f"not JSON ({error.msg})") from None
    _check_tree(value)
    return value


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


def summary_problem(record: dict[str, Any]) -> str | None:
    """Where a result's summary contradicts its own samples, in one line."""
    summary = record.get("summary")
    samples = record.get("samples")
    if not isinstance(summary, dict) or not isinstance(samples, list):
        return None
    if summary.get("n") != len(samples):
        return f"summary says n={summary.get('n')} but the record holds {len(samples)} samples"
    if not samples or not all(isinstance(v, (int, float)) for v in samples):
        return None
    low, high = min(samples), max(samples)
    expected = {
        "min": low,
        "max": high,
        "median": statistics.median(samples),
        "mean": statistics.fmean(samples),
    }
    for name, value in expected.items():
        stated = summary.get(name)
        if isinstance(stated, (int, float)) and not _close(stated, value):
            return f"{name} is {stated:g} but the samples' {name} is {value:g}"
    for name in ("p90", "p99"):
        stated = summary.get(name)
        inside = not isinstance(stated, (int, float)) or low <= stated <= high
        if not inside and not (_close(stated, low) or _close(stated, high)):
            return f"{name} is {stated:g}, outside the samples' range {low:g}..{high:g}"
    return None


def record_problem(record: Any) -> str | None:
    """Why ``record`` is not a valid record, in one line; None when it is."""
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    kind = record.get("kind")
    if kind not in KINDS:
        return f"'kind' is {kind!r}, expected one of {', '.join(KINDS)}"
    if record.get("schema") != SCHEMA_VERSION:
        return f"'schema' is {record.get('schema')!r}; this ctxbench reads schema {SCHEMA_VERSION}"
    from jsonschema.exceptions import best_match

    error = best_match(_validator(kind).iter_errors(record))
    if error is None:
        error = best_match(_validator(None).iter_errors(record))
    if error is None:
        problem = summary_problem(record) if kind == "result" else None
        if problem is None:
            return None
        return f"result record, at summary: {problem} (the summary contradicts the samples)"
    where = "/".join(_shown(str(p)) for p in error.absolute_path) or "(record)"
    message = error.message
    if len(message) > 200:
        message = message[:197] + "..."
    return f"{kind} record, at {where}: {message}"


def validate(record: Any) -> dict[str, Any]:
    problem = record_problem(record)
    if problem is not None:
        raise RecordError(problem)
    return record


def params_key(params: dict[str, Any]) -> str:
    """Canonical text of a params object: equal knobs give equal keys."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def variant_name(probe: str, params: dict[str, Any]) -> str:
    """'switch.pipe between=threads cpus=same': a probe variant as one stable string
    (params sorted by name), for names other tools key on."""
    text = params_text(params)
    return f"{probe} {text}" if text else probe


def summary_value(result: dict[str, Any], name: str) -> float | None:
    summary = result.get("summary")
    if not summary:
        return None
    value = summary.get(name)
    return float(value) if value is not None else None


@dataclass
class RunRecords:
    """The records of one run, checked to belong together."""

    env: dict[str, Any]
    results: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None

    @property
    def run_id(self) -> str:
        return self.env["run_id"]

    def all(self) -> list[dict[str, Any]]:
        return [self.env, *self.results, *([self.end] if self.end else [])]


def shared_unsupported_reason(results: list[dict[str, Any]]) -> str | None:
    """The one reason every result is unsupported for ("code: detail"), or
    None when something was measured, or the reasons differ. Such a run holds
    no figure, only that reason repeated: it is not worth storing."""
    reasons = set()
    for result in results:
        verdict = result["verdict"]
        if verdict["status"] != "unsupported":
            return None
        reasons.add(tuple((r["code"], r["detail"]) for r in verdict["reasons"]))
    if len(reasons) != 1:
        return None
    return "; ".join(f"{code}: {detail}" for code, detail in next(iter(reasons)))


def group_run(records: Iterable[dict[str, Any]], origin: str = "input") -> RunRecords:
    """Check that valid records form exactly one run; raise RecordError if not."""
    env = None
    end = None
    results: list[dict[str, Any]] = []
    run_ids: set[str] = set()
    for record in records:
        run_ids.add(record["run_id"])
        if record["kind"] == "env":
            if env is not None:
                raise RecordError(f"{origin}: more than one env record; one file must hold one run")
            env = record
        elif record["kind"] == "run_end":
            if end is not None:
                raise RecordError(f"{origin}: more than one run_end record")
            end = record
        else:
            results.append(record)
    if env is None:
        raise RecordError(f"{origin}: no env record; a run starts with one (engine `run --json`)")
    if len(run_ids) > 1:
        raise RecordError(
            f"{origin}: records of {len(run_ids)} different runs ({', '.join(sorted(run_ids))}); "
            "import one run per file"
        )
    if results and all("variant_index" in r for r in results):
        # A variant measured again after host interference arrives after the
        # others; the run's results are its selection's variants, in order.
        results.sort(key=lambda r: r["variant_index"])
    return RunRecords(env=env, results=results, end=end)


def _lines(stream: IO[bytes], origin: str) -> Iterator[tuple[int, bytes, bool]]:
    """(number, line, ends with a newline), within the limits, never more in memory."""
    total = 0
    number = 0
    while True:
        try:
            line = stream.readline(MAX_LINE_BYTES + 1)
        except OSError as error:
            raise RecordError(f"cannot read {origin}: {error.strerror}") from None
        if not line:
            return
        number += 1
        total += len(line)
        if len(line) > MAX_LINE_BYTES:
            raise RecordError(
                f"{origin}, line {number}: longer than {MAX_LINE_BYTES // 2**20} MiB; "
                "not engine JSON Lines (a record is a few KiB)"
            )
        if total > MAX_INPUT_BYTES:
            raise RecordError(
                f"{origin}: larger than {MAX_INPUT_BYTES // 2**20} MiB; one run is far smaller "
                "(import one run per file)"
            )
        yield number, line, line.endswith(b"\n")


def read_records(
    stream: IO[bytes], origin: str, notes: list[str] | None = None
) -> list[dict[str, Any]]:
    """Parse and validate JSON Lines from a binary stream; the first problem raises RecordError.

    A last line that is cut short (no newline, not JSON: the producer was
    killed, or the disk filled up) is dropped, with a note appended to ``notes``.
    """
    records = []
    for number, raw, whole in _lines(stream, origin):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]  # tolerate a byte-order mark
        cut = not whole and bool(records)  # a last line after whole records
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            if cut:
                _cut_last_line(number, origin, notes)
                break
            raise RecordError(
                f"{origin}, line {number}: not UTF-8 text; expected engine JSON Lines"
            ) from None
        if not line.strip():
            continue
        try:
            record = loads_record(line)
        except _NotJson as error:
            if cut:
                _cut_last_line(number, origin, notes)
                break
            raise RecordError(
                f"{origin}, line {number}: {error}; expected engine JSON Lines"
            ) from None
        except ValueError as error:
            raise RecordError(
                f"{origin}, line {number}: {error}; expected engine JSON Lines"
            ) from None
        problem = record_problem(record)
        if problem is not None:
            raise RecordError(f"{origin}, line {number}: not a ctxbench record: {problem}")
        records.append(record)
    if not records:
        raise RecordError(f"{origin}: no records; expected engine JSON Lines (`run --json`)")
    return records


def _cut_last_line(number: int, origin: str, notes: list[str] | None) -> None:
    if notes is not None:
        notes.append(
            f"{origin}, line {number}: the last line is cut short (no newline, not whole JSON); "
            "it was dropped"
        )


def parse_jsonl(text: str, origin: str) -> list[dict[str, Any]]:
    """Parse and validate JSON Lines text; the first problem raises RecordError."""
    return read_records(io.BytesIO(text.encode("utf-8", "surrogatepass")), origin)


def read_run_file(path: Path, notes: list[str] | None = None) -> RunRecords:
    try:
        with path.open("rb") as stream:
            return group_run(read_records(stream, str(path), notes), str(path))
    except OSError as error:
        raise RecordError(f"cannot read {path}: {error.strerror}") from None


def dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


# CPUID hypervisor vendor strings, as the env record carries them.
HYPERVISORS = {
    "KVMKVMKVM": "KVM",
    "Microsoft Hv": "Hyper-V",
    "VMwareVMware": "VMware",
    "XenVMMXenVMM": "Xen",
    "TCGTCGTCGTCG": "QEMU (TCG)",
    "ACRNACRNACRN": "ACRN",
    "bhyve bhyve": "bhyve",
}


def virtualization_text(env: dict[str, Any]) -> str | None:
    """'KVM guest', 'KVM guest, in docker', 'WSL', 'bare metal'; None when unknown."""
    virt = env.get("virtualization") or {}
    if virt.get("wsl"):
        return "WSL"
    vendor = (virt.get("hypervisor_vendor") or "").strip()
    detected = virt.get("detected") or "unknown"
    container = virt.get("container") or (
        virt.get("systemd_detect_virt")
        if virt.get("systemd_detect_virt") in ("docker", "podman", "lxc", "lxc-libvirt", "wsl")
        else None
    )
    if vendor:
        text = f"{HYPERVISORS.get(vendor, vendor)} guest"
    elif virt.get("hypervisor_bit"):
        text = "VM guest"
    elif detected == "none":
        text = "bare metal"
    elif detected not in ("unknown", container):
        text = f"{detected} guest"
    else:
        text = None
    if container:
        text = f"{text}, in {container}" if text else f"in {container}"
    return text


def machine_name(env: dict[str, Any]) -> str:
    """What a machine is: 'vm · Intel(R) Xeon(R) Processor · KVM guest, in docker'."""
    cpu = (env.get("cpu") or {}).get("model") or "unknown CPU"
    parts = [env.get("hostname") or "?", " ".join(str(cpu).split())]
    virt = virtualization_text(env)
    if virt:
        parts.append(virt)
    return " · ".join(parts)


# ---- building records (for producers written in Python: the trap lab) -------
def timestamp() -> str:
    """Now, UTC, to the second, as the records write it."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.isoformat(timespec="seconds").replace("+00:00", "Z")


def run_end_record(
    run_id: str, records: Iterable[dict[str, Any]], duration_s: float, interrupted: bool = False
) -> dict[str, Any]:
    """The closing record of a run: its results counted by status."""
    counts = dict.fromkeys(STATUSES, 0)
    for record in records:
        if record.get("kind") == "result":
            counts[record["verdict"]["status"]] += 1
    return {
        "schema": SCHEMA_VERSION,
        "kind": "run_end",
        "run_id": run_id,
        "finished_at": timestamp(),
        "duration_s": round(duration_s, 3),
        "counts": counts,
        "interrupted": interrupted,
    }
