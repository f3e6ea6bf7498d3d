"""llama.cpp's ``llama-bench``: its markdown table (``-o md``, the default), JSON (``-o json``) or JSONL.

llama-bench runs prompt-processing tests (``pp<N>``: N prompt tokens) and generation tests (``tg<M>``)
separately, each at a context depth (``@ d<D>``) and repeated ``-r`` times. As for llama-benchy's
table, each pp test is paired with the tg test that follows it with the same settings and depth into one
row: prompt_tokens = N, output_tokens = M, context_tokens = D, prefill_tok_s = the pp test's t/s,
decode_tok_s = the tg test's t/s, concurrency 1. ``mean ± sd`` gives the metric and its ``_sd``
(llama-bench's standard deviation is the sample one); ``repetitions`` is the number of samples (JSON) or
the ``-r N`` of a command line in the text. Combined ``pp+tg`` tests fit no row column and are
skipped with a warning. JSON gives the date and time (``test_time``, UTC), and the build:
engine_version ``b<build_number>``, engine_build = ``build_commit``; the markdown's ``build: <commit>
(<number>)`` line (bare or in backticks) gives the build, and ``--date`` the date.

The settings a test ran with (the table's columns besides model, size, params, backend, test and t/s;
the JSON's keys besides the model, hardware, build and results) become the row's ``flags``, written as
llama-bench's own options (``-ngl 99 -sm row -fa 1``; a column llama-bench names otherwise is
``--<column>``): runs that differ in them are different runs, never trials of one. The table shows
only the settings that differ from llama-bench's defaults, the JSON every one. Lines llama-bench logs
to standard error (``--progress`` lines inside a table, device lines among JSONL results) are skipped.
"""

from __future__ import annotations

import datetime as dt
import re
import shlex
from dataclasses import dataclass
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
    option_on_command_line,
    table_headers,
)

TOOL = "llama-bench"
_TEST_RE = re.compile(
    r"^(?:(?P<kind>pp|tg) ?(?P<n>\d+)|pp ?(?P<pg_p>\d+) ?\+ ?tg ?(?P<pg_g>\d+))(?: @ d(?P<depth>\d+))?$"
)
_CELL_RE = re.compile(r"^(?P<mean>\d+(?:\.\d+)?)(?:\s*±\s*(?P<sd>\d+(?:\.\d+)?))?$")
_DELIMITER_RE = re.compile(r"^:?-+:?$")
_BUILD_RE = re.compile(r"^[ \t>]*`?build: (?P<commit>[0-9a-f]+) \((?P<number>\d+)\)`?[ \t]*$", re.MULTILINE)
_PROGRAM_RE = re.compile(r"llama-bench\b")
_REPS_RE = re.compile(r"(?:-r|--repetitions)[ =](?P<value>\d+)")
_PROGRESS_RE = re.compile(r"^\s*llama-bench: benchmark \d+/\d+: ")
# JSON keys that are results or the test's shape, not its settings
_NOT_SETTINGS = {"n_prompt", "n_gen", "n_depth", "test_time"}
_RESULT_PREFIXES = ("avg_", "stddev_", "samples_")
# what describes the model, the hardware or the build rather than how the test ran (table, JSON names)
_NOT_FLAGS = {
    *("model", "size", "params", "backend", "test", "t/s"),
    *("model_type", "model_size", "model_n_params", "model_filename", "backends", "cpu_info", "gpu_info"),
    *("build_commit", "build_number"),
}
# a setting's table column or JSON key -> the llama-bench option that sets it
_OPTIONS = {
    **dict.fromkeys(("ngl", "n_gpu_layers"), "-ngl"),
    **dict.fromkeys(("n_cpu_moe",), "-ncmoe"),
    **dict.fromkeys(("sm", "split_mode"), "-sm"),
    **dict.fromkeys(("main_gpu",), "-mg"),
    **dict.fromkeys(("nkvo", "no_kv_offload"), "-nkvo"),
    **dict.fromkeys(("fa", "flash_attn"), "-fa"),
    **dict.fromkeys(("dev", "devices"), "-dev"),
    **dict.fromkeys(("ts", "tensor_split"), "-ts"),
    **dict.fromkeys(("ot", "tensor_buft_overrides"), "-ot"),
    **dict.fromkeys(("mmap", "use_mmap"), "-mmp"),
    **dict.fromkeys(("dio", "use_direct_io"), "-dio"),
    **dict.fromkeys(("embd", "embeddings"), "-embd"),
    **dict.fromkeys(("nopo", "no_op_offload"), "-nopo"),
    **dict.fromkeys(("n_batch",), "-b"),
    **dict.fromkeys(("n_ubatch",), "-ub"),
    **dict.fromkeys(("threads", "n_threads"), "-t"),
    **dict.fromkeys(("cpu_mask",), "-C"),
    **dict.fromkeys(("cpu_strict",), "--cpu-strict"),
    **dict.fromkeys(("poll",), "--poll"),
    **dict.fromkeys(("type_k",), "-ctk"),
    **dict.fromkeys(("type_v",), "-ctv"),
}


