"""The contributor docs cover every format field and every command-line option (Datasette-style)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from builder.cli import COMMANDS, make_parser
from builder.config import SiteSettings
from builder.content import models, schema

REPO = Path(__file__).resolve().parent.parent
CONTRIBUTING = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
README = (REPO / "README.md").read_text(encoding="utf-8") if (REPO / "README.md").exists() else ""


def _section(heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    found = re.search(rf"^{re.escape(heading)}.*$", CONTRIBUTING, re.MULTILINE)
    assert found, f"CONTRIBUTING.md has no heading '{heading}'"
    rest = CONTRIBUTING[found.end() :]
    match = re.search(rf"^#{{1,{level}}} ", rest, re.MULTILINE)
    return rest[: match.start()] if match else rest


SECTIONS: list[tuple[str, list[type[BaseModel]]]] = [
    ("## Row format", [models.Row]),
    ("### Recipe front matter", [models.RecipeMeta, models.HeadlineSetting]),
    ("### Case study front matter", [models.CaseStudyMeta, models.Arm]),
    ("### Post front matter", [models.PostMeta]),
    (
        "### Data files",
        [models.Node, models.Hardware, models.Annotation, models.AnnotationSetting, SiteSettings],
    ),
]


@pytest.mark.parametrize(("heading", "model"), [(h, m) for h, ms in SECTIONS for m in ms])
def test_every_field_is_documented_in_its_section(heading: str, model: type[BaseModel]) -> None:
    text = _section(heading)
    missing = [name for name in model.model_fields if f"`{name}`" not in text]
    assert missing == [], f"{model.__name__} fields not documented under '{heading}' in CONTRIBUTING.md"


def test_row_table_is_the_one_the_row_model_makes() -> None:
    """A column missing, out of order, or documented with another type or meaning fails here."""
    section = _section("## Row format")
    table = "".join(line + "\n" for line in section.splitlines() if line.startswith("|"))
    expected = schema.row_columns_markdown()
    assert table == expected, f"replace the table under '## Row format' in CONTRIBUTING.md with:\n{expected}"


def _options(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = {}
    for name, command in sub.choices.items():
        out[name] = [
            opt
            for action in command._actions
            for opt in action.option_strings
            if opt.startswith("--") and opt != "--help"
        ]
    return out


def _entries(text: str, command: str) -> str:
    """Every paragraph or table row of ``text`` that starts by showing ``python -m builder <command>``."""
    # an entry ends at a blank line, the next entry, or the next table row
    pattern = re.compile(
        rf"`python -m builder {re.escape(command)}\b.*?(?=\n\n|\n`python -m builder |\n\||\Z)", re.DOTALL
    )
    return "\n".join(m.group(0) for m in pattern.finditer(text))


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_option_of_every_command_is_documented(command: str) -> None:
    options = _options(make_parser())[command]
    documented = _entries(_section("## Command reference"), command) + "\n" + _entries(README, command)
    assert documented.strip(), f"'{command}' has no entry in CONTRIBUTING.md's command reference"
    missing = [opt for opt in options if not re.search(rf"{re.escape(opt)}\b", documented)]
    assert missing == [], f"options of '{command}' not documented in CONTRIBUTING.md or README.md"


def test_the_three_steps_and_the_preview_are_there() -> None:
    for phrase in (
        "## Add a run in three steps",
        "**1. Benchmark**",
        "**2. Import**",
        "**3. Open a pull request**",
        "python -m builder serve",
        "## Findings and annotations",
    ):
        assert phrase in CONTRIBUTING


def test_the_figure_syntax_is_documented() -> None:
    """Every selector key and every unit ``check`` reads in prose is in "Figures in prose"."""
    from builder.content.figures import SELECTORS, UNITS

    text = _section("## Figures in prose")
    wanted = [*(f"`{name}`" for name in [*SELECTORS, *UNITS]), "{{ ratio", "{{ unbound", '"prose_figure"']
    assert [name for name in wanted if name not in text] == []


def _readme_test_command() -> str:
    [line] = [line for line in README.splitlines() if "python -m pytest" in line]
    return line


def test_ci_runs_the_readme_test_command() -> None:
    """CI's green must mean the README's command works: same constraints, same pytest invocation."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    command = _readme_test_command()
    pytest_part = command[command.index("python -m pytest") :]
    assert pytest_part in ci
    assert "-c constraints.txt -e '.[test]'" in command
    assert "pins=(-c constraints.txt)" in ci and "\"${pins[@]}\" -e '.[test]'" in ci


def test_constraints_pin_every_declared_dependency() -> None:
    """A dependency added to pyproject.toml without re-running .ci/lock would install unpinned in CI."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {
        canonicalize_name(Requirement(spec).name)
        for spec in [*project["dependencies"], *project["optional-dependencies"]["test"]]
    }
    pinned: dict[str, str] = {}
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            [spec] = requirement.specifier
            assert spec.operator == "==", line
            pinned[canonicalize_name(requirement.name)] = spec.version
    assert sorted(declared - set(pinned)) == []
    for spec in [*project["dependencies"], *project["optional-dependencies"]["test"]]:
        requirement = Requirement(spec)
        version = pinned[canonicalize_name(requirement.name)]
        assert requirement.specifier.contains(version), f"constraints.txt pins {spec} at {version}"
