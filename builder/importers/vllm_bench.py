"""``vllm bench serve --save-result`` JSON: one file, one row.

Mapping (issue 6): prompt_tokens = round(total_input_tokens / completed), output_tokens likewise,
concurrency = max_concurrency, aggregate_tok_s = output_throughput, decode_tok_s = 1000 /
median_tpot_ms, ttft_ms = median_ttft_ms, itl_ms = median_itl_ms. Values given to ``--metadata
key=value`` are top-level keys and may carry the run's metadata. Means, standard deviations and p99
go into ``notes`` because the row format has one value per metric.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import PurePath
from typing import Any

from builder.errors import Problems
from builder.importers import META_FIELDS, Measurement, NotANumber, load_json, number_text

HARNESS = "vllm bench serve"
REQUIRED_KEYS = (
    "date",
    "completed",
    "total_input_tokens",
    "total_output_tokens",
    "output_throughput",
    "max_concurrency",
)
_DATE_RE = re.compile(r"^(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})$")
_LATENCIES = (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2el", "E2EL"))


def _date(value: Any) -> str:
    match = _DATE_RE.match(value) if isinstance(value, str) else None
    if match is None:
        raise NotANumber(f"'date' must look like YYYYMMDD-HHMMSS (as vllm writes it), not {value!r}")
    year, month, day = (int(g) for g in match.groups()[:3])
    try:
        return dt.date(year, month, day).isoformat()
    except ValueError:
        raise NotANumber(f"'date' {value!r} is not a real date") from None


def _count(obj: dict[str, Any], key: str) -> int:
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise NotANumber(f"'{key}' must be a whole number >= 0, not {value!r}")
    return value


def _spread(obj: dict[str, Any], name: str, label: str) -> str | None:
    """``TTFT median 120.5 ms (mean 130.1 ± 20.2 sd, p99 250.0)`` from the keys present."""
    parts = {stat: obj.get(f"{stat}_{name}_ms") for stat in ("median", "mean", "std", "p99")}
    if all(v is None for v in parts.values()):
        return None
    text = f"{label} median {parts['median']} ms"
    extra = []
    if parts["mean"] is not None:
        extra.append(f"mean {parts['mean']}" + (f" ± {parts['std']} sd" if parts["std"] is not None else ""))
    if parts["p99"] is not None:
        extra.append(f"p99 {parts['p99']}")
    return text + (f" ({', '.join(extra)})" if extra else "")


def _wrong_format(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return f"expected one JSON object, found a {type(obj).__name__}"
    missing = [key for key in REQUIRED_KEYS if key not in obj]
    if not missing:
        return None
    hint = ""
    if isinstance(obj.get("benchmarks"), list):
        hint = "; this looks like a llama-benchy report: use --from llama-benchy"
    return f"missing key{'s' if len(missing) > 1 else ''} {', '.join(missing)}{hint}"


def read(display: str, data: bytes, problems: Problems) -> list[Measurement]:
    obj = load_json(display, data, problems, "a 'vllm bench serve --save-result' file")
    if obj is None:
        return []
    wrong = _wrong_format(obj)
    if wrong is not None:
        problems.error(display, None, f"not a 'vllm bench serve --save-result' file: {wrong}")
        return []
    assert isinstance(obj, dict)
    errors_before = len(problems.errors)

    def fail(message: str) -> None:
        problems.error(display, None, message)

    cells: dict[str, str] = {"harness": HARNESS, "source": f"{HARNESS} result {PurePath(display).name}"}
    meta: dict[str, str] = {}
    try:
        meta["date"] = _date(obj["date"])
    except NotANumber as exc:
        fail(str(exc))
    for key in META_FIELDS:
        if key == "date" or key not in obj:
            continue
        if not isinstance(obj[key], str):
            fail(
                f"metadata '{key}' must be a string (vllm bench serve --metadata {key}=VALUE), not {obj[key]!r}"
            )
        elif obj[key].strip():
            meta[key] = obj[key]
    completed = 0
    try:
        completed = _count(obj, "completed")
        if completed == 0:
            fail("'completed' is 0: no request finished, so there is nothing to import")
        else:
            for total, field in (
                ("total_input_tokens", "prompt_tokens"),
                ("total_output_tokens", "output_tokens"),
            ):
                # round() as the issue specifies: Python's round-half-to-even of the mean length
                cells[field] = str(round(_count(obj, total) / completed))
    except NotANumber as exc:
        fail(str(exc))
    concurrency = obj["max_concurrency"]
    if concurrency is None:
        fail(
            "'max_concurrency' is null: the run did not cap concurrency, so its rows have no concurrency "
            "to record; benchmark again with --max-concurrency N"
        )
    elif isinstance(concurrency, bool) or not isinstance(concurrency, int):
        fail(f"'max_concurrency' must be a whole number, not {concurrency!r}")
    else:
        cells["concurrency"] = str(concurrency)
    notes: list[str] = []
    try:
        cells["aggregate_tok_s"] = number_text(obj["output_throughput"], "'output_throughput'")
        tpot = obj.get("median_tpot_ms")
        if tpot is not None:
            number_text(tpot, "'median_tpot_ms'")
            if tpot > 0:
                cells["decode_tok_s"] = repr(1000 / tpot)
            else:
                notes.append("median TPOT is 0 (requests of one output token), so decode is not measured")
        for key, field in (("median_ttft_ms", "ttft_ms"), ("median_itl_ms", "itl_ms")):
            if obj.get(key) is not None:
                cells[field] = number_text(obj[key], f"'{key}'")
    except NotANumber as exc:
        fail(str(exc))
    if len(problems.errors) > errors_before:
        return []

    model = obj.get("model_id") if isinstance(obj.get("model_id"), str) else None
    head = f"{HARNESS}: {completed} requests completed"
    if isinstance(obj.get("num_prompts"), int):
        head += f" of {obj['num_prompts']}"
    if model:
        head += f", model_id {model}"
    for key in ("backend", "request_rate", "burstiness", "duration"):
        if obj.get(key) is not None:
            head += f", {key} {obj[key]}"
    summary = [head]
    summary += [s for name, label in _LATENCIES if (s := _spread(obj, name, label)) is not None]
    summary.append(
        f"prompt_tokens and output_tokens are total_input_tokens {obj['total_input_tokens']} and "
        f"total_output_tokens {obj['total_output_tokens']} divided by completed requests, rounded"
    )
    if "decode_tok_s" in cells:
        summary.append("decode_tok_s = 1000 / median TPOT")
    cells["notes"] = "; ".join(summary + notes) + "."
    return [Measurement(display, cells, meta, model)]
