"""`build`'s output: the report on standard output, a timing line with --verbose, and a progress bar
on standard error when it is a terminal and the build has enough pages to wait for."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, MakeSite, run_builder

sys.path.insert(0, str(REPO / "bench"))
import generate  # noqa: E402

TIMING = re.compile(r"^([a-z]+ \d+\.\d\ds )+\| total \d+\.\d\ds$")
CONTROL = re.compile(r"\x1b\[")
LINUX_ONLY = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="pseudo-terminals as Linux has them"
)


def test_verbose_adds_one_timing_line_naming_each_stage(make_site: MakeSite) -> None:
    root = make_site()
    first = run_builder("build", "--root", str(root), "--verbose")
    assert first.returncode == 0, first.stderr
    report, timing = first.stdout.splitlines()
    assert report.startswith("built ") and report.endswith(f"into {root / 'site'}")
    assert TIMING.match(timing), timing
    stages = re.findall(r"([a-z]+) \d+\.\d\ds", timing.split(" | ")[0])
    assert stages[:5] == ["scan", "load", "prepare", "render", "output"]
    assert stages[-2:] == ["write", "save"]
    seconds = [float(s) for s in re.findall(r" (\d+\.\d\d)s", timing)]
    assert abs(sum(seconds[:-1]) - seconds[-1]) <= 0.01 * len(seconds)  # the total is the stages' sum

    # Nothing changed: the no-op check, then the record's inputs saved (their times may differ).
    again = run_builder("build", "--root", str(root), "--verbose")
    timing = again.stdout.splitlines()[1]
    assert TIMING.match(timing), timing
    assert re.findall(r"([a-z]+) \d+\.\d\ds", timing.split(" | ")[0]) == ["scan", "save"]
    quiet = run_builder("build", "--root", str(root))
    assert quiet.stdout.splitlines() == [report]


def _run_on_terminal(args: list[str]) -> tuple[bytes, bytes, int]:
    """Run ``python -m builder`` with standard error on a pseudo-terminal and standard output on a pipe."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "builder", *args], cwd=REPO, stdout=subprocess.PIPE, stderr=slave
    )
    os.close(slave)
    terminal = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # the other end closed (Linux reports EIO)
                break
            if not chunk:
                break
            terminal += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.stdout is not None
    out = proc.stdout.read()
    return terminal, out, proc.wait(timeout=300)


LINUX_ONLY = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="pseudo-terminals as Linux has them"
)


@LINUX_ONLY
def test_a_progress_bar_on_the_terminal_only_for_a_build_worth_waiting_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1785110400")
    root = tmp_path / "synthetic"
    # 90 recipes of one row: 212 pages to render, just past the 200 the bar waits for.
    generate.write_site(root, recipes=90, rows=1, cases=0, posts=0)
    # The engine's bar (``--no-cache`` runs the plain pipeline, which reports no progress).
    terminal, out, code = _run_on_terminal(["build", "--root", str(root)])
    assert code == 0, terminal.decode(errors="replace")
    text = terminal.decode(errors="replace")
    done = re.findall(r"render\D*?(\d+)/(\d+)", re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text))
    assert done, text[:500]
    assert done[-1][0] == done[-1][1] and int(done[-1][1]) >= 200  # ends complete
    # Standard output is the report alone, with no trace of the bar.
    assert re.fullmatch(
        rf"built [\d,]+ files from 90 rows into {re.escape(str(root / 'site'))}\n", out.decode()
    )

    # Not a terminal: no bar anywhere, from the same engine build (into a folder of its own).
    piped = run_builder("build", "--root", str(root), "--out", str(root / "piped"))
    assert piped.returncode == 0
    assert not CONTROL.search(piped.stderr) and not CONTROL.search(piped.stdout)
    assert piped.stdout == out.decode().replace(str(root / "site"), str(root / "piped"))


@LINUX_ONLY
def test_no_bar_for_a_small_build_even_on_a_terminal(make_site: MakeSite) -> None:
    terminal, out, code = _run_on_terminal(["build", "--root", str(make_site()), "--no-cache"])
    assert code == 0
    assert not CONTROL.search(terminal.decode(errors="replace")), terminal[:300]
    assert out.decode().startswith("built ")
