"""Presets saved in litebert's own layout: ALBERT's structure (E < H, one layer shared
by all) on the XLNet and ModernBERT backbones, which no transformers class can hold."""

from __future__ import annotations

from typing import Any

from litebert.models.modernbert.presets import modernbert_preset
from litebert.models.xlnet.presets import xlnet_preset

# ALBERT's factorised embeddings and one layer shared by all, in our layout.
_ALBERT_STRUCTURE = dict(embedding_size=128, sharing="all", num_hidden_groups=1,
                         model_type="litebert")

PRESETS: dict[str, dict[str, Any]] = {
    "albert-xlnet-tiny": {**xlnet_preset(4, 256, 4), **_ALBERT_STRUCTURE},
    "albert-modern-tiny": {**modernbert_preset(4, 256, 4, 384, local_attention=64),
                           **_ALBERT_STRUCTURE},
}
