"""Pre-training objectives: what is trained, its batches, state, evaluation and export.

The protocols are in `base`: `TrainingObjective` (what the loop trains with),
`EvaluationObjective` (evaluation during a run and of exported directories, export) and
`Objective`, both; the loop (litebert.train.trainer) knows nothing else of an objective.
`OBJECTIVES` (`registry`) maps a name to the class; a new objective is a module here, one
line in that registry and its Config in `configs`. A class outside the package is named
`package.module:Class` (`resolve`, which checks that it has every member of both protocols),
so nothing depends on an objective's module path or registry name.

- `objective_config(value, where)` (`configs`): a recipe's `objective:` (a name, or a mapping
  with `name` and the class's own fields) -> that class's Config, each field checked by name
  and type.
- `evaluate_directory(model_dir, data_dir, ...)` (`registry`): the one evaluation dispatch of
  an exported directory, for `litebert eval-pretraining` and studies: the first objective
  that reads it.
- `reporter_for(data_dir)`: what `litebert data inspect` and `data stats` read a data
  directory with (XLNet's streams have their own, plm_report.py).

Importing the package imports `configs` alone: the objectives' fields, which parsers and run
configs read without torch. The classes, the registry and the evaluation are imported when a
name of theirs is first used (PEP 562), as the package root does for its models.
"""

import importlib
from typing import TYPE_CHECKING, Any

from litebert.objectives.configs import (
    BUILTIN,
    ElectraConfig,
    MLMConfig,
    ObjectiveConfig,
    ObjectiveError,
    PLMConfig,
    describe_fields,
    objective_config,
)

if TYPE_CHECKING:  # what type checkers see of the names below; at run time, __getattr__
    from litebert.objectives.base import (
        EvaluationObjective,
        Items,
        Objective,
        TrainingObjective,
    )
    from litebert.objectives.electra import ElectraObjective
    from litebert.objectives.mlm import MLMObjective
    from litebert.objectives.plm import PLMObjective
    from litebert.objectives.plm_report import reporter_for
    from litebert.objectives.registry import OBJECTIVES, evaluate_directory, resolve

# Where each name that imports torch lives.
_EXPORTS = {
    **dict.fromkeys(("OBJECTIVES", "resolve", "evaluate_directory"),
                    "litebert.objectives.registry"),
    **dict.fromkeys(("EvaluationObjective", "Items", "Objective", "TrainingObjective"),
                    "litebert.objectives.base"),
    "ElectraObjective": "litebert.objectives.electra",
    "MLMObjective": "litebert.objectives.mlm",
    "PLMObjective": "litebert.objectives.plm",
    "reporter_for": "litebert.objectives.plm_report",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'litebert.objectives' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = ["BUILTIN", "OBJECTIVES", "ElectraConfig", "ElectraObjective", "EvaluationObjective",
           "Items", "MLMConfig", "MLMObjective", "Objective", "ObjectiveConfig",
           "ObjectiveError", "PLMConfig", "PLMObjective", "TrainingObjective",
           "describe_fields", "evaluate_directory", "objective_config", "reporter_for",
           "resolve"]
