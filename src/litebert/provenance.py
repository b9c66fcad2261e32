"""Where each value of a merged config came from, so that an error about a value names the
place the user gave it: `--max-steps -5: must be positive`, `--set max_steps=-5: ...` or
`recipe PATH: max_steps=-5: ...`, never the recipe for a value typed on the command line.

A config is merged from layers: its defaults, a recipe file, a checkpoint's record, the
command's flags and its `--set`. `Provenance` records, for each field, the `Source` of the
layer that gave it; a field inside a mapping or a list has a dotted name
(objective.temperature, phases.2.data) and, when no layer named it alone, the source of the
field that holds it. Validators know nothing of layers: they raise
`FieldError(field, value, why)`, and the code that merged the config spells it once, with
`Provenance.blame`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# The kinds of layer: a flag, --set, a file, the caller's overrides in code, the default.
FLAG, SET, FILE, GIVEN, DEFAULT = "flag", "set", "file", "given", "default"


class FieldError(ValueError):
    """A value one field cannot hold: what is wrong and what to do, without where the value
    came from. `related`: the other fields the reason speaks of, with their values, so that
    their sources are named too."""

    def __init__(self, field: str, value: Any, why: str,
                 related: Mapping[str, Any] | None = None, label: str = "") -> None:
        super().__init__(field, value, why, related, label)
        self.field, self.value, self.why = field, value, why
        self.related = dict(related or {})
        self.label = label  # the config the field belongs to, for a message without sources

    def __str__(self) -> str:
        head = f"{self.label} " if self.label else ""
        return f"{head}{self.field}={self.value!r}: {self.why}"

    def renamed(self, name: Callable[[str], str | None], before: str = "") -> FieldError:
        """The same error, of the same class, with each field's name passed through `name`
        (the path of the mapping or list that holds them; None drops a related field that
        is no field there) and `before` put before the why."""
        related = {name(k): v for k, v in self.related.items()}
        return type(self)(name(self.field) or self.field, self.value, before + self.why,
                          {k: v for k, v in related.items() if k is not None}, self.label)


@dataclass(frozen=True)
class Source:
    """One layer a value can come from: a flag (`label` its spelling), `--set`, a file
    (`label` names it: "recipe PATH", "checkpoint DIR"), the caller's overrides, or the
    config's default. `key`: the field a flag or --set gave, as the user named it."""

    kind: str
    label: str = ""
    key: str = ""

    @property
    def explicit(self) -> bool:
        """Given for this run by whoever started it, not inherited from a file or default."""
        return self.kind in (FLAG, SET, GIVEN)

    def spell(self, field: str, value: Any) -> str:
        """`field`'s `value` as this layer gave it."""
        own = field == self.key
        if self.kind == FLAG:
            return _as_flag(self.label, value) if own else f"{self.label}: {field}={value!r}"
        if self.kind == SET:
            return f"--set {field}={_as_yaml(value)}" if own else \
                f"--set {self.key}=...: {field}={value!r}"
        if self.kind == DEFAULT:
            return f"the default {field}={value!r}"
        return f"{self.label}: {field}={value!r}"


def _as_flag(flag: str, value: Any) -> str:
    if isinstance(value, bool):
        return flag if value else "--no-" + flag[2:]
    if isinstance(value, (list, tuple)):
        return " ".join([flag, *map(str, value)])
    return f"{flag} {value}"


def _as_yaml(value: Any) -> str:
    """A value as `--set` reads it (YAML; JSON is YAML)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str)


class Provenance:
    """The source of each field of one merged config; a field no layer named is the
    default's (`default`: the source to name then)."""

    def __init__(self, default: Source | None = None) -> None:
        self.default = default or Source(DEFAULT)
        self.sources: dict[str, Source] = {}

    def record(self, values: Mapping[str, Any], source: Source) -> None:
        """Every key of `values` came from `source`; a mapping's keys one by one
        (objective.temperature), so that a key no layer gave stays the default's."""
        for key, value in values.items():
            if isinstance(value, Mapping):
                self.sources.update({f"{key}.{sub}": source for sub in value})
            else:
                self.sources[key] = source

    def source_of(self, field: str) -> Source:
        """The field's own source, else that of the nearest field holding it (phases.2.lr
        -> phases.2 -> phases), else the default."""
        name = field
        while name not in self.sources and "." in name:
            name = name.rsplit(".", 1)[0]
        return self.sources.get(name, self.default)

    def explicit(self, field: str) -> bool:
        return self.source_of(field).explicit

    def spell(self, field: str, value: Any) -> str:
        return self.source_of(field).spell(field, value)

    def blame(self, err: FieldError) -> str:
        """The error as one sentence that starts where the value came from, and names where
        the related values came from after its reason."""
        text = f"{self.spell(err.field, err.value)}: {err.why}"
        if err.related:
            text += f" ({'; '.join(self.spell(k, v) for k, v in err.related.items())})"
        return text
