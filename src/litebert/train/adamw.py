"""AdamW as litebert builds it: torch's own, fused on the run's device where torch has a
fused update there (the built-in entry "adamw" of litebert.train.optimizers)."""

from __future__ import annotations

import torch


def fused_adamw(groups: list[dict], *, lr: float, weight_decay: float,
                betas: tuple[float, float], eps: float) -> torch.optim.AdamW:
    """torch's AdamW as one fused update (CUDA, and CPUs from torch 2.4: far faster
    there than the per-parameter loop torch picks by default on a CPU, which also reads each
    step counter back to the host); torch's default where this torch or device has none."""
    try:
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps,
                                 weight_decay=weight_decay, fused=True)
    except RuntimeError:  # "`fused=True` requires all the params to be ... on a supported device"
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
