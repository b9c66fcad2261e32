"""Unrolling: a model with shared layers -> the same function with one set of weights per layer.

The backbone says how (model/backbone.py): `unrolled_config` is its config with one set of
weights per layer, and `unrolled_source(key)` names, for each key of the unrolled backbone,
the tensor of the shared one it copies. For ALBERT, layer position k ran attention module
attention_index[k] and FFN module ffn_index[k] (models/albert/model.py); the unrolled model's
position k owns a copy of each, so its outputs are identical and it fits layouts without
sharing (BERT, ELECTRA). Heads are copied as they are.
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch
from torch import nn

from litebert.families.base import PREFIX  # a head's backbone keys
from litebert.model.backbone import backbone_of

Model = TypeVar("Model", bound=nn.Module)



def unroll(model: Model) -> Model:
    """A new model of the same class, not shared, computing what `model` computes (any
    litebert model: the backbone or a head class)."""
    shared: Any = model  # a head or a backbone, both with a config
    backbone = backbone_of(model)
    flat = backbone.unrolled_config(shared.config)
    prefix = "" if backbone is model else PREFIX
    state = model.state_dict()
    like = next(model.parameters())
    new = type(model)(flat).to(device=like.device, dtype=like.dtype)
    copy: dict[str, torch.Tensor] = {}
    for key in new.state_dict():
        key_from = key
        if key.startswith(prefix):  # a backbone key: the tensor of the position it copies
            key_from = prefix + backbone.unrolled_source(key[len(prefix):])
        copy[key] = state[key_from].clone()
    new.load_state_dict(copy, strict=True)
    new.train(model.training)
    return new
