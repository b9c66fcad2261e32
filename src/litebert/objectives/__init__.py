"""Pre-training objectives: what is trained and how its loss, metrics and export look.

The protocol is `base.Objective`; the loop (litebert.train.pretrain) knows nothing else of an
objective. `OBJECTIVES` maps the run config's `objective` option to the class; a new
objective is a module here and one line in this registry, and the option's choices follow.
"""

from __future__ import annotations

from litebert.objectives.base import Objective
from litebert.objectives.electra import ElectraObjective
from litebert.objectives.mlm import MLMObjective

OBJECTIVES: dict[str, type[Objective]] = {
    "mlm": MLMObjective,  # MLM + the data's SOP/NSP task (ALBERT, BERT)
    "electra": ElectraObjective,  # generator MLM + replaced-token detection (ELECTRA)
}

__all__ = ["OBJECTIVES", "ElectraObjective", "MLMObjective", "Objective"]
