"""Findings kept across builds (builder/findings_memo.py) are those a clean reconciliation gives.

A small SYNTHETIC site (bench/generate.py) with planted regressions is loaded with a load cache,
changed, and loaded again: after each change the findings (as JSON, and the row ids pages link to)
must equal a load without any cache, and only the recipes whose inputs changed are computed again.
"""

from __future__ import annotations

import pickle
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from builder.analysis import reconcile
from builder.config import load_config
from builder.engine import incremental
from builder.engine.build_state import read_cache, state_dir, write_cache
from builder.engine.findings_memo import context_digest, recipe_keys
from builder.engine.incremental import IncrementalBuilder
from builder.engine.loadcache import LoadCache
from builder.engine.pipeline import Loaded, load_and_reconcile
from tests.conftest import REPO, synthetic_site

sys.path.insert(0, str(REPO / "bench"))
import generate  # noqa: E402

SLUGS = [generate.recipe_slug(i) for i in range(4)]


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = synthetic_site(tmp_path / "root", monkeypatch, recipes=4, rows=24, cases=1, posts=1)
    for index in (0, 1):  # a second run that agrees, then a regression
        generate.add_row_file(root, index, "2026-02-01", rows=24, seed=3 + index)
        generate.add_row_file(root, index, "2026-03-01", rows=24, seed=5 + index, factor=0.6)
    return root


def summary(loaded: Loaded) -> list[tuple[Any, ...]]:
    """What pages and ``check`` show of the findings, row ids included, and every row's status."""
    assert not loaded.problems.errors, loaded.problems.errors[:3]
    recon = loaded.recon
    assert recon is not None
    findings = [
        (f.as_json(), sorted(f.row_ids), [list(run.row_ids) for run, _ in f.runs]) for f in recon.findings
    ]
    return [*findings, ("statuses", [recon.status(i) for i in range(loaded.site.rows.num_rows)])]


def clean(root: Path) -> list[tuple[Any, ...]]:
    return summary(load_and_reconcile(load_config(root)))


def keys_of(root: Path, cache: LoadCache) -> dict[str, bytes]:
    """Each recipe's findings key as a load of the site at ``root`` over ``cache``'s row files works it out."""
    from builder.data.load import load_site
    from builder.errors import Problems

    config = load_config(root)
    return recipe_keys(load_site(config, Problems()), cache.rows.entries, context_digest(config))


def stored_findings(cache: LoadCache, keys: dict[str, bytes]) -> dict[str, tuple[bytes, bytes, int]]:
    """Each recipe's findings as the engine's memo keeps them under ``keys``: (key, pickled findings, count)."""
    out = {}
    for slug, key in keys.items():
        found = cache.memo.get(("findings", key))
        if found is not None:
            out[slug] = (key, *found)
    return out


def cached(root: Path, cache: LoadCache) -> tuple[list[tuple[Any, ...]], set[str]]:
    """The findings loaded with ``cache``, and the recipes whose findings were computed (not restored)."""
    before = cache.memo.entries("findings")
    result = summary(load_and_reconcile(load_config(root), cache=cache))
    cache.settle()  # as the engine does when it saves its record
    after = cache.memo.entries("findings")
    computed = {
        slug
        for slug, key in keys_of(root, cache).items()
        if ("findings", key) in after and before.get(("findings", key)) is not after[("findings", key)]
    }
    return result, computed


def edit(path: Path, pattern: str, replacement: str) -> None:
    text = path.read_text(encoding="utf-8")
    new = re.sub(pattern, replacement, text, count=1, flags=re.M)
    assert new != text, pattern
    path.write_text(new, encoding="utf-8")


def recipe_file(root: Path, index: int) -> Path:
    return root / "content" / "recipes" / f"{SLUGS[index]}.md"


def recipes_of(findings: list[tuple[Any, ...]]) -> set[str]:
    return {f[0]["recipe"] for f in findings if f[0] != "statuses"}


