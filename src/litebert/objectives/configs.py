"""The objectives' own fields: what a recipe's `objective:` holds and how it is read.

Each built-in objective's Config is declared here, not beside its class: a class imports
torch and the models, and `litebert pretrain --help` lists every objective's fields (and
`litebert recipes` reads the run config) without loading either. `BUILTIN` names where each
built-in class lives; litebert.objectives.registry imports the classes themselves
(OBJECTIVES), and its tests check that the two agree.

- `objective_config(value, where)`: a recipe's `objective:` (a name, or a mapping with `name`
  and the class's own fields) -> that class's Config, each field checked by name and type.
- `describe_fields()`: every built-in objective's fields, for `--help`.
"""

from __future__ import annotations

import dataclasses
import importlib
import textwrap
import typing
from dataclasses import dataclass
from typing import Any

from litebert.options import option
from litebert.provenance import FieldError


class ObjectiveError(ValueError):
    """An unknown objective or a bad field of one; the message names it and the fix."""


# torch.compile's modes (a run's `compile`, litebert.train.run_config) -> whether it replays
# CUDA graphs. "default": inductor's kernels; "reduce-overhead": the same, replayed as CUDA
# graphs (one launch a step: for small models, where launches cost more than the arithmetic;
# static shapes only); "max-autotune-no-cudagraphs": matmul kernels tuned at compile time
# (minutes more of compiling); "max-autotune": both. Each replay writes its outputs where the
# previous replay's were.
COMPILE_MODES: dict[str, bool] = {"default": False, "reduce-overhead": True,
                                  "max-autotune-no-cudagraphs": False, "max-autotune": True}
CUDA_GRAPH_MODES = tuple(mode for mode, replays in COMPILE_MODES.items() if replays)

@dataclass
class ObjectiveConfig:
    """The fields every objective has; each objective's Config adds its own (declared with
    litebert.options.option, so `litebert pretrain --help` lists them)."""

    name: str = option("mlm", "the objective: a built-in name (litebert.objectives.OBJECTIVES) "
                              "or package.module:Class")


CROSS_EVALUATIONS = ("own", "both")  # MLMConfig.eval_pair_tasks


@dataclass
class MLMConfig(ObjectiveConfig):
    eval_pair_tasks: str = option(
        "own", "sentence-pair tasks of each evaluation: own = the data's pair task only; "
               "both = also SOP and NSP pairs drawn once per run from the same held-out "
               "documents (the paper's cross evaluation, as `litebert eval-pretraining` "
               "scores them)", choices=CROSS_EVALUATIONS)

    def __post_init__(self) -> None:
        if self.eval_pair_tasks not in CROSS_EVALUATIONS:
            raise FieldError("objective.eval_pair_tasks", self.eval_pair_tasks,
                             "choose 'own' or 'both'")


MASKINGS = ("uniform", "data")  # ElectraConfig.generator_masking


@dataclass
class ElectraConfig(ObjectiveConfig):
    """ELECTRA's fields; the defaults are the official code's."""

    generator_size: float = option(
        0.25, "the generator's hidden size, FFN and heads as a share of the discriminator's")
    generator_layers: float = option(1.0, "the generator's depth as a share of the "
                                          "discriminator's")
    generator_masking: str = option(
        "uniform", "which tokens the generator fills: uniform = ELECTRA's draw of mask_prob "
                   "of each row's tokens every step; data = the data's own masks (its n-gram "
                   "/ whole-word spans)", choices=MASKINGS)
    mask_prob: float = option(0.15, "share of tokens masked for the generator")
    temperature: float = option(1.0, "temperature of the generator's sampling")
    gen_weight: float = option(1.0, "weight of the generator's MLM loss")
    disc_weight: float = option(50.0, "weight of the replaced-token-detection loss")
    discriminator_pair_task: bool = option(
        False, "also train the data's SOP/NSP task on the discriminator's first token (not "
               "in the ELECTRA paper)")

    def __post_init__(self) -> None:
        checks = [
            (0 < self.generator_size <= 1, "generator_size", "must be in (0, 1]"),
            (0 < self.generator_layers <= 1, "generator_layers", "must be in (0, 1]"),
            (self.generator_masking in MASKINGS, "generator_masking",
             f"choose from {', '.join(MASKINGS)}"),
            (0 < self.mask_prob < 1, "mask_prob", "must be between 0 and 1"),
            (self.temperature > 0, "temperature", "must be positive"),
        ]
        for ok, name, why in checks:
            if not ok:
                raise FieldError(f"objective.{name}", getattr(self, name), why)


