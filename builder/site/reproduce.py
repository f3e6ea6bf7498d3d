"""How to reproduce a row or a run: the serve command, the harness command and the import line.

:func:`reproduce` takes a recipe's front matter and one row (the row's fields, as pages and the
downloads see them) and returns three shell commands: the server as the row ran it (its own engine,
version, flags and environment, not the recipe's when they differ), the benchmark that measures the
row's setting, and the ``python -m builder import`` line that turns the benchmark's output into a row
file. Each command is built as argument groups (:data:`Groups`, a line each) and printed by
:func:`builder.content.shell.shell_command`, which quotes every word; values shown in a comment go
through :func:`_comment`, so no cell can end a comment or a quote and become a command. What the row
does not record is left out of the commands and said in ``notes``, never guessed.

:func:`reproduce_run` gives the same for the rows of one run (a row file), each command once: the
serve command, the benchmark command per setting, and one import line for all their outputs. It is
made of the same functions, so each of its serve and benchmark commands is the one :func:`reproduce`
gives for some of the rows. A recipe page shows a run's (``partials/runs.html``); ``python -m builder
reproduce PATH:LINE`` prints a row's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc
from packaging.version import InvalidVersion, Version

from builder.content.flags import (
    FlagSyntaxError,
    engine_kind,
    flag_groups,
    is_hub_id,
    parse_env,
    serve_program,
    split_args,
)
from builder.content.models import RecipeMeta
from builder.content.shell import Verbatim, Word, shell_command

if TYPE_CHECKING:
    from builder.data.load import Site

IMPORT_FORMATS: dict[str, str] = {
    "vllm bench serve": "vllm-bench",
    "llama-benchy": "llama-benchy",
    "sglang bench_serving": "sglang",
    "guidellm": "guidellm",
    "aiperf": "aiperf",
    "genai-perf": "aiperf",
    "llama-bench": "llama-bench",
}
"""Tool (as the importers write it at the start of a row's ``harness``) to the ``import --from`` format
that reads its output; its formats are kept equal to :data:`builder.importers.FORMATS` by a test."""


@dataclass(frozen=True)
class Reproduction:
    """The three commands that reproduce a row, and what they cannot say."""

    serve: str
    """The server as the row ran it."""
    harness: str
    """The benchmark at the row's setting."""
    import_line: str
    """The ``python -m builder import`` line for the benchmark's output."""
    notes: tuple[str, ...]
    """What the row does not record, and where the commands depart from it because of that."""
    tool: str
    """The benchmark tool (``vllm bench serve``, ``llama-benchy``...)."""

    def text(self) -> str:
        """All of it as one shell script: notes as comments, then the commands."""
        parts = [f"# {_comment(note)}" for note in self.notes]
        parts += ["# 1. serve", self.serve, "# 2. benchmark", self.harness]
        parts.append("# 3. import the result as a row file")
        parts.append(self.import_line)
        return "\n".join(parts) + "\n"


def _comment(text: str) -> str:
    """``text`` safe inside a shell comment: on one line, control characters escaped as JSON does."""
    if any(not ch.isprintable() for ch in text):
        return json.dumps(text, ensure_ascii=False)[1:-1]
    return text


Groups = list[list[Word]]
"""A command as argument groups, a line each: its words in order."""


def _number(value: float) -> str:
    """A rate as the tools take it: ``inf``, or the shortest exact decimal (``1.5``, ``10``)."""
    if math.isinf(value):
        return "inf"
    return str(int(value)) if float(value).is_integer() else repr(float(value))


_TOOLS = tuple(sorted(IMPORT_FORMATS, key=len, reverse=True))
"""The benchmark tools the site writes commands for, longest first (``llama-benchy`` before
``llama-bench``: a prefix)."""


def _known_tool(harness: str) -> str | None:
    """The tool a row's ``harness`` names, when the site writes commands for it (``genai-perf`` gets
    AIPerf's, its successor that takes its options)."""
    lowered = harness.lower()
    if "bench_serving" in lowered and "sglang" in lowered:
        return "sglang bench_serving"
    tool = next((tool for tool in _TOOLS if lowered.startswith(tool)), None)
    return "aiperf" if tool == "genai-perf" else tool


def _own_tool(engine: str) -> str:
    """The engine's own benchmark (vLLM's for an engine the site knows no benchmark of)."""
    return {"vllm": "vllm bench serve", "sglang": "sglang bench_serving", "llama.cpp": "llama-bench"}.get(
        engine_kind(engine), "vllm bench serve"
    )


def _serve(meta: RecipeMeta, row: Mapping[str, Any], engine: str, notes: list[str]) -> str:
    version = str(row.get("engine_version") or "unknown")
    build = row.get("engine_build")
    head = f"# {_comment(engine)} {_comment(version)}"
    head += f", build {_comment(str(build))}" if build else ", build not recorded"
    if version == "unknown":
        notes.append("The row does not record its engine version.")
    flags = row.get("flags")
    if flags is None:
        flags = meta.flags
        notes.append(
            "The row does not record its serve flags: the serve command has the recipe's."
            if flags.strip()
            else "Neither the row nor the recipe records serve flags."
        )
    env_text = row.get("env")
    env: dict[str, str] | None
    if env_text is None:
        env = dict(meta.env)
        if env:
            notes.append("The row does not record its environment: the serve command has the recipe's.")
    else:
        try:
            env = parse_env(env_text)
        except FlagSyntaxError:
            env = None
            notes.append(f"The row's environment cannot be read as NAME=value words: {env_text}")
    checkpoint = meta.checkpoint if is_hub_id(meta.checkpoint) else "<repository id not recorded>"
    if checkpoint != meta.checkpoint:
        notes.append(f"The recipe gives no repository id for its checkpoint ({meta.checkpoint}).")
    try:
        words: Sequence[str] = split_args(flags)
    except FlagSyntaxError:
        notes.append(f"The serve flags cannot be split into shell words: {flags}")
        words = []
    groups: Groups = [[*serve_program(engine), checkpoint], *flag_groups(words)]
    return head + "\n" + shell_command(groups, env)


_PORTS = {"vllm": 8000, "sglang": 30000, "llama.cpp": 8080}
"""Where each engine's server listens by default: the benchmark is pointed there."""


@dataclass(frozen=True)
class _Setting:
    prompt: int | None
    output: int | None
    context: int
    concurrency: int | None
    rate: float | None
    burstiness: float | None
    repetitions: int | None

    def stem(self, slug: str) -> str:
        parts = [slug, f"p{self.prompt}" if self.prompt else "p-unknown"]
        if self.output:
            parts.append(f"o{self.output}")
        if self.context:
            parts.append(f"d{self.context}")
        if self.concurrency:
            parts.append(f"c{self.concurrency}")
        if self.rate is not None:
            parts.append(f"r{_number(self.rate)}")
        return "-".join(parts)


def _setting(row: Mapping[str, Any]) -> _Setting:
    prompt = row.get("prompt_tokens")
    return _Setting(
        prompt if isinstance(prompt, int) else None,
        row.get("output_tokens"),
        row.get("context_tokens") or 0,
        row.get("concurrency"),
        row.get("request_rate"),
        row.get("burstiness"),
        row.get("repetitions"),
    )


_SECONDS = 60
"""How long GuideLLM and AIPerf run at the setting (GuideLLM's documented example runs 60 s)."""


def _num_prompts(s: _Setting) -> int:
    """vLLM's and SGLang's ``--num-prompts`` (their default, 1000, runs for hours at a long output): ten
    rounds of the concurrency, or about a minute of a finite rate; between 10 and 500."""
    if s.rate is not None and not math.isinf(s.rate) and not s.concurrency:
        return max(10, min(500, math.ceil(s.rate * _SECONDS)))
    return max(10, min(500, 10 * (s.concurrency or 10)))


GUIDELLM_RUN = Version("0.7")
"""GuideLLM runs benchmarks with ``guidellm run`` and ``kind=`` options from this version on."""


def _tool_version(row: Mapping[str, Any]) -> Version | None:
    """The version the row's ``harness`` names (``guidellm 0.8.1``), when it names one."""
    parts = str(row.get("harness") or "").split()
    try:
        return Version(parts[-1]) if len(parts) > 1 else None
    except InvalidVersion:
        return None


def _lengths_and_depth(s: _Setting, tool: str, notes: list[str]) -> None:
    """Say what of the row's lengths and depth ``tool`` cannot be given."""
    if s.prompt is None:
        notes.append(f"The row does not record its prompt length: {tool} uses its default.")
    if s.output is None:
        notes.append(f"The row does not record its output length: {tool} uses its default.")
    if s.context:
        notes.append(
            f"The row was measured {s.context:,} tokens deep into a context, which {tool} cannot set "
            "(llama-benchy's --depth can): the benchmark measures it at depth 0."
        )


def _load_options(s: _Setting, tool: str, notes: list[str]) -> Groups:
    """The options that set the load: prompt and output lengths, concurrency, rate (vLLM and SGLang)."""
    out: Groups = []
    if s.prompt is not None:
        out.append(["--random-input-len", str(s.prompt)])
    if s.output is not None:
        out.append(["--random-output-len", str(s.output)])
    _lengths_and_depth(s, tool, notes)
    if s.concurrency is not None:
        out.append(["--max-concurrency", str(s.concurrency)])
    if s.rate is not None:
        out.append(["--request-rate", _number(s.rate)])
        if s.burstiness is not None and tool == "sglang bench_serving":
            # SGLang's arrivals are Poisson, burstiness 1; it has no --burstiness
            if s.burstiness != 1 and not math.isinf(s.rate):
                notes.append(
                    "sglang bench_serving sends Poisson arrivals (burstiness 1): it cannot set the row's "
                    f"burstiness {_number(s.burstiness)}."
                )
        elif s.burstiness is not None:
            out.append(["--burstiness", _number(s.burstiness)])
    return out


def _harness(
    meta: RecipeMeta, slug: str, row: Mapping[str, Any], tool: str, s: _Setting, notes: list[str]
) -> tuple[Groups, str]:
    """The benchmark command and the file it writes."""
    model = meta.checkpoint
    served = ["--served-model-name", meta.served_model] if meta.served_model else []
    stem = s.stem(slug)
    port = _PORTS.get(engine_kind(str(row.get("engine") or meta.engine)), 8000)
    if tool == "vllm bench serve":
        out = f"{stem}.json"
        metadata = [f"node={row['node']}"]
        version = row.get("engine_version")
        if version and version != "unknown":
            metadata.append(f"engine_version={version}")
        if row.get("engine_build"):
            metadata.append(f"engine_build={row['engine_build']}")
        return [
            [
                "vllm",
                "bench",
                "serve",
                "--model",
                model,
                *served,
                *(["--port", str(port)] if port != 8000 else []),
            ],
            ["--dataset-name", "random", "--ignore-eos"],
            *_load_options(s, tool, notes),
            ["--num-prompts", str(_num_prompts(s))],
            ["--save-result", "--result-filename", out],
            ["--metadata", *metadata],
        ], out
    if tool == "sglang bench_serving":
        out = f"{stem}.jsonl"
        return [
            ["python", "-m", "sglang.bench_serving", "--backend", "sglang"]
            + (["--port", str(port)] if port != 30000 else []),
            ["--model", model],
            ["--dataset-name", "random", "--random-range-ratio", "1"],
            *_load_options(s, tool, notes),
            ["--num-prompts", str(_num_prompts(s))],
            ["--output-file", out],
        ], out
    if tool == "llama-bench":
        out = f"{stem}.json"
        lines: Groups = [["llama-bench", "-m", f"<the GGUF file of {meta.checkpoint}>"]]
        if s.prompt is not None:
            lines.append(["-p", str(s.prompt)])
        if s.output is not None:
            lines.append(["-n", str(s.output)])
        if s.context:
            lines.append(["-d", str(s.context)])
        if s.repetitions:
            lines.append(["-r", str(s.repetitions)])
        if (s.concurrency or 1) > 1 or s.rate is not None:
            notes.append("llama-bench runs one stream: it cannot measure the row's concurrency or rate.")
        lines.append(["-o", "json", Verbatim(">"), out])
        return lines, out
    if tool == "guidellm":
        version = _tool_version(row)
        if version is not None and version < GUIDELLM_RUN:
            return _guidellm(meta, s, stem, port, notes)
        return _guidellm_run(meta, s, stem, port, notes)
    if tool == "aiperf":
        if str(row.get("harness") or "").lower().startswith("genai-perf"):
            notes.append("The row was measured with genai-perf: the command runs its successor AIPerf.")
        return _aiperf(meta, s, stem, port, notes)
    # llama-benchy
    out = f"{stem}.json"
    lines = [["llama-benchy", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", model, *served]]
    if s.prompt is not None:
        lines.append(["--pp", str(s.prompt)])
    else:
        notes.append("The row does not record its prompt length: llama-benchy uses its default.")
    if s.output is not None:
        lines.append(["--tg", str(s.output)])
    else:
        notes.append("The row does not record its output length: llama-benchy uses its default.")
    lines.append(["--depth", str(s.context)])
    lines.append(["--concurrency", str(s.concurrency or 1)])
    if s.repetitions:
        lines.append(["--runs", str(s.repetitions)])
    if s.rate is not None:
        notes.append("llama-benchy runs closed-loop: it cannot set the row's request rate.")
    lines.append(["--format", "json", "--save-result", out])
    return lines, out


def _guidellm(meta: RecipeMeta, s: _Setting, stem: str, port: int, notes: list[str]) -> tuple[Groups, str]:
    """``guidellm benchmark`` (its CLI from 0.3 to 0.6) at the row's setting, writing its JSON report."""
    out = f"{stem}.json"
    lines: Groups = [["guidellm", "benchmark", "--target", f"http://127.0.0.1:{port}"]]
    lines.append(["--model", meta.served_model or meta.checkpoint])
    if meta.served_model:
        lines.append(["--processor", meta.checkpoint])
    if s.rate is not None and not (math.isinf(s.rate) and s.concurrency):
        if math.isinf(s.rate):
            lines.append(["--rate-type", "throughput"])
        else:
            # Poisson arrivals are burstiness 1; guidellm's other open-loop rate is evenly spaced
            kind = "poisson" if s.burstiness == 1 else "constant"
            lines.append(["--rate-type", kind, "--rate", _number(s.rate)])
        if s.concurrency:
            notes.append(
                "guidellm cannot cap the concurrency of a run at a rate: the command sets the rate only."
            )
    else:
        lines.append(["--rate-type", "concurrent", "--rate", str(s.concurrency or 1)])
    data = [f"prompt_tokens={s.prompt}"] if s.prompt is not None else []
    data += [f"output_tokens={s.output}"] if s.output is not None else []
    if data:
        lines.append(["--data", ",".join(data)])
    _lengths_and_depth(s, "guidellm", notes)
    lines.append(["--max-seconds", str(_SECONDS)])
    lines.append(["--output-path", out])
    return lines, out


def _guidellm_run(
    meta: RecipeMeta, s: _Setting, stem: str, port: int, notes: list[str]
) -> tuple[Groups, str]:
    """``guidellm run`` (GuideLLM 0.7 on, and a row that names no version) at the row's setting."""
    out = f"{stem}.json"
    model = meta.served_model or meta.checkpoint
    lines: Groups = [
        ["guidellm", "run", "--backend", f"kind=openai_http,target=http://127.0.0.1:{port},model={model}"]
    ]
    if meta.served_model:
        lines.append(["--tokenizer", f"kind=huggingface_auto,model={meta.checkpoint}"])
    cap = f",max_concurrency={s.concurrency}" if s.concurrency else ""
    if s.rate is not None and not (math.isinf(s.rate) and s.concurrency):
        if math.isinf(s.rate):
            profile = "kind=throughput"
        else:
            # Poisson arrivals are burstiness 1; guidellm's other open-loop rate is evenly spaced
            kind = "poisson" if s.burstiness == 1 else "constant"
            profile = f"kind={kind},rate={_number(s.rate)}{cap}"
    else:
        profile = f"kind=concurrent,streams={s.concurrency or 1}"
    lines.append(["--profile", profile])
    data = ["kind=synthetic_text"]
    data += [f"prompt_tokens={s.prompt}"] if s.prompt is not None else []
    data += [f"output_tokens={s.output}"] if s.output is not None else []
    lines.append(["--data", ",".join(data)])
    _lengths_and_depth(s, "guidellm", notes)
    lines.append(["--constraint", f"kind=max_duration,seconds={_SECONDS}"])
    lines.append(["--output", f"kind=json,path={out}"])
    return lines, out


def _aiperf(meta: RecipeMeta, s: _Setting, stem: str, port: int, notes: list[str]) -> tuple[Groups, str]:
    """``aiperf profile`` at the row's setting; it writes ``profile_export_aiperf.json`` into its
    artifact folder."""
    lines: Groups = [["aiperf", "profile", "--model", meta.served_model or meta.checkpoint]]
    if meta.served_model:
        lines.append(["--tokenizer", meta.checkpoint])
    lines.append(["--url", f"127.0.0.1:{port}", "--endpoint-type", "chat", "--streaming"])
    if s.prompt is not None:
        lines.append(["--synthetic-input-tokens-mean", str(s.prompt), "--synthetic-input-tokens-stddev", "0"])
    if s.output is not None:
        # without ignore_eos a request may stop before its output length
        lines.append(
            ["--output-tokens-mean", str(s.output), "--output-tokens-stddev", "0"]
            + ["--extra-inputs", "ignore_eos:true"]
        )
    _lengths_and_depth(s, "aiperf", notes)
    if s.concurrency:
        lines.append(["--concurrency", str(s.concurrency)])
    if s.rate is not None and not math.isinf(s.rate):
        lines.append(["--request-rate", _number(s.rate)])
        if s.burstiness is not None and s.burstiness != 1:
            notes.append("aiperf sends at a constant or Poisson rate: it cannot set the row's burstiness.")
    elif s.rate is not None and not s.concurrency:
        notes.append("aiperf cannot send every request at once: set --request-rate or --concurrency.")
    lines.append(["--benchmark-duration", str(_SECONDS)])
    lines.append(["--artifact-dir", stem])
    return lines, f"{stem}/profile_export_aiperf.json"


TODAY = Verbatim('"$(date -u +%F)"')
"""The day the import runs, as the shell gives it (SGLang's output records no date)."""


def _import_line(
    slug: str, row: Mapping[str, Any], tool: str, outs: Sequence[str], notes: list[str]
) -> Groups:
    """The import line for the benchmark outputs ``outs`` (one for a row, a run's settings' for a run)."""
    fmt = IMPORT_FORMATS[tool]
    words: Groups = [
        ["python", "-m", "builder", "import", "--from", fmt, *outs],
        ["--recipe", slug],
        ["--node", str(row["node"])],
    ]
    if fmt == "sglang":
        words.append(["--date", TODAY])
    version = row.get("engine_version")
    if fmt != "vllm-bench":  # vllm bench serve records them through --metadata
        if version and version != "unknown":
            words.append(["--engine-version", str(version)])
        if row.get("engine_build"):
            words.append(["--engine-build", str(row["engine_build"])])
    if row.get("flags") is not None:
        words.append(["--flags", row["flags"]])
    if row.get("env") is not None:
        words.append(["--env", row["env"]])
    if not version or version == "unknown":
        notes.append("Pass the engine version you run to import with --engine-version V.")
    return words


SERVE_FIELDS: tuple[str, ...] = ("engine", "engine_version", "engine_build", "flags", "env")
"""The row fields :func:`serve_command` reads besides the recipe's: the rows of one run share them."""


def serve_command(meta: RecipeMeta, row: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """The serve command as the row ran it, and what it cannot say (reads :data:`SERVE_FIELDS`)."""
    notes: list[str] = []
    command = _serve(meta, row, str(row.get("engine") or meta.engine), notes)
    return command, tuple(notes)


def runnable_command(meta: RecipeMeta, row: Mapping[str, Any]) -> str | None:
    """The serve command of ``row`` (:func:`serve_command`) when it can be run as recorded: the
    checkpoint is a repository id and the command has flags (the row's, or the recipe's when the row
    leaves them unrecorded) that split into shell words, and an environment that reads as
    ``NAME=value`` words. ``None`` otherwise: the chooser never offers such a result as its answer."""
    if not is_hub_id(meta.checkpoint):
        return None
    flags = row.get("flags")
    if flags is None and not meta.flags.strip():
        return None  # neither the row nor the recipe records serve flags
    try:
        split_args(meta.flags if flags is None else flags)
        if row.get("env") is not None:
            parse_env(row["env"])
    except FlagSyntaxError:
        return None
    return serve_command(meta, row)[0]


def _benchmark(
    meta: RecipeMeta, slug: str, row: Mapping[str, Any], notes: list[str]
) -> tuple[str, Groups, str]:
    """``(tool, benchmark command, the file it writes)`` at the row's setting."""
    engine = str(row.get("engine") or meta.engine)
    recorded = row.get("harness")
    tool = (_known_tool(recorded) if recorded else None) or _own_tool(engine)
    if not recorded:
        notes.append(f"The row does not record its benchmark tool: the commands use {tool}, {engine}'s own.")
    elif _known_tool(recorded) is None:
        notes.append(
            f"The row was measured with {recorded}, for which the site has no command: "
            f"the commands use {tool}, {engine}'s own benchmark."
        )
    harness, out = _harness(meta, slug, row, tool, _setting(row), notes)
    return tool, harness, out


def benchmark_commands(
    meta: RecipeMeta, slug: str, row: Mapping[str, Any]
) -> tuple[str, str, str, tuple[str, ...]]:
    """``(tool, benchmark command, import line, notes)`` at the row's setting."""
    notes: list[str] = []
    tool, harness, out = _benchmark(meta, slug, row, notes)
    import_line = _import_line(slug, row, tool, [out], notes)
    return tool, shell_command(harness), shell_command(import_line), tuple(notes)


def combine(serve: tuple[str, tuple[str, ...]], bench: tuple[str, str, str, tuple[str, ...]]) -> Reproduction:
    """The reproduction made of :func:`serve_command`'s and :func:`benchmark_commands`' results."""
    tool, harness, import_line, notes = bench
    return Reproduction(serve[0], harness, import_line, tuple(dict.fromkeys(serve[1] + notes)), tool)


def reproduce(meta: RecipeMeta, slug: str, row: Mapping[str, Any]) -> Reproduction:
    """The commands that reproduce ``row`` of the recipe ``slug`` (whose front matter is ``meta``)."""
    return combine(serve_command(meta, row), benchmark_commands(meta, slug, row))


@dataclass(frozen=True)
class Benchmark:
    """One setting's benchmark command in a run, and the rows measured at that setting."""

    tool: str
    """The benchmark tool (``vllm bench serve``, ``llama-benchy``...)."""
    command: str
    """The benchmark command, as :func:`reproduce` gives it for each of these rows."""
    lines: tuple[int, ...]
    """The lines of the row file these rows start on."""


@dataclass(frozen=True)
class Serving:
    """One server of a run (the rows of a row file usually share one) and the other commands of its rows."""

    serve: str
    """The server as these rows ran it (:func:`serve_command`)."""
    lines: tuple[int, ...]
    """The lines of the row file its rows start on."""
    notes: tuple[tuple[str, tuple[int, ...]], ...]
    """What the rows do not record, each once (:func:`reproduce`'s notes), with the lines of the rows
    it concerns, or none when it concerns them all."""
    benchmarks: tuple[Benchmark, ...]
    """A benchmark command per setting (distinct command), in the order of the rows."""
    imports: tuple[str, ...]
    """The import lines for every benchmark's output: one per tool and node, usually one."""


@dataclass(frozen=True)
class RunReproduction:
    """The commands that reproduce the rows of one run (a row file), each command once."""

    servings: tuple[Serving, ...]
    """A server and its rows' commands per distinct serve command (:data:`SERVE_FIELDS`); one for a run."""

    def text(self) -> str:
        """All of it as one shell script, as :meth:`Reproduction.text` writes a row's: the notes as
        comments, then the serve command, a benchmark command per setting (each after a comment with
        the lines of its rows) and the import line."""
        parts: list[str] = []
        for number, serving in enumerate(self.servings):
            if len(self.servings) > 1:
                parts += [""] if number else []  # a blank line between servers
                parts.append(f"# the rows on {_lines(serving.lines)}:")
            for note, lines in serving.notes:
                parts.append(f"# {_lines(lines)}: {_comment(note)}" if lines else f"# {_comment(note)}")
            tools = dict.fromkeys(b.tool for b in serving.benchmarks)
            parts += ["# 1. serve", serving.serve]
            one_tool = f" ({next(iter(tools))})" if len(tools) == 1 else ""
            parts.append(f"# 2. benchmark{one_tool}, a command per setting")
            for bench in serving.benchmarks:
                parts.append(f"# {_lines(bench.lines)}" + ("" if one_tool else f" ({bench.tool})"))
                parts.append(bench.command)
            parts.append("# 3. import the results as a row file")
            parts += serving.imports
        return "\n".join(parts) + "\n"


def _lines(lines: Sequence[int]) -> str:
    """``line 4``, ``lines 2-4, 7``."""
    return f"{'line' if len(lines) == 1 else 'lines'} {line_ranges(sorted(lines))}"


@dataclass
class _Server:
    """The commands of one server's rows, gathered row by row (:func:`reproduce_run`)."""

    serve: tuple[str, tuple[str, ...]]
    lines: list[int] = field(default_factory=list)
    benchmarks: dict[str, tuple[str, list[int]]] = field(default_factory=dict)
    """Benchmark command to its tool and the lines of its rows."""
    notes: dict[str, list[int]] = field(default_factory=dict)
    """Note of a benchmark command or import line to the lines of the rows it concerns."""
    imports: dict[tuple[tuple[tuple[bool, str], ...], ...], tuple[Mapping[str, Any], str, list[str]]] = field(
        default_factory=dict
    )
    """Import line without its outputs to a row it is made for, its tool and the outputs."""

    def add(self, meta: RecipeMeta, slug: str, line: int, row: Mapping[str, Any]) -> None:
        self.lines.append(line)
        notes: list[str] = []
        tool, harness, out = _benchmark(meta, slug, row, notes)
        self.benchmarks.setdefault(shell_command(harness), (tool, []))[1].append(line)
        import_line = _import_line(slug, row, tool, [], notes)
        key = tuple(tuple((isinstance(w, Verbatim), str(w)) for w in group) for group in import_line)
        outs = self.imports.setdefault(key, (row, tool, []))[2]
        if out not in outs:
            outs.append(out)
        for note in dict.fromkeys(notes):
            self.notes.setdefault(note, []).append(line)

    def serving(self, slug: str) -> Serving:
        notes: list[tuple[str, tuple[int, ...]]] = [(note, ()) for note in self.serve[1]]
        notes += [
            (note, () if len(lines) == len(self.lines) else tuple(lines))
            for note, lines in self.notes.items()
            if note not in self.serve[1]
        ]
        return Serving(
            serve=self.serve[0],
            lines=tuple(self.lines),
            notes=tuple(notes),
            benchmarks=tuple(
                Benchmark(tool, command, tuple(lines)) for command, (tool, lines) in self.benchmarks.items()
            ),
            imports=tuple(
                shell_command(_import_line(slug, row, tool, outs, []))
                for row, tool, outs in self.imports.values()
            ),
        )


def reproduce_run(
    meta: RecipeMeta, slug: str, rows: Sequence[Mapping[str, Any]], lines: Sequence[int]
) -> RunReproduction:
    """The commands that reproduce ``rows``, the rows of one run (a row file) starting on ``lines``,
    each command once: the serve command per server the rows record (:data:`SERVE_FIELDS`; a run has
    one), the benchmark command per setting and an import line for all the outputs.

    Made by the functions that make one row's (:func:`reproduce`): every serve and benchmark command
    is the one :func:`reproduce` gives for some of the rows, and an import line is a row's with every
    output of its tool and node where the row's has its own.
    """
    servers: dict[tuple[Any, ...], _Server] = {}
    for row, line in zip(rows, lines, strict=True):
        key = tuple(row.get(name) for name in SERVE_FIELDS)
        server = servers.get(key)
        if server is None:
            server = servers[key] = _Server(serve_command(meta, row))
        server.add(meta, slug, line, row)
    return RunReproduction(tuple(server.serving(slug) for server in servers.values()))


class NoSuchRow(ValueError):
    """``PATH:LINE`` names no row of the site (message ready for the user)."""


def row_at(site: Site, rel: str, line: int) -> dict[str, Any]:
    """The row that starts on ``line`` of the row file ``rel`` (relative to the site root), with its
    fields as pages see them; :class:`NoSuchRow` says why there is none."""
    file_id = next((i for i, f in enumerate(site.row_files) if f.source.rel == rel), None)
    if file_id is None:
        raise NoSuchRow(
            f"{rel}: not a row file of the site (row files are data/rows/<recipe>/*.csv|jsonl|parquet)"
        )
    parsed = site.row_files[file_id]
    mine = site.rows.filter(pc.equal(site.rows.column("file_id"), file_id))
    starts = {parsed.line_of(r): i for i, r in enumerate(mine.column("file_row").to_pylist())}
    if line not in starts:
        if not starts:
            raise NoSuchRow(f"{rel}: the file has no valid row (run: python -m builder check)")
        lines = sorted(starts)
        raise NoSuchRow(
            f"{rel}:{line}: no row starts on this line (rows start on lines {line_ranges(lines)})"
        )
    row: dict[str, Any] = mine.slice(starts[line], 1).to_pylist()[0]
    return row


def line_ranges(numbers: Sequence[int]) -> str:
    """``2-5, 7, 9-10``."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
