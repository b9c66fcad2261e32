"""The toy backbone: word + position embeddings -> L pre-norm SDPA layers -> LayerNorm.

    input ids (B, T) -> (B, T, H) embeddings -> L x [x + attn(norm(x)); x + ffn(norm(x))]
      -> final norm -> last_hidden_state (B, T, H); no pooler, no token types

What model/backbone.py's `Backbone` protocol asks, and no more: the test that defines it
shows that a backbone comes in a package outside src.
"""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from litebert.config import BackboneConfig, ModelConfig
from litebert.model.backbone import BackboneCapabilities, register_backbone
from litebert.model.base import PreTrainedModel
from litebert.model.outputs import BaseModelOutput
from tests.models.toy.config import ToyBackboneConfig


class ToyLayer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        H, eps = config.hidden_size, config.layer_norm_eps
        self.heads = config.num_attention_heads
        self.attn_norm, self.ffn_norm = nn.LayerNorm(H, eps=eps), nn.LayerNorm(H, eps=eps)
        self.qkv, self.out = nn.Linear(H, 3 * H), nn.Linear(H, H)
        self.ffn = nn.Sequential(nn.Linear(H, config.intermediate_size), nn.GELU(),
                                 nn.Linear(config.intermediate_size, H))
        self.drop = nn.Dropout(config.hidden_dropout_prob)
        self.attention_dropout = config.attention_probs_dropout_prob

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        B, T, H = x.shape  # keep: (B, 1, 1, T), True = a real key
        q, k, v = self.qkv(self.attn_norm(x)).view(B, T, 3, self.heads, -1).unbind(2)
        a = F.scaled_dot_product_attention(  # (B, heads, T, H / heads)
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=keep,
            dropout_p=self.attention_dropout if self.training else 0.0)
        x = x + self.drop(self.out(a.transpose(1, 2).reshape(B, T, H)))
        return x + self.drop(self.ffn(self.ffn_norm(x)))


@register_backbone("toy")
class ToyModel(PreTrainedModel):
    config_class: ClassVar[type[BackboneConfig]] = ToyBackboneConfig
    summary_position: ClassVar[int] = 0  # [CLS] first
    embeds_token_types: ClassVar[bool] = False
    capabilities: ClassVar[BackboneCapabilities] = BackboneCapabilities(pooler=False)

    def __init__(self, config: ModelConfig, add_pooling_layer: bool | None = None):
        super().__init__()
        self.config = config
        H = config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, H)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, H)
        self.layers = nn.ModuleList(ToyLayer(config) for _ in range(config.num_hidden_layers))
        own = ToyBackboneConfig.of(config)
        self.final_norm = nn.LayerNorm(H, eps=config.layer_norm_eps) if own.final_norm \
            else nn.Identity()
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                output_hidden_states: bool = False, mems=None, use_mems=None):
        if mems is not None:
            raise ValueError("the toy backbone keeps no memories: pass mems=None")
        B, T = input_ids.shape
        if position_ids is None:
            position_ids = torch.arange(T, device=input_ids.device).expand(B, T)
        mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask
        keep = mask.bool()[:, None, None, :]  # (B, 1, 1, T)
        x = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        states = [x]
        for layer in self.layers:
            x = layer(x, keep)  # (B, T, H)
            states.append(x)
        x = self.final_norm(x)
        return BaseModelOutput(last_hidden_state=x, pooler_output=None,
                               hidden_states=tuple(states) if output_hidden_states else None)

    @property
    def input_embeddings(self) -> torch.Tensor:
        return self.word_embeddings.weight  # (V, H)

    def layer_depths(self) -> tuple[list[tuple[nn.Module | nn.Parameter, int]], int]:
        L = len(self.layers)
        parts: list[tuple[nn.Module | nn.Parameter, int]] = [
            (self.word_embeddings, 0), (self.position_embeddings, 0)]
        return parts + [(layer, k + 1) for k, layer in enumerate(self.layers)] \
            + [(self.final_norm, L)], L

    def fsdp_units(self) -> list[tuple[nn.Module, bool]]:
        return [(layer, True) for layer in self.layers]

    @classmethod
    def flops_per_token(cls, config: ModelConfig, seq_len: int) -> float:
        H = config.hidden_size
        per_layer = 4 * H * H + 2 * H * config.intermediate_size + 2 * seq_len * H
        return 6.0 * config.num_hidden_layers * per_layer

    @classmethod
    def unrolled_config(cls, config: ModelConfig) -> ModelConfig:
        return config  # nothing is shared

    def unrolled_source(self, key: str) -> str:
        return key
