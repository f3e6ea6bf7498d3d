"""llama-benchy's markdown table (as printed or pasted into a README with text around it) and its CSV.

Columns ``| model | test | t/s | peak t/s | ttfr (ms) | est_ppt (ms) | e2e_ttft (ms) |`` (concurrency
runs print ``t/s (total)`` and ``t/s (req)`` instead of ``t/s``); the CSV (``--format csv``) has
``model,test_name,t_s_mean,t_s_std,t_s_req_mean,...,e2e_ttft_mean,e2e_ttft_std``. Tests are ``pp<N>`` and
``tg<M>``, optionally ``@ d<depth>`` and ``(c<K>)``; ``ctx_pp``/``ctx_tg`` lines only warm the cache and
are skipped. Each ``pp`` line is paired with the ``tg`` line that follows it at the same depth and
concurrency: prompt_tokens = N, output_tokens = M, context_tokens = depth, prefill_tok_s = the pp
line's t/s, decode_tok_s = the tg line's t/s (per request), ttft_ms = the pp line's e2e_ttft. Cells
read ``mean ± sd``: the mean is copied as printed (never re-rounded) and the sd goes into the metric's
``_sd`` column; ``repetitions`` is the ``--runs N`` of a llama-benchy command line in the text, when there
is one. The line ``date: YYYY-MM-DD HH:MM:SS`` printed under the table gives the date and time (the CSV
has none: pass ``--date``).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import PurePath

from builder.errors import Problems
from builder.importers import Measurement, decode, harness, option_on_command_line

_TEST_RE = re.compile(
    r"^(?P<ctx>ctx_)?(?P<kind>pp|tg)(?P<n>\d+)?(?:\s*@\s*d(?P<depth>\d+))?(?:\s*\(c(?P<conc>\d+)\))?$"
)
_NUMBER_RE = re.compile(r"^\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$")
_SD_SPLIT = re.compile(r"\s*(?:±|\+/-|\+-)\s*")
_DELIMITER_RE = re.compile(r"^:?-+:?$")
_BUILD_RE = re.compile(r"llama-benchy \((?P<version>[^)]*)\)")
_FOOTER_DATE_RE = re.compile(r"^date:\s*(?P<date>\d{4}-\d{2}-\d{2})(?:[ T](?P<time>\d{2}:\d{2}))?")
_PROGRAM_RE = re.compile(r"llama-benchy\b")
_RUNS_RE = re.compile(r"--runs[ =](?P<value>\d+)")
CSV_HEADER = "model,test_name,t_s_mean,t_s_std"


@dataclass(frozen=True)
class Cell:
    mean: str
    sd: str | None

    def shown(self, unit: str) -> str:
        return f"{self.mean}" + (f" ± {self.sd}" if self.sd is not None else "") + f" {unit}"


class CellError(ValueError):
    pass


def _cell(text: str) -> Cell | None:
    text = text.strip()
    if not text:
        return None
    parts = _SD_SPLIT.split(text)
    if len(parts) > 2 or not all(_NUMBER_RE.match(p) for p in parts):
        raise CellError(f"'{text}' is not 'mean ± sd'")
    return Cell(parts[0], parts[1] if len(parts) == 2 else None)


def _split(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|"):
        body = body[:-1]
    return [c.strip() for c in body.split("|")]


def _is_delimiter_row(line: str) -> bool:
    """GFM's row under a table header: ``|:---|--:|`` (hyphens, optional colons)."""
    return line.lstrip().startswith("|") and all(_DELIMITER_RE.match(c) for c in _split(line))


@dataclass(frozen=True)
class _Line:
    number: int
    model: str
    kind: str
    tokens: int
    depth: int
    concurrency: int
    cells: dict[str, Cell | None]


def _tables(lines: list[str]) -> list[tuple[int, list[str], list[tuple[int, list[str]]]]]:
    """(header line, column names, [(line, cells)]) of every table whose header has model and test."""
    found = []
    i = 0
    while i < len(lines) - 1:
        line = lines[i]
        if line.lstrip().startswith("|") and _is_delimiter_row(lines[i + 1]):
            header = [c.lower() for c in _split(line)]
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                rows.append((j + 1, _split(lines[j])))
                j += 1
            if "test" in header and "model" in header:
                found.append((i + 1, header, rows))
            i = j
        else:
            i += 1
    return found


def read_table(display: str, data: bytes, problems: Problems) -> list[Measurement]:
    text = decode(display, data, problems, "llama-benchy output")
    if text is None:
        return []
    lines = text.replace("\r\n", "\n").split("\n")
    if lines[0].startswith(CSV_HEADER):
        return _read_csv(display, lines, problems)
    tables = _tables(lines)
    if not tables:
        problems.error(
            display,
            None,
            "no llama-benchy results found: expected its JSON report, its markdown table "
            "(| model | test | t/s | ... | e2e_ttft (ms) |) or its CSV (model,test_name,t_s_mean,...)",
        )
        return []
    build = _BUILD_RE.search(text)
    meta: dict[str, str] = {}
    for line in lines:
        if m := _FOOTER_DATE_RE.match(line.strip()):
            meta["date"] = m["date"]
            if m["time"]:
                meta["time"] = m["time"]
            break
    runs = option_on_command_line(text, _PROGRAM_RE, _RUNS_RE)
    context = _Context(harness("llama-benchy", build["version"] if build else None), meta, runs)
    out: list[Measurement] = []
    for header_line, header, rows in tables:
        out.extend(_read_rows(display, header_line, header, rows, context, "table", problems))
    if not out and not problems.errors:
        problems.error(display, None, "the llama-benchy table has no pp or tg lines to import")
    return out


