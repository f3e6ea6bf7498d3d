"""The formats contributors write, as pydantic models.

These models are the documentation of the formats: every field has a docstring, unknown keys are
errors (a typo never drops data silently) and numbers are strict (``"12"`` is not 12). ``python -m
builder schema`` exports them as JSON Schema for editors.

:class:`Row` is the one declaration of the row format: its fields, their types, docstrings and markers
(:class:`Measured`, :class:`ServeProperty`, :class:`EmptyMeans`, :class:`SettingColumn`) give
:data:`ROW_SCHEMA`, from which the parsers, the SQL checks and the Arrow types of
:mod:`builder.data.ingest`, the downloads' columns, the pages' labels, the JSON Schema, the
CONTRIBUTING.md table and the workload setting (:data:`SETTING_COLUMNS`: which rows findings compare and
pages show one figure of) are derived. Rows are validated in bulk by
SQL for speed; a property test keeps that in agreement with :class:`Row`.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from builder.config import url_problem
from builder.content.shell import ENV_NAME
from builder.limits import FRONT_MATTER_STRING_CHARS
from builder.yamlio import CONTROL_CHARACTERS

SLUG_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
SLUG_RE = re.compile(SLUG_PATTERN)
TIME_PATTERN = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
CONCURRENCY_NEEDED = "missing value for concurrency (required unless request_rate gives an open-loop run)"


def spread_without_metric(spread: str, metric: str) -> str:
    return f"{spread} is given without {metric}: a spread needs the mean it is the spread of"


RESERVED_SLUGS = frozenset({"index.html", "feed.xml"})
"""Names the build writes as files beside the pages of a folder of slugs (``recipes/index.html``,
``news/feed.xml``): no page, id or model may take one (tests/site/test_reserved_slugs.py checks
the list against what a build writes)."""

Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN, min_length=1, max_length=120)]
NonEmpty = Annotated[str, StringConstraints(min_length=1)]
Metric = Annotated[float, Field(ge=0, allow_inf_nan=False)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]


def _source(text: str) -> str:
    """A source that is a URL (one word with a scheme) must be one a page may link to."""
    if " " not in text.strip() and (problem := url_problem(text.strip())) is not None:
        raise ValueError(problem)
    return text


SourceText = Annotated[str, StringConstraints(min_length=1), AfterValidator(_source)]
"""A source: a description of a document, or its URL (https, http or relative)."""

FORMULA_STARTS = "=+@"
"""Characters a row's text may not begin with: a spreadsheet opening the site's ``data/rows.csv``
would run such a cell as a formula. (Flags and env begin with ``-``, which stays allowed.)"""
SPACES = r" \t\n\r"
ROW_TEXT_PATTERN = rf"^([^{FORMULA_STARTS}{CONTROL_CHARACTERS}][^{CONTROL_CHARACTERS}]*)?$"
"""A row's text: no control character, no formula start."""
VERSION_PATTERN = rf"^[^{SPACES}{FORMULA_STARTS}{CONTROL_CHARACTERS}]([^{CONTROL_CHARACTERS}]*[^{SPACES}{CONTROL_CHARACTERS}])?$"
"""A row's engine version: row text, not empty, without spaces around it (``" 0.24.0"`` would not
equal its recipe's ``0.24.0``)."""
RowText = Annotated[str, StringConstraints(pattern=ROW_TEXT_PATTERN)]
Version = Annotated[str, StringConstraints(pattern=VERSION_PATTERN)]


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        # Field docstrings become descriptions only where read: builder.content.docstrings.described().
        populate_by_name=False,
        defer_build=True,
    )


class _Written(_Model):
    """Front matter or a ``data/*.yaml`` entry: every string in it is bounded (a 2 MB title would be
    copied into every page that lists it)."""

    model_config = ConfigDict(str_max_length=FRONT_MATTER_STRING_CHARS)


class HeadlineSetting(_Written):
    """The benchmark setting whose figures lead a recipe page."""

    prompt_tokens: PositiveInt
    """Prompt length of the headline setting."""
    concurrency: PositiveInt = 1
    """Concurrent requests of the headline setting."""
    context_tokens: Annotated[int, Field(ge=0)] = 0
    """Prefix depth (tokens already in context) of the headline setting."""


