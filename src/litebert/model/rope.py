"""Rotary position embeddings (Su et al., 2021), in the "rotate half" layout.

Each head's hd channels form hd / 2 pairs (c, c + hd / 2), not adjacent channels as in the
interleaved layout: pair c turns by the angle position x theta^(-2c / hd). So the cos and sin
tables hold each pair's angle twice, at c and c + hd / 2, and rotating x is

    x * cos + rotate_half(x) * sin,   rotate_half([x1 | x2]) = [-x2 | x1].

That is the layout of transformers' Llama-style models, ModernBERT's included: a checkpoint's
Wqkv rows need no permutation. A score q_i . k_j then depends on positions i and j only
through i - j, so a document packed into a row is attended as if alone as long as its
positions restart at 0 (model/attention.py's positions_in_documents).

ModernBERT gives each layer type its own theta (global layers 160,000, sliding-window layers
10,000): the backbone makes one table per theta per forward pass and hands each layer its
type's. The tables are computed, not stored: they hold no parameters, and fp32 angles made
fresh stay fp32 whatever dtype the model is cast to.
"""

from __future__ import annotations

import torch


def rope_tables(positions: torch.Tensor, head_dim: int,
                theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """positions (T,) or (B, T), any integer numbering (restarting per document, unpadded
    rows' gathered positions) -> (cos, sin), fp32, (T, hd) or (B, T, hd) each."""
    if head_dim % 2:
        raise ValueError(f"rotary embeddings need an even head size, not {head_dim}")
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float32,
                             device=positions.device) / head_dim  # (hd/2,)
    inv_freq = 1.0 / theta ** exponents  # (hd/2,): a turn per position, slower with c
    angles = positions[..., None].float() * inv_freq  # (..., T, hd/2), fp32 for long rows
    angles = torch.cat((angles, angles), dim=-1)  # (..., T, hd): pair c at c and c + hd/2
    return angles.cos(), angles.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """[x1 | x2] -> [-x2 | x1] on the last dimension: each pair (a, b) turned to (-b, a)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (B, nh, T, hd) turned by the tables of rope_tables, (T, hd) or (B, T, hd). Computed
    in fp32, as transformers does (in bf16 both products would be rounded before the sum),
    and returned in x's dtype."""
    if cos.dim() == 3:  # (B, T, hd) -> (B, 1, T, hd): one table for every head
        cos, sin = cos[:, None], sin[:, None]
    x32 = x.float()
    return (x32 * cos + rotate_half(x32) * sin).to(x.dtype)
