"""YAML loading: values as PyYAML constructs them, every key's line, duplicates refused with theirs.

The loader builds plain documents itself in the walk that records key lines; anything unusual
(aliases, merge keys, explicit tags) goes through PyYAML's constructor. Both must give what
composing, walking and constructing separately gives.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.yamlio import MAX_DEPTH, YamlDoc, YamlProblem, _Loader, _walk, load_yaml
from tests.conftest import examples


def reference(text: str, first_line: int = 1) -> YamlDoc:
    """Compose, record lines with the walk, then let PyYAML construct the values."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        doc = YamlDoc(None)
        if node is not None:
            _walk(node, (), doc, first_line)
            doc.value = loader.construct_document(node)
        return doc
    finally:
        loader.dispose()


def assert_same(text: str, first_line: int = 1) -> YamlDoc:
    got = load_yaml(text, first_line)
    want = reference(text, first_line)
    assert got.value == want.value
    assert type(got.value) is type(want.value)
    assert got.lines == want.lines
    assert [(d.message, d.line) for d in got.duplicates] == [(d.message, d.line) for d in want.duplicates]
    return got


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    # Control characters are refused (test_control_characters_are_refused_at_their_line).
    st.text(st.characters(exclude_categories=("Cc", "Cs")), max_size=12),
    st.dates(),
    st.sampled_from(["yes", "no", "on", "off", "0x1f", "1_000", "2026-02-30", "~", "null", "1e3", "0.70"]),
)
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.one_of(
                st.text(st.characters(exclude_categories=("Cc", "Cs")), max_size=8),
                st.integers(),
                st.booleans(),
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=20,
)


@settings(max_examples=examples(200), deadline=None)
@given(documents, st.booleans(), st.integers(min_value=1, max_value=5))
def test_documents_load_as_pyyaml_constructs_them_with_every_key_line(
    data: Any, flow: bool, first_line: int
) -> None:
    assert_same(yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True), first_line)


def test_duplicate_keys_are_reported_at_their_line_and_the_last_value_wins() -> None:
    doc = assert_same("a: 1\nb:\n  c: 2\n  c: 3\na: 4\n", first_line=2)
    assert doc.value == {"a": 4, "b": {"c": 3}}
    assert [(d.message, d.line) for d in doc.duplicates] == [
        ("duplicate key 'c' (first defined on line 4)", 5),
        ("duplicate key 'a' (first defined on line 2)", 6),
    ]
    assert doc.lines[("b", "c")] == 5


@pytest.mark.parametrize(
    "text",
    [
        "base: {x: 1, y: 2}\nmine:\n  <<: {x: 1, y: 2}\n  y: 3\n",  # merge key
        "s: !!set {a, b}\n",  # explicit collection tag
        "o: !!omap [{a: 1}, {b: 2}]\n",
        "d: 2026-02-30\ne: 2026-02-28\nt: 2001-12-14t21:59:43.10-05:00\n",  # impossible dates stay text
        "? [a, b]\n: 1\n",  # a collection as a key
    ],
)
def test_unusual_documents_load_as_pyyaml_loads_them(text: str) -> None:
    try:
        expected = reference(text)
    except yaml.YAMLError:
        with pytest.raises(YamlProblem):
            load_yaml(text)
        return
    got = load_yaml(text)
    assert got.value == expected.value
    assert got.lines == expected.lines


def test_impossible_dates_stay_strings_for_validation_to_report() -> None:
    doc = assert_same("verified: 2026-02-30\nok: 2026-02-28\n")
    assert doc.value == {"verified": "2026-02-30", "ok": dt.date(2026, 2, 28)}


def test_an_unknown_tag_is_a_yaml_problem_with_its_line() -> None:
    with pytest.raises(YamlProblem) as caught:
        load_yaml("a: 1\nb: !custom x\n", first_line=3)
    assert caught.value.line == 4


def test_a_yaml_problem_keeps_its_line_through_pickle() -> None:
    """Front matter may be loaded in a forked child and sent back pickled."""
    import pickle

    problem = pickle.loads(pickle.dumps(YamlProblem("duplicate key 'a'", 7)))
    assert (problem.message, problem.line) == ("duplicate key 'a'", 7)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: &v [1, 2]\nb: *v\n", 2),
        ("a: &a [*a]\n", 1),  # a value containing itself: RecursionError before
        # 510 bytes that expand to billions of items: gigabytes of memory before
        (
            "a: &a ['x','x','x','x','x','x','x','x','x']\n"
            + "".join(
                f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
            ),
            2,
        ),
        ("base: &b {x: 1}\nmine:\n  <<: *b\n", 3),
    ],
)
def test_aliases_are_refused_at_their_line(text: str, line: int) -> None:
    with pytest.raises(YamlProblem) as caught:
        load_yaml(text, first_line=1)
    assert caught.value.line == line
    assert caught.value.message.startswith("YAML aliases are not allowed (*")


def _nested(opening: str, levels: int) -> str:
    closing = {"[": "]", "{a: ": "}", "- ": ""}[opening]
    return "x:\n  " + opening * levels + "1" + closing * levels + "\n"


@pytest.mark.parametrize("opening", ["[", "{a: ", "- "])
def test_one_level_past_the_limit_is_refused_with_the_builders_message(opening: str) -> None:
    """The builder's own limit sits far below any parser's, so its message is the one a reader gets."""
    with pytest.raises(YamlProblem) as caught:
        load_yaml(_nested(opening, MAX_DEPTH + 1), first_line=3)
    assert caught.value.message == f"nested more than {MAX_DEPTH} levels deep"
    assert caught.value.line == 4
    assert load_yaml(_nested(opening, MAX_DEPTH - 1)).value is not None


@pytest.mark.parametrize("opening", ["[", "{a: ", "- "])
def test_deep_nesting_is_refused_not_a_crash(opening: str) -> None:
    """100k levels of '[' overflowed libyaml's composer (a segmentation fault). Which refuses first,
    the builder's depth count or the parser's own limit (PyYAML 6.0.4 added one, with its own
    words), is the library's business: the input is refused at its line either way."""
    with pytest.raises(YamlProblem) as caught:
        load_yaml(_nested(opening, 100_000), first_line=3)
    assert caught.value.line == 4
    assert "nest" in caught.value.message


@pytest.mark.parametrize(
    ("text", "line"),
    [('a: "x\\x01"\n', 3), ('a:\n  - ok\n  - "\\x7f"\n', 5), ('"k\\x00": 1\n', 3)],
)
def test_control_characters_are_refused_at_their_line(text: str, line: int) -> None:
    """An escape is the only way into a YAML value; feed.xml could not carry one."""
    with pytest.raises(YamlProblem) as caught:
        load_yaml(text, first_line=3)
    assert caught.value.line == line
    assert caught.value.message.startswith("control character U+00")
    assert load_yaml('a: "tab\\there\\nnewline"\n').value == {"a": "tab\there\nnewline"}
