"""The summary vLLM's and SGLang's serving benchmarks print, as pasted into an issue or a README.

A summary is the block from ``============ Serving Benchmark Result ============`` to the next line of
``=``; in between, ``Label: value`` lines and ``---- section ----`` rules. Text around it is fine: a file
may hold several summaries (one per request rate), and the text before each one is searched for the
settings it ran with: the tool's own lines (``Traffic request rate: inf``, ``Maximum request
concurrency: None``, ``Burstiness factor: 1.0``), its ``Namespace(...)`` line, or the command line. A
log line (``WARNING: ...``, ``FutureWarning: ...``, ``INFO 05-01 ...``) is never taken for the command
line, even when it names the benchmark's module.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from builder.errors import Problems
from builder.importers import Measurement, decode
from builder.importers.serving import Result, measurement

HEADER_RE = re.compile(r"^(?P<prefix>\s*(?:[#>] ?)?)=+ ?Serving Benchmark Result ?=+\s*$")
_END_RE = re.compile(r"^\s*=+\s*$")
_RULE_RE = re.compile(r"^\s*-{3,}.*-{3,}\s*$")
# The label starts with a non-blank: a leading run of blanks then has one reading, not one per split
# (quadratic on a long line of blanks).
_LINE_RE = re.compile(r"^\s*(?P<label>[^:\s][^:]*?):\s*(?P<value>\S(?:.*\S)?)?\s*$")
_COMMAND_RE = re.compile(r"(benchmark_serving\.py|bench serve|bench_serving)")
# a line a logger or the warnings module wrote: a level or a *Warning/*Error name before a colon, or a
# timestamp or [bracketed] prefix, at the start
_LOG_LINE_RE = re.compile(
    r"^\s*(?:\S*(?:Warning|Error|Exception)\b|\(?\w*\)?\s*(?:WARNING|WARN|INFO|DEBUG|ERROR|CRITICAL)\b"
    r"|\[?\d{4}-\d\d-\d\d|\[[^\]]*\]|\S+\.py:\d+)"
)
_NAMESPACE_RE = re.compile(r"Namespace\((?P<body>.*)\)")
_NAMESPACE_ITEM = re.compile(r"(?:^|, )(?P<key>\w+)=(?P<value>'[^']*'|[^,]*)")


@dataclass
class Block:
    """One printed summary."""

    line: int
    """Line number of its header."""
    values: dict[str, tuple[str, int]]
    """Label → (value as printed, line number)."""
    before: list[tuple[int, str]] = field(default_factory=list)
    """The lines between the previous summary (or the start) and this one."""


def blocks(text: str) -> list[Block]:
    """Every summary of ``text`` in order (an unterminated last one ends with the text).

    A log pasted as comments or a quote (every line starting ``# `` or ``> ``) is read without that mark.
    """
    lines = text.replace("\r\n", "\n").split("\n")
    header = next((m for line in lines if (m := HEADER_RE.match(line))), None)
    mark = header["prefix"].strip() if header else ""
    if mark:
        lines = [re.sub(rf"^\s*{re.escape(mark)} ?", "", line) for line in lines]
    out: list[Block] = []
    start = 0
    i = 0
    while i < len(lines):
        if not HEADER_RE.match(lines[i]):
            i += 1
            continue
        block = Block(i + 1, {}, [(n + 1, lines[n]) for n in range(start, i)])
        i += 1
        while i < len(lines) and not _END_RE.match(lines[i]) and not HEADER_RE.match(lines[i]):
            if not _RULE_RE.match(lines[i]) and (m := _LINE_RE.match(lines[i])) and m["value"] is not None:
                block.values.setdefault(m["label"].strip(), (m["value"], i + 1))
            i += 1
        out.append(block)
        start = i + 1
        i += 1
    return out


@dataclass
class Settings:
    """What the text before a summary says about the run; each value with where it was read."""

    values: dict[str, str] = field(default_factory=dict)
    """``request_rate``, ``max_concurrency`` (``None`` when uncapped), ``burstiness``, ``model``, lengths."""
    origins: dict[str, str] = field(default_factory=dict)
    """Key → where the value was read: ``line 12``, ``the command line on line 3``, or ``the default of
    the command line on line 3`` (a flag the command leaves out)."""
    command: str | None = None
    """The benchmark command line, when shown."""


_PRINTED_SETTINGS = {
    "Traffic request rate": "request_rate",
    "Maximum request concurrency": "max_concurrency",
    "Max request concurrency": "max_concurrency",
}
_FLAGS = {
    "--request-rate": "request_rate",
    "--max-concurrency": "max_concurrency",
    "--burstiness": "burstiness",
    "--model": "model",
    "--random-input-len": "random_input_len",
    "--random-input": "random_input_len",
    "--random-output-len": "random_output_len",
    "--random-output": "random_output_len",
    "--num-prompts": "num_prompts",
    "--num-prompt": "num_prompts",
    "--dataset-name": "dataset_name",
    "--random-range-ratio": "random_range_ratio",
}
_SWITCHES = {"--ignore-eos": "ignore_eos"}
# what the tools assume when the command line leaves a flag out
_DEFAULTS = {"request_rate": "inf", "max_concurrency": "None"}


def settings(before: list[tuple[int, str]]) -> Settings:
    """The settings the lines before a summary show; printed lines win over a Namespace, then a command."""
    found = Settings()
    command = _command(before)
    if command is not None:
        number, found.command = command
        flags = _flags(found.command)
        for key, value in flags.items():
            found.values[key] = value
            found.origins[key] = f"the command line on line {number}"
        for key, value in _DEFAULTS.items():
            if key not in flags:
                found.values[key] = value
                found.origins[key] = f"the default of the command line on line {number}"
    for number, line in before:
        if m := _NAMESPACE_RE.search(line):
            for item in _NAMESPACE_ITEM.finditer(m["body"]):
                key = item["key"]
                if key in ("request_rate", "max_concurrency", "burstiness", "model"):
                    found.values[key] = item["value"].strip("'")
                    found.origins[key] = f"line {number}"
    for number, line in before:
        if (m := _LINE_RE.match(line)) and m["value"] is not None:
            label = m["label"].strip()
            if label in _PRINTED_SETTINGS:
                found.values[_PRINTED_SETTINGS[label]] = m["value"]
                found.origins[_PRINTED_SETTINGS[label]] = f"line {number}"
            elif label == "Burstiness factor":
                found.values["burstiness"] = m["value"].split()[0]
                found.origins["burstiness"] = f"line {number}"
    return found


def _command(before: list[tuple[int, str]]) -> tuple[int, str] | None:
    """The last benchmark command line (joined over ``\\`` continuations) before a summary."""
    last = None
    i = 0
    while i < len(before):
        number, line = before[i]
        if _COMMAND_RE.search(line) and "Namespace(" not in line and not _LOG_LINE_RE.match(line):
            parts = [line.rstrip()]
            while parts[-1].endswith("\\") and i + 1 < len(before):
                parts[-1] = parts[-1][:-1]
                i += 1
                parts.append(before[i][1].rstrip())
            last = (number, " ".join(p.strip() for p in parts))
        i += 1
    return last


def _flags(command: str) -> dict[str, str]:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    out: dict[str, str] = {}
    for index, word in enumerate(words):
        name, eq, value = word.partition("=")
        if word in _SWITCHES:
            out[_SWITCHES[word]] = "true"
            continue
        if name not in _FLAGS:
            continue
        if not eq:
            if index + 1 >= len(words) or words[index + 1].startswith("--"):
                continue
            value = words[index + 1]
        out[_FLAGS[name]] = value
    return out


# printed label -> result key (vLLM's JSON names); vLLM and SGLang differ only in the E2E labels
LABELS: dict[str, str] = {
    "Successful requests": "completed",
    "Failed requests": "failed",
    "Total input tokens": "total_input_tokens",
    "Total generated tokens": "total_output_tokens",
    "Output token throughput (tok/s)": "output_throughput",
    "Maximum request concurrency": "max_concurrency",
    "Max request concurrency": "max_concurrency",
    "Traffic request rate": "request_rate",
    **{
        f"{stat.capitalize() if stat != 'p99' else 'P99'} {label} (ms)": f"{stat}_{name}_ms"
        for stat in ("mean", "median", "p99")
        for label, name in (
            ("TTFT", "ttft"),
            ("TPOT", "tpot"),
            ("ITL", "itl"),
            ("E2EL", "e2el"),
            ("E2E Latency", "e2el"),
        )
    },
}
_REQUIRED = ("completed", "output_throughput")


SUMMARY_BANNER = "============ Serving Benchmark Result ============"

# lines only SGLang's summary prints (every version prints its Backend line first); vLLM's has none
_SGLANG_LABELS = ("Backend", "Max request concurrency", "Concurrency", "Total generated tokens (retokenized)")


def sglang_summary(block: Block) -> bool:
    """Whether a summary is SGLang's: a line only SGLang prints, or its command line above it."""
    labels = block.values
    if any(label in labels for label in _SGLANG_LABELS) or any("E2E Latency" in label for label in labels):
        return True
    command = _command(block.before)
    return command is not None and "sglang" in command[1]


def read_printed(
    display: str, data: bytes, problems: Problems, tool: str, expected: str
) -> list[Measurement] | None:
    """The printed summaries of ``tool`` (whose harness is its name), or ``None`` when ``data`` is
    JSON (an object, or a list of them) for the caller to read; text holding no summary is an error saying what was ``expected``."""
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith((b"{", b"[")):
        return None
    printed = read_summaries(display, data, problems, tool, tool)
    if printed is not None:
        return printed
    if not problems.errors:
        problems.error(display, None, f"not {tool} output: expected {expected}")
    return []


def read_summaries(
    display: str, data: bytes, problems: Problems, tool: str, harness: str
) -> list[Measurement] | None:
    """One measurement per printed summary; ``None`` when the text holds no summary at all."""
    text = decode(display, data, problems, f"{tool} output")
    if text is None:
        return []
    found = blocks(text)
    if not found:
        return None
    name = PurePath(display).name
    out: list[Measurement] = []
    for block in found:
        present = {LABELS[label] for label in block.values if label in LABELS}
        missing = [key for key in _REQUIRED if key not in present]
        if missing:
            labels = [next(label for label, key in LABELS.items() if key == k) for k in missing]
            problems.error(
                display,
                block.line,
                f"the summary lacks {', '.join(repr(label) for label in labels)}: paste the whole summary, "
                "down to its closing line of '='",
            )
            continue
        shown = settings(block.before)
        values: dict[str, Any] = dict(shown.values)
        where = {key: f"'{key}' ({origin})" for key, origin in shown.origins.items()}
        told = dict(shown.origins)
        for label, (value, line) in block.values.items():
            if label in LABELS:
                values[LABELS[label]] = value
                where[LABELS[label]] = f"line {line} '{label}'"
                told[LABELS[label]] = f"line {line}"
        result = Result(values, where, printed=True)
        reasons: list[str] = []
        cautions: list[str] = []
        head = f"{harness} printed summary: {values['completed']} requests completed"
        for key, label in (("request_rate", "request rate"), ("max_concurrency", "max concurrency")):
            if key in values:
                head += f", {label} {values[key]} (from {told[key]})"
        if shown.command is not None:
            head += f"; command: {shown.command}"
        item = measurement(
            result,
            f"{display}:{block.line}",
            harness,
            f"{tool} summary in {name}, line {block.line}",
            {},
            shown.values.get("model"),
            head,
            reasons,
            cautions,
        )
        for reason in reasons:
            problems.error(display, block.line, reason)
        for caution in cautions:
            problems.warn(display, block.line, caution)
        if item is not None:
            out.append(item)
    return out
