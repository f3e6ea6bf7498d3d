"""Install each benchmark harness at a pinned version, run it briefly against the stand-in server, and
refresh the fixtures its output files become (tests/fixtures/harness/).

    python bench/harness/run_harnesses.py                      # the light harnesses, installing as needed
    python bench/harness/run_harnesses.py --tools aiperf       # one harness
    python bench/harness/run_harnesses.py --tools vllm sglang  # the serving benchmarks (see below)

Each harness gets its own venv, ``<--venvs>/<tool>-<version>`` (default ``~/.cache/llm-recipes/harnesses``;
made once, reused), installed from the package registry at the version in :data:`PINS`, so a new
harness release is one edit of :data:`PINS` and one run away. vLLM and SGLang are large installs (torch,
CUDA libraries): for them the script installs the package with ``--no-deps`` plus only what its
benchmark module imports (:data:`SLIM_DEPS`), and runs that module; a full install works as well.

Each run sends a handful of requests (a few seconds each) to ``bench/standin_server.py``, started here on
a free loopback port at :data:`SPEED`, with a tokenizer of one token per word
(``bench/harness/make_tokenizer.py``) so no model hub is needed. The runs cover a closed-loop
concurrency, an open-loop rate and, where the tool records failures, a run where the stand-in fails every
second request and one where it fails all of them. The output files are copied, as written, to
``<--out>/<tool>-<version>/``, and ``<--out>/runs.json`` lists every file with the tool, its version, the
command, the importer format and what the stand-in was set to (the prompt and output lengths, the load,
the failures): ``tests/importers/test_harness_fixtures.py`` imports each file and checks the values
against those settings, within 2 %. Files of tools not run this time are kept with their entries. Each
tool's help for the command ``reproduce`` prints goes to ``<--out>/cli/<tool>-<version>.txt``, against
which tests/site/test_reproduce_cli.py checks every option of a printed command.

Standard library only: run it with any Python 3.11.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PINS = {
    "llama-benchy": "0.4.0",
    "guidellm": "0.8.1",
    "aiperf": "0.13.0",
    "vllm": "0.34.0",
    "sglang": "0.5.23",
}
LIGHT = ("llama-benchy", "guidellm", "aiperf")
_BENCH_DEPS = ["aiohttp", "numpy", "tqdm", "pillow", "requests", "pydantic", "huggingface-hub", "pybase64"]
SLIM_DEPS = {
    # found by importing `vllm bench serve` and adding what was missing; torch is the one big piece (its
    # CUDA libraries come with it from the registry, unused here)
    "vllm": [
        *_BENCH_DEPS,
        *("torch==2.14.0", "transformers>=5.16.1,<5.23", "psutil", "pyzmq", "uvloop", "fastapi", "uvicorn"),
        *("cachetools", "prometheus-client", "openai", "openai-harmony", "cbor2", "msgspec", "cloudpickle"),
        *("py-cpuinfo", "llguidance", "xgrammar", "partial-json-parser", "watchfiles", "orjson", "einops"),
    ],
    "sglang": [
        *_BENCH_DEPS,
        *("torch==2.14.1", "transformers==5.19.0", "orjson", "psutil", "starlette", "msgspec", "pyzmq"),
        *("ipython", "datasets", "torchvision", "apache-tvm-ffi==0.1.11", "sentencepiece"),
        *("compressed-tensors", "gguf"),
    ],
}
"""What each serving benchmark's module imports, for a ``--no-deps`` install of the package (a full install
pulls GPU kernels, flashinfer among them, that the registry does not serve for every pin)."""

SPEED = {"tok_s": 40.0, "ttft_ms": 6000.0, "ttft_ms_per_prompt_token": 2.0}
"""The stand-in's speed: 25 ms between tokens; a first token after 6 s + 2 ms per prompt token, long
enough that a harness's own delay in sending a request (up to 100 ms seen on a busy 2-core machine, in
GuideLLM's rate schedules) stays under 2 % of the time to first token."""
PROMPT, OUTPUT = 128, 128
"""Lengths of every request: 128 output tokens take 3.2 s, over which a first token read late by a busy
client shifts a per-request decode rate by well under 2 %."""
MODEL = "standin"


