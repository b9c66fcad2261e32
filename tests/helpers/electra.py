"""ELECTRA pre-training configs at the micro size and an objective with its model built
from them."""

from __future__ import annotations

import dataclasses

import torch

from litebert.objectives import ElectraObjective
from litebert.objectives.electra import (
    ElectraConfig,
    ElectraPretraining,
)
from litebert.train.pretrain import model_config
from tests.helpers.pretrain import run_config

ELECTRA_FIELDS = {f.name for f in dataclasses.fields(ElectraConfig)}


MICRO = dict(hidden_size=32, embedding_size=16, num_hidden_layers=2, num_hidden_groups=2,
             num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)


def electra_config(data_dir, out, **kw):
    overrides = {**MICRO, **kw.pop("model_overrides", {})}
    fields = {k: kw.pop(k) for k in list(kw) if k in ELECTRA_FIELDS}
    return run_config(data_dir, out, model="electra-small",
                      objective={"name": "electra", **fields},
                      model_overrides=overrides, optimizer="adamw", lr=1e-3, **kw)


def objective_and_model(data_dir, train, **kw) -> tuple[ElectraObjective, ElectraPretraining]:
    cfg = electra_config(data_dir, data_dir / "unused", **kw)
    objective = ElectraObjective(cfg, train)
    torch.manual_seed(0)
    model = objective.build(model_config(cfg, data_dir)).eval()  # no dropout: forwards repeat
    assert isinstance(model, ElectraPretraining)
    return objective, model
