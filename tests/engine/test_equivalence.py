"""Every field of every model, every data file and every template edited: the engine equals build_site.

The edits are generated from the pydantic models (:mod:`builder.content.models` and
:class:`builder.config.SiteSettings`): the fields are walked through ``model_fields``, nested models
included, and for each one a new value is made from its annotation (another literal, a later date,
one more list item, another id the site knows, ...), checked by the model, and written where the field
lives: front matter, ``data/*.yaml``, ``site.yaml`` or a cell of a row file. Every template file and
the markdown bodies are edited too, and each model also gets one edit it rejects.

After each small batch of edits of one kind (see :meth:`Editor.batches`) a long-lived incremental
builder (told what changed, or left to look, or started afresh from its record on disk) and the plain
pipeline (:func:`builder.engine.pure.build_site`, in memory) must give the same files byte for byte;
when an edit makes the site invalid, both must fail with the same problems and the incremental output
must stay as it was.
Adding a field, a model or a template the generator cannot edit fails the coverage tests.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import random
import re
import sys
import types
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pytest
import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from builder.config import SiteSettings, load_config
from builder.content import models
from builder.content.models import Annotation, CaseStudyMeta, Hardware, Node, PostMeta, RecipeMeta, Row
from builder.engine.incremental import IncrementalBuilder, build
from builder.errors import BuildAborted, BuilderError
from tests.conftest import REPO, synthetic_site, tree
from tests.engine.pure_build import differences, pure_build

sys.path.insert(0, str(REPO / "bench"))
import generate  # noqa: E402

SEED = 20261202
INVALID_EVERY = 2
"""A build of an edit its model rejects after every this many builds of valid edits."""
TRIES = 2
"""More builds for an edit that broke the site on its own, each with a new value."""
RUN_SETTINGS = 2
"""Settings per run: the first of bench/generate.py's grid (few findings, a fast build)."""
RUN_A, RUN_B = dt.date(2026, 3, 1), dt.date(2026, 6, 1)
"""The two runs of every recipe: the second is 30 % off the first at every setting and metric, so
each recipe has findings an annotation can select."""


@dataclass(frozen=True)
class Place:
    """Where the values of a model live in a site."""

    model: type[BaseModel]
    files: str
    """Glob under the site root."""
    shape: Literal["front", "mapping", "list", "document", "rows"]
    """Front matter; values of a YAML mapping; items of a YAML list; a whole YAML file; CSV rows."""


PLACES = (
    Place(RecipeMeta, "content/recipes/*.md", "front"),
    Place(CaseStudyMeta, "content/case-studies/*.md", "front"),
    Place(PostMeta, "content/posts/*.md", "front"),
    Place(Hardware, "data/hardware.yaml", "mapping"),
    Place(Node, "data/nodes.yaml", "mapping"),
    Place(Annotation, "data/annotations.yaml", "list"),
    Place(SiteSettings, "site.yaml", "document"),
    Place(Row, "data/rows/**/*.csv", "rows"),
)

FORMATS: dict[tuple[str, str], Callable[[int], str]] = {
    ("RecipeMeta", "flags"): lambda n: f"--max-num-seqs {n} --enforce-eager",
    ("Row", "flags"): lambda n: f"--max-num-seqs {n} --enforce-eager",
    ("Row", "env"): lambda n: f"SYNTH_EDIT={n}",
    ("Row", "time"): lambda n: f"{n % 24:02d}:{n % 60:02d}",
}
"""Text fields with a syntax of their own, which the models leave to the builder to check."""

SETTING_MODELS = ("HeadlineSetting", "AnnotationSetting")
"""Models naming a benchmark setting: their values are taken from the settings the rows measured."""


class NoEdit(Exception):
    """No valid changed value could be generated for a field."""


def nested_models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in nested_models(arg)]


def field_paths(model: type[BaseModel]) -> list[tuple[str, ...]]:
    """Every field of ``model`` and, recursively, of the models its fields hold."""
    paths: list[tuple[str, ...]] = []
    for name, info in model.model_fields.items():
        paths.append((name,))
        for sub in nested_models(info.annotation):
            paths += [(name, *rest) for rest in field_paths(sub)]
    return paths


