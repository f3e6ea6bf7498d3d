"""Printing problems for people (text) and for machines (json, GitHub annotations)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from builder.errors import BuildAborted, BuilderError, Problem


def format_text(errors: Iterable[Problem], warnings: Iterable[Problem] = ()) -> str:
    lines = [p.format() for p in errors]
    lines += [f"{p.format()} (warning)" for p in warnings]
    return "\n".join(lines)


def _escape_github(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def format_github(
    errors: Sequence[Problem], warnings: Sequence[Problem] = (), findings: Sequence[dict[str, Any]] = ()
) -> str:
    """GitHub workflow commands: one annotation per problem, shown on the PR's diff."""
    out = []
    for kind, items in (("error", errors), ("warning", warnings)):
        for p in items:
            props = f"file={_escape_github(p.path, prop=True)}"
            if p.line is not None:
                props += f",line={p.line}"
            out.append(f"::{kind} {props}::{_escape_github(p.message)}")
    for finding in findings:
        path = finding.get("path") or f"content/recipes/{finding.get('recipe')}.md"
        props = f"file={_escape_github(path, prop=True)}"
        if finding.get("line") is not None:
            props += f",line={finding['line']}"
        kind = "drifting" if finding.get("kind") == "drift" else "non-reproducing"
        title = _escape_github(f"{kind} {finding.get('metric')}", prop=True)
        message = " ".join(
            str(finding[key]) for key in ("summary", "detail", "explanation") if finding.get(key)
        ) or json.dumps(finding, default=str)
        out.append(f"::notice {props},title={title}::{_escape_github(str(message))}")
    return "\n".join(out)


def format_findings(findings: Sequence[dict[str, Any]]) -> str:
    """One ``path:line: finding: ...`` line per finding: its summary first, then the metric and setting,
    the explanation and the annotation."""
    lines = []
    for finding in findings:
        where = f"{finding['path']}:{finding['line']}" if finding.get("path") else finding["recipe"]
        text = (
            f"{where}: finding ({finding['recipe']}): {finding['summary']} {finding['detail']} "
            f"{finding['explanation']}"
        )
        note = finding.get("annotation")
        if note:
            text += f" [annotated {note['status']}: {note['reason']}]"
        lines.append(text)
    return "\n".join(lines)


def print_problems(exc: BuilderError, stream: TextIO | None = None) -> None:
    stream = stream or sys.stderr
    if isinstance(exc, BuildAborted):
        text = format_text(exc.problems, exc.warnings)
        if text:
            print(text, file=stream)
        print(f"build failed: {exc.message}; the previous site was left as it was", file=stream)
    else:
        print(f"error: {exc}", file=stream)
