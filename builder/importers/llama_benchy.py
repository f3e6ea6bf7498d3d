"""llama-benchy output: its JSON report, or its markdown table as printed or pasted into a README.

JSON: one row per entry of ``benchmarks`` except context-prefill phases (they only warm the cache):
prompt_tokens = prompt_size, output_tokens = response_size, context_tokens = context_size,
prefill_tok_s = pp_throughput.mean, decode_tok_s = tg_req_throughput.mean (per request),
aggregate_tok_s = tg_throughput.mean, ttft_ms = e2e_ttft.mean, harness = ``llama-benchy <version>``,
date from ``timestamp``. The table form is read by :mod:`builder.importers.benchy_table`.
"""

from __future__ import annotations

import datetime as dt
from pathlib import PurePath
from typing import Any

from builder.errors import Problems
from builder.importers import Measurement, NotANumber, load_json, number_text
from builder.importers.benchy_table import read_table

# metric key -> (row field, label in notes, unit)
_METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("pp_throughput", "prefill_tok_s", "prefill", "tok/s"),
    ("tg_req_throughput", "decode_tok_s", "decode", "tok/s per request"),
    ("tg_throughput", "aggregate_tok_s", "aggregate", "tok/s"),
    ("e2e_ttft", "ttft_ms", "e2e TTFT", "ms"),
)


def read(display: str, data: bytes, problems: Problems) -> list[Measurement]:
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return _read_json(display, data, problems)
    return read_table(display, data, problems)


def _date(value: Any) -> str:
    if not isinstance(value, str):
        raise NotANumber(f"'timestamp' must be a string, not {value!r}")
    try:
        # the calendar date as the tool wrote it; a timestamp with an offset is not moved to UTC
        return dt.datetime.fromisoformat(value.strip()).date().isoformat()
    except ValueError:
        raise NotANumber(f"'timestamp' {value!r} is not an ISO date and time") from None


def _int(entry: dict[str, Any], key: str, where: str) -> int:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise NotANumber(f"{where}: '{key}' must be a whole number, not {value!r}")
    return value


def _metric(entry: dict[str, Any], key: str, where: str) -> tuple[Any, Any, int] | None:
    """(mean, std, runs) of a ``{mean, std, values}`` object, or ``None`` when absent or null."""
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise NotANumber(f"{where}: '{key}' must be an object with mean, std and values, not {value!r}")
    if value.get("mean") is None:
        return None
    number_text(value["mean"], f"{where}: '{key}.mean'")
    values = value.get("values")
    return value["mean"], value.get("std"), len(values) if isinstance(values, list) else 0


def _wrong_format(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return f"expected one JSON object, found a {type(obj).__name__}"
    if isinstance(obj.get("benchmarks"), list):
        return None
    hint = ""
    if "output_throughput" in obj or "median_tpot_ms" in obj:
        hint = "; this looks like a vllm bench serve result: use --from vllm-bench"
    return f"no 'benchmarks' list{hint}"


def _read_json(display: str, data: bytes, problems: Problems) -> list[Measurement]:
    obj = load_json(display, data, problems, "a llama-benchy JSON report")
    if obj is None:
        return []
    wrong = _wrong_format(obj)
    if wrong is not None:
        problems.error(display, None, f"not a llama-benchy JSON report: {wrong}")
        return []
    assert isinstance(obj, dict)
    version = obj.get("version")
    harness = f"llama-benchy {version}" if isinstance(version, str) and version.strip() else "llama-benchy"
    model = obj.get("model") if isinstance(obj.get("model"), str) else None
    meta: dict[str, str] = {}
    if "timestamp" in obj:
        try:
            meta["date"] = _date(obj["timestamp"])
        except NotANumber as exc:
            problems.error(display, None, str(exc))
            return []
    context: list[str] = []
    if model:
        context.append(f"model {model}")
    if obj.get("latency_mode") is not None:
        latency = f"latency mode {obj['latency_mode']}"
        if obj.get("latency_ms") is not None:
            latency += f" ({obj['latency_ms']} ms)"
        context.append(latency)
    if obj.get("prefix_caching_enabled") is True:
        context.append(
            "prefix caching enabled: the context was loaded and cached before each measured request"
        )
    out: list[Measurement] = []
    for index, entry in enumerate(obj["benchmarks"]):
        where = f"benchmarks[{index}]"
        if not isinstance(entry, dict):
            problems.error(display, None, f"{where} must be an object")
            continue
        if entry.get("is_context_prefill_phase") is True:
            continue  # only warms the cache; the entry after it measures the prompt on that context
        try:
            out.append(_entry(display, where, entry, harness, meta, model, context))
        except NotANumber as exc:
            problems.error(display, None, str(exc))
    return out


def _entry(
    display: str,
    where: str,
    entry: dict[str, Any],
    harness: str,
    meta: dict[str, str],
    model: str | None,
    context: list[str],
) -> Measurement:
    concurrency = _int(entry, "concurrency", where)
    cells = {
        "prompt_tokens": str(_int(entry, "prompt_size", where)),
        "output_tokens": str(_int(entry, "response_size", where)),
        "context_tokens": str(_int(entry, "context_size", where)),
        "concurrency": str(concurrency),
        "harness": harness,
        "source": f"llama-benchy report {PurePath(display).name}, {where}",
    }
    spreads: list[str] = []
    runs = 0
    notes_extra: list[str] = []
    for key, field, label, unit in _METRICS:
        found = _metric(entry, key, where)
        if found is None and key == "tg_req_throughput" and concurrency == 1:
            # older reports lack the per-request figure; with one stream it is the total's
            found = _metric(entry, "tg_throughput", where)
            if found is not None:
                notes_extra.append("no tg_req_throughput in the report: decode is tg_throughput (one stream)")
        if found is None:
            continue
        mean, std, n = found
        cells[field] = number_text(mean, f"{where}: '{key}.mean'")
        spreads.append(f"{label} {mean}" + (f" ± {std}" if std is not None else "") + f" {unit}")
        runs = max(runs, n)
    peak = _metric(entry, "peak_throughput", where)
    if peak is not None:
        spreads.append(f"peak {peak[0]}" + (f" ± {peak[1]}" if peak[1] is not None else "") + " tok/s")
    text = f"{harness}" + (f" ({', '.join(context)})" if context else "") + ": " + ", ".join(spreads)
    if runs:
        text += f"; mean ± sd over {runs} run{'s' if runs != 1 else ''}"
    cells["notes"] = "; ".join([text, *notes_extra]) + "."
    return Measurement(f"{display} {where}", cells, dict(meta), model)
