"""SGLang's ``python -m sglang.bench_serving``: its printed summary, or its ``--output-file`` JSON Lines.

Both give one row per run: a pasted file may hold one summary per request rate, and the JSONL file gets
one line appended per run. The mapping is :mod:`builder.importers.serving`'s, with SGLang's names for
the end-to-end latency (``median_e2e_latency_ms``, ``Median E2E Latency (ms)``). SGLang writes an
unbounded request rate as JSON ``Infinity``; its ``concurrency`` key and ``Concurrency:`` line are the
concurrency it measured, not the cap (``max_concurrency``), and are kept in notes only. Neither form
records the date: pass ``--date``. The JSON Lines of 2024's versions name the figures differently
(``total_input``, ``total_output``, ``median_ttft``, ``median_itl``, ``median_e2e_latency``,
``output_token_throughput``, all in ms or tok/s as now) and record no concurrency cap: those names are
read as today's.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from builder.errors import Problems
from builder.importers import Measurement, json_objects, load_json_lines
from builder.importers.printed import SUMMARY_BANNER, blocks, read_printed, sglang_summary
from builder.importers.serving import Result, measurement

TOOL = "sglang bench_serving"
_RENAMED = {
    "median_e2e_latency_ms": "median_e2el_ms",
    "p99_e2e_latency_ms": "p99_e2el_ms",
    # the names of 2024's versions
    "total_input": "total_input_tokens",
    "total_output": "total_output_tokens",
    "median_ttft": "median_ttft_ms",
    "median_itl": "median_itl_ms",
    "mean_e2e_latency": "mean_e2el_ms",
    "median_e2e_latency": "median_e2el_ms",
    "output_token_throughput": "output_throughput",
}
_REQUIRED = ("completed", "total_input_tokens", "total_output_tokens", "output_throughput")


def claims(text: str) -> str | None:
    """A result line (keys only SGLang writes: ``*_e2e_latency_ms``, ``*_retokenized``, or the 2024 names
    ``total_input`` and ``median_ttft``), or a printed summary with a line only SGLang prints."""
    for obj in json_objects(text):
        if any("e2e_latency" in str(key) or "retokenized" in str(key) for key in obj) or (
            "total_input" in obj or "median_ttft" in obj
        ):
            return "an sglang bench_serving --output-file JSON Lines"
    if any(sglang_summary(block) for block in blocks(text)):
        return "a printed sglang bench_serving summary"
    return None


def read(display: str, data: bytes, problems: Problems) -> list[Measurement]:
    printed = read_printed(
        display,
        data,
        problems,
        TOOL,
        "its printed summary (" + SUMMARY_BANNER + ") or its --output-file JSON Lines",
    )
    if printed is not None:
        return printed
    out: list[Measurement] = []
    name = PurePath(display).name
    for number, obj in load_json_lines(display, data, problems, "an sglang bench_serving JSONL file", True):
        if not isinstance(obj, dict):
            problems.error(display, number, f"line {number} must be a JSON object")
            continue
        values: dict[str, Any] = {_RENAMED.get(str(key), str(key)): value for key, value in obj.items()}
        missing = [key for key in _REQUIRED if key not in values]
        if missing:
            problems.error(
                display,
                number,
                f"not an sglang bench_serving result: line {number} lacks {', '.join(missing)}",
            )
            continue
        head = f"{TOOL}: {obj['completed']} requests completed"
        for key in ("backend", "dataset_name", "request_rate", "max_concurrency", "duration", "concurrency"):
            if key in obj:
                label = "measured concurrency" if key == "concurrency" else key
                head += f", {label} {obj[key]}"
        reasons: list[str] = []
        item = measurement(
            Result(values, {_RENAMED.get(str(key), str(key)): f"line {number} '{key}'" for key in obj}),
            f"{display}:{number}",
            TOOL,
            f"{TOOL} result in {name}, line {number}",
            {},
            None,
            head,
            reasons,
        )
        for reason in reasons:
            problems.error(display, number, reason)
        if item is not None:
            out.append(item)
    return out
