"""llama-benchy output: its JSON report, or its markdown table or CSV (:mod:`builder.importers.benchy_table`).

JSON: every entry of ``benchmarks`` except context-prefill phases (they only warm the cache) keeps the
value of each repetition (``values``), so it gives one trial row per repetition: prompt_tokens =
prompt_size, output_tokens = response_size, context_tokens = context_size, prefill_tok_s =
pp_throughput, decode_tok_s = tg_req_throughput (per request), aggregate_tok_s = tg_throughput, ttft_ms =
e2e_ttft, harness = ``llama-benchy <version>``, date and time from ``timestamp``. At concurrency K the
per-request metrics keep K values per repetition: the repetition's value is their mean. An entry
without ``values`` gives one row of means (``_sd`` = ``std``).
"""

from __future__ import annotations

import datetime as dt
import statistics
from pathlib import PurePath
from typing import Any

from builder.errors import Problems
from builder.importers import (
    Measurement,
    NotANumber,
    harness,
    json_objects,
    load_json,
    number_text,
    table_headers,
)
from builder.importers.benchy_table import CSV_HEADER, read_table

# metric key -> (row field, label in notes, unit)
_METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("pp_throughput", "prefill_tok_s", "prefill", "tok/s"),
    ("tg_req_throughput", "decode_tok_s", "decode", "tok/s per request"),
    ("tg_throughput", "aggregate_tok_s", "aggregate", "tok/s"),
    ("e2e_ttft", "ttft_ms", "e2e TTFT", "ms"),
)


# columns only llama-benchy's table prints
_OWN_COLUMNS = ("ttfr (ms)", "est_ppt (ms)", "e2e_ttft (ms)", "peak t/s", "t/s (req)")


def claims(text: str) -> str | None:
    """A JSON report (``benchmarks`` entries with ``prompt_size`` or ``pp_throughput``), its CSV (header
    ``model,test_name,t_s_mean,...``) or its markdown table (``test`` and a column only it prints)."""
    for obj in json_objects(text):
        benchmarks = obj.get("benchmarks")
        if isinstance(benchmarks, list) and any(
            isinstance(entry, dict) and ("prompt_size" in entry or "pp_throughput" in entry)
            for entry in benchmarks
        ):
            return "a llama-benchy JSON report"
    if text.lstrip("\ufeff \t\r\n").startswith(CSV_HEADER):
        return "a llama-benchy CSV"
    for header in table_headers(text):
        if "test" in header and any(column in header for column in _OWN_COLUMNS):
            return "a llama-benchy markdown table"
    return None


def read(display: str, data: bytes, problems: Problems) -> list[Measurement]:
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return _read_json(display, data, problems)
    return read_table(display, data, problems)


def _stamp(value: Any) -> tuple[str, str]:
    """(date, ``HH:MM``) of ``timestamp`` as the tool wrote it; an offset is not moved to UTC."""
    if not isinstance(value, str):
        raise NotANumber(f"'timestamp' must be a string, not {value!r}")
    try:
        stamp = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise NotANumber(f"'timestamp' {value!r} is not an ISO date and time") from None
    return stamp.date().isoformat(), stamp.strftime("%H:%M")


def _int(entry: dict[str, Any], key: str, where: str) -> int:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise NotANumber(f"{where}: '{key}' must be a whole number, not {value!r}")
    return value


def _metric(entry: dict[str, Any], key: str, where: str) -> dict[str, Any] | None:
    """A ``{mean, std, values}`` object, or ``None`` when absent or null."""
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise NotANumber(f"{where}: '{key}' must be an object with mean, std and values, not {value!r}")
    if value.get("mean") is None:
        return None
    number_text(value["mean"], f"{where}: '{key}.mean'")
    values = value.get("values")
    if values is not None:
        if not isinstance(values, list) or not values:
            raise NotANumber(f"{where}: '{key}.values' must be a list of numbers, not {values!r}")
        for index, item in enumerate(values):
            number_text(item, f"{where}: '{key}.values[{index}]'")
    return value


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
    tool = harness("llama-benchy", version if isinstance(version, str) else None)
    model = obj.get("model") if isinstance(obj.get("model"), str) else None
    meta: dict[str, str] = {}
    if "timestamp" in obj:
        try:
            meta["date"], meta["time"] = _stamp(obj["timestamp"])
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
            out.extend(_entry(display, where, entry, tool, meta, model, context))
        except NotANumber as exc:
            problems.error(display, None, str(exc))
    return out