class RecipeMeta(_Written):
    """Front matter of ``content/recipes/<slug>.md``: how to serve one checkpoint on one hardware."""

    title: NonEmpty
    """Page title, e.g. ``Qwen3.6 35B-A3B — NVIDIA NVFP4``."""
    model: NonEmpty
    """Base model id (``Qwen/Qwen3.6-35B-A3B``); recipes of one base model are compared on one page."""
    checkpoint: NonEmpty
    """The weights served: a hub id (``owner/name``) or, when no id is known, a description."""
    hardware: Slug
    """Hardware id (``dgx-spark``); nodes of this hardware produce the recipe's comparable rows."""
    engine: NonEmpty
    """Serving engine (``vllm``)."""
    engine_version: NonEmpty
    """Engine version the recipe is verified on, as a string (quote it: ``"0.24.0"``); ``unknown`` if not known."""
    flags: str
    """Serve flags as one string, exactly as typed; empty when the source does not record them."""
    env: dict[str, str] = {}
    """Environment variables set for the server, name to value."""
    verified: dt.date | None = None
    """Date the recipe was last verified end to end."""
    contributors: list[NonEmpty] = []
    """People or handles who contributed the recipe, as they sign."""
    summary: str = ""
    """One or two sentences shown in listings and meta descriptions."""
    tags: list[NonEmpty] = []
    """Free-form tags."""
    requirements: list[NonEmpty] = []
    """Hardware and software requirements, one item each."""
    flag_notes: dict[str, str] = {}
    """Flag name (``--kv-cache-dtype``) to a short reason, shown in the key-parameters table."""
    headline: HeadlineSetting | None = None
    """Setting whose figures lead the page; by default the most measured concurrency-1 setting."""
    served_model: str | None = None
    """Model id clients send in API calls, when it differs from ``checkpoint``."""
    sources: list[SourceText] = []
    """Where the recipe's facts come from (documents, URLs)."""

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not ENV_NAME.fullmatch(name):
                raise ValueError(f"'{name}' is not a valid environment variable name")
        return value


class Arm(_Written):
    """One arm of a case study."""

    label: NonEmpty
    """What the arm is, e.g. ``FP8`` or ``Unsloth NVFP4-Fast``."""
    role: Literal["baseline", "comparison"]
    """``baseline`` or ``comparison``."""
    recipe: Slug | None = None
    """Slug of the recipe the arm ran, or null when the site has no recipe for it."""


class CaseStudyMeta(_Written):
    """Front matter of ``content/case-studies/<slug>.md``: an experiment and its verdict."""

    title: NonEmpty
    """Page title."""
    question: NonEmpty
    """The question the experiment asks."""
    verdict: NonEmpty
    """The answer, in a sentence or two."""
    date: dt.date
    """Date of the experiment (see ``date_note`` when the source gives none)."""
    date_note: str | None = None
    """Why this date, when the source gives no exact one."""
    outcome: str | None = None
    """What happened to the recipes, e.g. ``Adopted into the recipe``."""
    arms: Annotated[list[Arm], Field(min_length=1)]
    """The arms compared, each with its role and recipe."""
    summary: str = ""
    """Shown in listings and meta descriptions."""
    tags: list[NonEmpty] = []
    """Free-form tags."""
    sources: list[SourceText] = []
    """Where the facts come from."""


class PostMeta(_Written):
    """Front matter of ``content/posts/<slug>.md``: a news post."""

    title: NonEmpty
    """Headline."""
    date: dt.date
    """Publication date (see ``date_note`` when the source gives none)."""
    date_note: str | None = None
    """Why this date, when the source gives no exact one."""
    summary: str = ""
    """Shown in listings, feeds and meta descriptions."""
    tags: list[NonEmpty] = []
    """Free-form tags."""
    author: NonEmpty | None = None
    """Author, only when the source names one."""
    sources: list[SourceText] = []
    """Where the facts come from."""


