"""Serve flags and env strings are parsed and normalised before they are compared (builder.content.flags)."""

from __future__ import annotations

import pytest

from builder.content.flags import FlagSyntaxError, flag_map, parse_env, parse_flags


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("--max-model-len=10240", "--max-model-len 10240"),  # = or a space
        ("--a 1 --b 2", "--b 2 --a 1"),  # order
        ("--max_model_len 4096", "--max-model-len 4096"),  # underscores
        ("--enable-prefix-caching", "--enable-prefix-caching true"),  # boolean spelled out
        ("--enable-prefix-caching True", "--enable-prefix-caching"),
        ("--no-enable-prefix-caching", "--enable-prefix-caching false"),
        ("--served-model-name 'my model'", '--served-model-name "my model"'),  # quoting style
        ("--served-model-name='my model'", "--served-model-name my\\ model"),
        ("--gpu-memory-utilization 0.70", "--gpu-memory-utilization 0.7"),  # decimals by value
        (
            '--speculative-config \'{"method": "mtp", "num_speculative_tokens": 3}\'',
            '--speculative-config=\'{"num_speculative_tokens":3,"method":"mtp"}\'',
        ),  # JSON by content
    ],
)
def test_equivalent_spellings_normalise_alike(one: str, other: str) -> None:
    assert flag_map(one) == flag_map(other)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("--max-model-len 10240", "--max-model-len 262144"),
        ("--enable-prefix-caching", "--no-enable-prefix-caching"),
        ("--a 1", "--a 1 --b"),
        ("--served-model-name 'a b'", "--served-model-name a"),
        ("--tensor-parallel-size 1", "--tensor-parallel-size 10"),
    ],
)
def test_different_flags_stay_different(one: str, other: str) -> None:
    assert flag_map(one) != flag_map(other)


def test_boolean_flags_and_values() -> None:
    assert flag_map("--enforce-eager --max-num-seqs 8 --no-x --offset -1") == {
        "--enforce-eager": True,
        "--max-num-seqs": "8",
        "--x": False,
        "--offset": "-1",  # a negative number is a value, not a flag
    }


def test_quoted_value_keeps_its_spaces_and_equals() -> None:
    assert flag_map("--chat-template-kwargs 'a=1 b=2'") == {"--chat-template-kwargs": "a=1 b=2"}


def test_typed_form_is_kept_for_display() -> None:
    [flag] = parse_flags("--max_model_len=4096")
    assert (flag.name, flag.value, flag.typed) == ("--max-model-len", "4096", "--max_model_len=4096")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("--a 'unclosed", "cannot split flags: No closing quotation"),
        ("model --a 1", "'model' is not a flag and follows no flag that takes a value"),
        ("--a 1 2", "'2' is not a flag and follows no flag that takes a value"),
    ],
)
def test_unreadable_flags_are_errors(text: str, message: str) -> None:
    with pytest.raises(FlagSyntaxError, match="^" + message.replace("(", r"\(") + "$"):
        flag_map(text)


def test_env_by_key() -> None:
    assert parse_env("B=2 A='x y'") == parse_env("A='x y' B=2") == {"A": "x y", "B": "2"}
    with pytest.raises(FlagSyntaxError, match="given twice"):
        parse_env("A=1 A=2")
    with pytest.raises(FlagSyntaxError, match="is not NAME=value"):
        parse_env("A")
