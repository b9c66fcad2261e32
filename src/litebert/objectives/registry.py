"""The objective classes: `OBJECTIVES` maps a built-in name to its class, `resolve` finds the
class of a name or of `package.module:Class` (checking that it has every member of both
protocols), and `evaluate_directory` is the one evaluation dispatch of an exported directory,
for `litebert eval-pretraining` and studies: the first objective that reads it.

Importing this module imports torch and the models; the objectives' fields, which parsers and
run configs read, live in litebert.objectives.configs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from litebert.model import CheckpointError
from litebert.model.hub import read_model_files
from litebert.objectives.base import EvaluationObjective, Objective, missing_members
from litebert.objectives.configs import ObjectiveError, load_class, unknown_objective
from litebert.objectives.electra import ElectraObjective
from litebert.objectives.mlm import MLMObjective
from litebert.objectives.plm import PLMObjective

# A new objective is a module here, one line in this registry and its Config in
# configs.BUILTIN.
OBJECTIVES: dict[str, type[Objective]] = {
    "mlm": MLMObjective,  # MLM + the data's SOP/NSP task (ALBERT, BERT, RoBERTa)
    "electra": ElectraObjective,  # generator MLM + replaced-token detection (ELECTRA)
    "plm": PLMObjective,  # permutation LM over XLNet's streams, with memories (XLNet)
}


def resolve(name: str) -> type[Objective]:
    """The class of a registry name or of `package.module:Class`."""
    if ":" not in name:
        if name in OBJECTIVES:
            return OBJECTIVES[name]
        raise unknown_objective(name)
    cls = load_class(name)
    missing = missing_members(cls)
    if missing:
        raise ObjectiveError(f"objective {name!r}: class {name.partition(':')[2]} lacks "
                             f"{', '.join(missing)}; an objective implements "
                             f"TrainingObjective and EvaluationObjective "
                             f"(litebert.objectives.base)")
    return cls


def evaluate_directory(model_dir: str | Path, data_dir: str | Path, *, instances: int = 2000,
                       seed: int = 0, batch_size: int = 32,
                       **options: Any) -> tuple[type[EvaluationObjective], dict[str, Any]]:
    """(the objective class that scored it, its result) for an exported model directory on
    the held-out part of a data directory: the first objective whose `reads_directory` says
    so (the heads they look for do not overlap: an MLM head, a discriminator's head)."""
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise CheckpointError(f"{model_dir}: no such model directory")
    model = read_model_files(model_dir)  # config.json, once for the whole evaluation
    for cls in OBJECTIVES.values():
        if cls.reads_directory(model):
            return cls, cls.evaluate_directory(model, Path(data_dir), instances=instances,
                                               seed=seed, batch_size=batch_size, **options)
    raise CheckpointError(f"{model_dir}: no objective reads this model directory (no MLM "
                          f"head, no replaced-token detection head); pre-training evaluation "
                          f"needs the pre-training model a run exports")
