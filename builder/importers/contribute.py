"""``contribute``: a benchmark sent through the issue form becomes a branch with its row file, or a comment.

The issue is untrusted: it arrives as GitHub's ``issues`` event payload (a file), its form fields are
checked like command-line options, the output goes through ``import`` exactly as a pasted file, and the
site is checked. Everything happens in a temporary git worktree of the local clone, so the clone's own
working tree is never touched: on success the branch ``contribute/issue-<number>`` holds one commit (the
row file, and the node when the form names a new one) and :attr:`Contribution.body` is the pull request's
description, with what the change does to the site (findings it opens or closes); otherwise the branch is
not made and the body is a comment naming each field to fix. Pushing, opening the pull request and
commenting are left to :func:`publish` (or the workflow's ``gh`` steps), on the files the command writes.

Every text the contributor typed reaches markdown only inside a code block or span, and @-mentions
elsewhere are broken, so neither a comment nor a pull request can notify or link anyone they name.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shlex
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from builder.config import load_config
from builder.content.models import SLUG_RE
from builder.errors import ConfigError, DataError, Problem, Problems
from builder.importers import FORMATS, STDIN, STDIN_DISPLAY, detect
from builder.importers.importing import ImportOptions, ImportResult, prepare_import, write_import
from builder.importers.issue_form import DETECT, FIELDS, ISSUE, LABELS, FieldError, parse_form
from builder.review.diff import git as prdiff_git

MAX_BODY = 65536
"""The most characters GitHub lets an issue body hold: a larger event was not made by GitHub."""
BRANCH_PREFIX = "contribute/issue-"
COMMITTER = ("github-actions[bot]", "41898282+github-actions[bot]@users.noreply.github.com")
_LOGIN_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_CAP = re.compile(r"^(?:[1-9]\d*|none)$")
_RATE = re.compile(r"^(?:inf|\d+(?:\.\d+)?)$")
_FROM_CHOICES = re.compile(r"; pass --from [\w-]+(?: or --from [\w-]+)+$")
_MENTION = re.compile(r"@(?=[A-Za-z0-9_])")
_MAX_SHOWN = 3000
"""Characters of one field's errors shown in a comment (the rest is cut)."""
_LOAD_FLAGS = {
    "--max-concurrency": "concurrency",
    "--concurrency": "concurrency",
    "--request-rate": "request_rate",
}
_MISSING_HINT = {
    "engine_version": "the output does not record the engine version: fill in Engine version (the version "
    "the server reported, e.g. 0.24.0)",
    "date": "the output does not record the day of the run: fill in Date (YYYY-MM-DD)",
    "node": "the output does not name the node: fill in Node",
    "recipe": "fill in Recipe",
    "request_rate": "the output does not show the request rate: paste the benchmark's command line in "
    "Command line (or the 'Traffic request rate' line it printed, in Benchmark output)",
    "concurrency": "the output does not show the concurrency cap: paste the benchmark's command line in "
    "Command line (or the 'Maximum request concurrency' line it printed, in Benchmark output)",
    "load": "the output shows neither a concurrency nor a request rate: paste the benchmark's command line "
    "(with --concurrency N or --request-rate R) in Command line",
}
_MISSING_FIELD = {"request_rate": "command", "concurrency": "command", "load": "command"}
# row columns a message may name, and the form field that sets them
_COLUMN_FIELD = (
    ("engine_version", "engine_version"),
    ("engine_build", "engine_build"),
    ("recipe", "recipe"),
    ("node", "node"),
    ("hardware", "hardware"),
    ("date", "date"),
    ("time", "date"),
)


@dataclass(frozen=True)
class Issue:
    """What the builder takes from the event: GitHub's own values, and the body as untrusted text."""

    number: int
    login: str
    """The author's GitHub login (the rows' ``contributor``)."""
    user_id: int
    body: str


@dataclass
class Contribution:
    """The outcome: a pull request (``ok``) or a comment naming the fields to fix."""

    issue: Issue
    errors: list[FieldError] = field(default_factory=list)
    title: str = ""
    """The pull request's title (empty for a comment)."""
    body: str = ""
    """The pull request's description, or the comment."""
    branch: str = ""
    """The branch holding the commit (empty for a comment)."""
    base: str = ""
    """The commit the branch starts from."""
    files: tuple[str, ...] = ()
    """The files the commit adds or changes, relative to the repository's top."""

    @property
    def ok(self) -> bool:
        return not self.errors


