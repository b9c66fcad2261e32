"""XLNet's fine-tuning defaults (Yang et al. 2019, Table 8)."""

from __future__ import annotations

from litebert.config import ModelConfig
from litebert.specs import FinetuneDefaults

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
