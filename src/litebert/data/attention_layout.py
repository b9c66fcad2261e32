"""What a batch tells the model about attention: the run option `attention`
(attention_choice.py), on the host.

    full       nothing: every token attends to every real token of its row (RoBERTa's way,
               packed documents included)
    document   packed data only: items carry `document_ids` (T,), the document of each
               position (litebert.data.packing.packed_document_ids); the collated batch has
               (B, T) with padding at -1, and the model lets a token attend only within its
               document (and numbers positions from each document's start)
    unpadded   a padded batch also carries `document_ids` of shape (N,): the row of each real
               token in row-major order, then -1 for filler up to a bucketed N. The model
               gathers those N tokens, runs the encoder on them as one row with one document
               per original row, and scatters the result back to (B, T): padding costs no
               attention or FFN FLOPs. A batch without padding carries nothing (the plain
               path is already the cheapest), nor does one with fewer padding positions than
               filler segments, or with a row of no real token (the padded path takes them).

Only the collator (this module) counts tokens: the model reads N from the tensor's shape, so
the step never waits on the device for it. N is the real-token count plus at least F filler
slots (F = filler_segments(B, T)), rounded up to a multiple of ceil(B x T / UNPAD_BUCKETS).
The model splits the filler into F segments of 1 to T tokens each, so varlen's sequences are
all at most T long (max_seqlen = T) and their count, B + F, depends on (B, T) alone; every
filler slot takes one padding position of its own, which keeps the gather back to (B, T) a
permutation. N varies from batch to batch: the Trainer marks it dynamic
(mark_tokens_dynamic) where a compiled model reads it, so one graph serves every N; the
buckets still bound the shapes a CUDA graph records (at most UNPAD_BUCKETS per (B, T)).
"""

from __future__ import annotations

import torch

from litebert.padding import real_tokens

UNPAD_BUCKETS = 8  # token counts an unpadded batch of one (B, T) can take


def with_document_ids(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The collated batch's (B, T) document_ids with padding at -1 (its own document, which
    no real token attends to)."""
    real = real_tokens(batch)  # (B, T)
    batch["document_ids"] = batch["document_ids"].masked_fill(real == 0, -1)
    return batch


def bucket(rows: int, width: int) -> int:
    """N of a (rows, width) batch is a multiple of this (or rows x width itself)."""
    return -(-rows * width // UNPAD_BUCKETS)


def filler_segments(rows: int, width: int) -> int:
    """F, the filler segments of an unpadded (rows, width) batch: enough that the most filler
    N can hold (F + bucket - 1 slots) fits in F segments of at most `width` tokens."""
    return max(1, -(-(bucket(rows, width) - 1) // max(width - 1, 1)))


def unpadded_size(real: int, rows: int, width: int) -> int:
    """N of an unpadded batch: `real` tokens plus at least F filler slots, rounded up to the
    bucket, at most rows x width (needs rows x width - real >= F padding positions)."""
    step = bucket(rows, width)
    return min(-(-(real + filler_segments(rows, width)) // step) * step, rows * width)


def with_unpadded_rows(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """(N,) document_ids for a padded batch (see the module docstring); unchanged when no
    row is padded, when fewer positions are padding than the F filler segments need, or
    when a row has no real token (its segment would be empty)."""
    real = real_tokens(batch)  # (B, T)
    rows, width = real.shape
    count = int(real.sum())  # on the host, in the collator
    if rows * width - count < filler_segments(rows, width) or bool((real.sum(1) == 0).any()):
        return batch
    row_of = torch.arange(rows)[:, None].expand(rows, width)[real.bool()]  # (count,)
    filler = torch.full((unpadded_size(count, rows, width) - count,), -1, dtype=torch.long)
    batch["document_ids"] = torch.cat([row_of, filler])  # (N,)
    return batch


def mark_tokens_dynamic(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The batch, its unpadded (N,) document_ids (if any) marked dynamic in N for
    torch.compile: a compiled model then traces N as a symbol, one graph for every N, where
    static N would compile a graph per bucket and, with the padded path and evaluation,
    exceed torch's limit of graphs per function. Call it on the batch the model reads, after
    the move to its device (a copy does not keep the mark); eagerly it changes nothing."""
    ids = batch.get("document_ids")
    if ids is not None and ids.dim() == 1:
        torch._dynamo.maybe_mark_dynamic(ids, 0)
    return batch


def lay_out(batch: dict[str, torch.Tensor], attention: str) -> dict[str, torch.Tensor]:
    """A collated batch as `attention` asks: what PretrainingDataset.collate ends with."""
    if attention == "document":
        return with_document_ids(batch)
    if attention == "unpadded":
        return with_unpadded_rows(batch)
    return batch

