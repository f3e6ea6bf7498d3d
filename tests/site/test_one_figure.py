"""One figure per recipe, setting and metric: every page and JSON document of a built site that shows
a figure marks it with its key (``data-figure``, ``builder.site.figures.figure_key``); walking them
all finds one value per key, on the shipped site and on a generated (SYNTHETIC) benchmark site."""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from builder.cli import main
from builder.site.figures import figure_key
from tests.conftest import REPO, synthetic_site

MARKED = re.compile(r'<([a-z]+)\b[^>]*\bdata-figure="([^"]+)"[^>]*>([^<]*)<')
NUMBER = re.compile(r"-?[0-9][0-9,]*(?:\.[0-9]+)?")

Found = dict[str, dict[float, list[str]]]


def _walk(site: Path) -> Found:
    """key → value → where it was read (page, or JSON document)."""
    found: Found = defaultdict(lambda: defaultdict(list))
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        for _, key, shown in MARKED.findall(text):
            number = NUMBER.search(shown)
            assert number is not None, f"{page}: a marked figure shows no number: {shown!r}"
            found[html.unescape(key)][float(number.group().replace(",", ""))].append(
                str(page.relative_to(site))
            )
    for index in sorted(site.glob("choose/*/rankings.json")):
        document = json.loads(index.read_text(encoding="utf-8"))
        where = str(index.relative_to(site))
        for entries_by_metric in document["rankings"].values():
            for metric, entries in entries_by_metric.items():
                for figure_no, _ in entries:
                    f = document["figures"][figure_no]
                    prompt, output, context, concurrency, rate = document["setting_values"][f[1]]
                    rate = float(rate) if rate is not None else None
                    recipe = document["recipes"][f[0]][0]
                    key = figure_key(
                        recipe, metric, document["hardware"], prompt, output, context, concurrency, rate
                    )
                    found[key][float(f[2])].append(where)
    return found


def _contradictions(found: Found) -> list[str]:
    return [
        f"{key}: "
        + "; ".join(f"{value:g} on {', '.join(sorted(set(pages))[:3])}" for value, pages in values.items())
        for key, values in sorted(found.items())
        if len(values) > 1
    ]


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Found:
    out = tmp_path_factory.mktemp("shipped") / "site"
    assert main(["build", "--root", str(REPO), "--out", str(out)]) == 0
    return _walk(out)


@pytest.fixture(scope="module")
def generated_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bench") / "src"
    with pytest.MonkeyPatch.context() as patch:
        synthetic_site(root, patch, recipes=120, rows=24, cases=2, posts=2)
        out = root.parent / "site"
        assert main(["build", "--root", str(root), "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def generated(generated_site: Path) -> Found:
    return _walk(generated_site)


def test_the_shipped_site_reads_one_value_per_figure(shipped: Found) -> None:
    assert _contradictions(shipped) == []
    # The cases: the concurrency-8 aggregate of NVFP4 + MTP-3, the NVFP4 reference.
    mtp3 = "qwen3.6-35b-a3b-nvidia-nvfp4-mtp3|aggregate_tok_s|dgx-spark|-|400|0|8|-"
    assert list(shipped[mtp3]) == [322.05]
    pages = {page for pages in shipped[mtp3].values() for page in pages}
    assert {"choose/dgx-spark/index.html", "choose/dgx-spark/rankings.json"} <= pages
    assert any(p.startswith("models/") for p in pages)  # the comparison page, 306.025 before
    nvfp4 = "qwen3.6-35b-a3b-nvidia-nvfp4|decode_tok_s|dgx-spark|2048|-|0|1|-"
    assert list(shipped[nvfp4]) == [42.6]
    pages = {page for pages in shipped[nvfp4].values() for page in pages}
    assert "recipes/qwen3.6-35b-a3b-nvidia-nvfp4/index.html" in pages  # the headline


def test_the_generated_site_reads_one_value_per_figure(generated: Found) -> None:
    assert _contradictions(generated) == []
    kinds = {
        page.split("/")[0] for values in generated.values() for pages in values.values() for page in pages
    }
    assert {"recipes", "choose", "models"} <= kinds  # headlines, the chooser, comparison pages
    assert len(generated) > 1000


def test_the_generated_sites_chooser_compares_like_with_like(generated_site: Path) -> None:
    """Every ranking of every hardware: only its own load, exact results first, each list sorted by
    its figure (lower first for latencies), the answer runnable and the first runnable result."""
    indexes = sorted(generated_site.glob("choose/*/rankings.json"))
    assert indexes
    answered = 0
    for index in indexes:
        document = json.loads(index.read_text(encoding="utf-8"))
        lower = {m[0]: m[3] for m in document["metrics"]}
        values = document["setting_values"]
        for at, by_metric in document["rankings"].items():
            load = values[int(at)][3:]
            for metric, entries in by_metric.items():
                figures = [document["figures"][f] for f, _ in entries]
                assert all(values[f[1]][3:] == load for f in figures), (index, at, metric)
                exact = [bool(e) for _, e in entries]
                assert exact == sorted(exact, reverse=True)  # exact ones first
                lists: dict[object, list[float]] = {}
                for f, is_exact in zip(figures, exact, strict=True):
                    lists.setdefault(True if is_exact else f[1], []).append(f[2])
                for figures_of_list in lists.values():
                    assert figures_of_list == sorted(figures_of_list, reverse=not lower[metric]), (
                        index,
                        at,
                        metric,
                    )
                answer = document["answers"].get(at, {}).get(metric)
                runnable = [f for f, _ in entries if document["figures"][f][7] >= 0]
                if answer is not None:
                    answered += 1
                    assert document["figures"][answer][7] >= 0  # a serve command
                    if runnable:
                        assert answer == runnable[0]
                else:
                    assert not runnable
    assert answered > 0
