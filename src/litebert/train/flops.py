"""Training FLOPs of one MLM batch, from what the batch holds rather than its shape.

A per-token count times B x T assumes every row is full: at 32 x 512 with 38% of the
positions padding that overstates the work by 1.6x. Here:

- model FLOPs: the work the batch asks for. Each real segment (a row's real tokens, or a
  document of a packed row under document attention) of length l costs l x the encoder's
  per-token count at length l (its attention reads l keys), and the MLM head costs its
  per-target count at the batch's real targets (the used prediction slots).
- hardware FLOPs: the work the device does. Every computed position counts at the width of
  the sequence it is computed in: B rows of T on the padded paths (padding included, each
  attending over T); on the unpadded path the real rows at their lengths and the N - real
  filler slots as the one segment model/attention.py makes of them. The head counts every
  prediction slot, used or not.

The per-token counts are the model's own (model/counts.py); nothing here is a second
formula. MFU divides model FLOPs by the time, HFU hardware FLOPs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from litebert.config import ModelConfig
from litebert.model.counts import encoder_flops_per_token, mlm_head_flops_per_token
from litebert.padding import real_tokens


@dataclass(frozen=True)
class BatchFlops:
    """One batch's training FLOPs (forward + backward) and the positions behind them."""

    model: float  # the real segments' and real targets' work
    hardware: float  # every computed position's and prediction slot's work
    tokens: int  # real tokens
    positions: int  # computed positions (B x T padded, N unpadded)

    @property
    def padding_share(self) -> float:
        """The share of computed positions that hold no real token, in [0, 1)."""
        return 1.0 - self.tokens / max(self.positions, 1)


def encoder_flops(config: ModelConfig, segments: Sequence[int]) -> float:
    """The encoder's FLOPs over sequences of these lengths, each attending within itself."""
    return sum(length * encoder_flops_per_token(config, length)
               for length in segments if length > 0)


def mlm_flops(config: ModelConfig, real: Sequence[int], computed: Sequence[int],
              targets: int, slots: int) -> BatchFlops:
    """FLOPs of an MLM batch: `real` the real segments' lengths, `computed` those of the
    sequences the device runs (padding or filler included), `targets` the real MLM targets,
    `slots` the prediction slots the head scores."""
    per_target = mlm_head_flops_per_token(config, 1.0)
    return BatchFlops(model=encoder_flops(config, real) + targets * per_target,
                      hardware=encoder_flops(config, computed) + slots * per_target,
                      tokens=int(sum(real)), positions=int(sum(computed)))


def row_lengths(attention_mask: torch.Tensor) -> list[int]:
    """The real tokens of each row of a (B, T) mask."""
    return [int(n) for n in attention_mask.sum(1).tolist()]


def document_lengths(document_ids: torch.Tensor) -> list[int]:
    """The lengths of the documents of packed (B, T) rows (padding at -1 left out)."""
    lengths: list[int] = []
    for row in document_ids:
        _, counts = torch.unique_consecutive(row[row >= 0], return_counts=True)
        lengths += counts.tolist()
    return lengths


def unpadded_segments(real: Sequence[int], tokens: int) -> list[int]:
    """The sequences an unpadded batch of N = `tokens` runs: its real rows, then the
    N - real filler slots, one segment (data/attention_layout.py)."""
    return [*real, tokens - int(sum(real))]


def batch_flops(config: ModelConfig, batch: Mapping[str, torch.Tensor]) -> BatchFlops:
    """mlm_flops of a collated MLM batch (on any device; read on the host, so call it
    outside a timed step): its real tokens (attention_mask, none when no row is padded),
    masked_weights and masked_positions, and document_ids, (N,) on the unpadded path,
    (B, T) with documents."""
    mask = real_tokens(batch)  # (B, T)
    rows, width = mask.shape
    lengths = row_lengths(mask)
    computed = [width] * rows
    documents = batch.get("document_ids")
    real = lengths
    if documents is not None and documents.dim() == 1:  # unpadded: (N,)
        computed = unpadded_segments(lengths, documents.numel())
    elif documents is not None:  # document attention: within each document
        real = document_lengths(documents)
    targets = int(batch["masked_weights"].sum())
    return mlm_flops(config, real, computed, targets, batch["masked_positions"].numel())
