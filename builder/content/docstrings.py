"""Field descriptions from the models' attribute docstrings, attached only where they are read.

Each field of a format model is documented by the string literal under it. pydantic can turn those
into descriptions as each class is made (``use_attribute_docstrings``), but it finds each class's
source through :mod:`inspect`, which walks every loaded module: that would slow every command's
start-up. Only the JSON Schema export reads descriptions: it calls :func:`described` first, which
reads each module's source once and gives every field without a description its docstring, cleaned
as pydantic cleans it. The scaffolds of ``new`` and the API page's data dictionary take the docstrings alone
(:func:`field_docs`), without making the models' schemas again.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from pathlib import Path

from pydantic import BaseModel

DOCUMENTED_MODULES = ("builder.content.models", "builder.config")
"""Modules whose pydantic models describe a format contributors or site owners write."""


def attribute_docstrings(source: str) -> dict[str, dict[str, str]]:
    """Class qualified name → field name → the docstring right under that field's annotation."""
    found: dict[str, dict[str, str]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if not isinstance(node, ast.ClassDef):
                continue
            name = f"{prefix}{node.name}"
            docs = found.setdefault(name, {})
            for field, after in zip(node.body, node.body[1:], strict=False):
                if (
                    isinstance(field, ast.AnnAssign)
                    and isinstance(field.target, ast.Name)
                    and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)
                ):
                    docs[field.target.id] = inspect.cleandoc(after.value.value)
            visit(node.body, f"{name}.")

    visit(ast.parse(source).body, "")
    return found


@functools.cache
def _module_docstrings(module_name: str) -> dict[str, dict[str, str]]:
    module = sys.modules[module_name]
    if module.__file__ is None:
        return {}
    return attribute_docstrings(Path(module.__file__).read_text(encoding="utf-8"))


def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """Each field of ``model`` with its docstring (of the class declaring it), the model untouched:
    for text that needs the docstrings and not the JSON Schema (a data dictionary, scaffolds)."""
    docs: dict[str, str] = {}
    for name in model.model_fields:
        for klass in model.__mro__:
            if name in klass.__dict__.get("__annotations__", {}):
                doc = _module_docstrings(klass.__module__).get(klass.__qualname__, {}).get(name)
                if doc is not None:
                    docs[name] = doc
                break
    return docs


def describe(model: type[BaseModel]) -> None:
    """Give each field of ``model`` without a description the docstring of the class declaring it."""
    changed = False
    docs = field_docs(model)
    for name, info in model.model_fields.items():
        if info.description is None and name in docs:
            info.description = docs[name]
            changed = True
    if changed:
        # The schema (and so the JSON Schema) is made from the fields: made again with the new text.
        model.model_rebuild(force=True)


@functools.cache
def described() -> None:
    """Describe every model of :data:`DOCUMENTED_MODULES`, nested ones first (a model's schema takes
    in the schemas of the models it nests as they are when it is made)."""
    import importlib

    for module_name in DOCUMENTED_MODULES:
        module = importlib.import_module(module_name)
        for value in list(vars(module).values()):  # definition order: nested models come first
            if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == module_name:
                describe(value)
