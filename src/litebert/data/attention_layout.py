"""What a batch tells the model about attention: the run option `attention`, on the host.

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
               path is already the cheapest).

Only the collator (this module) counts tokens: the model reads N from the tensor's shape, so
the step never waits on the device for it. N is the real-token count plus at least one
filler slot, rounded up to a multiple of ceil(B x T / UNPAD_BUCKETS), so a run compiles at
most UNPAD_BUCKETS shapes per batch shape (and filler slots always exist, which keeps the
gather back to (B, T) a permutation: every filler slot takes one padding position).
"""

from __future__ import annotations

import torch

from litebert.padding import real_tokens

ATTENTIONS = ("full", "document", "unpadded")
UNPAD_BUCKETS = 8  # token counts an unpadded batch of one (B, T) can take


def with_document_ids(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The collated batch's (B, T) document_ids with padding at -1 (its own document, which
    no real token attends to)."""
    real = real_tokens(batch)  # (B, T)
    batch["document_ids"] = batch["document_ids"].masked_fill(real == 0, -1)
    return batch


def max_filler(rows: int, width: int) -> int:
    """The bucket of a (rows, width) batch, so the most filler slots it can get."""
    return -(-rows * width // UNPAD_BUCKETS)


def unpadded_size(real: int, rows: int, width: int) -> int:
    """N of an unpadded batch: `real` tokens plus at least one filler slot, rounded up to the
    bucket, at most rows x width (needs real < rows x width: some padding)."""
    step = max_filler(rows, width)
    return min(-(-(real + 1) // step) * step, rows * width)


def with_unpadded_rows(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """(N,) document_ids for a padded batch (see the module docstring); unchanged when no
    row is padded."""
    real = real_tokens(batch)  # (B, T)
    rows, width = real.shape
    count = int(real.sum())  # on the host, in the collator
    if count == rows * width:
        return batch
    row_of = torch.arange(rows)[:, None].expand(rows, width)[real.bool()]  # (count,)
    filler = torch.full((unpadded_size(count, rows, width) - count,), -1, dtype=torch.long)
    batch["document_ids"] = torch.cat([row_of, filler])  # (N,)
    return batch


def lay_out(batch: dict[str, torch.Tensor], attention: str) -> dict[str, torch.Tensor]:
    """A collated batch as `attention` asks: what PretrainingDataset.collate ends with."""
    if attention == "document":
        return with_document_ids(batch)
    if attention == "unpadded":
        return with_unpadded_rows(batch)
    return batch


def check_attention(attention: str, packed: bool, where: str) -> None:
    """ValueError for an attention the data cannot have: `document` needs packed data (its
    items hold several documents; a sentence pair is one)."""
    if attention not in ATTENTIONS:
        raise ValueError(f"{where}: attention={attention!r}; choose from {', '.join(ATTENTIONS)}")
    if attention == "document" and not packed:
        raise ValueError(f"{where}: attention 'document' needs packed data (built with "
                         "--packing full-sentences or doc-sentences), whose rows hold several "
                         "documents; this data holds sentence pairs: use attention 'full' or "
                         "'unpadded', or rebuild the data packed")