@dataclass
class Run:
    """One harness invocation and the files it leaves."""

    name: str
    """Stem of the fixture files."""
    fmt: str
    """The importer's ``--from`` format."""
    argv: Callable[[Path, str, Path], list[str]]
    """(venv bin, base URL, work folder) → the command."""
    outputs: dict[str, str]
    """Fixture file name → the file the run writes, relative to the work folder (``-`` = its stdout)."""
    load: dict[str, str]
    """The load the run put on the stand-in, as the importer writes it (``request_rate``, ``concurrency``, ``burstiness``)."""
    fail_every: int = 0
    """The stand-in fails every n-th request (0: none)."""
    expect: dict[str, Any] = field(default_factory=dict)
    """Extra expectations: ``requests``, ``failed_requests``; ``refused:<file>`` (the import error);
    ``load-unrecorded:`` (the files that do not record the load)."""


def _tok(work: Path) -> str:
    """The tokenizer made for this session (``<tmp>/tokenizer``; a run works in ``<tmp>/work/<tool>/<run>``)."""
    return str(work.parents[2] / "tokenizer")


def _llama_benchy(concurrency: list[int], fmt: str, out: str) -> Callable[[Path, str, Path], list[str]]:
    def argv(bin_: Path, url: str, work: Path) -> list[str]:
        return [
            str(bin_ / "llama-benchy"),
            *("--base-url", f"{url}/v1", "--model", MODEL, "--tokenizer", _tok(work)),
            *("--pp", str(PROMPT), "--tg", str(OUTPUT), "--runs", "2", "--latency-mode", "none"),
            *("--concurrency", *map(str, concurrency)),
            *("--book-url", f"{url}/corpus.txt", "--skip-coherence"),
            *("--format", fmt, "--save-result", str(work / out)),
        ]

    return argv


def _guidellm(
    profile: str, count: int, outputs: list[tuple[str, str]]
) -> Callable[[Path, str, Path], list[str]]:
    def argv(bin_: Path, url: str, work: Path) -> list[str]:
        return [
            str(bin_ / "guidellm"),
            "run",
            *("--backend", f"kind=openai_http,target={url},model={MODEL}"),
            *("--profile", profile),
            *("--data", f"kind=synthetic_text,prompt_tokens={PROMPT},output_tokens={OUTPUT}"),
            *("--tokenizer", f"kind=huggingface_auto,model={_tok(work)}"),
            *("--constraint", f"kind=max_requests,count={count}"),
            *(arg for kind, out in outputs for arg in ("--output", f"kind={kind},path={work / out}")),
            "--disable-console-interactive",
        ]

    return argv


def _aiperf(load: list[str], count: int, folder: str) -> Callable[[Path, str, Path], list[str]]:
    def argv(bin_: Path, url: str, work: Path) -> list[str]:
        return [
            str(bin_ / "aiperf"),
            "profile",
            *("--model", MODEL, "--url", url, "--endpoint-type", "chat", "--streaming"),
            *("--tokenizer", _tok(work)),
            *("--synthetic-input-tokens-mean", str(PROMPT), "--synthetic-input-tokens-stddev", "0"),
            *("--output-tokens-mean", str(OUTPUT), "--output-tokens-stddev", "0"),
            *load,
            *(
                "--request-count",
                str(count),
                "--output-artifact-dir",
                str(work / folder),
                "--ui-type",
                "none",
            ),
        ]

    return argv