@dataclass(frozen=True)
class _Context:
    harness: str
    meta: dict[str, str]
    runs: str | None
    """How many repetitions each mean summarises, when the text shows the command's ``--runs``."""


def _read_csv(display: str, lines: list[str], problems: Problems) -> list[Measurement]:
    """The CSV as the table it prints: each ``X_mean``/``X_std`` pair becomes a ``mean ± sd`` cell."""
    rows = list(csv.reader(lines))
    head = rows[0]
    columns = {"t_s": "t/s", "t_s_req": "t/s (req)", "e2e_ttft": "e2e_ttft (ms)"}
    missing = [f"{name}_mean" for name in columns if f"{name}_mean" not in head]
    if "model" not in head or "test_name" not in head or missing:
        problems.error(
            display, 1, f"not a llama-benchy CSV: no column {', '.join(missing) or 'model/test_name'}"
        )
        return []
    body = [(n, row) for n, row in enumerate(rows[1:], 2) if row]
    concurrent = any("(c" in row[head.index("test_name")] for _, row in body if len(row) == len(head))
    if concurrent:
        columns["t_s"] = "t/s (total)"
    header = ["model", "test", *columns.values()]
    table: list[tuple[int, list[str]]] = []
    for number, row in body:
        if len(row) != len(head):
            problems.error(
                display, number, f"expected {len(head)} cells (as in the header), found {len(row)}"
            )
            continue
        cells = [row[head.index("model")], row[head.index("test_name")]]
        for name in columns:
            mean = row[head.index(f"{name}_mean")]
            std = row[head.index(f"{name}_std")] if f"{name}_std" in head else ""
            cells.append(f"{mean} ± {std}" if mean and std else mean)
        table.append((number, cells))
    return _read_rows(display, 1, header, table, _Context("llama-benchy", {}, None), "CSV", problems)


def _read_rows(
    display: str,
    header_line: int,
    header: list[str],
    rows: list[tuple[int, list[str]]],
    context: _Context,
    form: str,
    problems: Problems,
) -> list[Measurement]:
    total = "t/s (total)" if "t/s (total)" in header else "t/s"
    if total not in header:
        problems.error(display, header_line, "the table has no 't/s' column")
        return []
    columns = {name: header.index(name) for name in (total, "t/s (req)", "e2e_ttft (ms)") if name in header}
    parsed: list[_Line] = []
    for number, cells in rows:
        if len(cells) != len(header):
            problems.error(
                display, number, f"expected {len(header)} cells (as in the header), found {len(cells)}"
            )
            continue
        test = cells[header.index("test")]
        match = _TEST_RE.match(test.strip())
        if match is None:
            problems.error(display, number, f"test '{test}' is not pp<N> or tg<M> (optionally '@ d<depth>')")
            continue
        if match["ctx"]:
            continue  # ctx_pp / ctx_tg: the context-prefill phase only warms the cache
        if match["n"] is None:
            problems.error(display, number, f"test '{test}' gives no token count")
            continue
        try:
            values = {name: _cell(cells[index]) for name, index in columns.items()}
        except CellError as exc:
            problems.error(display, number, str(exc))
            continue
        parsed.append(
            _Line(
                number,
                cells[header.index("model")],
                match["kind"],
                int(match["n"]),
                int(match["depth"] or 0),
                int(match["conc"] or 1),
                values,
            )
        )
    out: list[Measurement] = []
    pending: dict[tuple[int, int], _Line] = {}

    def emit(pp: _Line | None, tg: _Line | None) -> None:
        first = pp or tg
        assert first is not None
        cells = {
            "prompt_tokens": str(pp.tokens) if pp else "unknown",
            "context_tokens": str(first.depth),
            "harness": context.harness,
        }

        def put(field: str, cell: Cell, label: str, unit: str) -> None:
            cells[field] = cell.mean
            if cell.sd is not None:
                cells[f"{field}_sd"] = cell.sd
            spread.append(f"{label} {cell.shown(unit)}")

        spread: list[str] = []
        if pp is not None:
            if (c := pp.cells.get(total)) is not None:
                put("prefill_tok_s", c, "prefill", "tok/s")
            if (c := pp.cells.get("e2e_ttft (ms)")) is not None:
                put("ttft_ms", c, "e2e TTFT", "ms")
        if tg is not None:
            cells["output_tokens"] = str(tg.tokens)
            per_request = tg.cells.get("t/s (req)") if "t/s (req)" in columns else tg.cells.get(total)
            if per_request is not None:
                put("decode_tok_s", per_request, "decode", "tok/s per request")
            if total == "t/s (total)" and (c := tg.cells.get(total)) is not None:
                put("aggregate_tok_s", c, "aggregate", "tok/s")
        if context.runs is not None and any(k.endswith("_sd") for k in cells):
            cells["repetitions"] = context.runs
        lines = ", ".join(f"line {x.number}" for x in (pp, tg) if x is not None)
        cells["source"] = f"llama-benchy {form} in {PurePath(display).name}, {lines}"
        note = f"{context.harness} {form}, model {first.model}: {', '.join(spread)} (mean ± sd as printed)"
        if pp is None:
            note += "; no pp line precedes this tg line, so the prompt length is unknown"
        cells["notes"] = note + "."
        out.append(
            Measurement(
                f"{display}:{first.number}",
                cells,
                dict(context.meta),
                first.model or None,
                load={"concurrency": str(first.concurrency)},
            )
        )

    for line in parsed:
        key = (line.depth, line.concurrency)
        if line.kind == "pp":
            if key in pending:
                emit(pending.pop(key), None)
            pending[key] = line
        else:
            emit(pending.pop(key, None), line)
    for line in sorted(pending.values(), key=lambda x: x.number):
        emit(line, None)
    out.sort(key=lambda m: int(m.origin.rsplit(":", 1)[1]))
    return out
