"""What vLLM's and SGLang's serving benchmarks have in common: one result → one row.

Both tools summarise a run with the same figures under (almost) the same names, in a saved JSON object
and in the summary they print. Readers turn either into a :class:`Result` keyed by vLLM's JSON names
(``completed``, ``median_ttft_ms``…); :func:`measurement` maps it the same way for every format:

- prompt_tokens / output_tokens = round(total_input_tokens / completed), likewise for the output;
- aggregate_tok_s = output_throughput; decode_tok_s = 1000 / median_tpot_ms;
- ttft_ms, itl_ms, tpot_ms, e2el_ms = the medians; ``*_p99_ms`` = the 99th percentiles;
- the load: ``request_rate`` and ``max_concurrency`` (see :func:`builder.importers.load_cells`);
- requests = completed + failed and failed_requests = failed, when the result counts its failed requests;
  a result where every request failed is refused, saying so.

A summary trimmed of its token totals still gives a row: prompt_tokens is the ``--random-input-len`` of
the command line shown above it when that run used fixed-length random prompts (``--dataset-name
random``, no ``--random-range-ratio``), else ``unknown``; output_tokens its ``--random-output-len``
only under ``--ignore-eos``; a warning says which.

Values are copied as written (a printed ``43.65`` stays ``43.65``); nothing is rounded but the lengths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from builder.importers import Measurement, NotANumber, number_text, rate_text

_PRINTED_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")

# result key -> row field, copied as written
COPIED: tuple[tuple[str, str], ...] = (
    ("output_throughput", "aggregate_tok_s"),
    ("median_ttft_ms", "ttft_ms"),
    ("p99_ttft_ms", "ttft_p99_ms"),
    ("median_itl_ms", "itl_ms"),
    ("p99_itl_ms", "itl_p99_ms"),
    ("median_tpot_ms", "tpot_ms"),
    ("p99_tpot_ms", "tpot_p99_ms"),
    ("median_e2el_ms", "e2el_ms"),
    ("p99_e2el_ms", "e2el_p99_ms"),
)
_LATENCIES = (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2el", "E2EL"))


@dataclass
class Result:
    """One run's summary, keyed by vLLM's JSON names; values as the file holds them."""

    values: dict[str, Any]
    """JSON values, or the text of a printed line."""
    names: dict[str, str] = field(default_factory=dict)
    """How messages name a key, when not ``'key'`` (``line 12 'Median TTFT (ms)'`` when printed)."""
    printed: bool = False
    """Values are printed text; in JSON a number written as a string is an error."""

    def get(self, key: str) -> Any:
        return self.values.get(key)

    def where(self, key: str) -> str:
        return self.names.get(key, f"'{key}'")


def text_of(value: Any, what: str, printed: bool = True) -> str:
    """A JSON number's text, or a printed number as printed."""
    if isinstance(value, str) and printed:
        if not _PRINTED_NUMBER.match(value.strip()):
            raise NotANumber(f"{what} must be a number, not '{value}'")
        return value.strip()
    return number_text(value, what)


def _count(result: Result, key: str) -> int:
    text = text_of(result.get(key), result.where(key), result.printed)
    if not text.isdigit():
        raise NotANumber(f"{result.where(key)} must be a whole number >= 0, not {text}")
    return int(text)


def measurement(
    result: Result,
    origin: str,
    harness: str,
    source: str,
    meta: dict[str, str],
    model: str | None,
    head: str,
    problems_out: list[str],
    warnings_out: list[str] | None = None,
) -> Measurement | None:
    """The row of one run, or ``None`` with the reasons appended to ``problems_out`` (what the row
    leaves unknown is appended to ``warnings_out``)."""
    before = len(problems_out)
    cells: dict[str, str] = {"harness": harness, "source": source}
    notes: list[str] = []
    completed = 0
    lengths = "totals"
    try:
        completed = _count(result, "completed")
        failed = _count(result, "failed") if result.get("failed") is not None else None
        if completed == 0:
            problems_out.append(
                f"all {failed} requests failed: no request succeeded, so there is nothing to import"
                if failed
                else f"{result.where('completed')} is 0: no request finished, so there is nothing to import"
            )
        elif "total_input_tokens" not in result.values or "total_output_tokens" not in result.values:
            lengths = _lengths_without_totals(result, cells, harness, warnings_out)
        else:
            for total, name in (
                ("total_input_tokens", "prompt_tokens"),
                ("total_output_tokens", "output_tokens"),
            ):
                # Python's round-half-to-even of the mean length
                cells[name] = str(round(_count(result, total) / completed))
        if failed is not None:
            cells["requests"], cells["failed_requests"] = str(completed + failed), str(failed)
    except NotANumber as exc:
        problems_out.append(str(exc))
    for key, name in COPIED:
        value = result.get(key)
        if value is None:
            continue
        try:
            text = text_of(value, result.where(key), result.printed)
        except NotANumber as exc:
            problems_out.append(str(exc))
            continue
        if text.startswith("-"):
            # SGLang prints a median TPOT of -0.00 when most requests give one token
            notes.append(f"{key} is {text}, not recorded")
            continue
        cells[name] = text
    tpot = cells.get("tpot_ms")
    if tpot is not None:
        if float(tpot) > 0:
            cells["decode_tok_s"] = repr(1000 / float(tpot))
        else:
            notes.append("median TPOT is 0 (requests of one output token), so decode is not measured")
    load, unknown = _load(result, problems_out)
    if len(problems_out) > before:
        return None
    summary = [head]
    summary += [s for name, label in _LATENCIES if (s := _spread(result, name, label)) is not None]
    if lengths == "totals":
        summary.append(
            f"prompt_tokens and output_tokens are total_input_tokens {result.get('total_input_tokens')} and "
            f"total_output_tokens {result.get('total_output_tokens')} divided by {completed} completed "
            "requests, rounded"
        )
    else:
        summary.append(lengths)
    if cells.get("failed_requests", "0") != "0":
        summary.append(
            f"{cells['failed_requests']} of {cells['requests']} requests failed; the metrics are of the others"
        )
    if "decode_tok_s" in cells:
        summary.append("decode_tok_s = 1000 / median TPOT")
    cells["notes"] = "; ".join(summary + notes) + "."
    return Measurement(origin, cells, meta, model, load=load, unknown=unknown)


