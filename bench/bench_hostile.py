"""Peak memory and time of ``check`` on each generated hostile input (``bench/hostile.py``).

    python bench/bench_hostile.py [--case NAME]...

Each case's site is generated into a temporary folder, then ``python -m builder check --root SITE
--format json`` runs in a new process; its wall time (spawn to exit) and peak memory (the child's
``ru_maxrss`` from ``wait4``) are printed with the errors ``check`` reported. The budget of issue 32
is 500 MB and 10 s per case; the script exits 1 when a case is over it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import hostile  # noqa: E402

MEMORY_BUDGET_MB = 500
TIME_BUDGET_S = 10.0


def run_case(name: str, folder: Path) -> tuple[int, float, float, int, list[str]]:
    """Write the case into ``folder`` and run ``check`` on it: (size of the hostile file, seconds,
    peak MB, exit code, errors). The peak is that process's own (``wait4`` of that child)."""
    # written by another process: a child's peak memory starts from its parent's size at the fork
    made = subprocess.run(
        [sys.executable, str(HERE / "hostile.py"), str(folder.parent), "--case", name],
        check=True,
        capture_output=True,
        text=True,
    )
    size = int(made.stdout.split("(")[-1].split(" bytes")[0].replace(",", ""))
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "builder", "check", "--root", str(folder), "--format", "json"],
        cwd=HERE.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    errors = [f"{e['path']}:{e['line']}: {e['message']}" for e in json.loads(out)["errors"]]
    return size, seconds, usage.ru_maxrss / 1024, process.returncode, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--case", choices=sorted(hostile.CASES), action="append", help="only these cases")
    args = parser.parse_args(argv)
    over = False
    print(f"{'case':<20} {'file bytes':>12} {'time s':>7} {'peak MB':>8} exit  first error")
    for name in args.case or list(hostile.CASES):
        with tempfile.TemporaryDirectory() as tmp:
            path_size, seconds, peak, code, errors = run_case(name, Path(tmp) / name)
        flag = seconds > TIME_BUDGET_S or peak > MEMORY_BUDGET_MB
        over = over or flag
        first = errors[0] if errors else "(no error)"
        print(
            f"{name:<20} {path_size:>12,} {seconds:>7.2f} {peak:>8.0f} {code:>4}  {first}{'  OVER BUDGET' if flag else ''}"
        )
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
