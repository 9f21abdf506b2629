"""A stand-in for ctxbench-engine that replays recorded engine output.

It speaks the engine's command-line contract (``list --json``, ``env --json``,
``run [SEL...] --json --progress``, ``run [SEL...] --dry-run``, exit 2 with
one "ctxbench-engine: error:" line on bad usage, SIGINT -> run_end
interrupted=true and exit 130) so the runner and the CLI can be tested for
what the real engine does rarely or slowly: being interrupted, crashing,
writing a bad line. Its records are real engine output (FAKE_ENGINE_RECORDS, a fixture file).

Environment:
  FAKE_ENGINE_RECORDS  the JSON Lines file to replay (required)
  FAKE_ENGINE_MODE     normal | usage | crash | garbage | silent
  FAKE_ENGINE_DELAY    seconds to wait before each result (default 0)
  FAKE_ENGINE_RUN_ID   replace the run_id of every record; ID1,ID2,...: the
                       Nth measuring run (counted in FAKE_ENGINE_ARGS,
                       then required) takes the Nth id
  FAKE_ENGINE_ARGS     if set, append the arguments received to this file
"""

from __future__ import annotations

import fnmatch
import json
import os
import signal
import sys
import time

interrupted = False


def on_sigint(signum, frame):
    global interrupted
    interrupted = True


def run_id():
    """FAKE_ENGINE_RUN_ID's id for this call: of several, the one whose
    place is this measuring run's among those FAKE_ENGINE_ARGS logged."""
    ids = os.environ.get("FAKE_ENGINE_RUN_ID", "").split(",")
    if len(ids) == 1:
        return ids[0]
    with open(os.environ["FAKE_ENGINE_ARGS"], encoding="utf-8") as handle:
        calls = [json.loads(line) for line in handle if line.strip()]
    measuring = [args for args in calls if args[:1] == ["run"] and "--dry-run" not in args]
    return ids[min(len(measuring), len(ids)) - 1]


def load():
    records = []
    replaced = run_id()
    with open(os.environ["FAKE_ENGINE_RECORDS"], encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                if replaced:
                    record["run_id"] = replaced
                records.append(record)
    return records


def selected(probe, selector):
    return fnmatch.fnmatch(probe, selector) or probe.split(".")[0] == selector


def emit(record):
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def main(argv):
    if os.environ.get("FAKE_ENGINE_ARGS"):
        with open(os.environ["FAKE_ENGINE_ARGS"], "a", encoding="utf-8") as handle:
            handle.write(json.dumps(argv) + "\n")
    mode = os.environ.get("FAKE_ENGINE_MODE", "normal")
    records = load()
    env = next(r for r in records if r["kind"] == "env")
    results = [r for r in records if r["kind"] == "result"]
    end = next(r for r in records if r["kind"] == "run_end")
    if not argv:
        print("ctxbench-engine: error: a subcommand is required", file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    if command == "list":
        names = []
        for result in results:
            if result["probe"] not in names:
                names.append(result["probe"])
        descriptors = [
            {
                "name": name,
                "family": name.split(".")[0],
                "op": "replayed",
                "unit": "ns",
                "baseline": None,
                "params": [],
                "expects": None,
                "supported": True,
                "reason": None,
            }
            for name in names
        ]
        print(json.dumps(descriptors))
        return 0
    if command == "env":
        print(json.dumps(env))
        return 0
    if command != "run":
        print(f"ctxbench-engine: error: unknown subcommand {command}", file=sys.stderr)
        return 2
    if mode == "usage":
        print(
            "ctxbench-engine: error: --cpus: 'sideways' is not one of same, cross, any",
            file=sys.stderr,
        )
        return 2
    signal.signal(signal.SIGINT, on_sigint)
    # The selectors come first (RunOptions.engine_args); the words after the
    # first option are options and their values.
    first_option = next((i for i, a in enumerate(rest) if a.startswith("--")), len(rest))
    selectors = rest[:first_option]
    if "--preset" in rest:  # the fake knows no preset's probes: it replays what the name matches
        selectors = [rest[rest.index("--preset") + 1]]
    if selectors:
        for selector in selectors:  # the engine's rule: a name, a family or a glob
            if "--preset" not in rest and not any(selected(r["probe"], selector) for r in results):
                print(
                    f"ctxbench-engine: error: unknown probe '{selector}'; "
                    "run 'ctxbench-engine list' to see the probe names",
                    file=sys.stderr,
                )
                return 2
        results = [r for r in results if any(selected(r["probe"], s) for s in selectors)]
    if "--dry-run" in rest:  # the variants it would run, as the engine prints them
        for result in results:
            emit({"probe": result["probe"], "params": result["params"]})
        return 0
    delay = float(os.environ.get("FAKE_ENGINE_DELAY", "0"))
    if mode == "silent":
        return 1
    emit(env)
    print("ctxbench-engine: note: replaying recorded output", file=sys.stderr, flush=True)
    for index, result in enumerate(results, start=1):
        if interrupted:
            break
        payload = {
            "index": index,
            "total": len(results),
            "probe": result["probe"],
            "params": result["params"],
        }
        print("@progress " + json.dumps(payload), file=sys.stderr, flush=True)
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline and not interrupted:
            time.sleep(0.01)
        if mode == "crash" and index == 3:
            print("ctxbench-engine: error: probe crashed (replayed failure)", file=sys.stderr)
            return 3
        if mode == "garbage" and index == 2:
            sys.stdout.write("this is not a record\n")
        emit(result)
    end = dict(end, interrupted=interrupted)
    emit(end)
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
