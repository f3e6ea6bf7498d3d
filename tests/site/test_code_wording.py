"""Wording in the builder's code shows in the next build, whatever the caches hold.

Chart specs carry labels written in the code (a unit in the row model's ``Measured`` marker, a status in
``figures.STATUS_LABELS``): a spec kept across processes under a key that misses them would keep the
old text, ``--no-cache`` or not. Here a copy of the ``builder`` package builds a site in new
processes, one ``HOME`` throughout, and its labels are edited between builds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup

from builder.site.chart_runtime import runtime_bundle, user_cache_dir
from tests.chartpage import chart_block
from tests.conftest import REPO, SITES

UNIT = 'Measured("Decode", "tok/s per stream")'
STATUS = 'MATCHES: "matches recipe",'
SECOND_RUN = """\
date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,flags,env,source
2026-01-09,tiny,node-a,1.0.0,512,1,51.5,--max-model-len 4096 --kv-cache-dtype fp8,EXAMPLE_ENV=1,synthetic test row
"""


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def history_spec(out: Path) -> dict[str, Any]:
    """The spec of the recipe page's decode history chart, as the page's script reads it."""
    soup = BeautifulSoup((out / "recipes/tiny/index.html").read_bytes(), "html.parser")
    spec: dict[str, Any] = chart_block(soup)["specs"]["history/decode_tok_s"]
    return spec


def y_titles(spec: dict[str, Any]) -> set[str]:
    return {layer["encoding"]["y"]["title"] for layer in spec["layer"] if "title" in layer["encoding"]["y"]}


def shape_domain(spec: dict[str, Any]) -> list[str]:
    [domain] = [
        layer["encoding"]["shape"]["scale"]["domain"]
        for layer in spec["layer"]
        if "shape" in layer["encoding"]
    ]
    return list(domain)


def test_edited_labels_show_in_the_next_build_with_and_without_the_cache(tmp_path: Path) -> None:
    code = tmp_path / "code"
    shutil.copytree(REPO / "builder", code / "builder", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "templates", code / "templates")  # found beside the package
    root = tmp_path / "site-root"
    shutil.copytree(SITES / "minimal", root)
    (root / "data/rows/tiny/2026-01-09-node-a.csv").write_text(SECOND_RUN, encoding="utf-8")  # a history
    out = tmp_path / "out"
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "PYTHONPATH")}
    env.update(HOME=str(home), PYTHONPATH=str(code))
    # The vega bundle (keyed by the versions that decide it) copied in: bundling it takes seconds.
    runtime_bundle(home / ".cache/llm-recipes-builder", user_cache_dir())

    def build(*options: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "builder", "build", "--root", str(root), "--out", str(out), *options],
            cwd=tmp_path,  # not the repository, whose own package would be imported
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return history_spec(out)

    models, figures = code / "builder/content/models.py", code / "builder/site/figures.py"
    spec = build()
    assert y_titles(spec) == {"Decode (tok/s per stream)"}
    assert "matches recipe" in shape_domain(spec)

    edit(models, UNIT, 'Measured("Decode", "tokens/s a stream")')
    edit(figures, STATUS, 'MATCHES: "as the recipe says",')
    spec = build()
    assert y_titles(spec) == {"Decode (tokens/s a stream)"}
    assert "as the recipe says" in shape_domain(spec) and "matches recipe" not in shape_domain(spec)

    edit(models, '("Decode", "tokens/s a stream")', '("Decode", "tok/s, one stream")')
    edit(figures, 'MATCHES: "as the recipe says",', 'MATCHES: "on recipe",')
    spec = build("--no-cache")
    assert y_titles(spec) == {"Decode (tok/s, one stream)"}
    assert "on recipe" in shape_domain(spec) and "as the recipe says" not in shape_domain(spec)
