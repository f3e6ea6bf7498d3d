"""JSON that is safe to embed in an HTML ``<script>`` element.

Inside ``<script>`` the HTML parser ends the element at the first ``</script`` whatever the JSON
means, and ``<!--`` changes how it looks for the end. Escaping ``<``, ``>`` and ``&`` as ``\\u003c``,
``\\u003e``, ``\\u0026`` keeps the JSON identical for a JSON parser while leaving nothing the HTML
parser can act on; U+2028/U+2029 are escaped too because older JavaScript parsers treat them as
line breaks inside string literals.
"""

from __future__ import annotations

import json
from typing import Any

from markupsafe import Markup

_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def dumps_for_script(value: Any, *, indent: int | None = None) -> str:
    """``json.dumps`` with keys sorted (stable output) and HTML-significant characters escaped."""
    return _escaped(json.dumps(value, ensure_ascii=False, sort_keys=True, indent=indent, allow_nan=False))


def dumps_compact_for_script(value: list[dict[str, str]]) -> str:
    """:func:`dumps_for_script` without spaces, for megabytes of strings (the search fallback's
    records): orjson is faster than ``json`` there."""
    import orjson

    return _escaped(orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode())


def _escaped(text: str) -> str:
    # str.replace per character, not str.translate: much faster on the megabytes of the search
    # fallback records.
    for char, escaped in _ESCAPES:
        if char in text:
            text = text.replace(char, escaped)
    return text


def script_json(value: Any) -> Markup:
    """Jinja filter: ``{{ value|script_json }}`` inside ``<script type="application/...json">``."""
    return Markup(dumps_for_script(value))
