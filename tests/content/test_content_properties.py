"""Property tests of content files: any bytes load as a page or give problems with path and line."""

from __future__ import annotations

import datetime as dt
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.config import load_config
from builder.data.load import load_site
from builder.errors import Problems
from tests.conftest import SITES, examples

REL = "content/recipes/prop.md"
PROPERTY = settings(max_examples=examples(20), suppress_health_check=[HealthCheck.too_slow])


def load(data: bytes) -> tuple[Any, Problems]:
    root = Path(tempfile.mkdtemp(prefix="content-prop-"))
    try:
        shutil.copytree(SITES / "minimal", root, dirs_exist_ok=True)
        (root / REL).write_bytes(data)
        problems = Problems()
        site = load_site(load_config(root), problems)
        site.con.close()
        return site.recipes.get("prop"), problems
    finally:
        shutil.rmtree(root)


def assert_located(problems: Problems, lines: int) -> None:
    mine = [p for p in problems.errors if p.path == REL]
    assert [p for p in problems.errors if p.path != REL and "prop" not in p.message] == []
    for problem in mine:
        assert problem.line is not None and 1 <= problem.line <= lines + 1, problem


@PROPERTY
@given(st.binary(max_size=300))
def test_any_bytes_give_a_page_or_located_problems(data: bytes) -> None:
    page, problems = load(data)
    assert page is not None or any(p.path == REL for p in problems.errors)
    assert_located(problems, data.count(b"\n") + 1)


scalar = st.one_of(
    st.text(max_size=20),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.dates(min_value=dt.date(1900, 1, 1)),
    st.sampled_from(["</script>", "{{ 7*7 }}", "&amp;", "- item", "key: value", "'", '"', "---", "\u2028"]),
)
value = st.recursive(
    scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
KEYS = [
    "title",
    "model",
    "checkpoint",
    "hardware",
    "engine",
    "engine_version",
    "flags",
    "env",
    "verified",
    "contributors",
    "summary",
    "tags",
    "requirements",
    "flag_notes",
    "headline",
    "served_model",
    "bogus",
]
VALID = {
    "title": "A title",
    "model": "org/model",
    "checkpoint": "org/model-fp8",
    "hardware": "test-gpu",
    "engine": "vllm",
    "engine_version": "1.0.0",
    "flags": "--max-model-len 4096",
}


@PROPERTY
@given(st.dictionaries(st.sampled_from(KEYS), value, max_size=6), st.text(max_size=80))
def test_front_matter_loads_exactly_or_is_reported_at_its_key(front: dict[str, Any], body: str) -> None:
    document = {**VALID, **front}
    text = "---\n" + yaml.safe_dump(document, allow_unicode=True, sort_keys=False) + "---\n" + body
    page, problems = load(text.encode("utf-8"))
    assert_located(problems, text.count("\n") + 1)
    if page is None:
        assert any(p.path == REL for p in problems.errors)
        return
    # Loaded: every string field holds exactly what was written.
    for key in ("title", "model", "checkpoint", "engine", "engine_version", "flags", "summary"):
        if key in document:
            assert getattr(page.meta, key) == document[key]
    assert [p for p in problems.errors if p.path == REL] == []
