"""Property tests of the flags and env parsers: exact round trips, typed errors, bounded time."""

from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from builder.content.flags import (
    _DECIMAL,
    FlagSyntaxError,
    flag_map,
    parse_env,
    parse_flags,
    serve_command,
    split_args,
)
from tests.conftest import examples

# No deadline: the examples are deterministic, and a loaded machine would turn slowness into failures.
FAST = settings(max_examples=examples(150), deadline=None)

names = st.from_regex(r"[a-z][a-z0-9]{0,8}([-_][a-z0-9]{1,6}){0,2}", fullmatch=True)
# A value is anything that does not itself read as a flag (a leading dash that is not a number).
values = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=20
).filter(lambda v: not v.startswith("-") and v.strip() == v and v[:1] not in "{[")


@FAST
@given(st.text(max_size=80))
def test_any_text_parses_or_raises_a_flag_syntax_error(text: str) -> None:
    try:
        flags = parse_flags(text)
    except FlagSyntaxError as exc:
        assert str(exc)
        return
    assert all(flag.name.startswith("-") for flag in flags)
    flag_map(text)  # the same input never fails one way and not the other
    assert serve_command("org/model", list(split_args(text)), {}, "vllm")


plain_values = values.filter(lambda v: v.lower() not in ("true", "false") and not _DECIMAL.fullmatch(v))


def spell(flags: dict[str, str | bool], *, equals: bool, underscores: bool, words: bool) -> str:
    parts = []
    for name, value in flags.items():
        name = name.replace("-", "_") if underscores else name.replace("_", "-")
        if value is True:
            parts.append(f"--{name} true" if words else f"--{name}")
        elif value is False:
            parts.append(f"--{name} false" if words else f"--no-{name}")
        elif equals:
            parts.append(shlex.quote(f"--{name}={value}"))
        else:
            parts.append(f"--{name} {shlex.quote(value)}")
    return " ".join(parts)


@FAST
@given(st.dictionaries(names, st.one_of(plain_values, st.booleans()), max_size=6))
def test_flags_round_trip_exactly(flags: dict[str, str | bool]) -> None:
    got = flag_map(spell(flags, equals=False, underscores=False, words=False))
    want: dict[str, str | bool] = {}
    for name, value in flags.items():
        key = "--" + name.replace("_", "-")
        want[key] = f"{want[key]} {value}" if key in want else value
    assert got == want


@FAST
@given(
    st.dictionaries(names, st.one_of(values, st.booleans()), max_size=6),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_every_spelling_of_the_same_flags_is_the_same(
    flags: dict[str, str | bool], equals: bool, underscores: bool, words: bool
) -> None:
    """``--a=1`` is ``--a 1``, ``--max_len`` is ``--max-len``, ``--x true`` is ``--x``."""
    plain = flag_map(spell(flags, equals=False, underscores=False, words=False))
    assert flag_map(spell(flags, equals=equals, underscores=underscores, words=words)) == plain


@FAST
# Unique as flags: --max_len and --max-len are one flag, whose last value wins.
@given(st.lists(st.tuples(names, values), max_size=5, unique_by=lambda t: t[0].replace("_", "-")))
def test_order_does_not_matter(pairs: list[tuple[str, str]]) -> None:
    forward = " ".join(f"--{n} {shlex.quote(v)}" for n, v in pairs)
    backward = " ".join(f"--{n} {shlex.quote(v)}" for n, v in reversed(pairs))
    assert flag_map(forward) == flag_map(backward)


env_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)


@FAST
@given(st.dictionaries(env_names, st.text(max_size=15)))
def test_env_round_trips(env: dict[str, str]) -> None:
    text = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    assert parse_env(text) == env


@FAST
@given(st.text(max_size=60))
def test_any_env_text_parses_or_raises_a_flag_syntax_error(text: str) -> None:
    try:
        env = parse_env(text)
    except FlagSyntaxError as exc:
        assert str(exc)
        return
    assert all(name and "=" not in name for name in env)


@FAST
@given(
    st.text(
        alphabet=st.one_of(st.sampled_from(" \t\r\n'\"\\-=a1\x0b\x1c\x85\xa0\u2003\u3000"), st.characters()),
        max_size=40,
    )
)
def test_fast_split_splits_as_shlex_does(text: str) -> None:
    """Plain strings skip shlex (the load of a big site parses thousands); the words must not change."""
    from builder.content.flags import _split

    try:
        expected: list[str] | str = shlex.split(text, comments=False, posix=True)
    except ValueError:
        expected = "error"
    try:
        got: list[str] | str = _split(text)
    except ValueError:
        got = "error"
    assert got == expected
