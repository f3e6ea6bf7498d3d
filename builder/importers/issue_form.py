"""The benchmark issue form (``.github/ISSUE_TEMPLATE/benchmark.yml``) and the issue body GitHub makes of it.

GitHub renders a submitted issue form as markdown: for each field, in the form's order, a ``### <label>``
heading, a blank line and the value; ``_No response_`` when the field was left empty; a textarea with
``render:`` set has its value inside a code fence. The harness output is the last field, so whatever it
holds (headings of its own included) runs to the end of the body.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NO_RESPONSE = "_No response_"
ISSUE = "issue"
"""The :attr:`FieldError.field` of a problem with the issue as a whole."""
DETECT = "tell from the output"
"""The format dropdown's first option: the reader is chosen by the content, as ``import`` without ``--from``."""


@dataclass(frozen=True)
class FormField:
    """One field of the form."""

    id: str
    """The field's ``id`` in the form."""
    label: str
    """Its label: the ``### <label>`` heading of the issue body."""
    required: bool
    """Whether the form requires it (the builder checks again: the body may have been edited by hand)."""


FIELDS: tuple[FormField, ...] = (
    FormField("recipe", "Recipe", True),
    FormField("node", "Node", True),
    FormField("hardware", "Hardware", True),
    FormField("date", "Date", False),
    FormField("engine_version", "Engine version", False),
    FormField("engine_build", "Engine build", False),
    FormField("format", "Format", False),
    FormField("command", "Command line", False),
    FormField("output", "Benchmark output", True),
)
"""The form's fields in its order; a test holds the YAML form to exactly these."""

LABELS = {field.id: field.label for field in FIELDS}
_FENCED = re.compile(r"\A(`{3,})[^\n`]*\n(?P<body>.*?)\n?\1\Z", re.DOTALL)


@dataclass(frozen=True)
class FieldError:
    """A problem the contributor fixes in one field of the issue."""

    field: str
    """The field's id (:data:`ISSUE` for the issue as a whole)."""
    message: str


def parse_form(body: str) -> tuple[dict[str, str | None], list[FieldError]]:
    """Each field's value (``None`` when empty), and the headings the body lacks."""
    text = body.replace("\r\n", "\n")
    found: list[tuple[str, int, int]] = []
    errors: list[FieldError] = []
    position = 0
    for field in FIELDS:
        heading = re.compile(rf"^###[ \t]+{re.escape(field.label)}[ \t]*$", re.MULTILINE)
        match = heading.search(text, position)
        if match is None:
            errors.append(
                FieldError(
                    field.id,
                    f"the issue has no '### {field.label}' heading: open it with the benchmark form, or "
                    "keep the form's headings when editing it",
                )
            )
            continue
        found.append((field.id, match.start(), match.end()))
        position = match.end()
    if not found:
        errors = [
            FieldError(
                ISSUE,
                "the issue was not opened with the benchmark form (none of its headings, such as '### Recipe', "
                "is there): open a new issue with the form",
            )
        ]
    values: dict[str, str | None] = {field.id: None for field in FIELDS}
    for index, (name, _, end) in enumerate(found):
        stop = found[index + 1][1] if index + 1 < len(found) else len(text)
        values[name] = _value(text[end:stop])
    return values, errors


def _value(raw: str) -> str | None:
    value = raw.strip("\n").strip()
    if value in ("", NO_RESPONSE):
        return None
    fenced = _FENCED.match(value)
    if fenced is not None:
        value = fenced["body"]
        if not value.strip():
            return None
    return value