def test_an_unchanged_site_restores_every_recipe(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = LoadCache()
    first, computed = cached(site, cache)
    assert computed == set(SLUGS)
    expected = clean(site)
    assert first == expected
    assert recipes_of(expected) == set(SLUGS[:2])  # the planted regressions
    assert {status.status for status in expected[-1][1]} >= {"matches"}
    # Nothing changed: row statuses are the kept ones too (no query groups the rows again).
    monkeypatch.setattr(reconcile, "combinations", lambda site: pytest.fail("statuses computed again"))
    again, computed = cached(site, cache)
    assert computed == set()
    assert again == expected


def test_a_new_row_file_recomputes_its_recipe_only(site: Path) -> None:
    cache = LoadCache()
    before, _ = cached(site, cache)
    generate.add_row_file(site, 2, "2026-02-01", rows=24, seed=11)
    generate.add_row_file(site, 2, "2026-03-01", rows=24, seed=12, factor=0.6)
    after, computed = cached(site, cache)
    assert computed == {SLUGS[2]}
    assert after == clean(site)
    assert after != before and SLUGS[2] in recipes_of(after)


def test_rows_that_move_keep_their_findings_pointing_at_them(site: Path) -> None:
    """A file sorting first shifts every row id: restored findings must link the rows' new ids."""
    cache = LoadCache()
    before, _ = cached(site, cache)
    generate.add_row_file(site, 3, "2026-02-01", rows=12, seed=13, rel="0-first.csv")
    after, computed = cached(site, cache)
    assert computed == {SLUGS[3]}
    assert after == clean(site)
    assert [f[1] for f in after] != [f[1] for f in before]  # the ids did move


@pytest.mark.parametrize(
    ("pattern", "replacement"),
    [
        (r"^engine_version: .*$", "engine_version: '9.9.9'"),
        (r"^engine: .*$", "engine: synth-other-engine"),
        (r"^flags: .*$", "flags: '--max-model-len 1024'"),
    ],
)
def test_a_reconciled_front_matter_field_recomputes_its_recipe(
    site: Path, pattern: str, replacement: str
) -> None:
    cache = LoadCache()
    cached(site, cache)
    edit(recipe_file(site, 0), pattern, replacement)
    after, computed = cached(site, cache)
    assert computed == {SLUGS[0]}
    assert after == clean(site)


def test_a_body_edit_recomputes_nothing(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = LoadCache()
    cached(site, cache)
    with recipe_file(site, 0).open("a", encoding="utf-8") as handle:
        handle.write("\nSynthetic body edit.\n")
    with monkeypatch.context() as patch:
        patch.setattr(reconcile, "combinations", lambda site: pytest.fail("statuses computed again"))
        after, computed = cached(site, cache)
    assert computed == set()
    assert after == clean(site)


def test_a_node_moved_to_other_hardware_recomputes_every_recipe(site: Path) -> None:
    cache = LoadCache()
    cached(site, cache)
    nodes = site / "data" / "nodes.yaml"
    text = nodes.read_text(encoding="utf-8")
    hardware = sorted(set(re.findall(r"hardware: (\S+)", text)))
    assert len(hardware) >= 2
    edit(nodes, rf"hardware: {re.escape(hardware[0])}$", f"hardware: {hardware[1]}")
    after, computed = cached(site, cache)
    assert computed == set(SLUGS)
    assert after == clean(site)


def test_any_edit_of_site_settings_or_data_files_recomputes_every_recipe(site: Path) -> None:
    """No list says which settings or data fields the analysis reads: ``site.yaml`` and every data
    file beside the rows are in each recipe's key whole, so a field it starts to read is covered."""
    cache = LoadCache()
    cached(site, cache)
    for rel in ("site.yaml", "data/hardware.yaml"):
        path = site / rel
        before = path.read_text(encoding="utf-8") if path.exists() else ""
        path.write_text(before + "\n# an edit the analysis may read\n", encoding="utf-8")
        after, computed = cached(site, cache)
        assert computed == set(SLUGS), rel
        assert after == clean(site)
    after, computed = cached(site, cache)
    assert computed == set()  # and kept again while nothing changes


def test_the_kept_findings_go_when_the_builder_changes(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The memo lives in the load cache, which another builder (code or toolchain) discards."""
    out = site / "site"
    engine = IncrementalBuilder(load_config(site, out), workers=1)
    assert engine.build(None).ok
    # Falsify the kept findings of a recipe that has some, keeping its key: only a memo that is
    # used (control) or discarded (the point) can tell.
    load_path, blobs_path = state_dir(site, out) / "load.pickle", state_dir(site, out) / "blobs.pickle"
    cache, rows_digest, code, _named = read_cache(load_path)
    blobs = read_cache(blobs_path)
    blobs[("findings", keys_of(site, cache)[SLUGS[0]])] = pickle.dumps((pickle.dumps([]), 0))
    write_cache(load_path, (cache, rows_digest, code, write_cache(blobs_path, blobs)))
    post = next((site / "content" / "posts").glob("*.md"))
    expected = clean(site)

    def build_after_an_edit(marker: str) -> list[str]:
        with post.open("a", encoding="utf-8") as handle:
            handle.write(f"\n{marker}\n")
        engine = IncrementalBuilder(load_config(site, out), workers=1, keep_context=True)
        report = engine.build(None)
        assert report.ok, report.problems
        assert engine._context is not None
        return sorted({f.recipe for f in engine._context.recon.findings})

    assert build_after_an_edit("Synthetic edit one.") == [SLUGS[1]]  # control: the falsified memo is used
    real = incremental.environment_key
    monkeypatch.setattr(incremental, "environment_key", lambda *a: real(*a) + b"another builder")
    assert build_after_an_edit("Synthetic edit two.") == sorted(recipes_of(expected))


def test_computed_findings_are_stored_when_the_cache_settles(site: Path) -> None:
    """The load leaves storing the findings it computed to the save (a first build's load stage
    spent ≈ 0.2 s on it); a load whose record is never saved never pays for it."""
    cache = LoadCache()
    load_and_reconcile(load_config(site), cache=cache)
    keys = keys_of(site, cache)
    assert stored_findings(cache, keys) == {} and cache.unsettled is not None
    cache.settle()
    assert set(stored_findings(cache, keys)) == set(SLUGS) and cache.unsettled is None
    stored = stored_findings(cache, keys)
    cache.settle()  # once
    assert stored_findings(cache, keys) == stored


def test_an_engine_edit_keeps_findings_under_the_keys_a_clean_load_gives(site: Path, tmp_path: Path) -> None:
    """After an edit build (its record saved), the memo holds every recipe's findings under the key a
    clean load works out, and no other: the edited recipe's old entry is gone."""
    engine = IncrementalBuilder(load_config(site, tmp_path / "out"), workers=1)
    assert engine.build(None).ok
    recipe = site / "content" / "recipes" / f"{SLUGS[2]}.md"
    recipe.write_text(recipe.read_text().replace("engine_version:", "engine_version: '9.9.9'\nx_old:", 1))
    recipe.write_text(re.sub(r"^x_old:.*\n", "", recipe.read_text(), flags=re.M))
    assert engine.build({recipe}).ok
    cache = engine._cache
    assert cache is not None
    assert {key[1] for key in cache.memo.keys("findings")} == set(keys_of(site, cache).values())


def test_kept_findings_are_restored_only_for_the_recipes_asked_for(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from builder.engine import findings_memo

    expected = load_and_reconcile(load_config(site))
    assert expected.recon is not None
    cache = LoadCache()
    load_and_reconcile(load_config(site), cache=cache)
    cache.settle()
    asked: list[list[str]] = []
    real = findings_memo.restore

    def spy(kept: Any, slugs: list[str], site_: Any) -> Any:
        asked.append(list(slugs))
        return real(kept, slugs, site_)

    monkeypatch.setattr(findings_memo, "restore", spy)
    loaded = load_and_reconcile(load_config(site), cache=cache)
    recon = loaded.recon
    assert recon is not None and recon.source is not None
    assert asked == []  # nothing restored by the load
    assert recon.open_recipe_count() == expected.recon.open_recipe_count() > 0
    total = len(expected.recon.findings)
    assert recon.finding_counts() == (total, len(expected.recon.open_findings)) and total > 0
    assert asked == []  # counted from the memo
    first = recon.findings_for(SLUGS[0])
    assert asked == [[SLUGS[0]]]
    assert [f.as_json() for f in first] == [f.as_json() for f in expected.recon.findings_for(SLUGS[0])]
    assert recon.findings_for(SLUGS[0])[0] is first[0]  # the same objects again
    assert recon.finding_counts() == expected.recon.finding_counts()  # one restored, the rest counted
    assert [f.as_json() for f in recon.findings] == [f.as_json() for f in expected.recon.findings]
    assert asked == [[SLUGS[0]], SLUGS[1:]]
    assert recon.findings[0] is first[0]
    assert recon.finding_counts() == expected.recon.finding_counts()


def test_a_body_edit_reuses_the_kept_statuses_and_a_flags_edit_does_not(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from builder.engine import findings_memo

    engine = IncrementalBuilder(load_config(site, site / "site"), workers=1)
    assert engine.build(None).ok
    hashed: list[int] = []
    real = findings_memo.row_statuses
    monkeypatch.setattr(findings_memo, "row_statuses", lambda *a: hashed.append(1) or real(*a))
    recipe = recipe_file(site, 1)
    with recipe.open("a", encoding="utf-8") as handle:
        handle.write("\nA synthetic edit of the body.\n")
    assert engine.build({recipe}).ok
    assert hashed == []
    edit(recipe, r"^flags: .*$", "flags: '--max-model-len 2048'")
    assert engine.build({recipe}).ok
    assert hashed == [1]
    assert summary(load_and_reconcile(load_config(site), cache=engine._cache)) == clean(site)
