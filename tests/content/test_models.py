"""The pydantic models are the documentation of the formats: strict, closed, described."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import BaseModel, ValidationError

from builder.config import SiteSettings
from builder.content import models
from builder.content.docstrings import described

MODELS: list[type[BaseModel]] = [
    models.RecipeMeta,
    models.CaseStudyMeta,
    models.PostMeta,
    models.Arm,
    models.HeadlineSetting,
    models.Node,
    models.Hardware,
    models.Row,
    SiteSettings,
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_field_has_a_description(model: type[BaseModel]) -> None:
    described()
    undocumented = [name for name, f in model.model_fields.items() if not f.description]
    assert undocumented == []


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_unknown_keys_are_rejected(model: type[BaseModel]) -> None:
    assert model.model_config.get("extra") == "forbid"


RECIPE = {
    "title": "T",
    "model": "m/m",
    "checkpoint": "m/m-fp8",
    "hardware": "gpu",
    "engine": "vllm",
    "engine_version": "1.0",
    "flags": "",
}


def test_recipe_numbers_are_strict() -> None:
    with pytest.raises(ValidationError):
        models.RecipeMeta.model_validate({**RECIPE, "engine_version": 0.24})
    with pytest.raises(ValidationError):
        models.RecipeMeta.model_validate({**RECIPE, "headline": {"prompt_tokens": "2048"}})
    ok = models.RecipeMeta.model_validate(
        {**RECIPE, "headline": {"prompt_tokens": 2048}, "verified": dt.date(2026, 7, 27)}
    )
    assert ok.headline is not None and ok.headline.concurrency == 1


def test_env_names_are_checked() -> None:
    with pytest.raises(ValidationError, match="not a valid environment variable name"):
        models.RecipeMeta.model_validate({**RECIPE, "env": {"BAD-NAME": "1"}})


def test_row_model_matches_the_documented_columns() -> None:
    assert models.REQUIRED_ROW_FIELDS == (
        "date",
        "recipe",
        "node",
        "engine_version",
        "prompt_tokens",
    )
    assert models.ROW_SCHEMA["concurrency"].required_unless == "request_rate"
    assert set(models.METRICS) <= set(models.ROW_FIELDS)
    row = models.Row.model_validate_json(
        '{"date":"2026-07-27","recipe":"r","node":"n","engine_version":"0.24.0","prompt_tokens":2048,'
        '"concurrency":1,"decode_tok_s":42.6}'
    )
    assert row.decode_tok_s == 42.6
    with pytest.raises(ValidationError):
        models.Row.model_validate_json(
            '{"date":"2026-07-27","recipe":"r","node":"n","engine_version":"0.24.0","prompt_tokens":2048.0,'
            '"concurrency":1,"decode_tok_s":42.6}'
        )
    with pytest.raises(ValidationError):
        models.Row.model_validate_json(
            '{"date":"2026-07-27","recipe":"r","node":"n","engine_version":"0.24.0","prompt_tokens":1,'
            '"concurrency":1,"decode_tok_s":NaN}'
        )


_BASE = '"date":"2026-07-27","recipe":"r","node":"n","engine_version":"0.24.0","prompt_tokens":2048'


def test_an_open_loop_row_needs_no_concurrency_and_a_closed_loop_row_does() -> None:
    row = models.Row.model_validate_json("{" + _BASE + ',"request_rate":"INF","aggregate_tok_s":900.5}')
    assert row.request_rate == float("inf") and row.concurrency is None
    capped = models.Row.model_validate_json("{" + _BASE + ',"request_rate":10,"concurrency":25,"ttft_ms":80}')
    assert (capped.request_rate, capped.concurrency) == (10, 25)
    with pytest.raises(ValidationError, match="required unless request_rate"):
        models.Row.model_validate_json("{" + _BASE + ',"ttft_ms":80}')
    for bad in ('"request_rate":0', '"request_rate":"-inf"', '"request_rate":"Infinity"', '"burstiness":0'):
        with pytest.raises(ValidationError):
            models.Row.model_validate_json("{" + _BASE + ',"concurrency":1,"ttft_ms":80,' + bad + "}")


@pytest.mark.parametrize(("time", "ok"), [("00:00", True), ("23:59", True), ("24:00", False), ("9:30", False)])
def test_time_is_hh_mm(time: str, ok: bool) -> None:
    text = "{" + _BASE + f',"concurrency":1,"ttft_ms":80,"time":"{time}"' + "}"
    if ok:
        assert models.Row.model_validate_json(text).time == time
    else:
        with pytest.raises(ValidationError):
            models.Row.model_validate_json(text)
