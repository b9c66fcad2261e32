"""ALBERT's fine-tuning defaults (litebert's own layout takes them too): the task
recipes as they are."""

from __future__ import annotations

from litebert.config import ModelConfig
from litebert.specs import FinetuneDefaults

# The task recipes are ALBERT's Table 14; weight decay 0.01 is its released code's.
ALBERT_FINETUNING = FinetuneDefaults(source="ALBERT (Lan et al. 2020), Table 14")


def albert_defaults(config: ModelConfig, task: str) -> FinetuneDefaults:
    return ALBERT_FINETUNING
