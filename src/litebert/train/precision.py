"""The arithmetic of a run, pre-training or fine-tuning: `precision` auto | fp32 | bf16 | fp16.

auto is bf16 on CUDA (autocast: matmuls and attention in bf16, weights, optimizer state and
reductions in fp32) and fp32 elsewhere, where bf16 matmuls are slower than fp32 ones on the
CPUs people train on. fp16 adds torch's GradScaler, which scales the loss so that small
gradients survive fp16's range and skips a step whose gradients overflowed.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from litebert.train.run_config import PRECISIONS


def resolved_precision(setting: str, device: torch.device) -> str:
    """fp32, bf16 or fp16: auto is bf16 on CUDA, fp32 elsewhere."""
    if setting not in PRECISIONS:
        raise ValueError(f"precision={setting!r}: choose from {', '.join(PRECISIONS)}")
    if setting == "auto":
        return "bf16" if device.type == "cuda" else "fp32"
    return setting


def autocast(setting: str, device: torch.device
             ) -> tuple[contextlib.AbstractContextManager[Any], torch.amp.GradScaler | None]:
    """(the forward pass's autocast context, the GradScaler fp16 needs or None)."""
    precision = resolved_precision(setting, device)
    if precision == "fp32":
        return contextlib.nullcontext(), None
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    scaler = torch.amp.GradScaler(device.type) if precision == "fp16" else None
    return torch.autocast(device_type=device.type, dtype=dtype), scaler


def allow_tf32(device: torch.device) -> None:
    """fp32 matmuls (and convolutions) on TF32 tensor cores, on CUDA: the precision torch
    gives fp32 training there unless told otherwise costs 2-8x in speed."""
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
