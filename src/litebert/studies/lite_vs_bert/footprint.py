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

from litebert.model.heads import EncoderForPreTraining
from litebert.studies.lite_vs_bert.rows import ROWS, flops_per_sequence, meta_model, row_config
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


def _units(model: EncoderForPreTraining) -> tuple[int, list[tuple[int, bool]]]:
    """(the root's own parameter bytes, [(a unit's bytes, whether it is held for the step)])
    for litebert's FSDP units (models/albert/model.py: fsdp_units)."""
    units = model.backbone.fsdp_units()
    in_units = {id(p) for m, _ in units for p in m.parameters()}
    root = sum(_bytes(p) for p in model.parameters() if id(p) not in in_units)
    return root, [(sum(_bytes(p) for p in m.parameters()), not reshard) for m, reshard in units]


def _gathered_bytes(model: EncoderForPreTraining) -> int:
    """Full bytes gathered at once: the root, and every unit held for the step (ALBERT's
    shared ones), else an attention + FFN pair computing and the next pair prefetched."""
    root, units = _units(model)
    if any(held for _, held in units):
        return root + sum(size for size, _ in units)
    return root + sum(sorted((size for size, _ in units), reverse=True)[:4])


def fsdp_step(model: EncoderForPreTraining, trust_tensors: int) -> dict[str, dict[str, int]]:
    """One step's FSDP collectives by rule (the communication part counts them and the report
    compares): the root gathered once (FSDP keeps it from forward to backward); a held unit
    once; any other unit twice (forward, then again for its backward); one reduce-scatter per
    unit and the root; LAMB's trust-ratio norms summed over the shards in 4 small all-reduces
    (as counted: 16 bytes for each of the `trust_tensors` tensors with a trust ratio)."""
    root, units = _units(model)
    gathers = [(root, 1)] + [(size, 1 if held else 2) for size, held in units]
    param_bytes = sum(_bytes(p) for p in model.parameters())
    return {"all_gather": {"calls": sum(n for _, n in gathers),
                           "bytes": sum(size * n for size, n in gathers)},
            "reduce_scatter": {"calls": 1 + len(units), "bytes": param_bytes},
            "optimizer_all_reduce": {"calls": 4, "bytes": 16 * trust_tensors}}


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
    gathered = _gathered_bytes(model)
    for ranks in RANKS:
        shard = sum(_shard_bytes(p, ranks) for p in params)
        lamb = sum(_shard_bytes(t, ranks) for t in state)
        held = {"params": shard, "grads": shard, "lamb": lamb,
                "gathered": gathered}
        held["total"] = sum(held.values())
        fsdp[str(ranks)] = held
    trust = sum(len(g["params"]) for g in lamb_param_groups(model) if g.get("trust_ratio", True))
    return {"row": name, "parameters": sum(p.numel() for p in params),
            "backbone_parameters": model.num_parameters(only_backbone=True),
            "ddp": ddp, "fsdp": fsdp, "fsdp_step": fsdp_step(model, trust),
            "flops_per_sequence": {str(t): flops_per_sequence(name, t, **overrides)
                                   for t in (128, 512)},
            "how": "counted from the meta-device tensors"}


def footprints(**overrides) -> dict[str, dict]:
    return {row.name: row_footprint(row.name, **overrides) for row in ROWS}
