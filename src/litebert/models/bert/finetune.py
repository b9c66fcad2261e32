"""BERT's fine-tuning defaults (Devlin et al. 2019)."""

from __future__ import annotations

from litebert.config import ModelConfig
from litebert.specs import FinetuneDefaults

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
