"""Activation checkpointing per layer position: a training choice, not part of the model.

An encoder that subclasses `LayerCheckpointing` runs each layer position (attention and FFN
of that position together) through `run_position`. With checkpointing on, in training and
with gradients enabled, the position's forward runs under
torch.utils.checkpoint.checkpoint(use_reentrant=False): only its inputs are kept for the
backward pass, which recomputes its activations, so memory holds one position's activations
at a time instead of all of them, at the cost of a second forward pass of the layers. The
recomputation restores the RNG state of the first, so dropout draws the same masks and the
losses and gradients are those of a run without it. Evaluation and inference (eval mode, or
no grad) never recompute.

The switch is an attribute set at build time (`set_activation_checkpointing`), so no
config.json, state dict, checkpoint or export carries it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from litebert.config import ConfigError

Out = TypeVar("Out")


class LayerCheckpointing(nn.Module):
    """An encoder whose loop over layer positions calls `run_position` once per position."""

    checkpoint_positions: bool = False  # set by set_activation_checkpointing

    def run_position(self, position: Callable[..., Out], *args: Any) -> Out:
        """position(*args), its activations recomputed in the backward pass when
        checkpointing is on and the module trains with gradients."""
        if self.checkpoint_positions and self.training and torch.is_grad_enabled():
            return checkpoint(position, *args, use_reentrant=False)
        return position(*args)


def set_activation_checkpointing(model: nn.Module, enabled: bool = True) -> int:
    """Turn per-position checkpointing on (or off) in every encoder of `model` (a backbone, a
    head model, or a module holding several, such as ELECTRA's generator and
    discriminator); the number of encoders set. ConfigError when turning it on finds none: a
    backbone of one's own must subclass LayerCheckpointing to offer it."""
    encoders = [m for m in model.modules() if isinstance(m, LayerCheckpointing)]
    if enabled and not encoders:
        raise ConfigError(f"activation checkpointing: {type(model).__name__} holds no encoder "
                          f"that checkpoints its layers (an encoder offers it by subclassing "
                          f"litebert.model.checkpointing.LayerCheckpointing and calling "
                          f"run_position per layer position)")
    for encoder in encoders:
        encoder.checkpoint_positions = enabled
    return len(encoders)
