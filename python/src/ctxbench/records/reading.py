"""Reading records from a stream or a file: within stated limits, strictly, each validated.

Input is read line by line with a stated limit (``MAX_LINE_BYTES`` per line,
``MAX_INPUT_BYTES`` in all), so neither a huge file nor an endless one
(/dev/zero) is ever held in memory; each line is strict JSON
(``strict_json``) and a valid record (``schema``), and the first problem is
refused in one line naming the file, the line and the problem, before
anything is stored.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ctxbench.errors import RecordError
from ctxbench.records.runs import RunRecords, group_run
from ctxbench.records.schema import record_problem
from ctxbench.records.strict_json import NotJson, loads_record

# What a record may hold (see the module's docstring). A full run of the
# whole catalogue is about 0.3 MiB, its longest line a few KiB.
MAX_LINE_BYTES = 4 * 1024 * 1024
MAX_INPUT_BYTES = 64 * 1024 * 1024


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
        except NotJson as error:
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