def _entry(
    display: str,
    where: str,
    entry: dict[str, Any],
    tool: str,
    meta: dict[str, str],
    model: str | None,
    context: list[str],
) -> list[Measurement]:
    concurrency = _int(entry, "concurrency", where)
    base = {
        "prompt_tokens": str(_int(entry, "prompt_size", where)),
        "output_tokens": str(_int(entry, "response_size", where)),
        "context_tokens": str(_int(entry, "context_size", where)),
        "harness": tool,
        "source": f"llama-benchy report {PurePath(display).name}, {where}",
    }
    metrics: dict[str, tuple[dict[str, Any], str, str, str]] = {}
    notes_extra: list[str] = []
    for key, field, label, unit in _METRICS:
        found = _metric(entry, key, where)
        if found is None and key == "tg_req_throughput" and concurrency == 1:
            # older reports lack the per-request figure; with one stream it is the total's
            found = _metric(entry, "tg_throughput", where)
            if found is not None:
                notes_extra.append("no tg_req_throughput in the report: decode is tg_throughput (one stream)")
        if found is not None:
            metrics[key] = (found, field, label, unit)
    spreads = [
        f"{label} {m['mean']}" + (f" ± {m['std']}" if m.get("std") is not None else "") + f" {unit}"
        for m, _, label, unit in metrics.values()
    ]
    peak = _metric(entry, "peak_throughput", where)
    if peak is not None:
        spreads.append(
            f"peak {peak['mean']}" + (f" ± {peak['std']}" if peak.get("std") is not None else "") + " tok/s"
        )
    head = tool + (f" ({', '.join(context)})" if context else "")
    load = {"concurrency": str(concurrency)}
    runs = _runs(metrics, concurrency)
    if runs is None:
        cells = dict(base)
        for m, field, _, _ in metrics.values():
            cells[field] = number_text(m["mean"], f"{where}: mean")
            if m.get("std") is not None:
                cells[f"{field}_sd"] = number_text(m["std"], f"{where}: std")
        text = f"{head}: {', '.join(spreads)}; means, the report keeps no value per repetition"
        cells["notes"] = "; ".join([text, *notes_extra]) + "."
        return [Measurement(f"{display} {where}", cells, dict(meta), model, load=load)]
    out = []
    for run in range(runs):
        cells = dict(base)
        for m, field, _, _ in metrics.values():
            values = m["values"]
            if len(values) == runs:
                cells[field] = number_text(values[run], f"{where}: value")
            else:  # concurrency values per repetition, one per request
                cells[field] = repr(statistics.fmean(values[run * concurrency : (run + 1) * concurrency]))
        text = (
            f"{head}: repetition {run + 1} of {runs}; over all repetitions {', '.join(spreads)} (mean ± sd)"
        )
        if concurrency > 1:
            text += f"; per-request metrics are the mean of the repetition's {concurrency} requests"
        cells["notes"] = "; ".join([text, *notes_extra]) + "."
        out.append(
            Measurement(f"{display} {where} repetition {run + 1}", cells, dict(meta), model, load=load)
        )
    return out


def _runs(metrics: dict[str, tuple[dict[str, Any], str, str, str]], concurrency: int) -> int | None:
    """The number of repetitions every metric keeps values of, or ``None`` when they do not agree."""
    lengths = [len(m["values"]) for m, _, _, _ in metrics.values() if m.get("values") is not None]
    if not lengths or len(lengths) != len(metrics):
        return None
    runs = min(lengths)
    if all(n in (runs, runs * concurrency) for n in lengths):
        return runs
    return None
