"""What a batch tells the model about attention: the run option `attention`
(attention_choice.py), on the host.

    full       nothing: every token attends to every real token of its row (RoBERTa's way,
               packed documents included)
    document   packed data only: items carry `document_ids` (T,), the document of each
               position (litebert.data.packing.packed_document_ids); the collated batch has
               (B, T) with padding at -1, and the model lets a token attend only within its
               document (and numbers positions from each document's start)
    unpadded   a padded batch also carries `document_ids` of shape (N,): the row of each real
               token in row-major order, then -1 for the filler up to N. The model gathers
               those N tokens, runs the encoder on them as one row with one document per
               original row, and scatters the result back to (B, T): padding costs no
               attention or FFN FLOPs. A batch without padding carries nothing (the plain
               path is already the cheapest), nor does one with a row of no real token (the
               padded path takes it).

Only the collator (this module) counts tokens: the model reads N from the tensor's shape, so
the step never waits on the device for it. N is the real-token count R plus at least one
filler slot, rounded up to a multiple of a step: the largest power of two no larger than
GRANULE (128, whole tiles of the GEMMs), the row width T, or MAX_FILLER x R. So the filler is
1 to T slots, at most 3% of R once R >= 34 (in rows of 128 or more, N is a multiple of 128
from 4,267 real tokens on), and never more than the padding positions: N is at most B x T.
The model runs the filler as one segment after the B rows, so varlen sees B + 1 sequences
of 1 to T tokens (max_seqlen = T) whatever N is, and each filler slot takes one padding
position of its own, which keeps the gather back to (B, T) a permutation.

N varies from batch to batch: the Trainer marks it dynamic (mark_tokens_dynamic) where a
compiled model reads it, so one graph serves every N. CUDA graphs (compile mode
reduce-overhead) are recorded per shape, so such a run records one per value of N it meets:
with rows of 128 or more and 4,267 real tokens or more, a (B, T) batch has at most B x T / 128
values (128 at 32 x 512), fewer the narrower the spread of its real-token counts.
"""

from __future__ import annotations

import torch

from litebert.padding import real_tokens

GRANULE = 128  # N's step where the filler stays within MAX_FILLER: whole tiles of the GEMMs
MAX_FILLER = 0.03  # filler slots per real token, at most (from 34 real tokens on)


def with_document_ids(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The collated batch's (B, T) document_ids with padding at -1 (its own document, which
    no real token attends to)."""
    real = real_tokens(batch)  # (B, T)
    batch["document_ids"] = batch["document_ids"].masked_fill(real == 0, -1)
    return batch


def granule(real: int, width: int) -> int:
    """N's step for `real` tokens in rows of `width`: the largest power of two at most
    GRANULE, `width` and MAX_FILLER x real (1 at least)."""
    most = max(1, min(GRANULE, width, int(real * MAX_FILLER)))
    return 1 << (most.bit_length() - 1)


def unpadded_size(real: int, rows: int, width: int) -> int:
    """N of an unpadded batch: `real` tokens plus at least one filler slot, rounded up to
    the granule, at most rows x width (needs rows x width > real)."""
    step = granule(real, width)
    return min(-(-(real + 1) // step) * step, rows * width)


def with_unpadded_rows(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """(N,) document_ids for a padded batch (see the module docstring); unchanged when no
    position is padding, or when a row has no real token (its segment would be empty)."""
    real = real_tokens(batch)  # (B, T)
    rows, width = real.shape
    count = int(real.sum())  # on the host, in the collator
    if count == rows * width or bool((real.sum(1) == 0).any()):
        return batch
    row_of = torch.arange(rows)[:, None].expand(rows, width)[real.bool()]  # (count,)
    filler = torch.full((unpadded_size(count, rows, width) - count,), -1, dtype=torch.long)
    batch["document_ids"] = torch.cat([row_of, filler])  # (N,)
    return batch


def mark_tokens_dynamic(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The batch, its unpadded (N,) document_ids (if any) marked dynamic in N for
    torch.compile: a compiled model then traces N as a symbol, one graph for every N, where
    static N would compile a graph per size and, with the padded path and evaluation,
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