def _flags(settings: list[tuple[str, Any]]) -> str:
    """The row's flags from (column or key, value): llama-bench's options, in the order given."""
    words: list[str] = []
    for name, value in settings:
        if name in _NOT_FLAGS:
            continue
        text = ("1" if value else "0") if isinstance(value, bool) else str(value)
        words += [_OPTIONS.get(name, "--" + name.replace("_", "-")), shlex.quote(text) if text else "''"]
    return " ".join(words)


@dataclass
class _Test:
    origin: str
    where: str
    """``line 12`` or ``[3]``, for the row's source."""
    kind: str
    tokens: int
    depth: int
    settings: tuple[Any, ...]
    mean: str
    sd: str | None
    repetitions: str | None
    meta: dict[str, str]
    model: str


# columns llama-bench always prints, and llama-benchy never
_OWN_COLUMNS = ("size", "params", "backend")


def claims(text: str) -> str | None:
    """A test result object (``n_prompt``, ``n_gen`` and ``avg_ts`` or ``build_commit``), as JSON or JSON
    Lines, or a markdown table with ``test``, ``t/s`` and llama-bench's ``size``/``params``/``backend``."""
    for obj in json_objects(text):
        if "n_prompt" in obj and "n_gen" in obj and ("avg_ts" in obj or "build_commit" in obj):
            return "llama-bench JSON (-o json or jsonl)"
    for header in table_headers(text):
        if "test" in header and "t/s" in header and any(column in header for column in _OWN_COLUMNS):
            return "a llama-bench markdown table"
    return None


def read(display: str, data: bytes, problems: Problems) -> list[Measurement]:
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"["):
        obj = load_json(display, data, problems, "llama-bench JSON (-o json)")
        if obj is None:
            return []
        if not isinstance(obj, list):
            problems.error(display, None, "not llama-bench JSON: expected a list of test results")
            return []
        entries: list[tuple[int | None, str, Any]] = [(None, f"[{i}]", e) for i, e in enumerate(obj)]
    elif head.startswith(b"{") or _is_jsonl_with_log(data):
        lines = load_json_lines(display, _log_blanked(data), problems, "llama-bench JSONL (-o jsonl)")
        entries = [(n, f"line {n}", e) for n, e in lines]
    else:
        return _read_markdown(display, data, problems)
    tests = []
    for line, where, entry in entries:
        try:
            test = _json_test(display, line, where, entry, problems)
        except NotANumber as exc:
            problems.error(display, line, f"{where}: {exc}")
            continue
        if test is not None:
            tests.append(test)
    return _pair(display, tests, "JSON")


def _is_jsonl_with_log(data: bytes) -> bool:
    """JSONL results with llama-bench's standard error around them (no markdown table)."""
    lines = [line.strip() for line in data.splitlines()]
    return any(line.startswith(b'{"') for line in lines) and not any(line.startswith(b"|") for line in lines)


