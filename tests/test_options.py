"""Command-line options generated from config dataclasses (litebert.options)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import pytest

from litebert.options import add_options, flags, given, option


@dataclass
class Example:
    name: str = option(help="what to call it")
    steps: int = option(10, "how many steps")
    rate: float | None = option(None, "how fast", shown="the recipe's")
    mode: str = option("a", "which mode, 50% of the time", choices=("a", "b"))
    fast: bool = option(False, "go fast")
    pair: tuple[float, float] = option((0.9, 0.99), "two numbers")
    table: dict = option(help="no flag form: reached some other way", factory=dict)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="x")
    assert add_options(p, Example) == ["name", "steps", "rate", "mode", "fast", "pair"]
    return p


def test_types_come_from_the_annotations():
    args = parser().parse_args(["--name", "n", "--steps", "3", "--rate", "0.5", "--mode", "b",
                                "--fast", "--pair", "1", "2"])
    assert given(args, Example) == dict(name="n", steps=3, rate=0.5, mode="b", fast=True,
                                        pair=(1.0, 2.0))
    assert given(parser().parse_args(["--name", "n", "--no-fast"]), Example) == dict(
        name="n", fast=False)


def test_untyped_options_are_not_given_so_the_config_keeps_its_defaults():
    assert given(parser().parse_args(["--name", "n"]), Example) == {"name": "n"}


def test_choices_and_required_fields_are_enforced():
    with pytest.raises(SystemExit):
        parser().parse_args(["--name", "n", "--mode", "c"])
    with pytest.raises(SystemExit):
        parser().parse_args([])


def test_help_says_what_and_the_default():
    text = " ".join(parser().format_help().split())
    for expected in ("--name NAME what to call it (required)",
                     "--steps N how many steps (default: 10)",
                     "--rate X how fast (default: the recipe's)",
                     "--mode {a,b} which mode, 50% of the time (default: a)",
                     "--fast, --no-fast go fast (default: off)",
                     "--pair X X two numbers (default: 0.9 0.99)"):
        assert expected in text
    assert "--table" not in text


def test_only_limits_the_options():
    p = argparse.ArgumentParser()
    assert add_options(p, Example, only=("steps", "fast")) == ["steps", "fast"]


def test_a_field_without_help_is_a_clear_error():
    @dataclass
    class Bare:
        steps: int = field(default=1)

    with pytest.raises(TypeError, match=r"Bare.steps has no help text"):
        add_options(argparse.ArgumentParser(), Bare)


def test_flags_name_each_fields_option_as_the_parser_spells_it():
    """What an error about a value from the command line names (litebert.provenance)."""
    @dataclass
    class Renamed:
        start_from: str = option("", "where to start", flag="--from")
        max_steps: int = option(1, "how many steps")

    p = argparse.ArgumentParser()
    add_options(p, Renamed)
    assert flags(Renamed) == {"start_from": "--from", "max_steps": "--max-steps"}
    assert given(p.parse_args(["--from", "d", "--max-steps", "-5"]), Renamed) == dict(
        start_from="d", max_steps=-5)
