"""Run a printed command through ``bash`` with stub programs that record what they receive.

Each stub writes its name, its arguments and the environment variables it was asked to report to a
log (NUL-separated, counts first, so any argument text survives) and does nothing else. ``bash``
runs with an empty environment, ``PATH`` holding the stubs only and ``tmp_path`` as its working
folder: any command an injected value managed to start is either a stub (and shows in the log) or
not found (and shows on standard error).
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

STUBS = (
    "vllm",
    "python",
    "curl",
    "llama-server",
    "llama-bench",
    "llama-benchy",
    "guidellm",
    "aiperf",
    "duckdb",
    "touch",
    "id",
    "rm",
    "echo",
)
TODAY = "2026-01-02"
"""What the ``date`` stub prints."""


@dataclass(frozen=True)
class Call:
    """One run of a stub."""

    argv: list[str]
    """Its name and arguments."""
    env: dict[str, str]
    """The reported environment variables that were set."""


_STUB = r"""#!/bin/bash
{{ printf '%s\0' "$#" "${{0##*/}}" "$@"
  names=()
  for name in {names}; do [[ -v $name ]] && names+=("$name"); done
  printf '%s\0' "${{#names[@]}}"
  for name in "${{names[@]}}"; do printf '%s\0' "$name=${{!name}}"; done
}} >> {log}
"""


def _read(log: Path) -> list[Call]:
    if not log.exists():
        return []
    fields = log.read_bytes().decode("utf-8", "surrogateescape").split("\0")
    calls, pos = [], 0
    while pos < len(fields) - 1:
        count = int(fields[pos])
        argv = fields[pos + 1 : pos + 2 + count]
        pos += 2 + count
        n_env = int(fields[pos])
        env = dict(item.split("=", 1) for item in fields[pos + 1 : pos + 1 + n_env])
        pos += 1 + n_env
        calls.append(Call(argv, env))
    return calls


def run_bash(
    script: str,
    folder: Path,
    *,
    programs: tuple[str, ...] = (),
    env_names: tuple[str, ...] = (),
    writes: tuple[str, ...] = (),
) -> tuple[list[Call], str]:
    """Run ``script`` with ``bash`` in ``folder``; return the stubs' calls and standard error.

    ``programs`` are stub names besides :data:`STUBS` (an engine's own name); ``env_names`` the
    variables each stub reports; ``writes`` the files the script itself writes (a redirection):
    any other file in the working folder fails the run.
    """
    bin_dir = folder / "bin"
    work = folder / "cwd"
    bin_dir.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)
    log = folder / "calls"
    log.unlink(missing_ok=True)
    names = " ".join(shlex.quote(n) for n in env_names) or "''"
    for name in {*STUBS, *programs}:
        stub = bin_dir / name
        stub.write_text(_STUB.format(names=names, log=shlex.quote(str(log))), encoding="utf-8")
        stub.chmod(0o755)
    date = bin_dir / "date"
    date.write_text(_STUB.format(names="''", log=shlex.quote(str(log))) + f"echo {TODAY}\n", encoding="utf-8")
    date.chmod(0o755)
    done = subprocess.run(
        ["/bin/bash", "--noprofile", "--norc", "-s"],
        input=script.encode("utf-8", "surrogateescape"),
        cwd=work,
        env={"PATH": str(bin_dir)},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert sorted(p.name for p in work.iterdir()) == sorted(writes)
    for name in writes:
        (work / name).unlink()
    return _read(log), done.stderr.decode("utf-8", "replace")