def _log_blanked(data: bytes) -> bytes:
    """``data`` with every line that is not a JSON object blanked (line numbers kept): the tool's log."""
    return b"\n".join(
        line if line.strip().startswith(b"{") else b"" for line in data.replace(b"\r\n", b"\n").split(b"\n")
    )


def _json_test(display: str, line: int | None, where: str, entry: Any, problems: Problems) -> _Test | None:
    if not isinstance(entry, dict):
        raise NotANumber("must be an object")
    missing = [k for k in ("n_prompt", "n_gen", "avg_ts") if k not in entry]
    if missing:
        raise NotANumber(f"not a llama-bench result: no {', '.join(missing)}")
    n_prompt, n_gen, depth = (_whole(entry, k) for k in ("n_prompt", "n_gen", "n_depth"))
    if n_prompt and n_gen:
        problems.warn(
            display,
            line,
            f"{where}: pp{n_prompt}+tg{n_gen} is a combined test; no row column holds it, skipped",
        )
        return None
    meta: dict[str, str] = {}
    if isinstance(entry.get("test_time"), str):
        try:
            stamp = dt.datetime.fromisoformat(entry["test_time"].replace("Z", "+00:00"))
        except ValueError:
            raise NotANumber(f"'test_time' {entry['test_time']!r} is not an ISO date and time") from None
        meta["date"], meta["time"] = stamp.date().isoformat(), stamp.strftime("%H:%M")
    if isinstance(entry.get("build_number"), int):
        meta["engine_version"] = f"b{entry['build_number']}"
    if isinstance(entry.get("build_commit"), str):
        meta["engine_build"] = entry["build_commit"]
    samples = entry.get("samples_ts")
    flags = _flags(
        [(k, v) for k, v in entry.items() if k not in _NOT_SETTINGS and not k.startswith(_RESULT_PREFIXES)]
    )
    if flags:
        meta["flags"] = flags
    settings = tuple(
        (k, repr(v))
        for k, v in entry.items()
        if k not in _NOT_SETTINGS and not k.startswith(_RESULT_PREFIXES)
    )
    return _Test(
        f"{display} {where}",
        where,
        "pp" if n_prompt else "tg",
        n_prompt or n_gen,
        depth,
        settings,
        number_text(entry["avg_ts"], "'avg_ts'"),
        number_text(entry["stddev_ts"], "'stddev_ts'") if entry.get("stddev_ts") is not None else None,
        str(len(samples)) if isinstance(samples, list) and samples else None,
        meta,
        str(entry.get("model_type", "")),
    )


def _whole(entry: dict[str, Any], key: str) -> int:
    value = entry.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise NotANumber(f"'{key}' must be a whole number >= 0, not {value!r}")
    return value


