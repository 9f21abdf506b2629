"""Validates ctxbench JSON Lines files against schema/record.schema.json.

usage: validate_records.py [--no-failed] FILE...
Exits 1 naming the first bad line; with --no-failed a `failed` verdict counts as bad.
"""

import json
import pathlib
import sys

import jsonschema

SCHEMA = pathlib.Path(__file__).resolve().parents[1] / "schema" / "record.schema.json"


def main(argv: list[str]) -> int:
    no_failed = "--no-failed" in argv
    files = [a for a in argv if a != "--no-failed"]
    if not files:
        print("usage: validate_records.py [--no-failed] FILE...", file=sys.stderr)
        return 2
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    for name in files:
        kinds: dict[str, int] = {}
        for number, line in enumerate(pathlib.Path(name).read_text().splitlines(), 1):
            record = json.loads(line)
            error = next(iter(validator.iter_errors(record)), None)
            if error is not None:
                print(f"{name}:{number}: {error.message}", file=sys.stderr)
                return 1
            if no_failed and record.get("verdict", {}).get("status") == "failed":
                print(
                    f"{name}:{number}: {record['probe']} failed: {record['verdict']['reasons']}",
                    file=sys.stderr,
                )
                return 1
            kinds[record["kind"]] = kinds.get(record["kind"], 0) + 1
        if kinds.get("env") != 1 or kinds.get("run_end") != 1 or not kinds.get("result"):
            print(f"{name}: not a whole run (env/result/run_end counts: {kinds})", file=sys.stderr)
            return 1
        print(f"{name}: {kinds['result']} records valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