def models_under(model: type[BaseModel]) -> set[type[BaseModel]]:
    found = {model}
    for info in model.model_fields.values():
        for sub in nested_models(info.annotation):
            found |= models_under(sub)
    return found


def field_label(place: Place, path: tuple[str, ...]) -> str:
    return f"{place.model.__name__}.{'.'.join(path)}"


def accepts(annotation: Any, metadata: list[Any], value: Any) -> bool:
    adapter: TypeAdapter[Any] = TypeAdapter(Annotated[(annotation, *metadata)] if metadata else annotation)
    try:
        adapter.validate_python(value, strict=True)
    except ValidationError:
        return False
    return True


def validates(model: type[BaseModel], value: Any, *, strict: bool = True) -> bool:
    try:
        model.model_validate(value, strict=strict)
    except ValidationError:
        return False
    return True


def read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    header, *rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    return header, rows


def csv_text(header: list[str], rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([header, *rows])
    return buffer.getvalue()


def csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def typed_row(header: list[str], cells: list[str]) -> dict[str, str]:
    """A row as the model reads it: an empty cell is a value not given."""
    return {name: cell for name, cell in zip(header, cells, strict=True) if cell != ""}


def split_front(text: str) -> tuple[dict[str, Any], str]:
    lines = text.splitlines(keepends=True)
    end = next(i for i in range(1, len(lines)) if lines[i].rstrip("\r\n") == "---")
    return yaml.safe_load("".join(lines[1:end])) or {}, "".join(lines[end + 1 :])


def dump_yaml(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=4096)


class Facts:
    """What the site holds that a value must refer to: ids, and the settings and dates its rows
    measured (values of a few rows, as an edit of one row makes, are not taken: no finding has them)."""

    def __init__(self, root: Path) -> None:
        self.recipes = sorted(p.stem for p in (root / "content" / "recipes").glob("*.md"))
        self.hardware = sorted(yaml.safe_load((root / "data" / "hardware.yaml").read_text(encoding="utf-8")))
        nodes = yaml.safe_load((root / "data" / "nodes.yaml").read_text(encoding="utf-8"))
        self.nodes = sorted(nodes)
        counts: dict[str, Counter[Any]] = defaultdict(Counter)
        for path in sorted((root / "data" / "rows").rglob("*.csv")):
            header, rows = read_csv(path)
            for cells in rows:
                row = typed_row(header, cells)
                if row.get("node") in nodes:
                    counts["hardware"][nodes[row["node"]]["hardware"]] += 1
                counts["dates"][dt.date.fromisoformat(row["date"])] += 1
                for name in ("prompt_tokens", "concurrency", "context_tokens", "output_tokens"):
                    if row.get(name, "").isdigit():
                        counts[name][int(row[name])] += 1
                if row.get("request_rate"):
                    counts["request_rate"][float(row["request_rate"])] += 1
        self.measured = {
            name: sorted(v for v, n in values.items() if n >= 4) for name, values in counts.items()
        }

    def choices(self, owner: str, name: str) -> list[Any]:
        if owner in SETTING_MODELS and name in self.measured:
            return list(self.measured[name])
        if (owner, name) == ("Annotation", "date"):
            return list(self.measured["dates"])
        return list({"recipe": self.recipes, "node": self.nodes, "hardware": self.hardware}.get(name, []))


class Values:
    """New values for fields, made from their annotations."""

    def __init__(self, rnd: random.Random, facts: Facts) -> None:
        self.rnd = rnd
        self.facts = facts
        self.counter = 0

    def candidates(self, annotation: Any, metadata: list[Any], old: Any, owner: str, name: str) -> list[Any]:
        """Values of ``annotation`` other than ``old``, most wanted first (not all valid)."""
        self.counter += 1
        n = self.counter
        origin = get_origin(annotation)
        args = get_args(annotation)
        if origin is Annotated:
            return self.candidates(args[0], [*metadata, *args[1:]], old, owner, name)
        if origin in (Union, types.UnionType):
            arms = [arm for arm in args if arm is not type(None)]
            out = [value for arm in arms for value in self.candidates(arm, metadata, old, owner, name)]
            if len(arms) < len(args) and old is not None:
                # Among the values the site knows, if any: another value would refer to nothing.
                known = self.facts.choices(owner, name)
                among = next((i for i, value in enumerate(out) if value not in known), len(out))
                out.insert(self.rnd.randrange((among if known else min(len(out), 2)) + 1), None)
            return out
        if origin is Literal:
            return self.rnd.sample(args, len(args))
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return [self.fresh(annotation)]
        if origin is list:
            (item,) = args
            new = self.one(item, [], None, owner, name)
            olds = list(old or [])
            out = [[*olds, new]]
            if olds:
                out += [[new, *olds[1:]], olds[:-1]]
            return self.rnd.sample(out, len(out))
        if origin is dict:
            key_type, value_type = args
            mapping = dict(old or {})
            value = self.one(value_type, [], None, owner, name)
            out = [
                {**mapping, key: value} for key in self.candidates(key_type, [], None, owner, f"{name} key")
            ]
            if mapping:
                last = list(mapping)[-1]
                out += [{**mapping, last: value}, {k: v for k, v in mapping.items() if k != last}]
            return self.rnd.sample(out, len(out))
        choices = self.facts.choices(owner, name)
        out = self.rnd.sample(choices, len(choices))
        if annotation is str:
            if (owner, name) in FORMATS:
                out.append(FORMATS[owner, name](n))
            out += [f"Edited {name} {n}", f"edited-{n}", f"EDITED_{n}", f"https://example.org/edited-{n}/"]
        elif annotation is bool:
            out.append(not old)
        elif annotation is int:
            out += [(old or 0) + 1, n]
        elif annotation is float:
            out += [round((old or 0.0) * 1.1 + 1.0, 2), n + 0.5]
        elif annotation is dt.date:
            start = old or dt.date(2026, 5, 1)
            days = dt.timedelta(days=self.rnd.randrange(1, 60))
            out += [start + days, start - days]
        else:
            raise NoEdit(f"no value generator for {annotation!r} ({owner}.{name})")
        return [value for value in out if accepts(annotation, [], value)]

    def one(self, annotation: Any, metadata: list[Any], old: Any, owner: str, name: str) -> Any:
        """A valid value of ``annotation`` other than ``old``."""
        for value in self.candidates(annotation, metadata, old, owner, name):
            if value != old and accepts(annotation, metadata, value):
                return value
        raise NoEdit(f"no valid value for {owner}.{name} ({annotation!r})")

    def fresh(self, model: type[BaseModel]) -> dict[str, Any]:
        """A new value of ``model``: its required fields and some optional ones."""
        for _ in range(20):
            value = {
                name: self.one(info.annotation, info.metadata, None, model.__name__, name)
                for name, info in model.model_fields.items()
                if info.is_required() or self.rnd.random() < 0.5
            }
            if validates(model, value):
                return value
        raise NoEdit(f"no valid new {model.__name__}")


@dataclass(frozen=True)
class Edit:
    """One generated edit, applied to the site when called."""

    label: str
    apply: Callable[[], None]


class Editor:
    """Generated edits to a site; the files it writes are journaled so a batch can be undone."""

    def __init__(self, root: Path, rnd: random.Random) -> None:
        self.root = root
        self.rnd = rnd
        self.values = Values(rnd, Facts(root))
        self.journal: dict[Path, bytes | None] = {}
        """Each file written since the journal was cleared, with its contents before."""
        self.turns: dict[str, int] = {}

    # Files ----------------------------------------------------------------------------------------

    def files(self, place: Place) -> list[Path]:
        return sorted(self.root.glob(place.files))

    def pick(self, key: str, files: list[Path]) -> Path:
        """The files of ``key`` in turn: consecutive edits of recipes edit different recipes."""
        turn = self.turns.get(key, 0)
        self.turns[key] = turn + 1
        return files[turn % len(files)]

    def write(self, path: Path, text: str) -> None:
        if path not in self.journal:
            self.journal[path] = path.read_bytes() if path.exists() else None
        path.write_text(text, encoding="utf-8")

    def undo(self) -> set[Path]:
        """Put back every journaled file; returns the paths written."""
        for path, data in self.journal.items():
            if data is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(data)
        undone, self.journal = set(self.journal), {}
        return undone

    # The plan -------------------------------------------------------------------------------------

    def field_edits(self, place: Place) -> list[Edit]:
        return [
            Edit(field_label(place, path), partial(self.edit_field, place, path))
            for path in field_paths(place.model)
        ]

    def template_edits(self) -> list[Edit]:
        templates = self.root / "templates"
        return [
            Edit(f"template {p.relative_to(templates).as_posix()}", partial(self.edit_template, p))
            for p in sorted(templates.rglob("*"))
            if p.is_file()
        ]

    def body_edits(self) -> list[Edit]:
        edits = [
            Edit(f"body of content/{folder}", partial(self.append_to_body, folder))
            for folder in ("recipes", "case-studies", "posts")
        ]
        return [*edits, Edit("heading of a recipe's body", self.retitle_recipe_heading)]

    def plan(self) -> list[Edit]:
        """One edit per model field, template file and kind of markdown body."""
        return [
            *(edit for place in PLACES for edit in self.field_edits(place)),
            *self.template_edits(),
            *self.body_edits(),
        ]

    def batches(self) -> list[list[Edit]]:
        """:meth:`plan`'s edits, a few per build, shuffled.

        A build's edits are of one kind, so that no edit makes the builder redo work that would
        hide another's stale output: recipes' front matter, a recipe each (memos are per recipe);
        other content; data files; ``site.yaml`` and the layouts other templates extend, which
        every page reads; the other templates.
        """
        recipes = next(place for place in PLACES if place.model is RecipeMeta)
        settings = next(place for place in PLACES if place.model is SiteSettings)
        content = [place for place in PLACES if place.files.startswith("content/") and place is not recipes]
        data = [place for place in PLACES if not place.files.startswith("content/") and place is not settings]
        templates = self.template_edits()
        sources = "".join(p.read_text(encoding="utf-8") for p in (self.root / "templates").rglob("*.html"))
        extended = set(re.findall(r"""\{%-?\s*extends\s+["']([^"']+)""", sources))
        layouts = [edit for edit in templates if edit.label.removeprefix("template ") in extended]
        groups = [
            (self.field_edits(recipes), len(self.files(recipes))),
            ([*(edit for place in content for edit in self.field_edits(place)), *self.body_edits()], 8),
            ([edit for place in data for edit in self.field_edits(place)], 10),
            (self.field_edits(settings), 4),
            *(([layout], 1) for layout in layouts),
            ([edit for edit in templates if edit not in layouts], 11),
        ]
        batches = []
        for edits, size in groups:
            self.rnd.shuffle(edits)
            batches += [edits[i : i + size] for i in range(0, len(edits), size)]
        self.rnd.shuffle(batches)
        return batches

    def invalid_edits(self) -> list[Edit]:
        """One edit per model that its model rejects."""
        return [Edit(f"invalid {place.model.__name__}", partial(self.break_place, place)) for place in PLACES]

    # Field edits ----------------------------------------------------------------------------------

    def edit_field(self, place: Place, path: tuple[str, ...]) -> None:
        self.values.facts = Facts(self.root)
        if place.shape == "rows":
            self.edit_row(path[0])
            return
        file = self.pick(place.files, self.files(place))
        text = file.read_text(encoding="utf-8")
        if place.shape == "front":
            doc, body = split_front(text)
            target = doc
        else:
            doc, body = yaml.safe_load(text) or {}, ""
            if place.shape == "mapping":
                target = doc[self.rnd.choice(sorted(doc))]
            elif place.shape == "list":
                target = self.rnd.choice(doc)
            else:
                target = doc
        self.change(target, place.model, path, partial(validates, place.model, target))
        self.write(file, f"---\n{dump_yaml(doc)}---\n{body}" if place.shape == "front" else dump_yaml(doc))

    def change(
        self, doc: dict[str, Any], model: type[BaseModel], path: tuple[str, ...], valid: Callable[[], bool]
    ) -> None:
        """Give the field at ``path`` of ``doc`` a new value that keeps ``valid()`` true."""
        name, rest = path[0], path[1:]
        info = model.model_fields[name]
        if rest:
            (sub,) = nested_models(info.annotation)
            child = doc.get(name)
            if child is None:
                doc[name] = child = self.values.fresh(sub)
            if isinstance(child, list):
                child = self.rnd.choice(child)
            self.change(child, sub, rest, valid)
            return
        absent = name not in doc
        old = (
            doc[name]
            if not absent
            else (None if info.is_required() else info.get_default(call_default_factory=True))
        )
        for value in self.values.candidates(info.annotation, info.metadata, old, model.__name__, name):
            if value == old:
                continue
            if value is None and self.rnd.random() < 0.5:
                doc.pop(name, None)
            else:
                doc[name] = value
            if valid():
                return
        if absent:
            doc.pop(name, None)
        else:
            doc[name] = old
        raise NoEdit(f"no valid new value for {model.__name__}.{name} (was {old!r})")

    def edit_row(self, name: str) -> None:
        """A new value in column ``name`` of one row (the column is added to the file if missing)."""
        place = next(p for p in PLACES if p.model is Row)
        file = self.pick(place.files, self.files(place))
        header, rows = read_csv(file)
        if name not in header:
            header.append(name)
            for cells in rows:
                cells.append("")
        cells = self.rnd.choice(rows)
        column = header.index(name)
        info = Row.model_fields[name]
        old = getattr(Row.model_validate(typed_row(header, cells), strict=False), name)
        for value in self.values.candidates(info.annotation, info.metadata, old, "Row", name):
            text = csv_cell(value)
            if value == old or text == cells[column]:
                continue
            trial = [*cells[:column], text, *cells[column + 1 :]]
            if validates(Row, typed_row(header, trial), strict=False):
                cells[column] = text
                self.write(file, csv_text(header, rows))
                return
        raise NoEdit(f"no valid new value for Row.{name} (was {old!r})")

    # Other edits ----------------------------------------------------------------------------------

    def edit_template(self, path: Path) -> None:
        text = path.read_text(encoding="utf-8")
        self.values.counter += 1
        marker = f"template edit {self.values.counter}"
        if path.suffix == ".html":
            visible = f'<p class="edit-marker">{marker}</p>'
            if "{% extends" in text and "{% block content %}" in text:
                text = text.replace("{% block content %}", "{% block content %}" + visible, 1)
            elif "</body>" in text:
                text = text.replace("</body>", visible + "\n</body>", 1)
            else:
                text += f"\n{visible}\n"
        elif path.suffix in (".xml", ".svg"):
            text += f"<!-- {marker} -->\n"
        elif path.suffix in (".css", ".js"):
            text += f"/* {marker} */\n"
        else:
            raise NoEdit(f"no edit for a template of kind {path.suffix!r} ({path.name})")
        self.write(path, text)

    def append_to_body(self, folder: str) -> None:
        file = self.pick(f"body of {folder}", sorted((self.root / "content" / folder).glob("*.md")))
        self.values.counter += 1
        n = self.values.counter
        text = file.read_text(encoding="utf-8").rstrip("\n")
        self.write(file, f"{text}\n\nEdited body {n}: a [link](https://example.org/edited-{n}).\n")

    def retitle_recipe_heading(self) -> None:
        file = self.pick("body of recipes", sorted((self.root / "content" / "recipes").glob("*.md")))
        self.values.counter += 1
        text, count = re.subn(
            r"^### .*$",
            f"### Edited question {self.values.counter}?",
            file.read_text(encoding="utf-8"),
            count=1,
            flags=re.M,
        )
        if not count:
            raise NoEdit(f"no heading to retitle in {file.name}")
        self.write(file, text)

    def break_place(self, place: Place) -> None:
        """A value of the wrong type, or a key the model does not know, in one of ``place``'s values."""
        model = place.model
        file = self.rnd.choice(self.files(place))
        if place.shape == "rows":
            header, rows = read_csv(file)
            cells = self.rnd.choice(rows)
            for column in self.rnd.sample(range(len(header)), len(header)):
                trial = [*cells[:column], "seventeen", *cells[column + 1 :]]
                if not validates(Row, typed_row(header, trial), strict=False):
                    cells[column] = "seventeen"
                    self.write(file, csv_text(header, rows))
                    return
            raise NoEdit("no row value the model rejects")
        text = file.read_text(encoding="utf-8")
        doc, body = split_front(text) if place.shape == "front" else (yaml.safe_load(text), "")
        target = doc
        if place.shape == "mapping":
            target = doc[self.rnd.choice(sorted(doc))]
        elif place.shape == "list":
            target = self.rnd.choice(doc)
        if self.rnd.random() < 0.3:
            target["edited_unknown_key"] = "x"
        else:
            for name in self.rnd.sample(sorted(model.model_fields), len(model.model_fields)):
                old = target.get(name)
                target[name] = 17 if not isinstance(old, int) else "seventeen"
                if not validates(model, target):
                    break
                target[name] = old
        assert not validates(model, target)
        self.write(file, f"---\n{dump_yaml(doc)}---\n{body}" if place.shape == "front" else dump_yaml(doc))


# The site -------------------------------------------------------------------------------------------


def write_runs(root: Path) -> None:
    """Two runs per recipe on one hardware, the second 30 % off the first. Every metric is measured,
    at two output lengths (so that findings name theirs), twice (so that a finding outlives an edit
    of one of its rows), closed-loop and open-loop at 10 requests/s (so that findings name a rate)."""
    output = generate.ROW_HEADER.index("output_tokens")
    header = [*generate.ROW_HEADER, "request_rate"]
    for index, recipe in enumerate(sorted((root / "content" / "recipes").glob("*.md"))):
        meta, _ = split_front(recipe.read_text(encoding="utf-8"))
        node = f"synth-gpu-a-n{index % 3}"
        env = " ".join(f"{k}={v}" for k, v in meta["env"].items())
        for date, factor in ((RUN_A, 1.0), (RUN_B, 0.7)):
            rows = [
                [*row[:output], tokens, *row[output + 1 :], rate]
                for rate in ("", "10")
                for trial in range(2)
                for tokens in ("256", "512")
                for row in generate.run_rows(
                    index,
                    date.isoformat(),
                    node,
                    meta["engine_version"],
                    meta["flags"],
                    env,
                    RUN_SETTINGS,
                    random.Random(f"{index} {trial} {tokens}"),
                    factor=factor,
                    metrics=generate.ALL_METRICS,
                )
            ]
            path = root / "data" / "rows" / recipe.stem / f"{date.isoformat()}-{node}.csv"
            path.write_text(csv_text(header, rows), encoding="utf-8")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A SYNTHETIC site with a few of everything: recipes (of one model, compared on one page; all on
    one hardware, so that findings share settings; two of one checkpoint), a case study, a post, an
    annotation and ``site.yaml``."""
    root = synthetic_site(tmp_path / "root", monkeypatch, recipes=3, rows=0, cases=1, posts=1)
    for number, recipe in enumerate(sorted((root / "content" / "recipes").glob("*.md"))):
        text = re.sub(
            r"^hardware: .*$", "hardware: synth-gpu-a", recipe.read_text(encoding="utf-8"), flags=re.M
        )
        text = re.sub(r"^model: .*$", "model: synth-org/synth-model", text, flags=re.M)
        if number < 2:  # two builds of one checkpoint: their claims can disagree (cards, comparisons)
            text = re.sub(r"^checkpoint: .*$", "checkpoint: synth-org/synth-model-fp8", text, flags=re.M)
        recipe.write_text(text, encoding="utf-8")
    write_runs(root)
    first = sorted(p.stem for p in (root / "content" / "recipes").glob("*.md"))[0]
    annotation = {
        "recipe": first,
        "metric": "decode_tok_s",
        "setting": {
            "hardware": "synth-gpu-a",
            "prompt_tokens": 512,
            "context_tokens": 0,
            "output_tokens": 256,
            "concurrency": 1,
        },
        "date": RUN_B,
        "status": "upstream_issue",
        "reason": "SYNTHETIC: the second run is slower on purpose.",
        "link": "https://example.org/issues/1",
        "by": "synth-curator",
        "annotated": dt.date(2026, 6, 2),
    }
    (root / "data" / "annotations.yaml").write_text(dump_yaml([annotation]), encoding="utf-8")
    settings = {
        "title": "Synthetic recipes",
        "description": "A SYNTHETIC site for the edit-equivalence test.",
        "base_url": "https://synthetic.example.org/",
        "repository_url": "https://example.org/synthetic.git",
    }
    (root / "site.yaml").write_text(dump_yaml(settings), encoding="utf-8")
    return root


# Builds ---------------------------------------------------------------------------------------------


def outcome(run: Callable[[], object]) -> list[str] | None:
    """The problems a build stopped on (sorted, formatted), or None when it succeeded."""
    try:
        run()
    except BuildAborted as exc:
        return sorted(problem.format() for problem in exc.problems)
    except BuilderError as exc:
        return [exc.problem().format()]
    return None


# Tests ----------------------------------------------------------------------------------------------


def test_every_model_lives_somewhere_in_the_site() -> None:
    """A new model (a new data file, a new nested value) must be given a place in :data:`PLACES`."""
    declared = {
        value
        for value in vars(models).values()
        if isinstance(value, type)
        and issubclass(value, BaseModel)
        and value.__module__ == models.__name__
        and not value.__name__.startswith("_")
    } | {SiteSettings}
    placed = {model for place in PLACES for model in models_under(place.model)}
    assert sorted(m.__name__ for m in declared - placed) == []


def test_every_model_field_has_a_generated_edit(site: Path) -> None:
    """Each field of each model, each template and each kind of body gets an edit that the models
    accept and that changes a file: a field of a type the generator does not know fails here."""
    editor = Editor(site, random.Random(SEED))
    plan = editor.plan()
    labels = [edit.label for edit in plan]
    assert "RecipeMeta.headline.prompt_tokens" in labels and "CaseStudyMeta.arms.recipe" in labels
    for edit in [*plan, *editor.invalid_edits()]:
        before = {path: path.read_bytes() for path in site.rglob("*") if path.is_file()}
        edit.apply()
        after = {path: path.read_bytes() for path in site.rglob("*") if path.is_file()}
        assert before != after, f"{edit.label}: the edit changed no file"
        if not edit.label.startswith("invalid"):
            assert all(
                validates(place.model, value)
                for place in PLACES
                if place.shape != "rows"
                for file in editor.files(place)
                for value in values_in(file, place)
            ), edit.label
        editor.undo()


def values_in(file: Path, place: Place) -> list[Any]:
    text = file.read_text(encoding="utf-8")
    if place.shape == "front":
        return [split_front(text)[0]]
    doc = yaml.safe_load(text)
    return list(doc.values()) if place.shape == "mapping" else doc if place.shape == "list" else [doc]


def test_generated_edits_build_as_clean_builds(site: Path, tmp_path: Path) -> None:
    editor = Editor(site, random.Random(SEED))
    batches = editor.batches()
    for position, invalid in enumerate(editor.invalid_edits()):
        batches.insert(position * (INVALID_EVERY + 1) + INVALID_EVERY, [invalid])

    out = tmp_path / "incremental"
    config = load_config(site, out)  # each build reads site.yaml again
    engine = IncrementalBuilder(config, persist=True, workers=1)
    assert outcome(lambda: engine.run(None)) is None
    problems, files = pure_build(site, out)
    assert problems is None, problems
    assert not differences(out, files), differences(out, files)

    built: set[str] = set()
    failed: list[tuple[list[str], list[str]]] = []
    tries: dict[str, int] = {}
    pending: set[Path] = set()
    """Files put back after a failed build, which the next build is told of too."""
    step = 0
    while batches:
        batch = batches.pop(0)
        for edit in batch:
            edit.apply()
        labels = [edit.label for edit in batch]
        changed = set(editor.journal) | pending
        before = tree(out)
        # As the preview does (told what changed), as a long-lived builder that looks for itself,
        # and as a new `build` process, which starts from the record on disk.
        if step % 3 == 0:
            got = outcome(partial(engine.run, changed))
        elif step % 3 == 1:
            got = outcome(partial(engine.run, None))
        else:
            got = outcome(lambda: build(load_config(site, out), cache=True, workers=1))
            engine = IncrementalBuilder(config, persist=True, workers=1)
        step += 1
        expected, files = pure_build(site, out)
        assert got == expected, f"step {step} {labels}: incremental build {got}, build_site {expected}"
        invalid = labels[0].startswith("invalid")
        if expected is None:
            assert not invalid, f"step {step} {labels}: the build accepted a value its model rejects"
            assert not differences(out, files), f"step {step} {labels}: {differences(out, files)}"
            built.update(labels)
            editor.journal, pending = {}, set()
            continue
        assert tree(out) == before, f"step {step} {labels}: a failed build changed the output"
        pending = editor.undo() | pending
        if invalid:
            continue
        failed.append((labels, expected))
        # The halves again (with new values), down to single edits, so that an edit that breaks
        # the site hides no other.
        if len(batch) > 1:
            batches[:0] = [batch[: len(batch) // 2], batch[len(batch) // 2 :]]
        elif tries.get(labels[0], 0) < TRIES:
            tries[labels[0]] = tries.get(labels[0], 0) + 1
            batches.insert(0, batch)
    if pending:
        assert outcome(lambda: engine.run(pending)) is None
        problems, files = pure_build(site, out)
        assert problems is None, problems
        assert not differences(out, files), differences(out, files)

    never = sorted({edit.label for edit in editor.plan()} - built)
    assert not never, f"edits that never built: {never}; the builds that failed: {failed}"


def test_editing_a_row_moves_the_figures_bound_to_it(site: Path, tmp_path: Path) -> None:
    """A body that quotes a row (``{{ ... }}``) is rendered again when the row changes, on every page
    showing it: another recipe's page, a case study, a post and a recipe's API document (through a
    troubleshooting answer)."""
    first, second = sorted(p.stem for p in (site / "content" / "recipes").glob("*.md"))[:2]
    rows = site / "data" / "rows" / second / "2026-07-01-synth-gpu-a-n1.csv"
    header = "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,source\n"
    rows.write_text(
        header + f"2026-07-01,{second},synth-gpu-a-n1,0.0.1,7777,3,12.5,SYNTHETIC\n", encoding="utf-8"
    )
    figure = f"{{{{ decode_tok_s recipe={second} prompt=7777 }}}}"
    ratio = f"{{{{ ratio decode_tok_s recipe={second} prompt=7777 / prompt=7777 }}}}"
    pages: dict[str, str] = {}
    for folder in ("recipes", "case-studies", "posts"):
        page = sorted((site / "content" / folder).glob("*.md"))[0]
        pages[folder] = page.stem
        text = page.read_text(encoding="utf-8")
        page.write_text(text + f"\nSYNTHETIC: {figure}, {ratio}.\n", encoding="utf-8")
    recipe = site / "content" / "recipes" / f"{first}.md"
    text = recipe.read_text(encoding="utf-8")
    recipe.write_text(
        text.replace("## Troubleshooting\n", f"## Troubleshooting\n\nSee {figure}.\n", 1), encoding="utf-8"
    )

    out = tmp_path / "incremental"
    config = load_config(site, out)
    engine = IncrementalBuilder(config, persist=True, workers=1)
    assert outcome(lambda: engine.run(None)) is None
    problems, files = pure_build(site, out)
    assert problems is None, problems
    assert not differences(out, files), differences(out, files)
    assert "12.5 tok/s" in (out / f"recipes/{first}/index.html").read_text(encoding="utf-8")

    for value, told in (("13.75", True), ("14.5", False)):
        rows.write_text(
            rows.read_text(encoding="utf-8").replace(",12.5,", f",{value},").replace(",13.75,", f",{value},"),
            encoding="utf-8",
        )
        assert outcome(partial(engine.run, {rows} if told else None)) is None
        problems, files = pure_build(site, out)
        assert problems is None, problems
        assert not differences(out, files), differences(out, files)
        shown = {
            rel: (out / rel).read_text(encoding="utf-8")
            for rel in (
                f"recipes/{first}/index.html",
                f"case-studies/{pages['case-studies']}/index.html",
                f"news/{pages['posts']}/index.html",
                f"api/recipes/{first}.json",
            )
        }
        for rel, html in shown.items():
            assert f"{value} tok/s" in html, rel
    # A row the figure needs, gone: both builds stop on the same problem.
    rows.unlink()
    stopped = outcome(lambda: engine.run({rows}))
    assert stopped is not None and stopped == pure_build(site, out)[0]
