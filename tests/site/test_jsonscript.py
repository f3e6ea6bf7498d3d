"""JSON embedded in <script>: the HTML parser must see one element whatever the data holds."""

from __future__ import annotations

import json

from bs4 import BeautifulSoup
from hypothesis import given
from hypothesis import strategies as st

from builder.site.jsonscript import dumps_for_script, script_json

HOSTILE = "</script><script>alert(1)</script><!-- & \u2028\u2029 </SCRIPT >"


def test_hostile_string_is_escaped_and_round_trips() -> None:
    text = dumps_for_script({"q": HOSTILE})
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in text
    assert json.loads(text) == {"q": HOSTILE}


def test_embedded_in_a_page_it_stays_one_script_element() -> None:
    page = f'<html><head><script type="application/ld+json">{script_json({"q": HOSTILE})}</script></head><body><p>after</p></body></html>'
    soup = BeautifulSoup(page, "html.parser")
    scripts = soup.find_all("script")
    assert len(scripts) == 1
    assert json.loads(scripts[0].string) == {"q": HOSTILE}
    assert soup.body is not None and soup.body.get_text() == "after"


def test_keys_are_sorted_so_output_is_stable() -> None:
    assert dumps_for_script({"b": 1, "a": 2}) == '{"a": 2, "b": 1}'


@given(
    st.recursive(
        st.text() | st.integers() | st.booleans() | st.none(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
        max_leaves=20,
    )
)
def test_any_json_value_round_trips_without_markup(value: object) -> None:
    text = dumps_for_script(value)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == value


def test_the_compact_form_means_the_same_and_escapes_the_same() -> None:
    from builder.site.jsonscript import dumps_compact_for_script

    value = [{"x": "</script><!-- & \u2028\u2029 é", "a": "b"}, {"k": ""}]
    compact = dumps_compact_for_script(value)
    assert json.loads(compact) == json.loads(dumps_for_script(value)) == value
    assert not any(char in compact for char in "<>&\u2028\u2029")
    assert compact.index('"a"') < compact.index('"x"')  # keys sorted
