"""Ask each seed question through the ctxbench CLI and print the first screen of the answer.

The seed questions (issue 30): fibers, coroutines or threads; what a system
call, a thread and a process cost; a burst of 20/200/20000 switches pinned or
not; the pipe against the condvar thread switch with round trips per second;
what a cross-CPU wake-up costs and why; the RISC-V trap round trip. Each is
asked of a recorded run stored in a fresh store (the reference run, the
RISC-V lab run, the run with no cpuidle driver) with the command a user would
type (`ctxbench show RUN` in an 80-column terminal), and the script checks
that the question's answer is within the first 25 lines. With --report it
also writes each run's HTML report and opens it in Debian's chromium at
1280x800 (playwright), saves a screenshot, and checks that each answer's text
is drawn inside the first screen, unscrolled. With --live it also makes one
live run (`ctxbench run --preset fibers-vs-threads --param laps=100000
--quick`) and prints its first screen.

    python3 bench/seed_questions.py [--ctxbench CMD] [--report DIR] [--live]
    python3 bench/seed_questions.py --ctxbench CMD --recap RUN LAB_RUN

--recap asks the questions of two runs in the user's own store instead (how
`make run` ends: its default suite and its RISC-V lab run) and prints each
question with the lines of `show` that answer it; exit status 1 when one is
not answered.

--ctxbench: the command to call (default: `ctxbench` on PATH, as a fresh
`pip install .` puts it there; e.g. `--ctxbench "python3 -m ctxbench"` for a
source tree). Exit status 0 when every answer was on the first screen.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCREEN_LINES = 25
COLUMNS = "80"

# Recorded runs: (name, file, label).
RUNS = (
    ("reference", REPO / "docs" / "data" / "reference-run.jsonl", "reference"),
    ("riscv", REPO / "python" / "tests" / "fixtures" / "riscv" / "lab_run.jsonl", "riscv-lab"),
    ("no-idle-driver", REPO / "python" / "tests" / "fixtures" / "no_idle_driver.jsonl", "no-idle"),
)

# Question, the run it is asked of, and the words that open its answer on `show`
# (and in the report, where the same sentence is drawn).
QUESTIONS = (
    ("How much cheaper is a fiber or coroutine switch than a thread's?", "reference",
     "Fibers, coroutines or threads:"),
    ("What do a system call, a thread and a process cost?", "reference",
     "What a system call, a thread, a process cost:"),
    ("What does a burst of 20/200/20000 switches cost, pinned or not?", "reference",
     "Switches in a burst (per switch), pinned to one CPU or not:"),
    ("Pipe or condvar for a thread hand-off, and how many round trips per second?", "reference",
     "Pipe vs condvar thread switch, one CPU; round trips per second:"),
    ("What does a cross-CPU wake-up cost here, and why? (no cpuidle driver)", "no-idle-driver",
     "Another CPU: a thread switch takes"),
    ("What does a RISC-V trap round trip cost?", "riscv", "getpid's ecall round trip is"),
)  # fmt: skip


def cli(command: list[str], args: list[str], db: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS=COLUMNS, CTXBENCH_DB=str(db), NO_COLOR="1")
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, env=env, timeout=900, check=False
    )


def first_screen(text: str) -> list[str]:
    return text.splitlines()[:SCREEN_LINES]


def answered(lines: list[str], words: str) -> bool:
    """Whether WORDS start within LINES (a sentence may wrap over lines)."""
    joined = " ".join(" ".join(lines).split())
    return words in joined


# The box of the innermost element whose text holds the words, or null.
FIND_TEXT = """(words) => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_ELEMENT);
  let best = null;
  while (walker.nextNode()) {
    const e = walker.currentNode;
    if (e.textContent.replace(/\\s+/g, ' ').includes(words)
        && e.getBoundingClientRect().height > 0) best = e;
  }
  if (!best) return null;
  const r = best.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, left: r.left, right: r.right};
}"""


def screenshot_check(report: Path, png: Path, words: str) -> str:
    """'visible', or why not: the text's box within 1280x800, unscrolled."""
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800}, offline=True)
            page.goto(report.as_uri(), wait_until="load")
            page.wait_for_timeout(1500)  # the plots above the answers finish drawing
            page.screenshot(path=str(png))
            box = page.evaluate(FIND_TEXT, words)
        finally:
            browser.close()
    if box is None:
        return "not on the page"
    if box["top"] < 0 or box["top"] >= 800 or box["left"] < 0 or box["left"] >= 1280:
        return f"below the first screen (its top at {box['top']:.0f} px)"
    return f"visible (top {box['top']:.0f} px of 800)"


