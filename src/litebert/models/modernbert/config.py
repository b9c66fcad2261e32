"""The ModernBERT backbone's own settings (config.backbone_config of a model on the
"modernbert" backbone). No torch: ModelConfig reads it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from litebert.config import BackboneConfig, ConfigError, ModelConfig, is_whole


@dataclass
class ModernBertBackboneConfig(BackboneConfig):
    """What only this backbone reads, by transformers' ModernBertConfig names. The shared
    fields hold the rest under ALBERT's names: ModernBERT's hidden_activation is hidden_act,
    norm_eps is layer_norm_eps, and attention_dropout is attention_probs_dropout_prob (it
    drops the attention probabilities and the output projection's result). This backbone
    reads no hidden_dropout_prob: its dropouts are the three named here and that one."""

    # Layer position k attends globally when k % global_attn_every_n_layers == 0 (1: all).
    global_attn_every_n_layers: int = 3
    # The other positions' window in keys, both sides together: |i - j| <= local_attention // 2.
    local_attention: int = 128
    global_rope_theta: float = 160_000.0  # rotary base of the global positions
    local_rope_theta: float = 10_000.0  # rotary base of the sliding-window positions
    embedding_dropout: float = 0.0  # after the embeddings' norm
    mlp_dropout: float = 0.0  # on GeGLU's gated product, before Wo
    initializer_cutoff_factor: float = 2.0  # init: truncated normal cut at +- this x std
    # Whether the backbone holds mask_emb, the query stream's input (two-stream attention;
    # objective plm sets it). Off, the backbone is transformers' ModernBertModel exactly
    # (layout, parameter count) and has no parameter that an MLM run leaves without a
    # gradient, which DDP would wait for; perm_mask alone (the content stream) needs none.
    query_stream: bool = False

    def validate(self, config: ModelConfig) -> None:
        need = self.need
        need(is_whole(self.global_attn_every_n_layers) and self.global_attn_every_n_layers >= 1,
             "global_attn_every_n_layers",
             "must be a whole number >= 1 (1: every layer attends globally)")
        need(is_whole(self.local_attention) and self.local_attention >= 2, "local_attention",
             "must be a whole number >= 2: the sliding window's keys, local_attention // 2 on "
             "each side of the query")
        for name in ("global_rope_theta", "local_rope_theta", "initializer_cutoff_factor"):
            value = getattr(self, name)
            need(_is_number(value) and value > 0, name, "must be a positive number")
        for name in ("embedding_dropout", "mlp_dropout"):
            value = getattr(self, name)
            need(_is_number(value) and 0.0 <= value < 1.0, name, "must be in [0, 1)")
        need(isinstance(self.query_stream, bool), "query_stream", "must be true or false")
        head_size = config.hidden_size // config.num_attention_heads
        if head_size % 2:
            raise ConfigError(f"ModelConfig.hidden_size={config.hidden_size}: rotary "
                              f"embeddings need an even head size, and hidden_size / "
                              f"num_attention_heads is {head_size}: change either")
        if config.use_pooler:
            raise ConfigError("ModelConfig.use_pooler=True: ModernBERT has no pooler; set "
                              "use_pooler false and classify from the first token "
                              "(classifier_head 'first_token')")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


modernbert_of = ModernBertBackboneConfig.of  # config.backbone_config, typed