def _serving(
    module: list[str], load: list[str], count: int, out: str
) -> Callable[[Path, str, Path], list[str]]:
    """vLLM's ``vllm bench serve`` and SGLang's ``bench_serving``: the same flags for a random dataset."""

    def argv(bin_: Path, url: str, work: Path) -> list[str]:
        return [
            str(bin_ / "python"),
            *module,
            *("--base-url", url, "--model", MODEL, "--tokenizer", _tok(work)),
            *("--random-input-len", str(PROMPT), "--random-output-len", str(OUTPUT)),
            *("--num-prompts", str(count), *load),
            *(
                ["--save-result", "--result-dir", str(work), "--result-filename", out]
                if out.endswith(".json")
                else []
            ),
            *(["--output-file", str(work / out)] if out.endswith(".jsonl") else []),
        ]

    return argv


_VLLM = ["-m", "vllm.entrypoints.cli.main", "bench", "serve", "--dataset-name", "random"]
"""``vllm bench serve`` (the ``vllm`` command's module) on its random dataset: token ids of the tokenizer."""

RUNS: dict[str, list[Run]] = {
    "llama-benchy": [
        Run(
            "c2",
            "llama-benchy",
            _llama_benchy([2], "json", "c2.json"),
            {"c2.json": "c2.json"},
            {"concurrency": "2"},
        ),
        Run(
            "c1", "llama-benchy", _llama_benchy([1], "md", "c1.md"), {"c1.md": "c1.md"}, {"concurrency": "1"}
        ),
    ],
    "guidellm": [
        Run(
            "synchronous",
            "guidellm",
            _guidellm("kind=synchronous", 4, [("json", "synchronous.json"), ("csv", "synchronous.csv")]),
            {"synchronous.json": "synchronous.json", "synchronous.csv": "synchronous.csv"},
            {"concurrency": "1"},
            expect={"refused:synchronous.csv": "only the JSON or YAML report is read"},
        ),
        Run(
            "concurrent-2",
            "guidellm",
            _guidellm("kind=concurrent,streams=2", 6, [("yaml", "concurrent-2.yaml")]),
            {"concurrent-2.yaml": "concurrent-2.yaml"},
            {"concurrency": "2"},
        ),
        Run(
            "constant-1",
            "guidellm",
            _guidellm("kind=constant,rate=1", 4, [("json", "constant-1.json")]),
            {"constant-1.json": "constant-1.json"},
            {"request_rate": "1.0"},
        ),
        Run(
            "poisson-1",
            "guidellm",
            _guidellm("kind=poisson,rate=1", 4, [("json", "poisson-1.json")]),
            {"poisson-1.json": "poisson-1.json"},
            {"request_rate": "1.0", "burstiness": "1"},
        ),
    ],
    "aiperf": [
        Run(
            "concurrency-2",
            "aiperf",
            _aiperf(["--concurrency", "2"], 6, "concurrency-2"),
            {
                "concurrency-2.json": "concurrency-2/profile_export_aiperf.json",
                "concurrency-2.csv": "concurrency-2/profile_export_aiperf.csv",
            },
            {"concurrency": "2"},
            expect={"load-unrecorded:": ["concurrency-2.csv"]},  # the CSV has no load: --concurrency gives it
        ),
        Run(
            "poisson-1",
            "aiperf",
            _aiperf(["--request-rate", "1", "--arrival-pattern", "poisson"], 4, "poisson-1"),
            {"poisson-1.json": "poisson-1/profile_export_aiperf.json"},
            {"request_rate": "1.0", "burstiness": "1"},
        ),
        Run(
            "half-failed",
            "aiperf",
            _aiperf(["--concurrency", "2"], 8, "half-failed"),
            {"half-failed.json": "half-failed/profile_export_aiperf.json"},
            {"concurrency": "2"},
            fail_every=2,
            expect={"requests": 8, "failed_requests": 4},
        ),
        Run(
            "all-failed",
            "aiperf",
            _aiperf(["--concurrency", "2"], 4, "all-failed"),
            # every request failed: AIPerf 0.13 writes no summary, only its per-request records
            {"all-failed.jsonl": "all-failed/profile_export.jsonl"},
            {"concurrency": "2"},
            fail_every=1,
            expect={"refused:all-failed.jsonl": "all 4 requests failed"},
        ),
    ],
    "vllm": [
        Run(
            "c2",
            "vllm-bench",
            _serving(
                _VLLM,
                ["--max-concurrency", "2"],
                6,
                "c2.json",
            ),
            {"c2.json": "c2.json", "c2.txt": "-"},
            {"concurrency": "2"},
        ),
        Run(
            "rate-1",
            "vllm-bench",
            _serving(
                _VLLM,
                ["--request-rate", "1"],
                4,
                "rate-1.json",
            ),
            {"rate-1.json": "rate-1.json"},
            {"request_rate": "1.0", "burstiness": "1.0"},
        ),
    ],
    "sglang": [
        Run(
            "c2",
            "sglang",
            _serving(
                # SGLang's "random" cuts ShareGPT conversations (a download); "random-ids" samples the
                # tokenizer's ids; a range ratio of 1 makes every length exact
                [
                    *("-m", "sglang.bench_serving", "--backend", "vllm", "--dataset-name", "random-ids"),
                    *("--random-range-ratio", "1"),
                ],
                ["--max-concurrency", "2"],
                6,
                "c2.jsonl",
            ),
            {"c2.jsonl": "c2.jsonl", "c2.txt": "-"},
            {"concurrency": "2"},
        ),
    ],
}


