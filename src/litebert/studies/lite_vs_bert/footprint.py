"""Bytes each rank holds: parameters, gradients and LAMB's state, under DDP and under FSDP.

Counted from the tensors litebert itself creates, on the meta device (shapes and dtypes, no
storage), so the 1.27B-parameter BERT-xlarge costs nothing: the pre-training model
(rows.meta_model), a gradient per parameter, and the state LAMB allocates in its first step
(litebert.train.lamb.Lamb, exp_avg and exp_avg_sq per parameter, in fp32).

- DDP: every rank holds all of it, plus DDP's gradient buckets (a flat copy of every
  gradient, since litebert's DDP does not view gradients into its buckets).
- FSDP at N ranks: FSDP2 cuts each parameter along dim 0 into N chunks padded to
  ceil(rows / N); a rank holds its chunk of the parameter, of the gradient and of LAMB's two
  moments (the largest rank, rank 0, is counted). On top of the shards, a rank holds the units
  it has gathered: the root (embeddings and heads: FSDP keeps the root gathered from forward
  to backward) and, for ALBERT, its shared attention and FFN modules for the whole step
  (litebert keeps a unit used at several depths gathered: distributed.wrap); for BERT, two
  layers' modules at a time (the one computing and the one prefetched).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from litebert.studies.lite_vs_bert.rows import ROWS, meta_model, row_config
from litebert.train.lamb import Lamb, lamb_param_groups

RANKS = (2, 8)


def _bytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _shard_bytes(t: torch.Tensor, ranks: int) -> int:
    """Rank 0's chunk of `t` under FSDP2's dim-0 sharding, padding included."""
    if t.dim() == 0:
        return t.element_size()
    rows = math.ceil(t.shape[0] / ranks)
    return rows * (t.numel() // t.shape[0]) * t.element_size()


def lamb_state(model: nn.Module) -> list[torch.Tensor]:
    """The tensors LAMB allocates for `model` in its first step (on the model's device)."""
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer = Lamb(lamb_param_groups(model))
    optimizer.step()
    return [t for state in optimizer.state.values() for t in state.values()
            if isinstance(t, torch.Tensor)]


def _unit_bytes(model: nn.Module) -> dict[str, int]:
    """Full (gathered) bytes of the root's own parameters and of the largest units."""
    encoder = model.albert.encoder
    units = [m for m, _ in encoder.fsdp_units()]
    in_units = {id(p) for m in units for p in m.parameters()}
    root = sum(_bytes(p) for p in model.parameters() if id(p) not in in_units)
    unit_sizes = sorted((sum(_bytes(p) for p in m.parameters()) for m in units), reverse=True)
    shared = len(encoder.attentions) < len(encoder.attention_index)
    # Held for the step: every shared unit (ALBERT); otherwise an attention + FFN pair
    # computing and the next pair prefetched.
    gathered = sum(unit_sizes) if shared else sum(unit_sizes[:4])
    return {"root": root, "units_gathered": gathered}


def row_footprint(name: str, **overrides) -> dict:
    """One row's parameters and bytes held per rank (see the module docstring)."""
    model = meta_model(row_config(name, **overrides))
    params = list(model.parameters())
    state = lamb_state(model)
    param_bytes = sum(_bytes(p) for p in params)
    state_bytes = sum(_bytes(t) for t in state)
    ddp = {"params": param_bytes, "grads": param_bytes, "lamb": state_bytes,
           "buckets": param_bytes}
    ddp["total"] = sum(ddp.values())
    fsdp = {}
    units = _unit_bytes(model)
    for ranks in RANKS:
        shard = sum(_shard_bytes(p, ranks) for p in params)
        lamb = sum(_shard_bytes(t, ranks) for t in state)
        held = {"params": shard, "grads": shard, "lamb": lamb,
                "gathered": units["root"] + units["units_gathered"]}
        held["total"] = sum(held.values())
        fsdp[str(ranks)] = held
    return {"row": name, "parameters": sum(p.numel() for p in params),
            "backbone_parameters": model.num_parameters(only_backbone=True),
            "ddp": ddp, "fsdp": fsdp, "how": "counted from the meta-device tensors"}


def footprints(**overrides) -> dict[str, dict]:
    return {row.name: row_footprint(row.name, **overrides) for row in ROWS}
