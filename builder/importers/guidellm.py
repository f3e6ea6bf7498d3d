"""GuideLLM's report (``guidellm benchmark --output-path report.json`` or ``.yaml``): one row per benchmark.

A sweep holds one benchmark per load (synchronous, throughput, then constant rates). Each benchmark's
``metrics`` summarise its successful requests (``metrics.<name>.successful``): prompt_tokens /
output_tokens = the mean prompt / output token count, rounded; ttft_ms and itl_ms = the medians of
``time_to_first_token_ms`` and ``inter_token_latency_ms`` (``*_p99_ms`` their ``percentiles.p99``);
decode_tok_s = 1000 / the ITL median (GuideLLM's ITL leaves out the first token, as vLLM's TPOT does);
e2el_ms / e2el_p99_ms = ``request_latency`` (seconds) × 1000, exactly; aggregate_tok_s = the mean of
``output_tokens_per_second``. The load comes from the benchmark's strategy: ``synchronous`` is
concurrency 1, ``concurrent`` its ``streams``, ``throughput`` its ``max_concurrency`` (all at once
otherwise), ``constant`` and ``poisson`` their ``rate`` (Poisson arrivals are burstiness 1); without a
strategy the load is left to ``--concurrency`` or ``--request-rate``. The cap of an open-loop run is the
one the run was given: from 0.7 on the strategy always carries GuideLLM's default cap (``1024*10``), so
the recorded profile's ``max_concurrency`` (null: none) says what was set. The
benchmark's start (Unix time) gives the date and time, in UTC; harness = ``guidellm <version>``.
``metrics.request_totals`` gives requests (successful + errored) and failed_requests (errored); a
benchmark where no request succeeded is refused, saying so. Only the JSON or YAML report is read: its CSV
and HTML exports lack the strategy and the token counts.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
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
    number_text,
    rate_text,
)
from builder.yamlio import YamlProblem, load_yaml

TOOL = "guidellm"


_YAML_REPORT = re.compile(r"^benchmarks:", re.MULTILINE)


def claims(text: str) -> str | None:
    """A report (``benchmarks`` whose entries hold ``metrics``, or ``metadata.guidellm_version``), as JSON
    or YAML, or the CSV GuideLLM writes (its header starts ``Run Info``; not read, but told apart)."""
    for obj in json_objects(text):
        metadata, benchmarks = obj.get("metadata"), obj.get("benchmarks")
        if (isinstance(metadata, dict) and "guidellm_version" in metadata) or (
            isinstance(benchmarks, list)
            and any(
                isinstance(entry, dict) and isinstance(entry.get("metrics"), dict) for entry in benchmarks
            )
        ):
            return "a GuideLLM JSON report"
    if _YAML_REPORT.search(text) and ("guidellm_version" in text or "time_to_first_token_ms" in text):
        return "a GuideLLM YAML report"
    if text.lstrip("\ufeff \t\r\n").startswith("Run Info,"):
        return "a GuideLLM CSV"
    return None


def _other_export(display: str, data: bytes) -> str | None:
    """The name of a GuideLLM export that is not its report (CSV, HTML), when ``data`` is one."""
    suffix = PurePath(display).suffix.lower()
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:200].lower()
    if suffix in (".html", ".htm") or head.startswith((b"<!doctype", b"<html")):
        return "HTML"
    first = head.split(b"\n", 1)[0]
    if suffix == ".csv" or (b"," in first and b":" not in first and not head.startswith((b"{", b"-"))):
        return "CSV"
    return None


def read(display: str, data: bytes, problems: Problems) -> list[Measurement]:
    other = _other_export(display, data)
    if other is not None:
        problems.error(
            display,
            None,
            f"this is GuideLLM's {other} export: only the JSON or YAML report is read "
            "(--output kind=json,path=report.json; before 0.7 --output-path report.json)",
        )
        return []
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        obj = load_json(display, data, problems, "a guidellm JSON report")
    else:
        text = decode(display, data, problems, "a guidellm YAML report")
        if text is None:
            return []
        try:
            obj = load_yaml(text).value
        except YamlProblem as exc:
            problems.error(display, exc.line, f"not a guidellm report: {exc.message}")
            return []
    if obj is None:
        return []
    if not isinstance(obj, dict) or not isinstance(obj.get("benchmarks"), list):
        problems.error(display, None, "not a guidellm report: no 'benchmarks' list")
        return []
    metadata = obj.get("metadata")
    version = metadata.get("guidellm_version") if isinstance(metadata, dict) else None
    tool = harness(TOOL, version if isinstance(version, str) else None)
    out: list[Measurement] = []
    for index, bench in enumerate(obj["benchmarks"]):
        where = f"benchmarks[{index}]"
        try:
            out.append(_benchmark(display, where, bench, tool))
        except NotANumber as exc:
            problems.error(display, None, f"{where}: {exc}")
    return out


def _stat(metrics: dict[str, Any], name: str, *path: str) -> Any:
    value: Any = metrics.get(name)
    for key in ("successful", *path):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _benchmark(display: str, where: str, bench: Any, tool: str) -> Measurement:
    if not isinstance(bench, dict) or not isinstance(bench.get("metrics"), dict):
        raise NotANumber("has no 'metrics'")
    metrics = bench["metrics"]
    cells: dict[str, str] = {"harness": tool, "source": f"guidellm report {PurePath(display).name}, {where}"}
    totals = metrics.get("request_totals")
    if (
        isinstance(totals, dict)
        and isinstance(totals.get("errored"), int)
        and isinstance(totals.get("successful"), int)
    ):
        ok, failed = totals["successful"], totals["errored"]
        if ok == 0:
            raise NotANumber(
                f"all {failed} requests failed: no request succeeded, so there is nothing to import"
            )
        cells["requests"], cells["failed_requests"] = str(ok + failed), str(failed)
    for name, field in (("prompt_token_count", "prompt_tokens"), ("output_token_count", "output_tokens")):
        mean = _stat(metrics, name, "mean")
        if mean is None:
            raise NotANumber(f"no '{name}.successful.mean': no request succeeded")
        cells[field] = str(round(float(number_text(mean, f"'{name}.successful.mean'"))))
    for name, median, p99 in (
        ("time_to_first_token_ms", "ttft_ms", "ttft_p99_ms"),
        ("inter_token_latency_ms", "itl_ms", "itl_p99_ms"),
    ):
        if (value := _stat(metrics, name, "median")) is not None:
            cells[median] = number_text(value, f"'{name}.successful.median'")
        if (value := _stat(metrics, name, "percentiles", "p99")) is not None:
            cells[p99] = number_text(value, f"'{name}.successful.percentiles.p99'")
    for path, field in ((("median",), "e2el_ms"), (("percentiles", "p99"), "e2el_p99_ms")):
        if (value := _stat(metrics, "request_latency", *path)) is not None:
            seconds = number_text(value, f"'request_latency.successful.{'.'.join(path)}'")
            cells[field] = format((Decimal(seconds) * 1000).normalize(), "f")
    if (value := _stat(metrics, "output_tokens_per_second", "mean")) is not None:
        cells["aggregate_tok_s"] = number_text(value, "'output_tokens_per_second.successful.mean'")
    if float(cells.get("itl_ms", "0")) > 0:
        cells["decode_tok_s"] = repr(1000 / float(cells["itl_ms"]))
    strategy = _strategy(bench)
    # without its strategy the load is unknown: --concurrency or --request-rate supplies it
    load, shown = _load(strategy, _profile(bench)) if strategy is not None else ({}, "not recorded")
    meta: dict[str, str] = {}
    start = bench.get("start_time")
    if start is None and isinstance(bench.get("scheduler_metrics"), dict):
        start = bench["scheduler_metrics"].get("start_time")
    if isinstance(start, int | float) and not isinstance(start, bool) and start > 0:
        stamp = dt.datetime.fromtimestamp(start, dt.UTC)
        meta["date"], meta["time"] = stamp.date().isoformat(), stamp.strftime("%H:%M")
    cells["notes"] = (
        f"{tool}: strategy {shown}; prompt_tokens and output_tokens are the mean token counts of the "
        "successful requests, rounded"
        + ("; decode_tok_s = 1000 / ITL median" if "decode_tok_s" in cells else "")
        + (
            f"; {cells['failed_requests']} of {cells['requests']} requests failed, the metrics are of the others"
            if cells.get("failed_requests", "0") != "0"
            else ""
        )
        + "."
    )
    unknown = () if strategy is not None else ("load",)
    return Measurement(f"{display} {where}", cells, meta, None, load=load, unknown=unknown)


def _strategy(bench: dict[str, Any]) -> dict[str, Any] | None:
    for holder in (bench.get("config"), bench.get("args"), bench):
        if isinstance(holder, dict) and isinstance(holder.get("strategy"), dict):
            strategy: dict[str, Any] = holder["strategy"]
            return strategy
    return None


def _profile(bench: dict[str, Any]) -> dict[str, Any] | None:
    """The profile the run was given (GuideLLM 0.7 on records it beside the strategy it made)."""
    config = bench.get("config")
    profile = config.get("profile") if isinstance(config, dict) else None
    return profile if isinstance(profile, dict) else None


def _load(strategy: dict[str, Any], profile: dict[str, Any] | None) -> tuple[dict[str, str], str]:
    kind = strategy.get("type_")
    # the strategy's cap is GuideLLM's default when the profile set none
    cap = profile.get("max_concurrency") if profile is not None else strategy.get("max_concurrency")
    load: dict[str, str] = {}
    if kind == "synchronous":
        load["concurrency"] = "1"
    elif kind == "concurrent":
        load["concurrency"] = number_text(strategy.get("streams"), "'strategy.streams'")
    elif kind == "throughput":
        load["request_rate"] = "inf"
        load["concurrency"] = number_text(cap, "'strategy.max_concurrency'") if cap is not None else "none"
    elif kind in ("constant", "poisson"):
        load["request_rate"] = rate_text(strategy.get("rate"), "'strategy.rate'")
        load["concurrency"] = number_text(cap, "'strategy.max_concurrency'") if cap is not None else "none"
        if kind == "poisson":
            load["burstiness"] = "1"
    else:
        raise NotANumber(
            f"strategy type {kind!r} is not one the importer knows (synchronous, concurrent, "
            "throughput, constant, poisson)"
        )
    shown = ", ".join(f"{k} {v}" for k, v in strategy.items() if k in ("type_", "streams", "rate"))
    if kind in ("throughput", "constant", "poisson"):
        shown += f", max_concurrency {cap if cap is not None else 'none'}"
    return load, shown