HELP = {
    "llama-benchy": ["llama-benchy", "--help"],
    "guidellm": ["guidellm", "run", "--help"],
    "aiperf": ["aiperf", "profile", "--help"],
    "vllm": ["python", "-m", "vllm.entrypoints.cli.main", "bench", "serve", "--help=all"],
    "sglang": ["python", "-m", "sglang.bench_serving", "--help"],
}
"""The help of the command ``reproduce`` prints for each tool: tests/site/test_reproduce_cli.py checks
every option of a printed command against it."""


def record_help(tool: str, bin_: Path, out: Path) -> None:
    """``<out>/cli/<tool>-<version>.txt``: the tool's help, as it prints it (wide, so no option is cut)."""
    program, *args = HELP[tool]
    env = {**os.environ, "COLUMNS": "400", "TERM": "dumb", "NO_COLOR": "1"}
    done = subprocess.run([str(bin_ / program), *args], capture_output=True, text=True, env=env, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"{tool} --help failed: {done.stderr[-2000:]}")
    (out / "cli").mkdir(parents=True, exist_ok=True)
    (out / "cli" / f"{tool}-{PINS[tool]}.txt").write_text(done.stdout)


def venv_of(tool: str, venvs: Path, install: bool) -> Path:
    """The bin folder of the tool's venv, made and installed when missing."""
    version = PINS[tool]
    venv = venvs / f"{tool}-{version}"
    marker = venv / ".installed"
    if marker.exists():
        return venv / "bin"
    if not install:
        raise SystemExit(f"{tool} {version} is not installed in {venv} (run without --no-install)")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    if tool in SLIM_DEPS:
        subprocess.run([*pip, "--no-deps", f"{tool}=={version}"], check=True)
        subprocess.run([*pip, *SLIM_DEPS[tool]], check=True)
    else:
        subprocess.run([*pip, f"{tool}=={version}"], check=True)
    marker.write_text(f"{tool}=={version}\n")
    return venv / "bin"


