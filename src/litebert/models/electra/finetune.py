"""ELECTRA's fine-tuning defaults (Clark et al. 2020, Table 7), by model size."""

from __future__ import annotations

from litebert.config import ModelConfig
from litebert.specs import FinetuneDefaults

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
