"""Field descriptions come from the docstrings under the fields, as pydantic would take them."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from pydantic import BaseModel
from pydantic._internal._docs_extraction import extract_docstrings_from_cls

from builder import config
from builder.content import models
from builder.content.docstrings import DOCUMENTED_MODULES, attribute_docstrings, described, field_docs

SOURCE = textwrap.dedent(
    '''
    class Outer:
        """The class docstring is not a field's."""

        plain: int
        """First line.

            Indented continuation.
        """
        unannotated = 3
        """Not a field: no annotation."""
        annotated_twice: int
        other: str
        """Belongs to ``other``."""

        class Inner:
            deep: bool = False
            """Nested."""
    '''
)


def test_docstrings_are_read_as_pydantic_cleans_them() -> None:
    found = attribute_docstrings(SOURCE)
    assert found == {
        "Outer": {"plain": "First line.\n\nIndented continuation.", "other": "Belongs to ``other``."},
        "Outer.Inner": {"deep": "Nested."},
    }


def _models() -> list[type[BaseModel]]:
    return [
        value
        for module in (models, config)
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == module.__name__
    ]


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.__name__)
def test_descriptions_match_pydantics_own_reading(model: type[BaseModel]) -> None:
    """Against pydantic's own extractor (what ``use_attribute_docstrings`` would attach)."""
    assert model.__module__ in DOCUMENTED_MODULES
    described()
    expected = extract_docstrings_from_cls(model, use_inspect=True)
    got = {name: info.description for name, info in model.model_fields.items() if name in expected}
    assert got == expected
    assert field_docs(model) == expected  # the same text without touching the model
    assert expected or not model.model_fields, f"{model.__name__} documents no field"


def test_descriptions_reach_the_json_schema_after_validation() -> None:
    """A model already used (its schema made) is made again with the descriptions."""
    code = textwrap.dedent(
        """
        from builder.content import models
        from builder.content.docstrings import described
        models.HeadlineSetting(prompt_tokens=8)
        described()
        schema = models.RecipeMeta.model_json_schema()
        print(schema["$defs"]["HeadlineSetting"]["properties"]["prompt_tokens"]["description"])
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "Prompt length of the headline setting."


def test_a_build_does_not_read_the_docstrings() -> None:
    """The point of the module: importing the models leaves their fields undescribed."""
    code = "from builder.content import models; print(models.Row.model_fields['recipe'].description)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "None"
