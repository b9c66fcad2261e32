"""litebert's own layout: our parameter names, the backbone under `albert.` (ALBERT's
prefix), model_type "litebert".

For what transformers cannot represent: attention-only or FFN-only sharing, any backbone but
"albert" (config.backbone; litebert.model.backbone) that no transformers family names, and
XLNet with ALBERT's structure (factorised embeddings, shared layers) with its permutation LM.
The config.json is ALBERT's plus our fields (sharing, structure, `backbone` when not
"albert"), so it reads back exactly; everything but the name of the layout and the key
mapping is the ALBERT adapter's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from litebert.config import ModelConfig
from litebert.families.base import FamilyAdapter
from litebert.models.albert.adapter import ALL_CLASSES, AlbertAdapter, albert_config_to_dict

# Classes that ALBERT's layout has no name for (they read the XLNet backbone): ours here.
_OWN_CLASSES = ("EncoderForPermutationLM", "EncoderForBeamQuestionAnswering")


class LitebertAdapter(AlbertAdapter):
    model_type = "litebert"
    title = "litebert"
    backbones = None  # our names as they are: any backbone's
    class_names = {name: name for name in ALL_CLASSES + _OWN_CLASSES}

    def config_to_dict(self, config: ModelConfig) -> dict[str, Any]:
        return albert_config_to_dict(config, "litebert")

    def unsupported(self, config: ModelConfig, class_name: str | None = None) -> str | None:
        """Our layout holds every config (any sharing, backbone or numbering): only a class
        it has no name for is refused."""
        return FamilyAdapter.unsupported(self, config, class_name)

    def external_key(self, key: str, config: ModelConfig) -> str:
        return self.prefix_to_file(key)  # our names, under `albert.`

    def internal_key(self, key: str, config: ModelConfig) -> str | None:
        return self.prefix_from_file(key)

    def ignorable(self, key: str) -> bool:
        return key.startswith("lm_loss.") or super().ignorable(key)  # the permutation LM's

    def to_file(self, state: Mapping[str, torch.Tensor],
                config: ModelConfig) -> dict[str, torch.Tensor]:
        """ALBERT's rule for the "albert" backbone (an identity E->H projection where the
        model has none, as this layout always wrote); any other backbone's keys as they are but
        for the prefix."""
        if config.backbone == "albert":
            return super().to_file(state, config)
        return FamilyAdapter.to_file(self, state, config)


ADAPTER = LitebertAdapter()  # what the package's ModelSpec names (adapter_module)
