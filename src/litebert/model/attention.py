"""Which keys each query may attend to, and the kernel that computes it.

A backbone builds one `Layout` per forward pass from the batch (litebert.data.attention_layout
says what the collator adds) and hands `layout.mask` to every attention layer, whose
`attend(q, k, v, mask, p)` picks the kernel from the mask's type:

    None                 every key (no padding): SDPA's unmasked fast path
    (B, 1, 1, T) float   padding: additive mask, SDPA (the default path; model/albert.py)
    (B, 1, T, T) bool    documents (or unpadded rows) on a CPU: an explicit mask, SDPA. The
                         reference path: flex_attention without torch.compile materialises
                         the scores anyway (and warns), so an explicit mask is as fast here
    BlockMask            documents on CUDA: FlexAttention skips the blocks where no query
                         and key share a document, padding included
    Varlen               unpadded rows on CUDA in bf16/fp16: torch.nn.attention.varlen
                         (FlashAttention's variable-length kernel), no mask at all

With document_ids the positions restart at each document, so a document in a packed row is
numbered, and attended, exactly as it would be alone: the encoder's output for it equals the
output for that document run by itself (tests/model/test_attention.py). Unpadded rows keep
the padded path's positions (each row is a document that starts at position 0 anyway).

FlexAttention and varlen have no attention dropout: when it is on in training, documents and
unpadded rows take the explicit-mask path on CUDA too (same results, quadratic memory).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import torch
import torch.nn.functional as F

from litebert.data.attention_layout import max_filler


def positions_in_documents(document_ids: torch.Tensor) -> torch.Tensor:
    """(B, T) -> (B, T): each position's offset from the start of its document (a document
    is a run of equal ids), with no device sync."""
    B, T = document_ids.shape
    t = torch.arange(T, device=document_ids.device).expand(B, T)
    starts = torch.ones_like(document_ids, dtype=torch.bool)  # (B, T): a document starts here
    starts[:, 1:] = document_ids[:, 1:] != document_ids[:, :-1]
    first = torch.where(starts, t, 0).cummax(dim=1).values  # (B, T): its document's start
    return t - first


def same_document(document_ids: torch.Tensor) -> torch.Tensor:
    """(B, T) -> (B, 1, T, T) bool: query i may attend to key j (the reference mask)."""
    return (document_ids[:, None, :, None] == document_ids[:, None, None, :])


@dataclass(frozen=True)
class Varlen:
    """Unpadded rows for FlashAttention's varlen kernel: cu_seqlens (S + 1,) int32 offsets of
    the S sequences of the unpadded row (the original rows, then the filler), max_seqlen an
    upper bound on their lengths, and the document ids for the explicit-mask fallback."""

    cu_seqlens: torch.Tensor
    max_seqlen: int
    document_ids: torch.Tensor  # (1, N)


@dataclass(frozen=True)
class Unpadding:
    """Where the N tokens of the unpadded row come from: `index` (N,) into the flattened
    (B x T) batch, the real tokens in row-major order, then as many distinct padding
    positions as there are filler slots (so `pad` puts every slot back somewhere of its own)."""

    index: torch.Tensor  # (N,)
    rows: int
    width: int

    def unpad(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, C) -> (1, N, C)
        return x.flatten(0, 1)[self.index][None]

    def pad(self, x: torch.Tensor) -> torch.Tensor:  # (1, N, C) -> (B, T, C)
        out = x.new_zeros(self.rows * self.width, x.shape[-1])
        return out.index_copy(0, self.index, x[0]).view(self.rows, self.width, -1)


@dataclass(frozen=True)
class Layout:
    """One forward pass's attention: `mask` for attend(), `documents` (B, T) when positions
    restart per document (padding at -1), `unpadding` when the encoder runs on the real
    tokens only."""

    mask: Any = None
    documents: torch.Tensor | None = None
    unpadding: Unpadding | None = None

    def unpad(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.unpadding is None else self.unpadding.unpad(x)

    def pad(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.unpadding is None else self.unpadding.pad(x)


def document_layout(attention_mask: torch.Tensor | None, document_ids: torch.Tensor,
                    fused: bool) -> Layout:
    """The Layout of a batch with documents ((B, T) ids) or unpadded rows ((N,) ids); `fused`
    allows FlexAttention / varlen (CUDA, no attention dropout), else explicit masks. (A batch
    without document_ids has padding at most: the backbone's additive mask.)"""
    if document_ids.dim() == 1:
        if attention_mask is None:
            raise ValueError("unpadded document_ids (N,) need the batch's attention_mask: "
                             "they list the real tokens it marks")
        return unpadded_layout(attention_mask, document_ids, fused)
    if attention_mask is not None:  # padding is a document of its own
        document_ids = document_ids.masked_fill(attention_mask == 0, -1)
    mask = document_block_mask(document_ids) if fused else same_document(document_ids)
    return Layout(mask=mask, documents=document_ids)


def unpadded_layout(attention_mask: torch.Tensor, document_ids: torch.Tensor,
                    fused: bool) -> Layout:
    """Unpadded rows: N (from document_ids' shape, the collator's count) tokens gathered
    without a device sync, real ones first (a stable sort of the padding flags)."""
    B, T = attention_mask.shape
    N = document_ids.shape[0]
    document_ids = document_ids[None]  # (1, N)
    padding = (attention_mask.flatten() == 0).to(torch.uint8)  # (B*T,)
    index = torch.argsort(padding, stable=True)[:N]  # (N,): real tokens, then padding
    unpadding = Unpadding(index=index, rows=B, width=T)
    if not fused:
        return Layout(mask=same_document(document_ids), unpadding=unpadding)
    lengths = attention_mask.sum(dim=1, dtype=torch.int32)  # (B,)
    zero = lengths.new_zeros(1)
    cu_seqlens = torch.cat([zero, lengths.cumsum(0, dtype=torch.int32), zero + N])  # (B + 2,)
    # Rows are at most T long, the filler at most one bucket (the collator's rule).
    longest = min(max(T, max_filler(B, T)), N)
    return Layout(mask=Varlen(cu_seqlens, longest, document_ids), unpadding=unpadding)


def document_block_mask(document_ids: torch.Tensor):
    """FlexAttention's BlockMask: query and key in the same document (B, T)."""
    from torch.nn.attention.flex_attention import create_block_mask

    def same(b, h, q, k):
        return document_ids[b, q] == document_ids[b, k]

    B, T = document_ids.shape
    return create_block_mask(same, B, None, T, T, device=document_ids.device)


@cache
def compiled_flex_attention():
    """flex_attention compiled once: only compiled does it run as a fused kernel (inside a
    compiled model the outer graph inlines it)."""
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=False)


def attend(q, k, v, mask, dropout_p: float) -> torch.Tensor:
    """Attention of q, k, v (B, nh, T, hd) under `mask` (see the module docstring)."""
    if isinstance(mask, Varlen):
        if q.dtype in (torch.float16, torch.bfloat16):
            return varlen(q, k, v, mask)
        mask = same_document(mask.document_ids)  # fp32: FlashAttention has no kernel for it
    elif not isinstance(mask, torch.Tensor | None):  # a BlockMask
        return compiled_flex_attention()(q, k, v, block_mask=mask)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)


def varlen(q, k, v, mask: Varlen) -> torch.Tensor:
    """q, k, v (1, nh, N, hd) -> (1, nh, N, hd) through torch's varlen FlashAttention."""
    from torch.nn.attention.varlen import varlen_attn

    q, k, v = (t[0].transpose(0, 1) for t in (q, k, v))  # (N, nh, hd)
    out = varlen_attn(q, k, v, mask.cu_seqlens, mask.cu_seqlens, mask.max_seqlen,
                      mask.max_seqlen)
    assert isinstance(out, torch.Tensor)
    return out.transpose(0, 1)[None]
