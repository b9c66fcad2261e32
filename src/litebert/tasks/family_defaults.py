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

FINETUNE_DEFAULTS holds one entry per family (config.json's model_type -> a function of the
model's config and the task): a new family is one entry. They live with the tasks, not in the
checkpoint-format adapters (litebert.families), which know nothing of fine-tuning; only the
model_type and, for ELECTRA, the hidden size are read from the model directory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from litebert.config import ModelConfig
from litebert.model.hub import read_config
from litebert.tasks.registry import TASKS


@dataclasses.dataclass(frozen=True)
class FinetuneDefaults:
    """A family's fine-tuning settings for one task, as its paper gives them.

    None: the task recipe's (litebert.tasks.registry's TASKS; ALBERT's Table 14 where it has
    the task).
    The recipe always sets the batch size, the number of steps and the sequence length: a
    paper's epochs are a count over its own data at its own batch size, and the recipe's
    budget, the same for every family, keeps runs of all families comparable.
    """

    source: str  # the paper and table the values come from, recorded in results.json
    lr: float | None = None  # peak learning rate
    warmup_share: float | None = None  # warm-up as a share of max_steps; None: recipe's steps
    dropout: float | None = None  # hidden and attention dropout
    # Not in the recipes; by default ALBERT's released fine-tuning code's (and BERT's).
    weight_decay: float = 0.01  # AdamW's decoupled weight decay
    layer_decay: float = 1.0  # layer-wise lr decay (litebert.tasks.layer_decay); 1 is off
    layer_decay_rule: str = "head-to-embeddings"  # what it slows (tasks/layer_decay.py)
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-6  # ALBERT's and BERT's AdamWeightDecay epsilon

    def values(self) -> dict[str, float | str]:
        """The settings this family gives (the recipe's where None), by FinetuneConfig field
        name, but warmup_share, which sets warmup_steps once max_steps is known."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "source" and getattr(self, f.name) is not None}


# ---- ALBERT (and litebert's own layout) ------------------------------------------------------

# The task recipes are ALBERT's Table 14; weight decay 0.01 is its released code's.
ALBERT_FINETUNING = FinetuneDefaults(source="ALBERT (Lan et al. 2020), Table 14")


def albert_defaults(config: ModelConfig, task: str) -> FinetuneDefaults:
    return ALBERT_FINETUNING


# ---- BERT ------------------------------------------------------------------------------------

# Devlin et al. 2019, BERT's fine-tuning. GLUE (Section 4.1): batch 32, 3 epochs, the lr picked
# per task on dev from {5e-5, 4e-5, 3e-5, 2e-5}. A default cannot pick on dev: it takes 2e-5,
# the grid's safe end, since most GLUE recipes are small data sets (RTE, MRPC, CoLA, STS-B,
# WNLI) where the paper found BERT-Large's fine-tuning unstable. SQuAD 1.1 and 2.0 (Sections
# 4.2, 4.3): lr 5e-5; SWAG (4.4): 2e-5. RACE is not in the paper: the recipe's lr. Dropout
# "always kept at 0.1" (Appendix A.3); weight decay 0.01 and Adam's beta2 0.999 are
# pre-training's (Appendix A.2), which A.3 keeps. Warm-up for fine-tuning is not given: the
# recipe's. Batch sizes and epochs stay the recipe's (see FinetuneDefaults).
# Task -> (lr, where the paper says so); tasks not named here take GLUE's.
_BERT_TASKS: dict[str, tuple[float | None, str]] = {
    "squad1": (5e-5, "Section 4.2"), "squad2": (5e-5, "Section 4.3"),
    "choice": (2e-5, "Section 4.4"),  # SWAG's
    "ner": (None, "Section 5.3, the recipe's lr"),  # the recipe is BERT's CoNLL-2003 one
    "race": (None, "RACE not in the paper, the recipe's lr")}
_BERT_GLUE = (2e-5, "Section 4.1")


def bert_defaults(config: ModelConfig, task: str) -> FinetuneDefaults:
    lr, where = _BERT_TASKS.get(task, _BERT_GLUE)
    return FinetuneDefaults(source=f"BERT (Devlin et al. 2019), {where}; Appendix A.3",
                            lr=lr, dropout=0.1)


# ---- ELECTRA ---------------------------------------------------------------------------------

# Clark et al. 2020, Appendix A, Table 7 (GLUE and SQuAD fine-tuning): peak lr and layer-wise
# lr decay by model size, weight decay 0 (the released code's default is 0.01; the paper's
# table says 0). Table 7 also has Adam eps 1e-6 and beta2 0.999 (AdamW's here for every
# family), batch 32 and 3 epochs (10 for RTE and STS, 2 for SQuAD): the recipe's batch and
# steps stay (see FinetuneDefaults). Its 10% warm-up and dropout 0.1 are left to the recipe
# too, so that ELECTRA results recorded with the recipe's values reproduce.
ELECTRA_FINETUNING: dict[str, tuple[float, float]] = {
    "small": (3e-4, 0.8), "base": (1e-4, 0.8), "large": (5e-5, 0.9)}


def electra_size(hidden_size: int) -> str:
    """ELECTRA's size names by hidden size: Small 256, Base 768, Large 1024."""
    return "small" if hidden_size <= 256 else "base" if hidden_size <= 768 else "large"


def electra_defaults(config: ModelConfig, task: str) -> FinetuneDefaults:
    size = electra_size(config.hidden_size)
    lr, decay = ELECTRA_FINETUNING[size]
    return FinetuneDefaults(
        source=f"ELECTRA (Clark et al. 2020), Table 7, {size.capitalize()} "
               f"(hidden size {config.hidden_size})",
        lr=lr, weight_decay=0.0, layer_decay=decay)


# ---- RoBERTa ---------------------------------------------------------------------------------

# Liu et al. 2019, Appendix C, Table 10 (RoBERTa-Large). GLUE: lr from {1e-5, 2e-5, 3e-5}, batch
# {16, 32}, weight decay 0.1, at most 10 epochs; SQuAD: lr 1.5e-5, batch 48, weight decay 0.01,
# 2 epochs; RACE: lr 1e-5, batch 16, weight decay 0.1, 4 epochs; all: linear decay after a
# warm-up over 6% of the steps. Per GLUE task the lr is the one the authors' released commands
# (fairseq, examples/roberta/README.glue.md) name as their search's pick: 2e-5 for RTE and
# STS-B, 1e-5 for the others. WNLI (which the paper scores another way) and the generic tasks
# take 2e-5, the grid's middle. Table 10 gives no dropout or Adam settings: those are
# pre-training's (Table 9: dropout 0.1, Adam eps 1e-6, beta2 0.98), which the released
# fine-tuning commands keep. Batch sizes and epochs stay the recipe's (see FinetuneDefaults).
_ROBERTA_GLUE_LR = {"cola": 1e-5, "sst2": 1e-5, "mrpc": 1e-5, "qqp": 1e-5, "mnli": 1e-5,
                    "qnli": 1e-5, "rte": 2e-5, "stsb": 2e-5}
# Task -> (lr, weight decay, Table 10's column); tasks not named here: GLUE's column.
_ROBERTA_COLUMNS: dict[str, tuple[float, float, str]] = {
    "squad1": (1.5e-5, 0.01, "SQuAD"), "squad2": (1.5e-5, 0.01, "SQuAD"),
    "race": (1e-5, 0.1, "RACE")}


def roberta_defaults(config: ModelConfig, task: str) -> FinetuneDefaults:
    lr, decay, column = _ROBERTA_COLUMNS.get(
        task, (_ROBERTA_GLUE_LR.get(task, 2e-5), 0.1, "GLUE"))
    return FinetuneDefaults(source=f"RoBERTa (Liu et al. 2019), Table 10, {column}", lr=lr,
                            weight_decay=decay, warmup_share=0.06, dropout=0.1,
                            adam_beta2=0.98)


# ---- XLNet -----------------------------------------------------------------------------------

# Yang et al. 2019, Appendix A.3, Table 8 (fine-tuning): RACE lr 2e-5, SQuAD 3e-5 with
# layer-wise decay 0.75 (the official code's rule: only the layers decay, the top one at the
# lr), MNLI 2e-5 (taken for GLUE and the generic tasks; Yelp's 1e-5 is for long documents),
# weight decay 0, dropout and attention dropout 0.1, Adam eps 1e-6, linear decay. Batch
# sizes, steps and lengths (RACE 32 / 12k / 512, SQuAD 48 / 8k / 512, MNLI 128 / 10k / 128)
# stay the recipe's (see FinetuneDefaults).
_XLNET_TASKS: dict[str, tuple[float, float, str]] = {
    "race": (2e-5, 1.0, "RACE"), "squad1": (3e-5, 0.75, "SQuAD"),
    "squad2": (3e-5, 0.75, "SQuAD")}
_XLNET_GLUE = (2e-5, 1.0, "MNLI")


def xlnet_defaults(config: ModelConfig, task: str) -> FinetuneDefaults:
    lr, decay, column = _XLNET_TASKS.get(task, _XLNET_GLUE)
    return FinetuneDefaults(source=f"XLNet (Yang et al. 2019), Table 8, {column}", lr=lr,
                            dropout=0.1, weight_decay=0.0, layer_decay=decay,
                            layer_decay_rule="layers-only", adam_epsilon=1e-6)


# ---- the registry ----------------------------------------------------------------------------

# config.json's model_type -> the family's defaults for (the model's config, the task). A
# model_type without an entry gets ALBERT's, the recipes as they are.
# ---- ModernBERT --------------------------------------------------------------------------------

# Warner et al. 2024 pick the learning rate per task from a sweep on dev, which a default
# cannot do; until a measured choice exists, ModernBERT fine-tunes with the task recipe, as
# ALBERT does, and its results say so.
MODERNBERT_FINETUNING = dataclasses.replace(
    ALBERT_FINETUNING, source="ModernBERT (Warner et al. 2024) sweeps lr per task on dev; "
                              "the task recipe (ALBERT's Table 14) here")


def modernbert_defaults(config: ModelConfig, task: str) -> FinetuneDefaults:
    return MODERNBERT_FINETUNING


FINETUNE_DEFAULTS: dict[str, Callable[[ModelConfig, str], FinetuneDefaults]] = {
    "albert": albert_defaults, "litebert": albert_defaults, "bert": bert_defaults,
    "electra": electra_defaults, "roberta": roberta_defaults, "xlnet": xlnet_defaults,
    "modernbert": modernbert_defaults}


# A task no family's paper fine-tunes (sentence embeddings): its recipe for every family.
RECIPE_ONLY = FinetuneDefaults(source="the task's recipe, the same for every family")


def family_defaults(config: ModelConfig, task: str) -> FinetuneDefaults:
    """What the paper of `config`'s family fine-tunes such a model on `task` (a name in
    litebert.tasks.registry's TASKS) with."""
    if uses_recipe_only(task):
        return RECIPE_ONLY
    return FINETUNE_DEFAULTS.get(config.model_type, albert_defaults)(config, task)


def read_family_defaults(model: str, task: str) -> tuple[str | None, FinetuneDefaults]:
    """The model directory's family (config.json as loading reads it, so an ELECTRA model
    saved in ALBERT's layout is still ELECTRA) and its fine-tuning defaults for `task`.
    (None, ALBERT's) when the config cannot be read, which loading the model then reports:
    no family was read, though ALBERT's defaults (the recipes as they are) fill the config."""
    try:
        config = read_config(Path(model))
    except (OSError, ValueError):  # CheckpointError, ConfigError: no or a bad config.json
        # (a sentence-transformers directory may keep it in a module folder: its task's
        # recipe is every family's anyway)
        return None, RECIPE_ONLY if uses_recipe_only(task) else ALBERT_FINETUNING
    return config.model_type, family_defaults(config, task)


def uses_recipe_only(task: str) -> bool:
    """Whether `task` takes its recipe on every family (tasks/registry.py says so)."""
    return task in TASKS and not TASKS[task].family_defaults