class StandIn:
    """``bench/standin_server.py`` on a free loopback port, for the length of a ``with``."""

    def __init__(self, fail_every: int) -> None:
        self.args = [
            sys.executable,
            str(REPO / "bench" / "standin_server.py"),
            *("--port", "0", "--model", MODEL, "--max-seconds", "900"),
            *("--tok-s", str(SPEED["tok_s"]), "--ttft-ms", str(SPEED["ttft_ms"])),
            *("--ttft-ms-per-prompt-token", str(SPEED["ttft_ms_per_prompt_token"])),
            *("--fail-every", str(fail_every)),
        ]

    def __enter__(self) -> str:
        self.process = subprocess.Popen(self.args, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # printed once it accepts connections
        if not line.startswith("listening on "):
            raise SystemExit(f"the stand-in did not start: {line!r}")
        return line.split()[-1]

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def run_tool(tool: str, bin_: Path, out: Path, work: Path, timeout: float) -> list[dict[str, Any]]:
    """Run every run of ``tool``; its fixture files go to ``out/<tool>-<version>/``."""
    version = PINS[tool]
    dest = out / f"{tool}-{version}"
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    entries = []
    # HOME: the tools' caches stay in the work folder. No HF_HUB_OFFLINE: with it AIPerf 0.13 takes a
    # tokenizer folder for a hub id; the hub is never reached, every tokenizer is the local one.
    env = {**os.environ, "HOME": str(work)}
    for run in RUNS[tool]:
        run_dir = work / tool / run.name
        run_dir.mkdir(parents=True)
        with StandIn(run.fail_every) as url:
            argv = run.argv(bin_, url, run_dir)
            started = time.monotonic()
            done = subprocess.run(argv, cwd=run_dir, env=env, capture_output=True, text=True, timeout=timeout)
        print(f"{tool} {run.name}: exit {done.returncode} in {time.monotonic() - started:.0f} s", flush=True)
        if done.returncode != 0 and run.fail_every != 1:  # a run where every request fails may exit non-zero
            sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
            raise SystemExit(f"{tool} {run.name} failed")
        for name, produced in run.outputs.items():
            if produced == "-":
                (dest / name).write_text(done.stdout)
            else:
                shutil.copyfile(run_dir / produced, dest / name)
            expect = {k: v for k, v in run.expect.items() if ":" not in k}
            refused = run.expect.get(f"refused:{name}")
            if name in run.expect.get("load-unrecorded:", ()):
                expect["load_recorded"] = False
            entries.append(
                {
                    "file": f"{dest.name}/{name}",
                    "tool": tool,
                    "version": version,
                    "format": run.fmt,
                    "command": [Path(argv[0]).name, *(a.replace(str(work.parent), "$TMP") for a in argv[1:])],
                    "prompt_tokens": PROMPT,
                    "output_tokens": OUTPUT,
                    "load": run.load,
                    "fail_every": run.fail_every,
                    **expect,
                    **({"refused": refused} if refused else {}),
                }
            )
    return entries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--tools", nargs="+", choices=sorted(PINS), default=list(LIGHT))
    parser.add_argument("--venvs", type=Path, default=Path.home() / ".cache" / "llm-recipes" / "harnesses")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures" / "harness")
    parser.add_argument("--no-install", action="store_true", help="use the venvs as they are")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one harness run may take")
    parser.add_argument("--help-only", action="store_true", help="record the tools' help, run nothing")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = args.out / "runs.json"
    previous = json.loads(manifest.read_text())["runs"] if manifest.exists() else []
    entries = list(previous)
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="harnesses-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        for tool in args.tools:
            try:
                bin_ = venv_of(tool, args.venvs, not args.no_install)
                tokenizer = str(Path(tmp) / "tokenizer")
                subprocess.run([str(bin_ / "python"), str(HERE / "make_tokenizer.py"), tokenizer], check=True)
                record_help(tool, bin_, args.out)
                if args.help_only:
                    continue
                ran = run_tool(tool, bin_, args.out, work, args.timeout)
            except (subprocess.SubprocessError, SystemExit, OSError) as exc:
                print(f"{tool}: {exc}", file=sys.stderr)
                failed.append(tool)
                continue
            # the manifest after each tool: one that fails later keeps the others' files listed
            entries = [entry for entry in entries if entry["tool"] != tool] + ran
            body = {"standin": {**SPEED, "model": MODEL}, "runs": entries}
            manifest.write_text(json.dumps(body, indent=2) + "\n")
            print(f"{tool}: {len(ran)} files; {manifest}", flush=True)
    if failed:
        print(f"not refreshed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