class Hardware(_Written):
    """An entry of ``data/hardware.yaml``."""

    name: NonEmpty
    """Display name, e.g. ``NVIDIA DGX Spark``."""
    description: str = ""
    """What distinguishes it (chip, memory)."""


class Node(_Written):
    """An entry of ``data/nodes.yaml``: one physical machine that produced rows."""

    hardware: Slug
    """Hardware id of the machine."""
    description: str = ""
    """Who runs it and how it is set up."""
    driver: str | None = None
    """GPU driver version installed, when known."""


@dataclass(frozen=True)
class Quantity:
    """Marks a row field that pages show as a figure, and says how."""

    label: str
    """Name on pages and charts, e.g. ``Decode``."""
    unit: str
    """Unit shown with the figure, e.g. ``tok/s``."""
    lower_is_better: bool = False
    """Whether the smaller figure is the better one (latency, memory taken)."""


class Measured(Quantity):
    """A metric: measured at a benchmark setting. A row needs at least one."""


class ServeProperty(Quantity):
    """A figure of the serve itself rather than of one benchmark setting (one per recipe)."""


class Detail(Quantity):
    """A measurement at a setting kept with its row (a percentile): shown, downloaded, never a headline."""


@dataclass(frozen=True)
class SpreadOf:
    """Marks the column holding the sample standard deviation of the repetitions a metric summarises."""

    metric: str
    """The metric column whose spread this is."""


@dataclass(frozen=True)
class RequiredUnless:
    """Marks an optional row field that must be given when ``other`` is not (a closed-loop run's
    concurrency: an open-loop run has a request rate instead)."""

    other: str


@dataclass(frozen=True)
class SettingColumn:
    """Marks a row column that is part of the workload *setting*: runs of a recipe are compared
    (findings), a recipe has one figure per metric (pages) and recipes are ranked side by side (the
    chooser, comparison pages) only at equal settings. Every such tuple is derived from these marks
    (:func:`setting_columns`); ``tests/content/test_setting.py`` fails on a module that spells one out."""

    place: int
    """Where the column comes in a setting as keys, figure keys and labels list it: the node first, then
    prompt, output, context, concurrency, request rate (the file's column order is older and differs)."""
    tag: str = ""
    """What a finding's id writes before the column's value (``p`` in ``p2048``); none for the node,
    whose hardware the id names."""

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> Any:
        # Shown in the JSON Schema as ``"x-setting": true``: editors ignore it, readers see the role.
        found = handler.resolve_ref_schema(handler(schema))
        found["x-setting"] = True
        return found


@dataclass(frozen=True)
class EmptyMeans:
    """Marks an optional row field whose empty cell loads as ``value`` rather than null."""

    value: int


