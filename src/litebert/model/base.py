"""What every litebert model shares: weight initialisation, parameter counts, save/load."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from litebert.config import BackboneConfig, ModelConfig


class InitialisesItself:
    """A module whose init is its own (ModernBERT's backbone and encoder: output projections at
    a smaller std). A model's init_weights leaves its modules alone and calls its
    `init_weights` afterwards, so the init holds under any head, and for an encoder built
    without its backbone (ELECTRA's generator)."""

    def init_weights(self) -> None:
        raise NotImplementedError


class PreTrainedModel(nn.Module):
    config: ModelConfig
    # A head's backbone (model/backbone.py's protocol), at this name whatever the backbone.
    # Typed loosely: objectives/ and train/ reach into ALBERT's modules through it.
    backbone: Any
    # A backbone's own settings (config.backbone_config): none beyond the shared fields unless
    # the backbone's module defines a BackboneConfig subclass and names it here.
    config_class: ClassVar[type[BackboneConfig]] = BackboneConfig

    def init_weights(self) -> None:
        """TF-style truncated normal (+-2 std) for weights, zero biases, unit LayerNorms; a
        module that initialises itself (InitialisesItself) runs its own afterwards."""
        std = self.config.initializer_range
        own = [m for m in self.modules() if m is not self and isinstance(m, InitialisesItself)]
        inside = {id(sub) for m in own for sub in m.modules() if sub is not m}
        own = [m for m in own if id(m) not in inside]  # the outermost: each calls its parts
        theirs = {id(sub) for m in own for sub in m.modules()}
        for module in self.modules():
            if id(module) in theirs:
                continue
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.trunc_normal_(module.weight, std=std, a=-2 * std, b=2 * std)
                if isinstance(module, nn.Embedding) and module.padding_idx is not None:
                    with torch.no_grad():
                        module.weight[module.padding_idx].zero_()
                bias = getattr(module, "bias", None)
                if isinstance(bias, torch.Tensor):
                    nn.init.zeros_(bias)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                if module.bias is not None:  # ModernBERT's norms have none
                    nn.init.zeros_(module.bias)
        for name, param in self.named_parameters():
            if name.endswith("predictions.bias"):
                nn.init.zeros_(param)
        for module in own:
            module.init_weights()

    @property
    def base_model(self) -> nn.Module:
        """The backbone under the heads (at `backbone`, whatever the backbone: see
        model/backbone.py); the model itself when it is the backbone."""
        return getattr(self, "backbone", self)

    def num_parameters(self, only_backbone: bool = False) -> int:
        """Distinct parameters (tied and shared ones counted once)."""
        module = self.base_model if only_backbone else self
        return sum(p.numel() for p in module.parameters())

    def save_pretrained(self, directory: str | Path, *, unroll: bool = False) -> Path:
        """config.json + model.safetensors in the config's family layout (see model/hub.py);
        unroll=True writes shared layers as one copy per layer (identical outputs)."""
        from litebert.model.hub import save_pretrained

        return save_pretrained(self, directory, unroll=unroll)

    @classmethod
    def from_pretrained(cls, directory: str | Path, *, strict: bool = False,
                        files: Any = None, **config_overrides: Any):
        """Load a model directory of any family litebert reads (litebert, transformers
        ALBERT, BERT, ELECTRA, RoBERTa, XLNet, ModernBERT) into this class; heads the file
        lacks are newly initialised. `files`: the directory's config.json as the caller read
        it already (model.hub.ModelFiles), so that it is not read again."""
        from litebert.model.hub import load_pretrained

        return load_pretrained(cls, directory, strict=strict, files=files, **config_overrides)
