"""The one way a shell command is printed.

Every command the site or a command shows (serve commands, the API example, reproduce, the hints
of ``new``) is built as a list of arguments and printed by :func:`shell_command`, which quotes each
word with :func:`shlex.quote`: a value from content or data can never end a quote or start a command
of its own, whatever it holds. Only :class:`Verbatim` words, constants written in the builder's own
code, reach the shell as they are (``$(date -u +%F)``, a ``>`` redirection).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence


class Verbatim(str):
    """Shell text written in the builder's code (never from content or data), printed unquoted."""

    __slots__ = ()


Word = str | Verbatim
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""What the shell takes as the name of a variable assignment."""


class UnsafeCommand(ValueError):
    """An environment name the shell would not read as an assignment."""


RESERVED = frozenset(
    "if then else elif fi case esac for select while until do done in function time coproc".split()
)
"""Words bash reads as syntax when they start a command; ``shlex.quote`` leaves them bare."""


def _word(word: Word) -> str:
    return str(word) if isinstance(word, Verbatim) else shlex.quote(word)


def _program(word: Word) -> str:
    """The first word of the command: also quoted when it would read as an assignment (``A=b``, which
    ``shlex.quote`` leaves bare) or a reserved word."""
    if isinstance(word, Verbatim) or not (word in RESERVED or "=" in word):
        return _word(word)
    return "'" + word.replace("'", "'\"'\"'") + "'"


def shell_command(groups: Iterable[Sequence[Word]], env: Mapping[str, str] | None = None) -> str:
    """The command made of ``groups`` (one line each, continued with a backslash), every word quoted,
    after ``NAME=value`` assignments (one a line) for ``env`` sorted by name.

    Raise :class:`UnsafeCommand` for an environment name that is not ``[A-Za-z_][A-Za-z0-9_]*`` (the
    shell would run it as a command).
    """
    lines = []
    for name, value in sorted((env or {}).items()):
        if not ENV_NAME.fullmatch(name):
            raise UnsafeCommand(f"'{name}' is not an environment variable name")
        lines.append(f"{name}={shlex.quote(value)} \\")
    parts = [" ".join(_word(w) for w in group) for group in groups if group]
    if parts:  # the program: the first word of the first group
        first = next(group for group in groups if group)
        parts[0] = " ".join([_program(first[0]), *(_word(w) for w in first[1:])])
    lines.append(" \\\n  ".join(parts))
    return "\n".join(lines)
