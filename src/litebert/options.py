"""Command-line options generated from a config dataclass, so every field has its help text
once, next to its default, and `--help` cannot drift from the config.

    lr: float = option(1e-3, "peak learning rate")

becomes `--lr X  peak learning rate (default: 0.001)`. The option's type comes from the
annotation: int, float, str, Path, `X | None`, bool (--flag / --no-flag), `bool | str` with
choices (--flag [CHOICE] / --no-flag: on, a named way of being on, or off), a fixed-length
tuple (one value per element). Fields of other types (dict, list) get no option; `--set`
reaches them where a command offers it.

Every generated option has the argparse default None: `given(args, cls)` then returns only
what was typed, and the dataclass (or a recipe file) supplies the rest.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from collections.abc import Mapping
from pathlib import Path
from types import UnionType
from typing import Any

SCALARS = (int, float, str, Path)
METAVARS = {int: "N", float: "X"}  # strings and paths keep argparse's FIELD_NAME


def option(default: Any = dataclasses.MISSING, help: str = "", *, choices=None,
           shown: str | None = None, factory: Any = dataclasses.MISSING,
           flag: str | None = None, metavar: str | None = None) -> Any:
    """A dataclass field with its help text; `choices` limits the values, `shown` replaces
    the printed default where the value alone would mislead (None meaning "the recipe's");
    `flag` names the option where the field's name cannot (`--from` for start_from: `from`
    is a Python keyword); `metavar` names its value in --help."""
    # A mapping stays as given: a registry (its keys the choices) read live, so that a name
    # registered after this field was declared is accepted too.
    live = choices if isinstance(choices, Mapping) else None
    meta = {"help": help, "choices": live or (tuple(choices) if choices is not None else None),
            "shown": shown, "flag": flag, "metavar": metavar}
    return dataclasses.field(default=default, default_factory=factory, metadata=meta)


def _unwrap(hint: Any) -> Any:
    """`X | None` / Optional[X] -> X."""
    if isinstance(hint, UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else None
    return hint


def _shown(f: dataclasses.Field) -> str:
    if f.metadata.get("shown"):
        return f.metadata["shown"]
    value = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return " ".join(map(str, value))
    return "none" if value is None else str(value)


def _is_flag_or_choice(hint: Any) -> bool:
    """`bool | str` (or `bool | str | None`): a switch that may also name how it is on."""
    args = set(typing.get_args(hint)) - {type(None)}
    return args == {bool, str}


def _argument(cls: type, f: dataclasses.Field, hint: Any) -> dict[str, Any] | None:
    """add_argument keywords for one field; None for a type with no flag form."""
    text = f.metadata.get("help")
    if not text:
        raise TypeError(f"{cls.__name__}.{f.name} has no help text: declare it with "
                        f"litebert.options.option(default, 'what it does')")
    kind = _unwrap(hint)
    kw: dict[str, Any] = {"default": None}
    if kind is bool:
        kw["action"] = argparse.BooleanOptionalAction
    elif _is_flag_or_choice(hint):  # --flag alone means "true"; --no-flag is added beside it
        kw.update(nargs="?", const="true")
    elif kind in SCALARS:
        kw.update(type=kind, metavar=METAVARS.get(kind))
    elif typing.get_origin(kind) is tuple and len(set(typing.get_args(kind))) == 1 \
            and typing.get_args(kind)[0] in SCALARS:
        element = typing.get_args(kind)[0]
        kw.update(type=element, nargs=len(typing.get_args(kind)), metavar=METAVARS.get(element))
    else:
        return None
    if f.metadata.get("metavar"):
        kw["metavar"] = f.metadata["metavar"]
    if f.metadata.get("choices"):
        kw["choices"] = f.metadata["choices"]
        kw.pop("metavar", None)  # argparse then shows {a,b,c}
    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
        kw["required"] = True
        tail = "(required)"
    else:
        tail = f"(default: {_shown(f)})"
    kw["help"] = f"{text} {tail}".replace("%", "%%")  # argparse %-formats help strings
    return kw


def add_options(parser: argparse._ActionsContainer, cls: type, *,
                only: typing.Iterable[str] | None = None) -> list[str]:
    """One `--field-name` option per field of `cls` (or of `only`); returns their names."""
    hints = typing.get_type_hints(cls)
    wanted = None if only is None else set(only)
    added = []
    for f in dataclasses.fields(cls):
        if wanted is not None and f.name not in wanted:
            continue
        kw = _argument(cls, f, hints[f.name])
        if kw is not None:
            flag = flag_of(f)
            parser.add_argument(flag, dest=f.name, **kw)
            if _is_flag_or_choice(hints[f.name]):
                parser.add_argument("--no-" + flag[2:], dest=f.name, action="store_const",
                                    const="false", help=f"the same as {flag} false "
                                                        f"(default: {_shown(f)})")
            added.append(f.name)
    return added


def flag_of(f: dataclasses.Field) -> str:
    """The option a field is given with: `--field-name`, or the flag its option() names."""
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def flags(cls: type) -> dict[str, str]:
    """Each field of `cls` -> its option's spelling, for naming where a value came from."""
    return {f.name: flag_of(f) for f in dataclasses.fields(cls)}


def given(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The fields of `cls` that were given on the command line (nargs lists -> tuples)."""
    out = {}
    for f in dataclasses.fields(cls):
        value = getattr(args, f.name, None)
        if value is not None:
            out[f.name] = tuple(value) if isinstance(value, list) else value
    return out