def _lengths_without_totals(
    result: Result, cells: dict[str, str], harness: str, warnings_out: list[str] | None
) -> str:
    """prompt_tokens and output_tokens of a summary without its token totals, from the command line
    above it where that shows them; the note saying where they come from."""
    shown = result.get("random_input_len"), result.get("random_output_len")
    ratio = result.get("random_range_ratio")
    # every random prompt has the given length: vLLM's default range ratio; SGLang's only at ratio 1
    exact = ratio in ("1", "1.0") if harness.startswith("sglang") else ratio is None
    fixed = result.get("dataset_name") == "random" and exact
    told: list[str] = []
    if fixed and shown[0] is not None and str(shown[0]).isdigit() and int(shown[0]) > 0:
        cells["prompt_tokens"] = str(shown[0])
        told.append(f"prompt_tokens is the command line's --random-input-len {shown[0]}")
    else:
        cells["prompt_tokens"] = "unknown"
    if (
        fixed
        and result.get("ignore_eos")
        and shown[1] is not None
        and str(shown[1]).isdigit()
        and int(shown[1]) > 0
    ):
        cells["output_tokens"] = str(shown[1])
        told.append(f"output_tokens is its --random-output-len {shown[1]} (with --ignore-eos)")
    lacking = [
        label
        for key, label in (("prompt_tokens", "prompt length"), ("output_tokens", "output length"))
        if not cells.get(key, "unknown").isdigit()
    ]
    if lacking and warnings_out is not None:
        warnings_out.append(
            f"the summary has no 'Total input tokens' and 'Total generated tokens' lines, so the "
            f"{' and '.join(lacking)} {'is' if len(lacking) == 1 else 'are'} not known"
            + (" and the row takes no part in comparisons" if cells["prompt_tokens"] == "unknown" else "")
            + ": add those two lines from the run's log above the closing line of '=', or paste the "
            "benchmark command line above the summary (a --dataset-name random run gives them by its "
            "--random-input-len and, with --ignore-eos, --random-output-len)"
        )
    return "; ".join(told or ["the summary gives no token totals, so the prompt length is unknown"])


def _load(result: Result, problems_out: list[str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """The run's request rate, concurrency cap and burstiness, and which of them the file does not show."""
    load: dict[str, str] = {}
    unknown: list[str] = []
    if "request_rate" not in result.values:
        unknown.append("request_rate")
    else:
        try:
            load["request_rate"] = _rate(
                result.get("request_rate"), result.where("request_rate"), result.printed
            )
        except NotANumber as exc:
            problems_out.append(str(exc))
    if "max_concurrency" not in result.values:
        unknown.append("concurrency")
    else:
        cap = result.get("max_concurrency")
        if cap is None or cap in ("None", "none", "not set"):  # SGLang prints "not set"
            load["concurrency"] = "none"
        else:
            try:
                text = text_of(cap, result.where("max_concurrency"), result.printed)
                if not text.isdigit() or int(text) < 1:
                    raise NotANumber(
                        f"{result.where('max_concurrency')} must be a whole number >= 1, not {text}"
                    )
                load["concurrency"] = text
            except NotANumber as exc:
                problems_out.append(str(exc))
    burstiness = result.get("burstiness")
    if burstiness is not None:
        try:
            load["burstiness"] = text_of(burstiness, result.where("burstiness"), result.printed)
        except NotANumber as exc:
            problems_out.append(str(exc))
    return load, tuple(unknown)


def _rate(value: Any, what: str, printed: bool) -> str:
    if isinstance(value, str) and value.strip() != "inf":
        text = text_of(value, what, printed)
        if float(text) <= 0:
            raise NotANumber(f"{what} must be a positive number or inf, not {text}")
        return text
    return rate_text(value.strip() if isinstance(value, str) else value, what)


def _spread(result: Result, name: str, label: str) -> str | None:
    """``TTFT median 120.5 ms (mean 130.1 ± 20.2 sd, p99 250.0)`` from the keys present."""
    parts = {stat: result.get(f"{stat}_{name}_ms") for stat in ("median", "mean", "std", "p99")}
    if all(v is None for v in parts.values()):
        return None
    text = f"{label} median {parts['median']} ms" if parts["median"] is not None else f"{label}"
    extra = []
    if parts["mean"] is not None:
        extra.append(f"mean {parts['mean']}" + (f" ± {parts['std']} sd" if parts["std"] is not None else ""))
    if parts["p99"] is not None:
        extra.append(f"p99 {parts['p99']}")
    return text + (f" ({', '.join(extra)})" if extra else "")
