"""vLLM's serving benchmark: the ``--save-result`` JSON or the printed summary, one row per run.

Every version since ``benchmarks/benchmark_serving.py`` (``vllm bench serve`` from 0.10 on) is read;
keys that come and go between versions (``endpoint_type``, ``failed``, ``max_concurrent_requests``,
``request_goodput`` or ``request_goodput:``, ``*_e2el_ms``, detailed per-request lists) are optional.
The mapping is :mod:`builder.importers.serving`'s. Values given to ``--metadata key=value`` are
top-level keys and may carry the run's metadata; ``date`` (``YYYYMMDD-HHMMSS``) gives the day and time.
A file of ``--append-result`` results (one JSON object per line) gives one row per line, and the
``summary.json`` of ``vllm bench sweep serve`` (a JSON list of results, each with its ``run_number``
and the parameters the sweep set) one row per result.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import PurePath
from typing import Any

from builder.errors import Problems
from builder.importers import META_FIELDS, Measurement, NotANumber, json_objects, load_json, load_json_lines
from builder.importers.printed import SUMMARY_BANNER, blocks, read_printed, sglang_summary
from builder.importers.serving import Result, measurement

HARNESS = "vllm bench serve"
REQUIRED_KEYS = ("date", "completed", "total_input_tokens", "total_output_tokens", "output_throughput")
_DATE_RE = re.compile(r"^(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})$")


def _date(value: Any) -> tuple[str, str]:
    """(``YYYY-MM-DD``, ``HH:MM``) of vLLM's ``date`` key."""
    match = _DATE_RE.match(value) if isinstance(value, str) else None
    if match is None:
        raise NotANumber(f"'date' must look like YYYYMMDD-HHMMSS (as vllm writes it), not {value!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.groups())
    try:
        return dt.date(year, month, day).isoformat(), dt.time(hour, minute, second).strftime("%H:%M")
    except ValueError:
        raise NotANumber(f"'date' {value!r} is not a real date and time") from None


def _wrong_format(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return f"expected one JSON object, found a {type(obj).__name__}"
    missing = [key for key in REQUIRED_KEYS if key not in obj]
    if not missing:
        return None
    hint = ""
    if isinstance(obj.get("benchmarks"), list):
        hint = (
            "; this looks like a llama-benchy or guidellm report: use --from llama-benchy or --from guidellm"
        )
    return f"missing key{'s' if len(missing) > 1 else ''} {', '.join(missing)}{hint}"


def claims(text: str) -> str | None:
    """A saved result (its ``date`` as vllm writes it, ``model_id`` or ``*_e2el_ms`` keys), or a printed
    summary with none of the lines only SGLang prints."""
    for obj in json_objects(text):
        date = obj.get("date")
        if "completed" in obj and (
            (isinstance(date, str) and _DATE_RE.match(date))
            or "model_id" in obj
            or any(str(key).endswith("_e2el_ms") for key in obj)
        ):
            return "a vllm bench serve --save-result JSON"
    if any(not sglang_summary(block) for block in blocks(text)):
        return "a printed vllm bench serve summary"
    return None


def read(display: str, data: bytes, problems: Problems) -> list[Measurement]:
    printed = read_printed(
        display,
        data,
        problems,
        HARNESS,
        "the JSON of --save-result or the printed summary (" + SUMMARY_BANNER + ")",
    )
    if printed is not None:
        return printed
    what = "a 'vllm bench serve --save-result' file"
    if _is_json_lines(data):
        # --append-result adds one result per line
        lines = load_json_lines(display, data, problems, what, infinity=True)
        out: list[Measurement] = []
        for number, obj in lines:
            out.extend(_result(display, number, obj, problems))
        return out
    # a rate of inf is "inf" in most versions; JSON's Infinity is read for it too, and nowhere else
    obj = load_json(display, data, problems, what, infinity=True)
    if obj is None:
        return []
    if isinstance(obj, list) and obj:  # vllm bench sweep serve's summary.json
        return [
            item for index, run in enumerate(obj) for item in _result(display, None, run, problems, index)
        ]
    return _result(display, None, obj, problems)


def _is_json_lines(data: bytes) -> bool:
    lines = [line.strip() for line in data.splitlines() if line.strip()]
    return len(lines) > 1 and all(line.startswith(b"{") and line.endswith(b"}") for line in lines)


def _result(
    display: str, line: int | None, obj: Any, problems: Problems, index: int | None = None
) -> list[Measurement]:
    """The row of one saved result (``line``: its line in a file of appended results; ``index``: its
    place in a sweep's list)."""
    at = f"[{index}]" if index is not None else ""
    wrong = _wrong_format(obj)
    if wrong is not None:
        problems.error(
            display, line, f"not a 'vllm bench serve --save-result' file: {at + ': ' if at else ''}{wrong}"
        )
        return []
    assert isinstance(obj, dict)
    errors_before = len(problems.errors)

    def fail(message: str) -> None:
        problems.error(display, line, f"{at}: {message}" if at else message)

    meta: dict[str, str] = {}
    try:
        meta["date"], meta["time"] = _date(obj["date"])
    except NotANumber as exc:
        fail(str(exc))
    for key in META_FIELDS:
        if key in ("date", "time") or key not in obj:
            continue
        if not isinstance(obj[key], str):
            fail(
                f"metadata '{key}' must be a string (vllm bench serve --metadata {key}=VALUE), not {obj[key]!r}"
            )
        elif obj[key].strip():
            meta[key] = obj[key]
    model = obj.get("model_id") if isinstance(obj.get("model_id"), str) else None
    head = f"{HARNESS}: {obj['completed']} requests completed"
    if isinstance(obj.get("num_prompts"), int):
        head += f" of {obj['num_prompts']}"
    if model:
        head += f", model_id {model}"
    for key in ("run_number", "backend", "request_rate", "max_concurrency", "burstiness", "duration"):
        if key in obj:
            head += f", {key} {obj[key]}"
    reasons: list[str] = []
    name = PurePath(display).name
    item = measurement(
        Result(obj),
        (display if line is None else f"{display}:{line}") + (f" {at}" if at else ""),
        HARNESS,
        f"{HARNESS} result {name}"
        + (f", line {line}" if line is not None else "")
        + (f", {at}" if at else ""),
        meta,
        model,
        head,
        reasons,
    )
    for reason in reasons:
        fail(reason)
    if len(problems.errors) > errors_before or item is None:
        return []
    return [item]
