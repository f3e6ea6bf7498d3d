"""NVIDIA AIPerf and its predecessor GenAI-Perf: ``profile_export_aiperf.json`` /
``profile_export_genai_perf.json`` and their CSV exports, one row per file.

Both summarise each metric by ``avg``, percentiles (``p50``, ``p99``…) and more:
ttft_ms / ttft_p99_ms = time to first token p50 / p99, itl_ms / itl_p99_ms = inter-token latency p50 /
p99 (the tools' ITL is the time per output token after the first, so decode_tok_s = 1000 / its p50),
e2el_ms / e2el_p99_ms = request latency p50 / p99, aggregate_tok_s = output token throughput,
prompt_tokens / output_tokens = the input / output sequence length averages, rounded. The JSON's
``input_config`` gives the load: AIPerf 0.13's ``phases`` (the profiling phase: ``"type": "concurrency"``
with its ``concurrency``; ``poisson``, ``constant`` or ``gamma`` with its ``rate``, a ``concurrency`` there
being the cap), earlier versions' ``concurrency`` and ``request_rate`` keys; AIPerf's ``start_time`` gives
the date and time. The CSV gives neither: pass ``--concurrency N`` (a closed-loop run) or
``--request-rate R``, and ``--date``. CSV numbers may carry thousands separators (``"1,146.31"``): they
are dropped, the digits kept. AIPerf's CSV ends with a GPU telemetry table (``Endpoint,GPU_Index,…``),
empty without telemetry: it is no row field and is skipped.

Failed and timed-out requests (``error_request_count``, the CSV's ``Error Request Count``) give
failed_requests, and requests = those + the successful ``request_count``; an export where every request
failed is refused, saying so.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from pathlib import PurePath
from typing import Any

from builder.errors import Problems
from builder.importers import (
    Measurement,
    NotANumber,
    decode,
    harness,
    json_objects,
    load_json,
    load_json_lines,
    number_text,
    parse_json,
    rate_text,
)

# metric name (lower case, without its unit) -> (JSON key, row fields of p50 and p99)
_LATENCIES: dict[str, tuple[str, str, str]] = {
    "time to first token": ("time_to_first_token", "ttft_ms", "ttft_p99_ms"),
    "inter token latency": ("inter_token_latency", "itl_ms", "itl_p99_ms"),
    "request latency": ("request_latency", "e2el_ms", "e2el_p99_ms"),
}
_THROUGHPUT = ("output token throughput", "output_token_throughput")
_LENGTHS = {
    "input sequence length": ("input_sequence_length", "prompt_tokens"),
    "output sequence length": ("output_sequence_length", "output_tokens"),
}
# request counts: the successful ones and the failed or timed-out ones (CSV name, JSON key)
_COUNTS = (("request count", "request_count"), ("error request count", "error_request_count"))
_CSV_NUMBER = re.compile(r"^-?\d{1,3}(?:,\d{3})*(?:\.\d+)?$|^-?\d+(?:\.\d+)?$")


def claims(text: str) -> str | None:
    """A JSON export (``aiperf_version``, ``input_config`` or a latency metric object), or a CSV export
    (its first cell ``Metric``)."""
    for obj in json_objects(text):
        if (
            "aiperf_version" in obj
            or "input_config" in obj
            or any(isinstance(obj.get(key), dict) for key, _, _ in _LATENCIES.values())
        ):
            return "an AIPerf or GenAI-Perf JSON export"
    if text.lstrip("\ufeff \t\r\n").startswith("Metric,"):
        return "an AIPerf or GenAI-Perf CSV export"
    return None


def read(display: str, data: bytes, problems: Problems) -> list[Measurement]:
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        if _is_request_records(data):
            _request_records(display, data, problems)
            return []
        return _read_json(display, data, problems)
    return _read_csv(display, data, problems)


def _failures(
    display: str, stats: dict[str, dict[str, str]], cells: dict[str, str], problems: Problems
) -> bool:
    """Record the failed requests in ``cells``; ``False`` (with the error reported) when none succeeded."""
    errors = stats.get("error request count", {}).get("avg")
    succeeded = stats.get("request count", {}).get("avg")
    if errors is None:
        return True
    failed = round(float(errors))
    ok = round(float(succeeded)) if succeeded is not None else 0
    if ok == 0:
        problems.error(
            display,
            None,
            f"all {failed} requests failed: no request succeeded, so there is nothing to import",
        )
        return False
    cells["requests"], cells["failed_requests"] = str(ok + failed), str(failed)
    return True


def _metrics_measurement(
    display: str,
    stats: dict[str, dict[str, str]],
    tool: str,
    source: str,
    meta: dict[str, str],
    load: dict[str, str],
    unknown: tuple[str, ...],
    model: str | None,
    problems: Problems,
) -> list[Measurement]:
    """The row of one run from ``metric name → {stat: number text}``."""
    cells: dict[str, str] = {"harness": tool, "source": source}
    if not _failures(display, stats, cells, problems):
        return []
    for name, (_, median, p99) in _LATENCIES.items():
        found = stats.get(name, {})
        if "p50" in found:
            cells[median] = found["p50"]
        if "p99" in found:
            cells[p99] = found["p99"]
    throughput = stats.get(_THROUGHPUT[0], {})
    if "avg" in throughput:
        cells["aggregate_tok_s"] = throughput["avg"]
    for name, (_, field) in _LENGTHS.items():
        if "avg" in stats.get(name, {}):
            cells[field] = str(round(float(stats[name]["avg"])))
    notes = []
    if "prompt_tokens" not in cells:
        cells["prompt_tokens"] = "unknown"
        notes.append("the export gives no input sequence length, so the prompt length is unknown")
    if float(cells.get("itl_ms", "0")) > 0:
        cells["decode_tok_s"] = repr(1000 / float(cells["itl_ms"]))
    shown = "; ".join(
        f"{name} " + ", ".join(f"{k} {v}" for k, v in values.items())
        for name, values in sorted(stats.items())
        if name in _LATENCIES or name in _LENGTHS or name == _THROUGHPUT[0]
    )
    if cells.get("failed_requests", "0") != "0":
        notes.append(
            f"{cells['failed_requests']} of {cells['requests']} requests failed; the metrics are of the others"
        )
    cells["notes"] = (
        f"{tool}: {shown}; prompt_tokens and output_tokens are the average sequence lengths, rounded"
        + ("; decode_tok_s = 1000 / inter-token latency p50" if "decode_tok_s" in cells else "")
        + "".join(f"; {note}" for note in notes)
        + "."
    )
    return [Measurement(display, cells, meta, model, load=load, unknown=unknown)]


def _read_csv(display: str, data: bytes, problems: Problems) -> list[Measurement]:
    text = decode(display, data, problems, "an AIPerf or GenAI-Perf CSV export")
    if text is None:
        return []
    rows = list(csv.reader(text.splitlines()))
    if not rows or not rows[0] or rows[0][0] != "Metric" or "avg" not in rows[0]:
        problems.error(
            display,
            1,
            "not an AIPerf or GenAI-Perf export: expected its JSON (profile_export_*.json) or its CSV "
            "(first line 'Metric,avg,...')",
        )
        return []
    stats: dict[str, dict[str, str]] = {}
    header: list[str] = []
    telemetry = False
    for number, row in enumerate(rows, 1):
        if not row:
            telemetry = False
            continue
        if row[0] == "Metric":
            header, telemetry = row, False
            continue
        if telemetry or (len(row) > 1 and row[1] == "GPU_Index"):
            telemetry = True  # GPU telemetry: per GPU, no row field
            continue
        name = row[0].split(" (", 1)[0].strip().lower()
        values: dict[str, str] = {}
        for stat, value in zip(header[1:], row[1:], strict=False):
            if value == "" or value == "N/A":
                continue
            if not _CSV_NUMBER.match(value):
                problems.error(display, number, f"'{row[0]}' {stat} must be a number, not '{value}'")
                continue
            values["avg" if stat == "Value" else stat] = value.replace(",", "")
        stats[name] = values
    tool = "aiperf" if "p1" in rows[0] else "genai-perf"
    return _metrics_measurement(
        display,
        stats,
        tool,
        f"{tool} export {PurePath(display).name}",
        {},
        {},
        ("load",),
        None,
        problems,
    )


def _is_request_records(data: bytes) -> bool:
    """AIPerf's per-request ``profile_export.jsonl`` (one record per line, each with ``metadata``)."""
    first = data.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    try:
        record = parse_json(first.decode("utf-8", "replace"))
    except ValueError:
        return False
    return isinstance(record, dict) and "metadata" in record and ("metrics" in record or "error" in record)


