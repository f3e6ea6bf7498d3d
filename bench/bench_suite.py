"""How long the test suite takes, in all and per folder of ``tests/``.

    python bench/bench_suite.py                 # the README's pytest command, here
    python bench/bench_suite.py --serial        # the same tests in one process (-p no:xdist)
    python bench/bench_suite.py --fresh-clone   # a new clone of HEAD, `bash .ci/run` timed (install too)

Prints the wall time of the whole run (with --fresh-clone: the install too), then a markdown table for
bench/RESULTS.md: per folder the number of tests and the sum of their own times (from pytest's JUnit
XML, asked for through PYTEST_ADDOPTS). Under pytest-xdist the folders' sums add up to more than the
wall time: the workers run side by side. With --fresh-clone, pytest's own summary line says how long
the README's test command took once installed.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PARALLEL = ["-n", "auto", "--dist", "loadgroup"]


def per_folder(junit: Path) -> dict[str, tuple[int, float]]:
    """``{folder: (tests, seconds)}`` from a JUnit XML report; a module at the top is ``tests/``."""
    counts: collections.Counter[str] = collections.Counter()
    seconds: collections.Counter[str] = collections.Counter()
    for case in ET.parse(junit).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        folder = "/".join(parts[:2]) + "/" if len(parts) > 2 else "tests/"
        counts[folder] += 1
        seconds[folder] += float(case.get("time", 0))
    return {folder: (counts[folder], seconds[folder]) for folder in sorted(counts)}


def timed(command: list[str], cwd: Path, junit: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = {**os.environ, "PYTEST_ADDOPTS": f"--junitxml={junit} -p no:cacheprovider"}
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    return time.monotonic() - started, done


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--serial", action="store_true", help="one process (-p no:xdist)")
    parser.add_argument("--fresh-clone", action="store_true", help="time `bash .ci/run` in a new clone")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        junit = Path(temp) / "junit.xml"
        if args.fresh_clone:
            code = Path(temp) / "clone"
            subprocess.run(["git", "clone", "-q", str(REPO), str(code)], check=True)
            wall, done = timed(["bash", ".ci/run"], code, junit)
            # .ci/run installed the clone in place of this checkout (pip install -e): put this one back.
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "-e", str(REPO)], check=True
            )
            mode = "fresh clone, `bash .ci/run` (install included)"
        else:
            pytest_args = ["-p", "no:xdist"] if args.serial else PARALLEL
            wall, done = timed([sys.executable, "-m", "pytest", "-q", *pytest_args], REPO, junit)
            mode = "serial (`-p no:xdist`)" if args.serial else "the README's pytest command"
        folders = per_folder(junit) if junit.is_file() else {}
        suites = ET.parse(junit).getroot().iter("testsuite") if junit.is_file() else iter(())
        suite = max((float(element.get("time", 0)) for element in suites), default=0.0)
    last = (done.stdout.strip().splitlines() or [done.stderr.strip()[-500:]])[-1]
    print(f"{mode}: {wall:.0f} s in all, exit {done.returncode}; pytest: {last}\n")
    print("| folder | tests | seconds (sum of the tests' own) |")
    print("| --- | ---: | ---: |")
    for folder, (count, seconds) in folders.items():
        print(f"| `{folder}` | {count} | {seconds:.0f} |")
    print(f"| all | {sum(c for c, _ in folders.values())} | {sum(s for _, s in folders.values()):.0f} |")
    print(f"\npytest's own run time (JUnit): {suite:.0f} s")
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