def read_event(path: Path) -> Issue:
    """The issue of an ``issues`` event payload; a file GitHub did not write is refused."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read the event: {exc.strerror}", path) from None
    try:
        event = json.loads(raw)
    except ValueError as exc:
        raise DataError(f"not an event payload: not valid JSON ({exc})", path) from None
    issue = event.get("issue") if isinstance(event, dict) else None
    if not isinstance(issue, dict):
        raise DataError("not an issues event: no 'issue' object", path)
    if "pull_request" in issue:
        raise DataError("the event is about a pull request, not an issue", path)
    number, user, body = issue.get("number"), issue.get("user"), issue.get("body")
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise DataError(f"the issue number must be a whole number >= 1, not {number!r}", path)
    login = user.get("login") if isinstance(user, dict) else None
    user_id = user.get("id") if isinstance(user, dict) else None
    if not isinstance(login, str) or not _LOGIN_RE.match(login):
        raise DataError(f"the issue author's login {login!r} is not a GitHub login", path)
    if isinstance(user_id, bool) or not isinstance(user_id, int):
        raise DataError(f"the issue author's id must be a whole number, not {user_id!r}", path)
    if body is not None and not isinstance(body, str):
        raise DataError("the issue body must be text", path)
    return Issue(number, login, user_id, body or "")


# ------------------------------------------------------------------------------------------ the form


def _check_fields(values: dict[str, str | None]) -> list[FieldError]:
    errors = [
        FieldError(f.id, f"{f.label} is required") for f in FIELDS if f.required and values[f.id] is None
    ]
    for name in ("recipe", "node", "hardware"):
        value = values[name]
        if value is not None and not SLUG_RE.match(value):
            errors.append(
                FieldError(
                    name,
                    f"{LABELS[name]} must be an id (lowercase letters, digits, '.', '-', '_'), "
                    f"not {json.dumps(value)}",
                )
            )
    date = values["date"]
    if date is not None:
        try:
            dt.date.fromisoformat(date)
            if not _ISO_DATE.match(date):
                raise ValueError
        except ValueError:
            errors.append(FieldError("date", f"Date must be a day YYYY-MM-DD, not {json.dumps(date)}"))
    fmt = values["format"]
    if fmt is not None and fmt != DETECT and fmt not in FORMATS:
        errors.append(
            FieldError("format", f"Format must be one of {', '.join(FORMATS)}, not {json.dumps(fmt)}")
        )
    for name in ("engine_version", "engine_build"):
        value = values[name]
        if value is not None and "\n" in value:
            errors.append(FieldError(name, f"{LABELS[name]} must be one line"))
    return errors


def _pasted(values: dict[str, str | None], fmt: str | None) -> tuple[bytes, int]:
    """The output as ``import`` reads it, and how many lines were put above it: the command line, where
    the readers of printed summaries and tables look for the run's settings, when the text is still read
    as the same format with it (not JSON, not a CSV whose header must come first)."""
    output = (values["output"] or "").encode("utf-8")
    command = values["command"]
    if not command:
        return output, 0
    joined = f"{command}\n\n".encode() + output
    if fmt is None:
        fmt = detect(STDIN_DISPLAY, output, Problems())
    if fmt is not None and detect(STDIN_DISPLAY, joined, Problems()) == fmt:
        return joined, command.count("\n") + 2
    return output, 0


def _load_from_command(command: str | None) -> dict[str, str]:
    """The load flags a pasted command line gives explicitly (never a tool's default)."""
    try:
        words = shlex.split(command or "", comments=False)
    except ValueError:
        words = (command or "").split()
    out: dict[str, str] = {}
    for index, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name in _LOAD_FLAGS:
            if not eq and index + 1 < len(words):
                value = words[index + 1]
            key = _LOAD_FLAGS[name]
            if (key == "concurrency" and _CAP.match(value)) or (key == "request_rate" and _RATE.match(value)):
                out[key] = value
    return out


_COMMAND_LINE = re.compile(r"the command line on line (\d+)")


def _field_of(problem: Problem, command_lines: int = 0) -> str:
    """The form field a problem of the import or of ``check`` is about (``command_lines``: the lines of
    the Command line field put above the output)."""
    if problem.path == STDIN_DISPLAY:
        at = _COMMAND_LINE.search(problem.message)
        in_command = at is not None and int(at[1]) <= command_lines
        return "command" if in_command or 0 < (problem.line or 0) <= command_lines else "output"
    if problem.path.endswith("nodes.yaml"):
        return "hardware" if "hardware" in problem.message else "node"
    message = problem.message.split(" (from ", 1)[0]
    hits = [
        (match.start(), name)
        for word, name in _COLUMN_FIELD
        if (match := re.search(rf"\b{word}\b", message)) is not None
    ]
    return min(hits)[1] if hits else "output"


# ------------------------------------------------------------------------------------------ git


def git(args: Sequence[str], cwd: Path) -> str:
    """:func:`builder.review.diff.git`, its output without the closing line break."""
    return prdiff_git(args, cwd).strip()


# ------------------------------------------------------------------------------------------ the run


def contribute(root: Path, issue: Issue) -> Contribution:
    """Turn the issue into a branch of the clone holding ``root``, or into the errors to comment."""
    result = Contribution(issue)
    if len(issue.body) > MAX_BODY:
        result.errors.append(
            FieldError(
                "output",
                f"the issue holds {len(issue.body):,} characters, more than the {MAX_BODY:,} GitHub allows: "
                "paste one run's output (its summary or its result file)",
            )
        )
        return _comment(result)
    values, result.errors = parse_form(issue.body)
    if not result.errors:
        result.errors = _check_fields(values)
    if result.errors:
        return _comment(result)
    top = Path(git(["rev-parse", "--show-toplevel"], root))
    prefix = git(["rev-parse", "--show-prefix"], root)
    result.base = git(["rev-parse", "HEAD"], root)
    branch = f"{BRANCH_PREFIX}{issue.number}"
    with tempfile.TemporaryDirectory(prefix="builder-contribute-") as tmp:
        tree = Path(tmp) / "tree"
        git(["worktree", "add", "--quiet", "-B", branch, str(tree), result.base], top)
        committed = False
        try:
            _prepare(result, values, tree, prefix, branch)
            committed = result.ok
        finally:
            git(["worktree", "remove", "--force", str(tree)], top)
            if not committed:  # refused, or failed half-way: no branch is left behind
                git(["branch", "--quiet", "-D", branch], top)
    return _comment(result) if not result.ok else result


def _prepare(
    result: Contribution, values: dict[str, str | None], tree: Path, prefix: str, branch: str
) -> None:
    from builder.data.load import load_site
    from builder.review.check import check_site
    from builder.review.diff import diff_revisions, render_markdown

    site_root = tree / prefix
    config = load_config(site_root)
    recipe, node, hardware = values["recipe"], values["node"], values["hardware"]
    assert recipe is not None and node is not None and hardware is not None
    site = load_site(config, Problems())
    if recipe not in site.recipes:
        result.errors.append(
            FieldError("recipe", f"no recipe '{recipe}' on the site (content/recipes/{recipe}.md)")
        )
    known = set(site.hardware) or {n.hardware for n in site.nodes.values()} | {
        r.meta.hardware for r in site.recipes.values()
    }
    changed = []
    if node in site.nodes:
        if site.nodes[node].hardware != hardware:
            result.errors.append(
                FieldError(
                    "hardware",
                    f"node '{node}' is a '{site.nodes[node].hardware}' in data/nodes.yaml, not '{hardware}'",
                )
            )
    elif hardware not in known:
        result.errors.append(
            FieldError(
                "hardware",
                f"unknown hardware '{hardware}': one of {', '.join(sorted(known))}; a new kind of machine "
                "is added by a pull request (data/hardware.yaml)",
            )
        )
    else:
        _add_node(site_root / "data" / "nodes.yaml", node, hardware, result.issue)
        changed.append("data/nodes.yaml")
    if result.errors:
        return
    imported, command_lines = _import(config, values, result.issue)
    if not imported.ok:
        result.errors += [
            FieldError(_MISSING_FIELD.get(m.field, m.field), _MISSING_HINT[m.field]) for m in imported.missing
        ]
        result.errors += [
            FieldError(_field_of(p, command_lines), _in_form_words(p.message))
            for p in imported.problems.errors
        ]
        return
    write_import(imported)
    changed.append(imported.rel)
    report = check_site(config)
    mine = set(changed)
    result.errors += [FieldError(_field_of(p), p.format()) for p in report.errors if p.path in mine]
    if result.errors:
        return
    warnings = [p.format() for p in [*imported.problems.warnings, *report.warnings] if p.path in mine]
    result.files = tuple(f"{prefix}{rel}" for rel in changed)
    git(["add", "--", *result.files], tree)
    result.title = f"Benchmark of {recipe} on {node} from issue #{result.issue.number}"
    author = f"{result.issue.login} <{result.issue.user_id}+{result.issue.login}@users.noreply.github.com>"
    git(
        [
            "-c",
            f"user.name={COMMITTER[0]}",
            "-c",
            f"user.email={COMMITTER[1]}",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "--quiet",
            "--no-verify",
            f"--author={author}",
            "-m",
            f"{result.title}\n\nRows sent through the benchmark form in issue #{result.issue.number}.",
        ],
        tree,
    )
    result.branch = branch
    diff = render_markdown(diff_revisions(config, result.base, branch))
    result.body = _pull_request_body(result, values, imported, warnings, diff, "data/nodes.yaml" in changed)


def _in_form_words(message: str) -> str:
    """A message of ``import`` with its advice about ``--from`` put as the form's Format field."""
    message = message.replace("pass --from FORMAT", "choose it under Format")
    return _FROM_CHOICES.sub("; choose one under Format", message)


def _import(config: Any, values: dict[str, str | None], issue: Issue) -> tuple[ImportResult, int]:
    chosen = values["format"]
    fmt = None if chosen in (None, DETECT) else chosen
    pasted, command_lines = _pasted(values, fmt)
    options = ImportOptions(
        fmt=fmt,
        files=(Path(STDIN),),
        recipe=values["recipe"],
        node=values["node"],
        engine_version=values["engine_version"],
        engine_build=values["engine_build"],
        date=values["date"],
        contributor=issue.login,
        pasted=pasted,
    )
    imported = prepare_import(config, options)
    unknown = {m.field for m in imported.missing} & {"request_rate", "concurrency", "load"}
    given = {
        key: value
        for key, value in _load_from_command(values["command"]).items()
        if key in unknown or "load" in unknown
    }
    if given:
        # the command line says what the output does not, as --concurrency / --request-rate would
        imported = prepare_import(
            config,
            replace(options, concurrency=given.get("concurrency"), request_rate=given.get("request_rate")),
        )
    return imported, command_lines


def _add_node(path: Path, node: str, hardware: str, issue: Issue) -> None:
    """Append the node the form names (its id and hardware are checked ids; the login a GitHub login)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if text and not text.endswith("\n"):
        text += "\n"
    text += (
        f"{node}:\n  hardware: {hardware}\n  description: >-\n"
        f"    The machine of GitHub user {issue.login}, who sent its benchmark through the benchmark form\n"
        f"    in issue #{issue.number}. Nothing else about it is given.\n"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# ------------------------------------------------------------------------------------------ markdown


def code_block(text: str, lang: str = "text") -> str:
    """Text shown verbatim: a fence longer than any run of backticks inside, so nothing can close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def code_span(text: str) -> str:
    """One line shown verbatim inline."""
    flat = " ".join(text.split())
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    ticks = "`" * (longest + 1)
    return (
        f"{ticks} {flat} {ticks}" if flat.startswith("`") or flat.endswith("`") else f"{ticks}{flat}{ticks}"
    )


def quiet(markdown: str) -> str:
    """Markdown whose @-mentions notify no one (a zero-width space after each ``@``)."""
    return _MENTION.sub("@\u200b", markdown)


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


def _pull_request_body(
    result: Contribution,
    values: dict[str, str | None],
    imported: ImportResult,
    warnings: list[str],
    diff: str,
    new_node: bool,
) -> str:
    number = result.issue.number
    rows = f"{imported.rows} row{'s' if imported.rows != 1 else ''}"
    lines = [
        f"The benchmark sent in #{number} by GitHub user {code_span(result.issue.login)} through the benchmark "
        f"form, imported and checked by `python -m builder contribute`: {rows}.",
        "",
        f"Closes #{number}",
        "",
        "| field | value |",
        "|---|---|",
    ]
    for f in FIELDS:
        if f.id in ("output", "command"):
            continue
        value = values[f.id]
        shown = code_span(value) if value is not None else "—"
        if f.id == "node" and new_node:
            shown += " (new: added to `data/nodes.yaml`)"
        lines.append(f"| {f.label} | {shown} |")
    lines.append(f"| Files | {', '.join(code_span(path) for path in result.files)} |")
    if values["command"]:
        lines += ["", "**Command line**", "", code_block(_cut(values["command"]), "shell")]
    if warnings:
        lines += ["", "**Warnings**", "", code_block(_cut("\n".join(warnings)))]
    return "\n".join(lines) + "\n\n" + quiet(diff)


def _comment(result: Contribution) -> Contribution:
    lines = [
        "This benchmark could not become a pull request yet. Edit the issue to fix the fields below (keep the "
        "form's headings); it is read again on every edit.",
    ]
    by_field: dict[str, list[str]] = {}
    for error in result.errors:
        by_field.setdefault(error.field, []).append(error.message)
    for name, label in ((ISSUE, "The issue"), *((f.id, f.label) for f in FIELDS)):
        if name in by_field:
            lines += ["", f"**{label}**", "", code_block(_cut("\n".join(by_field[name])))]
    result.title, result.branch = "", ""
    result.body = "\n".join(lines) + "\n"
    return result


# ------------------------------------------------------------------------------------------ out


def write_outcome(result: Contribution, root: Path, out: Path) -> None:
    """The files the workflow's ``gh`` steps read: ``outcome`` (``pull-request`` or ``comment``),
    ``body.md``, and for a pull request ``title``, ``branch`` and ``contribution.bundle`` (the commit)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "outcome").write_text("pull-request\n" if result.ok else "comment\n", encoding="utf-8")
    (out / "body.md").write_text(result.body, encoding="utf-8")
    if result.ok:
        (out / "title").write_text(result.title + "\n", encoding="utf-8")
        (out / "branch").write_text(result.branch + "\n", encoding="utf-8")
        bundle = (out / "contribution.bundle").resolve()
        git(["bundle", "create", "--quiet", str(bundle), f"{result.base}..{result.branch}"], root)


Runner = Callable[[list[str]], int]
"""Runs one command (an argument list) and returns its exit code."""


def publish(result: Contribution, body_file: Path, run: Runner) -> list[list[str]]:
    """Push the branch and open (or update) the pull request, or comment on the issue, with ``git`` and
    ``gh`` (``GH_TOKEN`` in the environment). Returns the commands run; a failure is a :class:`ConfigError`."""
    ran: list[list[str]] = []

    def must(command: list[str]) -> None:
        ran.append(command)
        if run(command) != 0:
            raise ConfigError(f"{shlex.join(command)} failed")

    if not result.ok:
        comment = ["gh", "issue", "comment", str(result.issue.number), "--body-file", str(body_file)]
        ran.append([*comment, "--edit-last"])
        if run([*comment, "--edit-last"]) != 0:  # no earlier comment to replace
            must(comment)
        return ran
    must(["git", "push", "--force", "origin", f"{result.branch}:refs/heads/{result.branch}"])
    create = [
        "gh",
        "pr",
        "create",
        "--head",
        result.branch,
        "--title",
        result.title,
        "--body-file",
        str(body_file),
    ]
    ran.append(create)
    if run(create) != 0:  # already open from an earlier edit of the issue: update it
        must(["gh", "pr", "edit", result.branch, "--title", result.title, "--body-file", str(body_file)])
    return ran
