"""The XLNet backbone's own settings (config.backbone_config of a model on the "xlnet"
backbone). No torch: ModelConfig reads it."""

from __future__ import annotations

from dataclasses import dataclass

from litebert.config import BackboneConfig, ModelConfig, is_whole

ATTENTION_TYPES = ("bi", "uni")


@dataclass
class XLNetBackboneConfig(BackboneConfig):
    """What only this backbone reads, by transformers' XLNetConfig names."""

    # Memories: each layer keeps the last `mem_len` states of its input across segments
    # (None or 0: all of them when memories are asked for, transformers' rule); only the
    # first `reuse_len` tokens of a segment (None: all) become memory.
    mem_len: int | None = None
    reuse_len: int | None = None
    attn_type: str = "bi"  # "bi": every token sees every other; "uni": left to right only
    clamp_len: int = -1  # relative distances clamped to +-clamp_len; -1 (or 0): no clamping
    same_length: bool = False  # "uni": every token sees the same number of keys ("bi": none)
    bi_data: bool = False  # the second half of the batch reads relative positions reversed

    def validate(self, config: ModelConfig) -> None:
        need = self.need
        for name in ("mem_len", "reuse_len"):
            value = getattr(self, name)
            need(value is None or (is_whole(value) and value >= 0), name,
                 "must be a whole number >= 0, or null (XLNet's memories: see the field)")
        need(self.attn_type in ATTENTION_TYPES, "attn_type",
             "unknown; choose 'bi' (XLNet: every token sees every other) or 'uni' "
             "(Transformer-XL: left to right)")
        need(is_whole(self.clamp_len) and self.clamp_len >= -1, "clamp_len",
             "must be a whole number >= 0, or -1 for no clamping")
        for name in ("same_length", "bi_data"):
            need(isinstance(getattr(self, name), bool), name, "must be true or false")


xlnet_of = XLNetBackboneConfig.of  # config.backbone_config, typed