class Row(_Model):
    """One measurement: a line of ``data/rows/**/*.csv`` or an object of ``*.jsonl``.

    CSV header names equal these keys. In CSV an empty cell means "not measured" for metrics and
    "not recorded" for optional text.
    """

    date: dt.date
    """Day of the measurement, ``YYYY-MM-DD``."""
    time: Annotated[str, StringConstraints(pattern=TIME_PATTERN)] | None = None
    """Time of day the run started, ``HH:MM``, when the tool records it: orders runs of one date."""
    recipe: Slug
    """Slug of the recipe the run was meant to follow."""
    node: Annotated[Slug, SettingColumn(0)]
    """Node id from ``data/nodes.yaml``."""
    engine_version: Version
    """Engine version the run reported (``unknown`` if not recorded)."""
    prompt_tokens: Annotated[PositiveInt | Literal["unknown"], SettingColumn(1, "p")]
    """Prompt length in tokens (> 0); ``unknown`` only when the source does not give it."""
    concurrency: Annotated[PositiveInt | None, RequiredUnless("request_rate"), SettingColumn(4, "c")] = None
    """Concurrent requests (>= 1): the run's cap; required unless ``request_rate`` gives an open-loop run."""
    request_rate: Annotated[
        Annotated[float, Field(gt=0, allow_inf_nan=True)] | None, SettingColumn(5, "r")
    ] = None
    """Requests/s of an open-loop run, a positive number or ``inf``; empty for a closed-loop run."""
    burstiness: Annotated[float, Field(gt=0)] | None = None
    """Burstiness factor of an open-loop run's arrivals (1 = Poisson)."""
    decode_tok_s: Annotated[Metric | None, Measured("Decode", "tok/s per stream")] = None
    """Decode throughput of one stream, tokens/s."""
    aggregate_tok_s: Annotated[Metric | None, Measured("Aggregate", "tok/s")] = None
    """Output throughput of all streams together, tokens/s."""
    prefill_tok_s: Annotated[Metric | None, Measured("Prefill", "tok/s")] = None
    """Prompt processing throughput, tokens/s."""
    ttft_ms: Annotated[Metric | None, Measured("TTFT", "ms", lower_is_better=True)] = None
    """Time to first token, ms (lower is better)."""
    itl_ms: Annotated[Metric | None, Measured("ITL", "ms", lower_is_better=True)] = None
    """Inter-token latency, ms (lower is better)."""
    ttft_p99_ms: Annotated[Metric | None, Detail("TTFT p99", "ms", lower_is_better=True)] = None
    """99th percentile of the time to first token, ms."""
    itl_p99_ms: Annotated[Metric | None, Detail("ITL p99", "ms", lower_is_better=True)] = None
    """99th percentile of the inter-token latency, ms."""
    tpot_ms: Annotated[Metric | None, Detail("TPOT", "ms", lower_is_better=True)] = None
    """Median time per output token after the first, ms."""
    tpot_p99_ms: Annotated[Metric | None, Detail("TPOT p99", "ms", lower_is_better=True)] = None
    """99th percentile of the time per output token, ms."""
    e2el_ms: Annotated[Metric | None, Detail("End-to-end latency", "ms", lower_is_better=True)] = None
    """Median end-to-end latency of a request, ms."""
    e2el_p99_ms: Annotated[Metric | None, Detail("End-to-end latency p99", "ms", lower_is_better=True)] = None
    """99th percentile of the end-to-end latency of a request, ms."""
    decode_tok_s_sd: Annotated[Metric | None, SpreadOf("decode_tok_s")] = None
    """Sample standard deviation of the repetitions ``decode_tok_s`` summarises."""
    aggregate_tok_s_sd: Annotated[Metric | None, SpreadOf("aggregate_tok_s")] = None
    """Sample standard deviation of the repetitions ``aggregate_tok_s`` summarises."""
    prefill_tok_s_sd: Annotated[Metric | None, SpreadOf("prefill_tok_s")] = None
    """Sample standard deviation of the repetitions ``prefill_tok_s`` summarises."""
    ttft_ms_sd: Annotated[Metric | None, SpreadOf("ttft_ms")] = None
    """Sample standard deviation of the repetitions ``ttft_ms`` summarises."""
    itl_ms_sd: Annotated[Metric | None, SpreadOf("itl_ms")] = None
    """Sample standard deviation of the repetitions ``itl_ms`` summarises."""
    repetitions: PositiveInt | None = None
    """How many repetitions the metrics (and their ``_sd``) summarise; empty for a single run."""
    requests: PositiveInt | None = None
    """Requests the run sent, successful or not (with ``failed_requests``, ``check`` warns above 5 %)."""
    failed_requests: NonNegativeInt | None = None
    """How many of ``requests`` failed or timed out: the metrics summarise only the others."""
    engine: RowText | None = None
    """Serving engine; defaults to the recipe's."""
    flags: RowText | None = None
    """Serve flags of the run as typed; empty = not recorded."""
    env: RowText | None = None
    """Environment of the run as ``K=V K2=V2``; empty = not recorded."""
    output_tokens: Annotated[PositiveInt | None, SettingColumn(2, "o")] = None
    """Tokens generated per request."""
    context_tokens: Annotated[NonNegativeInt | None, EmptyMeans(0), SettingColumn(3, "x")] = None
    """Prefix depth already in context before the prompt (default 0)."""
    kv_pool_tokens: Annotated[PositiveInt | None, ServeProperty("KV cache pool", "tokens")] = None
    """Tokens the KV cache pool holds."""
    kv_tokens_per_gib: Annotated[Metric | None, ServeProperty("KV cache tokens per GiB", "tokens/GiB")] = None
    """KV cache tokens per GiB of pool."""
    weights_gib: Annotated[Metric | None, ServeProperty("Weights resident", "GiB", lower_is_better=True)] = (
        None
    )
    """Resident weight memory, GiB."""
    engine_build: RowText | None = None
    """Image digest or wheel commit: what a version string cannot tell apart."""
    driver: RowText | None = None
    """GPU driver version during the run."""
    harness: RowText | None = None
    """Benchmark tool that produced the figure."""
    contributor: RowText | None = None
    """Who ran it."""
    source: RowText | None = None
    """Where the figure comes from (a document, a URL, a log)."""
    notes: RowText | None = None
    """Anything a reader needs to interpret the figure."""

    @field_validator("request_rate", mode="before")
    @classmethod
    def _infinite_rate(cls, value: Any) -> Any:
        # ``inf`` (any case) is the one word the column takes: an unlimited rate.
        return math.inf if isinstance(value, str) and value.lower() == "inf" else value

    @model_validator(mode="after")
    def _closed_loop_needs_concurrency(self) -> Row:
        if self.concurrency is None and self.request_rate is None:
            raise ValueError(CONCURRENCY_NEEDED)
        for name, info in type(self).model_fields.items():
            spread = next((item for item in info.metadata if isinstance(item, SpreadOf)), None)
            if (
                spread is not None
                and getattr(self, name) is not None
                and getattr(self, spread.metric) is None
            ):
                raise ValueError(spread_without_metric(name, spread.metric))
        if (
            self.failed_requests is not None
            and self.requests is not None
            and self.failed_requests > self.requests
        ):
            raise ValueError("failed_requests cannot exceed requests, the requests the run sent")
        return self


