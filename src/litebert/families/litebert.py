"""litebert's own layout: our parameter names as they are, model_type "litebert".

For what transformers cannot represent: attention-only or FFN-only sharing. The config.json is
ALBERT's plus our fields (sharing, structure), so it reads back exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litebert.config import AlbertConfig
from litebert.families.albert import (
    ALL_CLASSES,
    OUR_HEADS,
    albert_config_from_dict,
    albert_config_to_dict,
)
from litebert.families.base import FamilyAdapter


class LitebertAdapter(FamilyAdapter):
    model_type = "litebert"
    prefix = "albert."
    class_names = {name: name for name in ALL_CLASSES}
    other_heads = OUR_HEADS
    tied_copies = ("predictions.decoder.weight", "predictions.decoder.bias")

    def config_from_dict(self, data: Mapping[str, Any], source: str) -> AlbertConfig:
        # The config's family is ALBERT unless the file names another (litebert_model_type).
        return albert_config_from_dict(data, source)

    def config_to_dict(self, config: AlbertConfig) -> dict[str, Any]:
        return albert_config_to_dict(config, "litebert")

    def external_key(self, key: str, config: AlbertConfig) -> str:
        return key

    def internal_key(self, key: str, config: AlbertConfig) -> str | None:
        return key
