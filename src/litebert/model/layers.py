"""Layers and helpers that more than one backbone uses.

Shared by the ALBERT and XLNet backbones (and any other):

    activation          a hidden_act name -> the function
    positions_after_pad RoBERTa's position ids
    additive_mask       (B, T) padding mask -> SDPA's additive (B, 1, 1, T) mask
    sharing_tables      ALBERT's cross-layer sharing: which module each layer position uses
    encoder_depths      layer-wise lr decay depths of an encoder with those tables
    unrolled_source     unrolling: the shared module a layer position reads
"""

from __future__ import annotations

import re
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from litebert.config import AlbertConfig


def activation(name: str):
    """GELU "gelu_new" is the tanh approximation of the official code; "gelu" is exact erf."""
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return lambda x: F.gelu(x, approximate="tanh")  # one fused kernel, fused backward
    return {"gelu": F.gelu, "relu": F.relu, "silu": F.silu, "swish": F.silu,
            "tanh": torch.tanh}[name]


def positions_after_pad(input_ids, pad_token_id: int):
    """RoBERTa's (fairseq's) position ids: real tokens are numbered pad + 1, pad + 2, ... by
    their count so far (so left padding shifts nothing), pad tokens get pad itself."""
    real = input_ids.ne(pad_token_id).long()  # (B, T)
    return torch.cumsum(real, dim=1) * real + pad_token_id  # (B, T)


def additive_mask(attention_mask, dtype):
    """(B, T) 1 = token, 0 = pad  ->  (B, 1, 1, T) 0 / -inf-ish added to attention scores.

    None stays None (SDPA's unmasked fast path). Whether a batch is padded is the collator's
    decision, made on the host (it leaves the mask out when nothing is): testing the mask
    here would read it back from the device, a host sync in every forward.
    """
    if attention_mask is None:
        return None
    keep = attention_mask[:, None, None, :].to(torch.bool)
    return torch.zeros(keep.shape, dtype=dtype, device=keep.device).masked_fill(
        ~keep, torch.finfo(dtype).min)


# ---- cross-layer sharing -----------------------------------------------------------------------

def sharing_tables(config: AlbertConfig) -> tuple[list[int], list[int]]:
    """For each layer position, the index of its attention module and of its FFN module."""
    inner = config.inner_group_num
    positions = range(config.num_layer_positions)
    grouped = [config.group_of_layer(k // inner) * inner + k % inner for k in positions]
    own = list(positions)
    attn = grouped if config.sharing in ("all", "attention") else own
    ffn = grouped if config.sharing in ("all", "ffn") else own
    return attn, ffn


Depths = list[tuple[nn.Module | nn.Parameter, int]]


def encoder_depths(encoder: Any, inputs: list[nn.Module | nn.Parameter],
                   pooler: nn.Module | None) -> tuple[Depths, int]:
    """layer_depths of a backbone whose encoder keeps AlbertEncoder's per-position tables
    (`attentions` / `ffns` with `attention_index` / `ffn_index`, and the E->H projection):
    `inputs` and the projection at depth 0, layer position k at k + 1, the pooler level with
    the head (L + 2). A module shared over several depths takes the depth of its highest use,
    so the largest rate of those it serves: its top use is the one nearest the head (the
    lowest would slow the whole shared stack down to the embeddings' rate)."""
    L = len(encoder.attention_index)
    parts: Depths = [(part, 0) for part in inputs]
    if encoder.embedding_hidden_mapping_in is not None:
        parts.append((encoder.embedding_hidden_mapping_in, 0))
    for modules, index in ((encoder.attentions, encoder.attention_index),
                           (encoder.ffns, encoder.ffn_index)):
        top = {n: k + 1 for k, n in enumerate(index)}  # later positions overwrite: the max
        parts.extend((modules[n], depth) for n, depth in top.items())
    if pooler is not None:
        parts.append((pooler, L + 2))
    return parts, L


# A key of the encoder's per-position modules: `encoder.attentions.3.query.weight`.
_LAYER_KEY = re.compile(r"^(encoder\.)(attentions|ffns)\.(\d+)\.(.*)$")


def unrolled_source(encoder: Any, key: str) -> str:
    """For a key of the unrolled backbone (an AlbertEncoder-like `encoder` with its
    per-position tables), the key of the module that layer position k uses here."""
    match = _LAYER_KEY.match(key)
    if not match:
        return key
    head, part, k, rest = match.groups()
    index = encoder.attention_index if part == "attentions" else encoder.ffn_index
    return f"{head}{part}.{index[int(k)]}.{rest}"
