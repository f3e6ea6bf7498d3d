"""``new``: a commented starting file for a recipe, case study or post.

The comments are the models' own field docstrings, so the scaffold never drifts from the format.
Required keys are written empty with a ``# TODO`` comment: YAML reads them as null, so ``check``
reports every one of them, at its line, until it is filled in; a half-filled page cannot be published
by accident. Optional keys are shown commented out with an example. Once the TODO keys are filled, the
file passes ``check`` (a test fills them and checks).
"""

from __future__ import annotations

import datetime as dt
import textwrap
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from builder.config import SiteConfig
from builder.content.docstrings import field_docs
from builder.content.markdown import slugify
from builder.content.models import SLUG_RE, CaseStudyMeta, PostMeta, RecipeMeta
from builder.errors import ConfigError
from builder.yamlio import YamlProblem, load_yaml

FOLDERS: dict[str, str] = {"recipe": "recipes", "case-study": "case-studies", "post": "posts"}
TODO = "# TODO"

_EXAMPLES: dict[str, list[str]] = {
    "env": ["env:", '  EXAMPLE_VARIABLE: "1"'],
    "verified": ["verified: 2026-01-31"],
    "contributors": ["contributors: [your-handle]"],
    "summary": ['summary: "One or two sentences for listings and search results."'],
    "tags": ["tags: [nvfp4, speculative-decoding]"],
    "requirements": ["requirements:", '  - "NVIDIA driver 580 or later"'],
    "flag_notes": ["flag_notes:", '  "--max-model-len": "why this value"'],
    "headline": ["headline:", "  prompt_tokens: 2048", "  concurrency: 1", "  context_tokens: 0"],
    "served_model": ["served_model: my-served-name"],
    "sources": ["sources:", '  - "https://example.org/where-the-facts-come-from"'],
    "date_note": ['date_note: "The source gives the month only; the first day of it is used."'],
    "outcome": ['outcome: "Adopted into the recipe"'],
    "author": ["author: your-name"],
}

_BODIES: dict[str, str] = {
    "recipe": """\
TODO: two or three paragraphs: what this recipe serves, on what hardware, and what it is good for.
The serve command, key parameters, API example and results table are built from the front matter and
from the benchmark rows in data/rows/{slug}/ (add them with `python -m builder import`).

## Before you start

TODO: what a reader must know first (memory, context length, downloads, known issues).

## Troubleshooting

### TODO: a question a reader may ask?

TODO: its answer. Every `###` question under this heading becomes an entry of the recipe's FAQ, with
its own anchor.
""",
    "case-study": """\
TODO: what was compared, how it was measured, what the rows show and why the verdict follows.
The arms link to their recipes; cite figures from the recipes' rows rather than typing new ones.
""",
    "post": """\
TODO: the post. Link recipes as [text](/recipes/<slug>/) and case studies as
[text](/case-studies/<slug>/).
""",
}


@dataclass(frozen=True)
class Scaffold:
    rel: str
    """Path of the new file relative to the site root."""
    text: str


def _comment(text: str, indent: str = "") -> list[str]:
    text = " ".join(text.replace("``", "`").split())
    return [f"{indent}# {line}" for line in textwrap.wrap(text, 100 - len(indent))]


def _ids(path: Path) -> list[str]:
    """Top-level ids of a YAML mapping file, for hints; nothing when it is missing or broken."""
    try:
        doc = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, YamlProblem):
        return []
    return sorted(map(str, doc.value)) if isinstance(doc.value, dict) else []


def _one_of(ids: list[str], what: str) -> str:
    """`` one of: a, b`` for a hint; empty without ids."""
    if not ids:
        return ""
    shown = ", ".join(ids[:12]) + (", ..." if len(ids) > 12 else "")
    return f"{what}: {shown}"


def _front(model: type[BaseModel], hints: dict[str, str], fixed: dict[str, list[str]]) -> list[str]:
    docs = field_docs(model)
    lines: list[str] = []
    for name, info in model.model_fields.items():
        lines.extend(_comment(docs.get(name, "")))
        if name in fixed:
            lines.extend(fixed[name])
        elif info.is_required():
            lines.append(f"{name}:  {TODO}{hints.get(name, '')}")
        else:
            lines.extend(f"# {line}" for line in _EXAMPLES.get(name, [f"{name}:"]))
        lines.append("")
    return lines[:-1]


def _arms(recipes: list[str]) -> list[str]:
    recipe_hint = (
        f"  {TODO} a recipe slug{_one_of(recipes, ' (one of')}{')' if recipes else ''}, or leave empty"
    )
    lines = []
    for role in ("baseline", "comparison"):
        lines += [
            f"  - label:  {TODO} what this arm is, e.g. FP8",
            f"    role: {role}",
            f"    recipe:{recipe_hint}",
        ]
    return [
        "arms:",
        *_comment("Each arm: label, role (baseline or comparison), recipe slug or empty.", "  "),
        *lines,
    ]


def scaffold(config: SiteConfig, kind: str, slug: str, today: dt.date) -> Scaffold:
    """The starting file for ``kind`` (recipe, case-study, post); raise ConfigError on a bad slug."""
    if kind not in FOLDERS:
        raise ConfigError(f"unknown kind '{kind}' (recipe, case-study or post)")
    rel = f"content/{FOLDERS[kind]}/{slug}.md"
    if not SLUG_RE.fullmatch(slug) or len(slug) > 120:
        raise ConfigError(
            f"'{slug}' is not a valid slug: lowercase letters, digits, '.', '-' or '_', starting with a letter "
            f"or digit, at most 120 characters (try '{slugify(slug)[:120]}')",
            rel,
        )
    if (config.root / rel).exists():
        raise ConfigError("already exists; new never overwrites a file", rel)
    root = config.root
    header = [
        "---",
        f"# Front matter of a {kind.replace('-', ' ')}. Validate with: python -m builder check",
        "# Keys marked TODO are required: check reports each one, with its line, until it is filled in.",
        "# Commented-out keys are optional; uncomment the ones you need.",
        "",
    ]
    if kind == "recipe":
        hardware = _ids(root / "data" / "hardware.yaml")
        front = _front(
            RecipeMeta,
            {
                "hardware": _one_of(hardware, " one of") or " a hardware id from data/hardware.yaml",
                "engine_version": ' quoted, e.g. "0.24.0"',
                "flags": ' quoted, exactly as typed; "" when not recorded',
            },
            {},
        )
    elif kind == "case-study":
        recipes = sorted(p.stem for p in (root / "content" / "recipes").glob("*.md"))
        front = _front(CaseStudyMeta, {"date": " YYYY-MM-DD"}, {"arms": _arms(recipes)})
    else:
        front = _front(PostMeta, {}, {"date": [f"date: {today.isoformat()}"]})
    body = _BODIES[kind].format(slug=slug)
    return Scaffold(rel, "\n".join([*header, *front, "---", "", body]))


def write_scaffold(config: SiteConfig, item: Scaffold) -> Path:
    """Create the file; never replace one (even one created since :func:`scaffold` looked)."""
    path = config.root / item.rel
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(path, "x", encoding="utf-8", newline="\n") as handle:
            handle.write(item.text)
    except FileExistsError:
        raise ConfigError("already exists; new never overwrites a file", item.rel) from None
    return path
