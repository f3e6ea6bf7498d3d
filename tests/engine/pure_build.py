"""The reference the engine's tests compare with: :func:`builder.engine.pure.build_site`, in memory.

The incremental engine and the plain pipeline share the domain but none of the engine's machinery
(load cache, memo, fingerprints, stage reuse, render workers, publishing), so a bug in that machinery
shows as a difference here; the comparison reads the engine's published tree and nothing else.
"""

from __future__ import annotations

from pathlib import Path

from builder.config import load_config
from builder.engine.output import MARKER
from builder.engine.pure import build_site
from builder.errors import BuildAborted, BuilderError
from tests.conftest import tree


def pure_build(root: Path, out: Path) -> tuple[list[str] | None, dict[str, bytes]]:
    """``build_site``'s problems (formatted, sorted; None when it succeeded) and its files."""
    try:
        return None, dict(build_site(load_config(root, out)))
    except BuildAborted as exc:
        return sorted(problem.format() for problem in exc.problems), {}
    except BuilderError as exc:
        return [exc.problem().format()], {}


def published(out: Path) -> dict[str, bytes]:
    """The site published in ``out`` as :func:`build_site` gives it: every file but the marker."""
    files = tree(out)
    assert files.pop(MARKER, None) is not None, f"{out} has no {MARKER}"
    return files


def differences(out: Path, expected: dict[str, bytes]) -> str:
    """What differs between the site published in ``out`` and ``expected`` (empty when nothing)."""
    got = published(out)
    only = sorted(set(got) ^ set(expected))
    differ = sorted(k for k in set(got) & set(expected) if got[k] != expected[k])
    return f"only in one tree: {only[:10]}; bytes differ: {differ[:10]}" if only or differ else ""
