"""Serve flags and environment strings, parsed and normalised for comparison.

``--a=1`` and ``--a 1`` are the same flag; so are ``--max_model_len`` and ``--max-model-len`` (vLLM
accepts both spellings). A flag followed by another flag or by nothing is boolean; ``--no-x`` is
``--x`` set to false, and ``--x true`` is ``--x``. JSON values (``--speculative-config '{...}'``)
compare by content, not spacing; decimals by value (``0.70`` is ``0.7``). Quotes only group words.
Order never matters.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from builder.content.shell import ENV_NAME, shell_command

FlagValue = str | bool
_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_DECIMAL = re.compile(r"-?\d+\.\d*")


class FlagSyntaxError(ValueError):
    """The string cannot be split into flags (an unclosed quote, a stray value)."""


@dataclass(frozen=True)
class Flag:
    """One flag as typed and as normalised."""

    name: str
    """Normalised name: leading dashes kept, underscores turned into dashes."""
    value: FlagValue
    """The value, ``True``/``False`` for boolean flags, JSON re-serialised canonically."""
    typed: str
    """The flag as it appeared (for display)."""


def _normalise_name(raw: str) -> str:
    dashes = len(raw) - len(raw.lstrip("-"))
    return raw[:dashes] + raw[dashes:].replace("_", "-")


def _normalise_value(value: str) -> FlagValue:
    text = value.strip()
    if text[:1] in "{[":
        try:
            return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
        except ValueError:
            return value
    if text.lower() in ("true", "false"):  # ``--x true`` is ``--x``
        return text.lower() == "true"
    if _DECIMAL.fullmatch(text):  # 0.70 is 0.7, 1.0 is 1
        return text.rstrip("0").rstrip(".")
    return value


def _is_flag(token: str) -> bool:
    return token.startswith("-") and not _NUMBER.fullmatch(token) and token != "-"


# What shlex treats specially besides its whitespace (quotes, escapes), and the whitespace of
# str.split() that shlex does not split on: a string with none of them splits the same either way.
_NOT_PLAIN = re.compile(r"[\'\"\\\x0b\x0c\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


def _split(text: str) -> list[str]:
    """``shlex.split(text, posix=True)``, with ``str.split`` for the plain strings most are."""
    if not _NOT_PLAIN.search(text):
        return text.split()
    return shlex.split(text, comments=False, posix=True)


@functools.lru_cache(maxsize=4096)
def split_args(text: str) -> tuple[str, ...]:
    """The argument list of a flags string, as ``shlex.split`` gives it (the one reading of flags:
    commands print these words, each quoted); raise :class:`FlagSyntaxError` when it cannot split."""
    try:
        return tuple(_split(text))
    except ValueError as exc:
        raise FlagSyntaxError(f"cannot split flags: {exc}") from None


def parse_flags(text: str) -> list[Flag]:
    """Split a flags string into flags; raise :class:`FlagSyntaxError` on what cannot be read."""
    tokens = split_args(text)
    flags: list[Flag] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if not _is_flag(token):
            raise FlagSyntaxError(f"'{token}' is not a flag and follows no flag that takes a value")
        if "=" in token and token.startswith("--"):
            name, value = token.split("=", 1)
            flags.append(Flag(_normalise_name(name), _normalise_value(value), token))
            index += 1
            continue
        nxt = tokens[index + 1] if index + 1 < len(tokens) else None
        if nxt is not None and not _is_flag(nxt):
            flags.append(Flag(_normalise_name(token), _normalise_value(nxt), f"{token} {shlex.quote(nxt)}"))
            index += 2
            continue
        name = _normalise_name(token)
        if name.startswith("--no-"):
            flags.append(Flag("--" + name[5:], False, token))
        else:
            flags.append(Flag(name, True, token))
        index += 1
    return flags


def flag_map(text: str) -> dict[str, FlagValue]:
    """Normalised ``{name: value}``; a flag given twice keeps both values joined in order."""
    out: dict[str, FlagValue] = {}
    for flag in parse_flags(text):
        if flag.name in out:
            out[flag.name] = f"{out[flag.name]} {flag.value}"
        else:
            out[flag.name] = flag.value
    return out


def format_value(value: FlagValue | None) -> str:
    """How a flag value is shown to readers."""
    if value is None:
        return "(absent)"
    if value is True:
        return "on"
    if value is False:
        return "off"
    return value


def parse_env(text: str) -> dict[str, str]:
    """``K=V K2='two words'`` → mapping; raise :class:`FlagSyntaxError` on a malformed item."""
    try:
        items = _split(text)
    except ValueError as exc:
        raise FlagSyntaxError(f"cannot split env: {exc}") from None
    env: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not ENV_NAME.fullmatch(name):
            raise FlagSyntaxError(f"env item '{item}' is not NAME=value")
        if name in env:
            raise FlagSyntaxError(f"env variable '{name}' is given twice")
        env[name] = value
    return env


def flag_groups(args: Sequence[str]) -> list[list[str]]:
    """``args`` grouped one flag and its values a group (a line of a printed command)."""
    groups: list[list[str]] = []
    for word in args:
        if _is_flag(word) or not groups:
            groups.append([])
        groups[-1].append(word)
    return groups


def is_hub_id(checkpoint: str) -> bool:
    """``owner/name``: a checkpoint a server can download."""
    parts = checkpoint.split("/")
    return len(parts) == 2 and all(p and " " not in p for p in parts)


def engine_kind(engine: str) -> str:
    """The engine's name as the site tells engines apart (``llama.cpp`` for its spellings)."""
    name = engine.lower().replace("_", "-").replace(" ", "")
    if name in ("llama.cpp", "llamacpp", "llama-cpp", "llama-server"):
        return "llama.cpp"
    return name


def serve_program(engine: str) -> list[str]:
    """The words that start the engine's server, before the checkpoint."""
    known = {
        "vllm": ["vllm", "serve"],
        "sglang": ["python", "-m", "sglang.launch_server", "--model-path"],
        "llama.cpp": ["llama-server", "-hf"],
    }
    return known.get(engine_kind(engine), [engine, "serve"])


def serve_command(checkpoint: str, args: Sequence[str], env: Mapping[str, str], engine: str) -> str:
    """The shell command a reader can paste: ``env`` assignments, then the server with its
    checkpoint and flag arguments, one flag per line."""
    return shell_command([[*serve_program(engine), checkpoint], *flag_groups(args)], env)
