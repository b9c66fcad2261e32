"""Pre-training objectives: what is trained, its batches, state, evaluation and export.

The protocols are in `base`: `TrainingObjective` (what the loop trains with),
`EvaluationObjective` (evaluation during a run and of exported directories, export) and
`Objective`, both; the loop (litebert.train.trainer) knows nothing else of an objective.
`OBJECTIVES` maps a name to the class; a new objective is a module here and one line in this
registry. A class outside the package is named `package.module:Class` (`resolve`, which
checks that it has every member of both protocols), so nothing depends on an objective's
module path or registry name.

- `objective_config(value, where)`: a recipe's `objective:` (a name, or a mapping with `name`
  and the class's own fields) -> that class's Config, each field checked by name and type.
- `evaluate_directory(model_dir, data_dir, ...)`: the one evaluation dispatch of an exported
  directory, for `litebert eval-pretraining` and studies: the first objective that reads it.
- `reporter_for(data_dir)`: what `litebert data inspect` and `data stats` read a data
  directory with (XLNet's streams have their own, plm_report.py).
"""

from __future__ import annotations

import dataclasses
import importlib
import textwrap
import typing
from pathlib import Path
from typing import Any

from litebert.model import CheckpointError
from litebert.objectives.base import (
    EvaluationObjective,
    Items,
    Objective,
    ObjectiveConfig,
    TrainingObjective,
    missing_members,
)
from litebert.objectives.electra import ElectraObjective
from litebert.objectives.mlm import MLMObjective
from litebert.objectives.plm import PLMObjective
from litebert.objectives.plm_report import reporter_for
from litebert.provenance import FieldError

OBJECTIVES: dict[str, type[Objective]] = {
    "mlm": MLMObjective,  # MLM + the data's SOP/NSP task (ALBERT, BERT, RoBERTa)
    "electra": ElectraObjective,  # generator MLM + replaced-token detection (ELECTRA)
    "plm": PLMObjective,  # permutation LM over XLNet's streams, with memories (XLNet)
}


class ObjectiveError(ValueError):
    """An unknown objective or a bad field of one; the message names it and the fix."""


def resolve(name: str) -> type[Objective]:
    """The class of a registry name or of `package.module:Class`."""
    if ":" not in name:
        if name in OBJECTIVES:
            return OBJECTIVES[name]
        raise ObjectiveError(f"objective {name!r}: unknown; choose from "
                             f"{', '.join(OBJECTIVES)} or give package.module:Class")
    module_name, _, attr = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ObjectiveError(f"objective {name!r}: cannot import {module_name} ({err}); is "
                             f"its directory on PYTHONPATH?") from None
    cls = getattr(module, attr, None)
    if not isinstance(cls, type):
        raise ObjectiveError(f"objective {name!r}: {module_name} has no objective class "
                             f"{attr!r} (see litebert.objectives.base.Objective)")
    missing = missing_members(cls)
    if missing:
        raise ObjectiveError(f"objective {name!r}: class {attr} lacks {', '.join(missing)}; "
                             f"an objective implements TrainingObjective and "
                             f"EvaluationObjective (litebert.objectives.base)")
    return cls


def objective_config(value: Any, where: str) -> ObjectiveConfig:
    """A recipe's `objective:` (a name, a mapping with `name` and fields, or a Config). A bad
    value of one field is a FieldError naming it (objective.FIELD), so that the run config
    can say where the value came from."""
    if isinstance(value, ObjectiveConfig):
        value = dataclasses.asdict(value)
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, dict):
        raise FieldError("objective", value, "give a name or a mapping {name: NAME, field: "
                                             "value, ...}")
    fields = dict(value)
    name = fields.pop("name", "mlm")
    if not isinstance(name, str):
        raise FieldError("objective.name", name, "give a name")
    try:
        config_class = resolve(name).Config
    except ObjectiveError as err:
        raise FieldError("objective.name", name, str(err)) from None
    hints = typing.get_type_hints(config_class)
    known = {f.name for f in dataclasses.fields(config_class)} - {"name"}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise FieldError(f"objective.{unknown[0]}", fields[unknown[0]],
                         f"unknown field(s) {', '.join(unknown)} for {name!r}; its fields: "
                         f"{', '.join(sorted(known)) or 'none'} (a name alone keeps the "
                         f"recipe's fields; objective: {{name: {name}}} starts from {name}'s "
                         f"defaults)")
    for key, raw in fields.items():
        fields[key] = _typed(raw, hints[key], f"objective.{key}")
    try:
        return config_class(name=name, **fields)
    except FieldError:
        raise
    except (TypeError, ValueError) as err:
        raise ObjectiveError(f"{where}: {err}") from None


def _typed(value: Any, hint: Any, field: str) -> Any:
    """`value` as the field's type (an int where a float is wanted is fine); else an error."""
    kinds = [k for k in typing.get_args(hint) if k is not type(None)] or [hint]
    if value is None and type(None) in typing.get_args(hint):
        return None
    for kind in kinds:
        if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(kind, type) and isinstance(value, kind) \
                and not (kind is int and isinstance(value, bool)):
            return value
    wanted = " or ".join(getattr(k, "__name__", str(k)) for k in kinds)
    raise FieldError(field, value, f"not a {wanted}")


def describe_fields() -> str:
    """Every built-in objective's own fields with help and default, for `--help`."""
    lines = ["objectives and their fields (recipe: objective: {name: NAME, FIELD: VALUE};",
             "command line: --objective NAME --set objective.FIELD=VALUE):"]
    for name, cls in OBJECTIVES.items():
        lines.append(f"  {name} ({cls.__module__}:{cls.__name__})")
        for f in dataclasses.fields(cls.Config):
            if f.name != "name":
                default = f.default if f.default_factory is dataclasses.MISSING \
                    else f.default_factory()
                text = f"{f.name}: {f.metadata.get('help', '')} (default: {default})"
                lines.append(textwrap.fill(text, 92, initial_indent="    ",
                                           subsequent_indent="      "))
    return "\n".join(lines)


def evaluate_directory(model_dir: str | Path, data_dir: str | Path, *, instances: int = 2000,
                       seed: int = 0, batch_size: int = 32,
                       **options: Any) -> tuple[type[EvaluationObjective], dict[str, Any]]:
    """(the objective class that scored it, its result) for an exported model directory on
    the held-out part of a data directory: the first objective whose `reads_directory` says
    so (the heads they look for do not overlap: an MLM head, a discriminator's head)."""
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise CheckpointError(f"{model_dir}: no such model directory")
    for cls in OBJECTIVES.values():
        if cls.reads_directory(model_dir):
            return cls, cls.evaluate_directory(model_dir, Path(data_dir), instances=instances,
                                               seed=seed, batch_size=batch_size, **options)
    raise CheckpointError(f"{model_dir}: no objective reads this model directory (no MLM "
                          f"head, no replaced-token detection head); pre-training evaluation "
                          f"needs the pre-training model a run exports")


__all__ = ["OBJECTIVES", "ElectraObjective", "EvaluationObjective", "Items", "MLMObjective",
           "Objective", "ObjectiveConfig", "ObjectiveError", "PLMObjective",
           "TrainingObjective", "describe_fields",
           "evaluate_directory", "objective_config", "reporter_for", "resolve"]
