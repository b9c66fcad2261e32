"""[CLS] ... [SEP] rows of random ids and the special ids ELECTRA's corruption never picks."""

from __future__ import annotations

import torch

CLS, SEP, MASK, PAD = 2, 3, 4, 0


NEVER = torch.tensor([CLS, SEP, MASK])


def rows(lengths: list[int], width: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """[CLS] w w ... [SEP] rows of the given real lengths, padded to `width`."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(10, 500, (len(lengths), width), generator=g)
    mask = torch.zeros_like(ids)
    for b, n in enumerate(lengths):
        mask[b, :n] = 1
        ids[b, 0], ids[b, n - 1] = CLS, SEP
    ids[mask == 0] = PAD
    return ids, mask