def _request_records(display: str, data: bytes, problems: Problems) -> None:
    """Refuse per-request records, saying why: every request failed (AIPerf then writes no summary), or
    the summary beside them is the file to import."""
    measured = []
    for _, record in load_json_lines(display, data, problems, "AIPerf's profile_export.jsonl"):
        metadata = record.get("metadata") if isinstance(record, dict) else None
        if isinstance(metadata, dict) and metadata.get("benchmark_phase", "profiling") == "profiling":
            measured.append(record)
    failed = sum(1 for record in measured if record.get("error"))
    if measured and failed == len(measured):
        problems.error(
            display,
            None,
            f"all {failed} requests failed: no request succeeded, so there is nothing to import",
        )
    else:
        problems.error(
            display,
            None,
            "this is AIPerf's per-request profile_export.jsonl: import profile_export_aiperf.json (or "
            "profile_export_aiperf.csv) from the same folder, its summary of these requests",
        )


def _find(config: Any, key: str) -> Any:
    """The first value of ``key`` anywhere in a nested configuration (its layout changes by version)."""
    if isinstance(config, dict):
        if key in config:
            return config[key]
        for value in config.values():
            if (found := _find(value, key)) is not None:
                return found
    return None


def _config_load(config: Any) -> dict[str, str]:
    """The load of AIPerf before 0.13 and GenAI-Perf: ``concurrency`` and ``request_rate`` keys."""
    load: dict[str, str] = {}
    concurrency = _find(config, "concurrency")
    rate = _find(config, "request_rate")
    if rate is not None:
        load["request_rate"] = rate_text(rate, "'input_config' request_rate")
    if concurrency is not None:
        load["concurrency"] = number_text(concurrency, "'input_config' concurrency")
    elif rate is not None:
        load["concurrency"] = "none"
    return load


