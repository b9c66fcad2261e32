"""ModernBERT's fine-tuning defaults: the task recipes, until a measured choice exists."""

from __future__ import annotations

import dataclasses

from litebert.config import ModelConfig
from litebert.models.albert.finetune import ALBERT_FINETUNING
from litebert.specs import FinetuneDefaults

# Warner et al. 2024 pick the learning rate per task from a sweep on dev, which a default
# cannot do; until a measured choice exists, ModernBERT fine-tunes with the task recipe, as
# ALBERT does, and its results say so.
MODERNBERT_FINETUNING = dataclasses.replace(
    ALBERT_FINETUNING, source="ModernBERT (Warner et al. 2024) sweeps lr per task on dev; "
                              "the task recipe (ALBERT's Table 14) here")


def modernbert_defaults(config: ModelConfig, task: str) -> FinetuneDefaults:
    return MODERNBERT_FINETUNING