ColumnKind = Literal["date", "text", "integer", "number"]
_KINDS: dict[Any, ColumnKind] = {dt.date: "date", str: "text", int: "integer", float: "number"}


@dataclass(frozen=True)
class RowColumn:
    """One column of the row format, as :class:`Row` declares it."""

    name: str
    kind: ColumnKind
    """What a cell holds: a ``date``, ``text``, an ``integer`` or a ``number``."""
    required: bool
    minimum: int | None = None
    """Smallest value of an ``integer`` or ``number`` column."""
    words: tuple[str, ...] = ()
    """Words an ``integer`` or ``number`` column also takes, loaded as null (``unknown``)."""
    empty: int | None = None
    """What an empty cell loads as, when not null."""
    quantity: Quantity | None = None
    """How pages show the column, when they show it as a figure."""
    spread_of: str | None = None
    """The metric whose spread the column holds (``decode_tok_s_sd`` → ``decode_tok_s``)."""
    above: float | None = None
    """Exclusive lower bound of a ``number`` column (``request_rate`` > 0)."""
    infinite: bool = False
    """Whether a ``number`` column also takes ``inf`` (loaded as +infinity)."""
    pattern: str | None = None
    """The regular expression an optional ``text`` column's cells match (``time``)."""
    required_unless: str | None = None
    """The column whose value makes this optional one unnecessary (see :class:`RequiredUnless`)."""
    setting: SettingColumn | None = None
    """The column's place in the workload setting, when it is part of it (see :class:`SettingColumn`)."""


def _accepted(annotation: Any, metadata: tuple[Any, ...] = ()) -> Iterator[tuple[Any, tuple[Any, ...]]]:
    """Each type a field accepts with its constraints: ``Annotated`` unwrapped, unions split."""
    if get_origin(annotation) is Annotated:
        inner, *extra = get_args(annotation)
        for item in extra:
            metadata += tuple(item.metadata) if isinstance(item, FieldInfo) else (item,)
        yield from _accepted(inner, metadata)
    elif get_origin(annotation) in (Union, types.UnionType):
        for member in get_args(annotation):
            yield from _accepted(member, metadata)
    elif annotation is not type(None):
        yield annotation, metadata


