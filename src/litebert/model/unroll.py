"""Unrolling: a model with shared layers -> the same function with one set of weights per layer.

Layer position k of the shared model ran attention module attention_index[k] and FFN module
ffn_index[k] (model/albert.py); the unrolled model's position k owns a copy of each, so its
outputs are identical and it fits layouts without sharing (BERT, ELECTRA). Its config has
sharing "none", num_hidden_layers = the positions applied (layers x inner_group_num), and one
layer per group.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import torch
from torch import nn

Model = TypeVar("Model", bound=nn.Module)

_LAYER = re.compile(r"^(.*encoder\.)(attentions|ffns)\.(\d+)\.(.*)$")


def unroll(model: Model) -> Model:
    """A new model of the same class, not shared, computing what `model` computes (any
    litebert model: the backbone or a head class)."""
    shared: Any = model  # model/base.py imports this module: typed loosely, not by import
    config = shared.config
    encoder = shared.base_model.encoder
    positions = config.num_layer_positions
    flat = config.replace(sharing="none", num_hidden_layers=positions,
                          num_hidden_groups=positions, inner_group_num=1)
    source = {"attentions": encoder.attention_index, "ffns": encoder.ffn_index}
    state = model.state_dict()
    copy: dict[str, torch.Tensor] = {}
    like = next(model.parameters())
    new = type(model)(flat).to(device=like.device, dtype=like.dtype)
    for key in new.state_dict():
        match = _LAYER.match(key)
        if match:  # position k's module is a copy of the one position k used
            head, part, k, rest = match.groups()
            key_from = f"{head}{part}.{source[part][int(k)]}.{rest}"
        else:
            key_from = key
        copy[key] = state[key_from].clone()
    new.load_state_dict(copy, strict=True)
    new.train(model.training)
    return new