_RATE_PHASES = ("poisson", "constant", "gamma")


def _phase_load(phases: list[Any]) -> dict[str, str]:
    """The load of AIPerf 0.13's profiling phase (``input_config.phases``; warm-up phases are not measured)."""
    measured = [p for p in phases if isinstance(p, dict) and p.get("kind", "profiling") == "profiling"]
    if len(measured) != 1:
        raise NotANumber(
            f"'input_config.phases' has {len(measured)} profiling phases; one row is one run: expected one"
        )
    (phase,) = measured
    kind = phase.get("type")
    where = f"'input_config.phases' ({kind})"
    load: dict[str, str] = {}
    cap = phase.get("concurrency")
    if kind == "concurrency":
        load["concurrency"] = number_text(cap, f"{where} concurrency")
    elif kind in _RATE_PHASES:
        load["request_rate"] = rate_text(phase.get("rate"), f"{where} rate")
        load["concurrency"] = number_text(cap, f"{where} concurrency") if cap is not None else "none"
        if kind == "poisson":
            load["burstiness"] = "1"
        elif kind == "gamma" and phase.get("smoothness") is not None:
            load["burstiness"] = number_text(phase["smoothness"], f"{where} smoothness")
    else:
        raise NotANumber(
            f"{where}: the phase type {kind!r} is not one the importer knows (concurrency, "
            + ", ".join(_RATE_PHASES)
            + ")"
        )
    return load


def _read_json(display: str, data: bytes, problems: Problems) -> list[Measurement]:
    obj = load_json(display, data, problems, "an AIPerf or GenAI-Perf JSON export")
    if obj is None:
        return []
    if not isinstance(obj, dict) or not any(
        key in obj for key in [k for k, _, _ in _LATENCIES.values()] + ["error_request_count"]
    ):
        problems.error(
            display,
            None,
            "not an AIPerf or GenAI-Perf export: no time_to_first_token, inter_token_latency or "
            "request_latency (expected profile_export_aiperf.json or profile_export_genai_perf.json)",
        )
        return []
    stats: dict[str, dict[str, str]] = {}
    try:
        for name, key in [(n, k) for n, (k, _, _) in _LATENCIES.items()] + [
            (_THROUGHPUT[0], _THROUGHPUT[1]),
            *((n, k) for n, (k, _) in _LENGTHS.items()),
            *_COUNTS,
        ]:
            metric = obj.get(key)
            if not isinstance(metric, dict):
                continue
            if name in _LATENCIES and metric.get("unit") not in (None, "ms"):
                raise NotANumber(f"'{key}.unit' is {metric['unit']!r}; only ms is read")
            stats[name] = {
                stat: number_text(metric[stat], f"'{key}.{stat}'")
                for stat in ("avg", "p50", "p99")
                if metric.get(stat) is not None
            }
        config = obj.get("input_config")
        phases = config.get("phases") if isinstance(config, dict) else None
        load = _phase_load(phases) if isinstance(phases, list) else _config_load(config)
        unknown = [] if load else ["load"]
        meta: dict[str, str] = {}
        if isinstance(obj.get("start_time"), str):
            try:
                stamp = dt.datetime.fromisoformat(obj["start_time"])
            except ValueError:
                raise NotANumber(f"'start_time' {obj['start_time']!r} is not an ISO date and time") from None
            meta["date"], meta["time"] = stamp.date().isoformat(), stamp.strftime("%H:%M")
    except NotANumber as exc:
        problems.error(display, None, str(exc))
        return []
    version = obj.get("aiperf_version")
    is_aiperf = version is not None or isinstance(_find(config, "loadgen"), dict)
    tool = harness("aiperf", version if isinstance(version, str) else None) if is_aiperf else "genai-perf"
    model = _find(config, "model_names") or _find(config, "model")
    model_id = model[0] if isinstance(model, list) and model and isinstance(model[0], str) else None
    return _metrics_measurement(
        display,
        stats,
        tool,
        f"{tool} export {PurePath(display).name}",
        meta,
        load,
        tuple(unknown),
        model_id,
        problems,
    )