def _row_column(name: str, info: FieldInfo) -> RowColumn:
    accepted = list(_accepted(info.annotation, tuple(info.metadata)))
    words = tuple(word for kind, _ in accepted if get_origin(kind) is Literal for word in get_args(kind))
    plain = {kind for kind, _ in accepted if get_origin(kind) is not Literal}
    if len(plain) != 1 or not plain <= _KINDS.keys():
        raise TypeError(f"row field '{name}' must be one of date, str, int or float (or None)")
    kind = _KINDS[plain.pop()]
    constraints = [item for _, metadata in accepted for item in metadata]
    minimum = next((item.ge for item in constraints if getattr(item, "ge", None) is not None), None)
    above = next((item.gt for item in constraints if getattr(item, "gt", None) is not None), None)
    if minimum is None and above is not None and kind == "integer":
        minimum, above = above + 1, None
    return RowColumn(
        name,
        kind,
        info.is_required(),
        minimum,
        words,
        next((item.value for item in constraints if isinstance(item, EmptyMeans)), None),
        next((item for item in constraints if isinstance(item, Quantity)), None),
        next((item.metric for item in constraints if isinstance(item, SpreadOf)), None),
        above,
        any(getattr(item, "allow_inf_nan", False) for item in constraints),
        next((item.pattern for item in constraints if getattr(item, "pattern", None)), None)
        if kind == "text" and not info.is_required()
        else None,
        next((item.other for item in constraints if isinstance(item, RequiredUnless)), None),
        next((item for item in constraints if isinstance(item, SettingColumn)), None),
    )


def row_columns(model: type[BaseModel]) -> dict[str, RowColumn]:
    """Each field of ``model`` as a column, in order."""
    return {name: _row_column(name, info) for name, info in model.model_fields.items()}


ROW_SCHEMA: dict[str, RowColumn] = row_columns(Row)
"""Every row column in file order, as :class:`Row` declares it: everything below derives from it."""
ROW_FIELDS: tuple[str, ...] = tuple(ROW_SCHEMA)
REQUIRED_ROW_FIELDS: tuple[str, ...] = tuple(c.name for c in ROW_SCHEMA.values() if c.required)
METRICS: tuple[str, ...] = tuple(c.name for c in ROW_SCHEMA.values() if isinstance(c.quantity, Measured))
"""Row fields that are measurements; a row needs at least one."""
SPREADS: dict[str, str] = {c.spread_of: c.name for c in ROW_SCHEMA.values() if c.spread_of is not None}
"""Metric to the column holding the spread of its repetitions."""
DETAILS: tuple[str, ...] = tuple(c.name for c in ROW_SCHEMA.values() if isinstance(c.quantity, Detail))
"""Row fields measured at a setting that are shown with the row but never lead (percentiles)."""
QUANTITIES: dict[str, Quantity] = {c.name: c.quantity for c in ROW_SCHEMA.values() if c.quantity is not None}
"""Every row field pages show as a figure: the metrics and the serve properties."""
LOWER_IS_BETTER: frozenset[str] = frozenset(name for name, q in QUANTITIES.items() if q.lower_is_better)
INT_ROW_FIELDS: tuple[str, ...] = tuple(
    c.name for c in ROW_SCHEMA.values() if c.kind == "integer" and not c.words
)
"""Integer columns that take digits only (``prompt_tokens`` also takes ``unknown``)."""
FLOAT_ROW_FIELDS: tuple[str, ...] = tuple(c.name for c in ROW_SCHEMA.values() if c.kind == "number")
TEXT_ROW_FIELDS: tuple[str, ...] = tuple(
    c.name for c in ROW_SCHEMA.values() if c.kind == "text" and not c.required
)
"""Optional text columns: empty means not recorded."""


