"""The whole build: deterministic output, whatever the process, the hash seed or the clock."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, tree

sys.path.insert(0, str(REPO / "bench"))
import generate  # noqa: E402

EPOCH = "1785110400"  # 2026-07-27


def build_in_process(root: Path, out: Path, *, seed: str, tz: str, epoch: str | None, jobs: int) -> None:
    env = {**os.environ, "PYTHONHASHSEED": seed, "TZ": tz, "PYTHONPATH": str(REPO)}
    env.pop("SOURCE_DATE_EPOCH", None)
    if epoch is not None:
        env["SOURCE_DATE_EPOCH"] = epoch
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "builder",
            "build",
            "--root",
            str(root),
            "--out",
            str(out),
            "--no-cache",
            "--jobs",
            str(jobs),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("determinism") / "root"
    generate.write_site(root, recipes=8, rows=40, cases=2, posts=3)
    return root


@pytest.mark.parametrize("site", ["shipped", "synthetic"])
def test_two_builds_are_byte_identical(site: str, synthetic: Path, tmp_path: Path) -> None:
    """Different hash seeds, time zones and worker counts: the same bytes (feeds and downloads too)."""
    root = REPO if site == "shipped" else synthetic
    a, b = tmp_path / "a", tmp_path / "b"
    build_in_process(root, a, seed="1", tz="UTC", epoch=EPOCH, jobs=1)
    build_in_process(root, b, seed="4242", tz="Pacific/Kiritimati", epoch=EPOCH, jobs=2)
    left, right = tree(a), tree(b)
    assert sorted(left) == sorted(right)
    differing = [name for name in left if left[name] != right[name]]
    assert differing == []
    kinds = {Path(name).suffix for name in left}
    assert {".html", ".xml", ".json", ".csv", ".parquet", ".duckdb"} <= kinds


def test_no_wall_clock_time_in_the_output(synthetic: Path, tmp_path: Path) -> None:
    """With SOURCE_DATE_EPOCH set, today's date appears nowhere (the synthetic data never uses it)."""
    out = tmp_path / "out"
    build_in_process(synthetic, out, seed="0", tz="UTC", epoch=EPOCH, jobs=1)
    today = dt.datetime.now(tz=dt.UTC).date().isoformat().encode()
    assert today != b"2026-07-27"
    holders = [name for name, data in tree(out).items() if today in data]
    assert holders == []
