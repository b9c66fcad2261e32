"""Each checkpoint family's fine-tuning settings, as its paper gives them, which `litebert
finetune` takes for what the user does not give, before the task's recipe (ALBERT's Table 14,
tasks/finetune_options.py, which always sets batch size, steps and sequence length):
- ALBERT (and litebert's layout): the recipe; weight decay 0.01, no layer decay.
- BERT (Devlin et al. 2019): lr 2e-5 (GLUE and the generic tasks), 5e-5 (SQuAD), the
  recipe's for RACE; dropout 0.1; weight decay 0.01.
- ELECTRA (Clark et al. 2020, Table 7): lr 3e-4 / 1e-4 / 5e-5 and layer decay 0.8 / 0.8 / 0.9
  for Small / Base / Large (hidden size up to 256, up to 768, larger); weight decay 0.
- RoBERTa (Liu et al. 2019, Table 10): lr 1e-5 (2e-5 for RTE, STS-B, WNLI and the generic
  tasks; 1.5e-5 for SQuAD), weight decay 0.1 (0.01 for SQuAD), warm-up over 6% of the
  steps, dropout 0.1, Adam beta2 0.98.
- XLNet (Yang et al. 2019, Table 8): lr 2e-5 (RACE; GLUE and the generic tasks take MNLI's),
  3e-5 with layer-wise decay 0.75 (SQuAD); weight decay 0, dropout 0.1.
results.json records them under `defaults` (family, source, the values taken).

Each family's defaults are its model package's (litebert/models/<name>/finetune.py, named by
its ModelSpec's `finetune`), not the checkpoint-format adapter's, which knows nothing of
fine-tuning; only the model_type and, for ELECTRA, the hidden size are read from the model
directory.
"""

from __future__ import annotations

from litebert.config import ModelConfig
from litebert.models.albert.finetune import ALBERT_FINETUNING, albert_defaults
from litebert.specs import FinetuneDefaults, FinetuneRule, find_spec
from litebert.tasks.registry import TASKS

__all__ = ["ALBERT_FINETUNING", "RECIPE_ONLY", "FinetuneDefaults", "family_defaults",
           "finetune_rule", "model_family_defaults", "uses_recipe_only"]


def finetune_rule(model_type: str) -> FinetuneRule:
    """The fine-tuning defaults of the family `model_type` (its ModelSpec's); ALBERT's, the
    recipes as they are, for a model_type no package registers."""
    spec = find_spec(model_type)
    return albert_defaults if spec is None else spec.finetune


# A task no family's paper fine-tunes (sentence embeddings): its recipe for every family.
RECIPE_ONLY = FinetuneDefaults(source="the task's recipe, the same for every family")


def family_defaults(config: ModelConfig, task: str) -> FinetuneDefaults:
    """What the paper of `config`'s family fine-tunes such a model on `task` (a name in
    litebert.tasks.registry's TASKS) with."""
    if uses_recipe_only(task):
        return RECIPE_ONLY
    return finetune_rule(config.model_type)(config, task)


def model_family_defaults(config: ModelConfig | None,
                          task: str) -> tuple[str | None, FinetuneDefaults]:
    """The model's family (its config as read once, tasks/model_source.py) and its
    fine-tuning defaults for `task`. (None, ALBERT's) without a config (none readable,
    which loading the model then reports): no family was read, though ALBERT's defaults
    (the recipes as they are) fill the config."""
    if config is None:
        return None, RECIPE_ONLY if uses_recipe_only(task) else ALBERT_FINETUNING
    return config.model_type, family_defaults(config, task)


def uses_recipe_only(task: str) -> bool:
    """Whether `task` takes its recipe on every family (tasks/registry.py says so)."""
    return task in TASKS and not TASKS[task].family_defaults
