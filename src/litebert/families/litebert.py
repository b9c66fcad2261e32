"""litebert's own layout: our parameter names as they are, model_type "litebert".

For what transformers cannot represent: attention-only or FFN-only sharing, and any backbone
but "albert" (config.backbone; litebert.model.backbone), whose parameters no transformers
family names. The config.json is ALBERT's plus our fields (sharing, structure, `backbone`
when not "albert"), so it reads back exactly; everything but the name of the layout and the
key mapping is the ALBERT adapter's.
"""

from __future__ import annotations

from typing import Any

from litebert.config import AlbertConfig
from litebert.families.albert import AlbertAdapter, albert_config_to_dict


class LitebertAdapter(AlbertAdapter):
    model_type = "litebert"
    title = "litebert"
    backbones = None  # our names as they are: any backbone's

    def config_to_dict(self, config: AlbertConfig) -> dict[str, Any]:
        return albert_config_to_dict(config, "litebert")

    def external_key(self, key: str, config: AlbertConfig) -> str:
        return key  # our names are the file's

    def internal_key(self, key: str, config: AlbertConfig) -> str | None:
        return key