def section(text: str, heading: str) -> list[str]:
    """The lines of `show`'s section HEADING (an unindented line), up to the blank line."""
    lines = text.splitlines()
    if heading not in lines:
        return []
    start = lines.index(heading)
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def recap(command: list[str], run: str, lab: str) -> int:
    """The seed questions asked of RUN (the engine's) and LAB (the trap
    lab's) in the user's store, as `make run` ends: RUN's Answers and Why
    and LAB's answer, then whether each question's answer is among them."""
    env = dict(os.environ, NO_COLOR="1")
    shown = {}
    for label in (run, lab):
        done = subprocess.run(
            [*command, "show", label], capture_output=True, text=True, env=env, check=False
        )
        if done.returncode != 0:
            print(done.stderr.strip(), file=sys.stderr)
            return 1
        shown[label] = done.stdout
    lab_lines = [line for line in shown[lab].splitlines() if "ecall round trip is" in line]
    printed = [*section(shown[run], "Answers"), *section(shown[run], "Why"), *lab_lines]
    print("\n".join(printed))
    text = " ".join(" ".join(printed).split())
    # The no-idle-driver question is asked of a recorded run; here, of this machine's.
    missing = [
        question
        for question, of, words in QUESTIONS
        if (words if of != "no-idle-driver" else "Another CPU:") not in text
    ]
    for question in missing:
        print(f"not answered here: {question}")
    print(f"{len(QUESTIONS)} seed questions, {len(QUESTIONS) - len(missing)} answered above")
    return 1 if missing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctxbench", default="ctxbench", help="the command to call")
    parser.add_argument("--report", type=Path, help="write the reports and screenshots here")
    parser.add_argument("--live", action="store_true", help="also one live preset run")
    parser.add_argument(
        "--recap",
        nargs=2,
        metavar=("RUN", "LAB_RUN"),
        help="ask the questions of these runs in the user's store",
    )
    options = parser.parse_args()
    command = shlex.split(options.ctxbench)
    if options.recap:
        return recap(command, *options.recap)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="ctxbench-seed-") as scratch:
        db = Path(scratch) / "seed.db"
        version = cli(command, ["--version"], db)
        print(f"$ {options.ctxbench} --version\n{version.stdout.strip()}")
        for _, path, label in RUNS:
            imported = cli(command, ["import", str(path), "--label", label], db)
            if imported.returncode != 0:
                print(imported.stderr, file=sys.stderr)
                return 1
        shown = {}
        for name, _, label in RUNS:
            result = cli(command, ["show", label], db)
            shown[name] = result.stdout
        for question, run, words in QUESTIONS:
            lines = first_screen(shown[run])
            ok = answered(lines, words)
            failures += not ok
            label = next(label for name, _, label in RUNS if name == run)
            print(f"\n=== {question}")
            shell = f"$ COLUMNS={COLUMNS} {options.ctxbench} show {label}"
            print(f"{shell}   (first {SCREEN_LINES} lines)")
            print("\n".join(lines))
            print(f"--> answer on the first screen of show: {'yes' if ok else 'NO'}")
            if options.report:
                options.report.mkdir(parents=True, exist_ok=True)
                html = options.report / f"{label}.html"
                if not html.exists():
                    cli(command, ["report", label, "-o", str(html)], db)
                png = options.report / f"{label}-{QUESTIONS.index((question, run, words))}.png"
                seen = screenshot_check(html, png, words)
                failures += not seen.startswith("visible")
                print(f"--> in the report at 1280x800 ({png.name}): {seen}")
        if options.live:
            print(
                f"\n=== live: $ {options.ctxbench} run --preset fibers-vs-threads "
                "--param laps=100000 --quick   (first screen)"
            )
            live = cli(
                command,
                ["run", "--preset", "fibers-vs-threads", "--param", "laps=100000", "--quick"],
                db,
            )
            lines = first_screen(live.stdout)
            print("\n".join(lines) or live.stderr.strip())
            ok = answered(lines, "Fibers, coroutines or threads:")
            failures += not ok
            print(f"--> answer on the first screen of run: {'yes' if ok else 'NO'}")
    print(f"\n{len(QUESTIONS)} questions asked; {failures} answer(s) not on the first screen")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