def setting_columns(model: type[BaseModel]) -> tuple[str, ...]:
    """The columns of ``model`` marked :class:`SettingColumn`, in their places' order."""
    marked = sorted(
        (column.setting.place, column.name)
        for column in row_columns(model).values()
        if column.setting is not None
    )
    places = [place for place, _ in marked]
    if len(set(places)) != len(places):
        raise TypeError(f"two setting columns of {model.__name__} share a place: {marked}")
    return tuple(name for _, name in marked)


SETTING_COLUMNS: tuple[str, ...] = setting_columns(Row)
"""The row columns that make up the workload setting, as :class:`Row` marks them: ``node``,
``prompt_tokens``, ``output_tokens``, ``context_tokens``, ``concurrency``, ``request_rate``."""
SETTING_KEYS: tuple[str, ...] = tuple("hardware" if name == "node" else name for name in SETTING_COLUMNS)
"""The setting as findings, figures and the chooser key it: the node as its hardware (rows measured on
two nodes of one hardware are at one setting)."""
SETTING_COLUMN_OF: dict[str, str] = dict(zip(SETTING_KEYS, SETTING_COLUMNS, strict=True))
"""Each setting key's row column (``hardware`` → ``node``)."""
WORKLOAD: tuple[str, ...] = tuple(name for name in SETTING_KEYS if name != "hardware")
"""The setting without the hardware: the shape of the benchmark (the chooser's dimensions, the parts of
a figure key after its hardware)."""

if TYPE_CHECKING:
    MetricName = str
else:
    MetricName = Literal[METRICS]  # the declared metrics, as the JSON Schema's enum
HttpUrl = Annotated[str, StringConstraints(pattern=r"^https?://[^\s<>\"]+$")]


class AnnotationSetting(_Written):
    """Narrows an annotation to findings at one setting; every key given must equal the finding's."""

    hardware: Slug | None = None
    """Hardware id of the setting."""
    prompt_tokens: PositiveInt | None = None
    """Prompt length of the setting."""
    context_tokens: Annotated[int, Field(ge=0)] | None = None
    """Prefix depth of the setting."""
    output_tokens: PositiveInt | None = None
    """Output length of the setting (only for findings whose setting gives it)."""
    concurrency: PositiveInt | None = None
    """Concurrency (the cap) of the setting."""
    request_rate: Annotated[float, Field(gt=0, allow_inf_nan=True)] | None = None
    """Request rate of an open-loop setting, requests/s or ``inf``."""

    @field_validator("request_rate", mode="before")
    @classmethod
    def _infinite_rate(cls, value: Any) -> Any:
        return math.inf if isinstance(value, str) and value.lower() == "inf" else value


class Annotation(_Written):
    """An entry of ``data/annotations.yaml``: a curator's reason attached to a finding of non-reproduction.

    It applies to every finding of ``recipe`` that ``metric``, ``setting`` and ``date`` (each optional)
    select. An entry that selects no finding is an error: it would explain nothing, silently.
    """

    recipe: Slug
    """Slug of the recipe whose finding is explained."""
    metric: MetricName | None = None
    """Metric of the finding (``decode_tok_s``...); all metrics when omitted."""
    setting: AnnotationSetting | None = None
    """Setting of the finding; any setting when omitted."""
    date: dt.date | None = None
    """Date of one of the finding's runs; any date when omitted."""
    status: Literal["acknowledged", "distribution_change", "upstream_issue"]
    """``acknowledged`` (known, not yet explained), ``distribution_change`` (the weights or the
    engine distribution changed under the same name) or ``upstream_issue`` (a known bug; give ``link``)."""
    reason: NonEmpty
    """The curator's explanation, shown with the finding."""
    link: HttpUrl | None = None
    """An http(s) URL: the upstream issue, a changelog, a discussion. Required for ``upstream_issue``."""
    by: NonEmpty | None = None
    """Who annotated it, as they sign."""
    annotated: dt.date | None = None
    """When the annotation was written."""

    @model_validator(mode="after")
    def _upstream_needs_link(self) -> Annotation:
        if self.status == "upstream_issue" and self.link is None:
            raise ValueError("an 'upstream_issue' annotation needs a 'link' to the issue")
        return self
