"""Where a build's cores go: CPU per process and cores busy per interval, read from /proc (Linux).

    python bench/bench_timeline.py ROOT                 # a build of ROOT as it stands
    python bench/bench_timeline.py ROOT --cold          # its .cache and site set aside first
    python bench/bench_timeline.py ROOT --step 0.1 -- --jobs 1

Runs ``python -m builder build --root ROOT --verbose`` and polls ``/proc/<pid>/stat`` of the build
and every process it starts (forked children, render workers, Pagefind) every 10 ms. Prints the
build's stage line, each process's CPU seconds and when it was seen, then per interval the cores
used by the build process and by the others. A core idle while the build waits is time a reorder
could win; two busy cores are time only less work can win. Polling misses a process that lives
less than 10 ms, and the last interval of a process that exits between polls.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


@dataclass
class Seen:
    parent: int
    name: str
    first: float
    last: float = 0.0
    ticks: int = 0


def _stat(pid: str) -> tuple[int, str, int] | None:
    """(parent pid, command name, user + system ticks) of a process, None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            text = handle.read()
    except OSError:
        return None
    close = text.rindex(")")
    fields = text[close + 2 :].split()
    return int(fields[1]), text[text.index("(") + 1 : close], int(fields[11]) + int(fields[12])


def watch(command: list[str]) -> tuple[str, dict[int, Seen], list[tuple[float, int, int]]]:
    """Run ``command``; its output, the processes seen, and (time, main ticks, others' ticks) samples."""
    # Output to a file, not a pipe: a build printing many warnings would fill a pipe nobody reads
    # until the end, and wait on it forever.
    log = tempfile.TemporaryFile("w+")
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, text=True)
    seen: dict[int, Seen] = {proc.pid: Seen(0, "build", 0.0)}
    samples: list[tuple[float, int, int]] = []
    while proc.poll() is None:
        now = time.perf_counter() - start
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            stat = _stat(entry)
            if stat is None:
                continue
            parent, name, ticks = stat
            pid = int(entry)
            if pid not in seen and parent in seen:
                seen[pid] = Seen(parent, name, now)
            if pid in seen:
                seen[pid].ticks, seen[pid].last = ticks, now
                seen[pid].name = name  # a child that exec'd (Pagefind) is named after its program
        main = seen[proc.pid].ticks
        samples.append((now, main, sum(s.ticks for s in seen.values()) - main))
        time.sleep(0.01)
    log.seek(0)
    return log.read(), seen, samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="site root to build")
    parser.add_argument("--cold", action="store_true", help="set its .cache and site aside first")
    parser.add_argument("--step", type=float, default=0.25, help="interval of the timeline, seconds")
    parser.add_argument("extra", nargs="*", help="more options for build (after --)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.cold:
        from benchmark import clean_outputs

        clean_outputs(root)
    tick = os.sysconf("SC_CLK_TCK")
    command = [sys.executable, "-m", "builder", "build", "--root", str(root), "--verbose", *args.extra]
    output, seen, samples = watch(command)
    print(output.strip().splitlines()[-1] if output.strip() else "(no output)")
    total = 0.0
    for pid, process in sorted(seen.items(), key=lambda item: item[1].first):
        cpu = process.ticks / tick
        total += cpu
        print(
            f"pid {pid:>7} parent {process.parent:>7} {process.name[:16]:16} cpu {cpu:6.2f} s"
            f"  seen {process.first:5.2f}-{process.last:5.2f} s"
        )
    wall = samples[-1][0] if samples else 0.0
    print(f"wall {wall:.2f} s, cpu {total:.2f} s: {total / wall if wall else 0:.2f} cores on average")
    previous, edge, index = (0.0, 0, 0), args.step, 0
    while index < len(samples):
        while index < len(samples) and samples[index][0] < edge:
            index += 1
        current = samples[min(index, len(samples) - 1)]
        main_cores = (current[1] - previous[1]) / tick / args.step
        other_cores = (current[2] - previous[2]) / tick / args.step
        print(
            f"{edge - args.step:6.2f} s  build {main_cores:4.2f}  others {other_cores:4.2f}  {'#' * round(10 * (main_cores + other_cores))}"
        )
        previous, edge = current, edge + args.step
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