def _split(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _read_markdown(display: str, data: bytes, problems: Problems) -> list[Measurement]:
    text = decode(display, data, problems, "llama-bench output")
    if text is None:
        return []
    lines = text.replace("\r\n", "\n").split("\n")
    meta: dict[str, str] = {}
    if build := _BUILD_RE.search(text):
        meta["engine_version"], meta["engine_build"] = f"b{build['number']}", build["commit"]
    reps = option_on_command_line(text, _PROGRAM_RE, _REPS_RE)
    tests: list[_Test] = []
    found = False
    i = 0
    while i < len(lines) - 1:
        header = [c.lower() for c in _split(lines[i])]
        if not (lines[i].lstrip().startswith("|") and "test" in header and "t/s" in header):
            i += 1
            continue
        if not all(_DELIMITER_RE.match(c) for c in _split(lines[i + 1])):
            i += 1
            continue
        found = True
        i += 2
        while i < len(lines) and (lines[i].lstrip().startswith("|") or _PROGRESS_RE.match(lines[i])):
            if _PROGRESS_RE.match(lines[i]):  # --progress writes to stderr, between the rows
                i += 1
                continue
            cells = _split(lines[i])
            number = i + 1
            i += 1
            if len(cells) != len(header):
                problems.error(
                    display, number, f"expected {len(header)} cells (as in the header), found {len(cells)}"
                )
                continue
            test = cells[header.index("test")]
            m = _TEST_RE.match(test)
            cell = _CELL_RE.match(cells[header.index("t/s")])
            if m is None:
                problems.error(
                    display,
                    number,
                    f"test '{test}' is not pp<N>, tg<M> or pp<N>+tg<M> (optionally '@ d<depth>')",
                )
                continue
            if cell is None:
                problems.error(display, number, f"'{cells[header.index('t/s')]}' is not 'mean ± sd'")
                continue
            if m["pg_p"]:
                problems.warn(display, number, f"{test} is a combined test; no row column holds it, skipped")
                continue
            settings = tuple(c for h, c in zip(header, cells, strict=True) if h not in ("test", "t/s"))
            flags = _flags([(h, c) for h, c in zip(header, cells, strict=True)])
            tests.append(
                _Test(
                    f"{display}:{number}",
                    f"line {number}",
                    m["kind"],
                    int(m["n"]),
                    int(m["depth"] or 0),
                    settings,
                    cell["mean"],
                    cell["sd"],
                    reps if reps and cell["sd"] is not None else None,
                    {**meta, "flags": flags} if flags else dict(meta),
                    cells[header.index("model")] if "model" in header else "",
                )
            )
    if not found:
        problems.error(
            display,
            None,
            "no llama-bench results found: expected its markdown table (| model | ... | test | t/s |), "
            "its JSON (-o json) or JSONL (-o jsonl)",
        )
    return _pair(display, tests, "table")


def _pair(display: str, tests: list[_Test], form: str) -> list[Measurement]:
    """One row per pp test and the tg test after it with the same settings and depth."""
    out: list[Measurement] = []
    pending: dict[tuple[Any, ...], _Test] = {}
    version = next((t.meta["engine_version"] for t in tests if "engine_version" in t.meta), None)
    tool = harness(TOOL, version)

    def emit(pp: _Test | None, tg: _Test | None) -> None:
        first = pp or tg
        assert first is not None
        cells = {"prompt_tokens": str(pp.tokens) if pp else "unknown", "context_tokens": str(first.depth)}
        parts = []
        for test, field in ((pp, "prefill_tok_s"), (tg, "decode_tok_s")):
            if test is None:
                continue
            cells[field] = test.mean
            if test.sd is not None:
                cells[f"{field}_sd"] = test.sd
            parts.append(
                f"{test.kind}{test.tokens} {test.mean}" + (f" ± {test.sd}" if test.sd else "") + " t/s"
            )
        if tg is not None:
            cells["output_tokens"] = str(tg.tokens)
        reps = {t.repetitions for t in (pp, tg) if t is not None}
        if len(reps) == 1 and None not in reps:
            cells["repetitions"] = reps.pop() or ""
        cells["harness"] = tool
        where = " and ".join(t.where for t in (pp, tg) if t is not None)
        cells["source"] = f"llama-bench {form} in {PurePath(display).name}, {where}"
        note = f"{tool} {form}, model {first.model}: {', '.join(parts)} (mean ± sd)"
        if pp is None:
            note += "; no pp test precedes this tg test, so the prompt length is unknown"
        cells["notes"] = note + "."
        out.append(Measurement(first.origin, cells, dict(first.meta), None, load={"concurrency": "1"}))

    for test in tests:
        key = (test.settings, test.depth)
        if test.kind == "pp":
            if key in pending:
                emit(pending.pop(key), None)
            pending[key] = test
        else:
            emit(pending.pop(key, None), test)
    for test in pending.values():
        emit(test, None)
    order = {t.origin: n for n, t in enumerate(tests)}
    out.sort(key=lambda m: order[m.origin])
    return out