@dataclass
class PLMConfig(ObjectiveConfig):
    """XLNet's fields; the defaults are the paper's (Table 7) and the official code's."""

    prediction_k: int = option(
        6, "K: 1/K of each window's tokens are predicted (partial prediction: T // K "
           "targets, each n-gram span drawn within a context of K x n tokens)")
    perm_size: int = option(
        0, "the factorisation order is shuffled within blocks of this many tokens; 0 = the "
           "data's reuse_len (the official setting: 256 with reuse 256)")
    max_span: int = option(
        5, "targets are n-gram spans of 1..max_span whole words, P(n) ~ 1/n; 1 = single "
           "tokens (the paper's ablation without span prediction)")
    bi_data: bool = option(
        False, "half of every batch reads its streams backwards with negated relative "
               "positions (bidirectional data; needs an even micro_batch_size)")
    nsp: bool = option(
        False, "also predict from the <cls> summary whether B continues A (the paper's "
               "'+NSP' ablation row; XLNet itself trains without it)")
    checkpoint_memories: bool = option(
        False, "save the memories in every checkpoint (per rank, in their dtype) so a resume "
               "is bit for bit, on the same number of processes; off, a resume starts them at "
               "zero (a window's memory context lost per stream) and may change the number of "
               "processes")

    def __post_init__(self) -> None:
        for name, low in (("prediction_k", 2), ("perm_size", 0), ("max_span", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise FieldError(f"objective.{name}", value, f"must be an integer >= {low}")


# name -> (its class as package.module:Class, its Config)
BUILTIN: dict[str, tuple[str, type[ObjectiveConfig]]] = {
    "mlm": ("litebert.objectives.mlm:MLMObjective", MLMConfig),
    "electra": ("litebert.objectives.electra:ElectraObjective", ElectraConfig),
    "plm": ("litebert.objectives.plm:PLMObjective", PLMConfig),
}


def unknown_objective(name: str) -> ObjectiveError:
    return ObjectiveError(f"objective {name!r}: unknown; choose from {', '.join(BUILTIN)} or "
                          f"give package.module:Class")


def load_class(name: str) -> type:
    """The class of `package.module:Class`, its module imported now (a user's objective)."""
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
    return cls


def config_class(name: str) -> type[ObjectiveConfig]:
    """The Config of a registry name or of `package.module:Class`; the class's other
    members are checked where the run builds it (litebert.objectives.registry.resolve)."""
    if ":" not in name:
        if name in BUILTIN:
            return BUILTIN[name][1]
        raise unknown_objective(name)
    config = getattr(load_class(name), "Config", None)
    if not (isinstance(config, type) and issubclass(config, ObjectiveConfig)):
        raise ObjectiveError(f"objective {name!r}: its class has no Config (a dataclass "
                             f"subclassing litebert.objectives.ObjectiveConfig); an objective "
                             f"implements TrainingObjective and EvaluationObjective "
                             f"(litebert.objectives.base)")
    return config


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
        config = config_class(name)
    except ObjectiveError as err:
        raise FieldError("objective.name", name, str(err)) from None
    hints = typing.get_type_hints(config)
    known = {f.name for f in dataclasses.fields(config)} - {"name"}
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
        return config(name=name, **fields)
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
    for name, (where, config) in BUILTIN.items():
        lines.append(f"  {name} ({where})")
        for f in dataclasses.fields(config):
            if f.name != "name":
                default = f.default if f.default_factory is dataclasses.MISSING \
                    else f.default_factory()
                text = f"{f.name}: {f.metadata.get('help', '')} (default: {default})"
                lines.append(textwrap.fill(text, 92, initial_indent="    ",
                                           subsequent_indent="      "))
    return "\n".join(lines)
