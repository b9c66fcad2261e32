"""ModernBERT at a small size: litebert's and transformers' configs, and padded inputs."""

from __future__ import annotations

import torch
import transformers

import litebert

ATOL = 1e-5


V, B, T, PAD = 99, 3, 16, 0


def modern_config(**overrides) -> litebert.ModelConfig:
    """modernbert-tiny made small: L 4, H = E = 32, 4 heads, GeGLU 2 x 24, vocabulary 99,
    window 4 (2 on each side), pad 0."""
    base = dict(vocab_size=V, hidden_size=32, embedding_size=32, num_hidden_layers=4,
                num_hidden_groups=4, num_attention_heads=4, intermediate_size=24,
                max_position_embeddings=64, local_attention=4, pad_token_id=PAD,
                bos_token_id=1, eos_token_id=2)
    return litebert.ModelConfig.from_preset("modernbert-tiny", **{**base, **overrides})


def hf_modern_config(every: int = 3, window: int = 4, impl: str = "sdpa",
                     global_theta: float = 160_000.0,
                     local_theta: float = 10_000.0) -> transformers.ModernBertConfig:
    config = transformers.ModernBertConfig(
        vocab_size=V, hidden_size=32, intermediate_size=24, num_hidden_layers=4,
        num_attention_heads=4, max_position_embeddings=64, local_attention=window,
        global_attn_every_n_layers=every, global_rope_theta=global_theta,
        local_rope_theta=local_theta, pad_token_id=PAD, bos_token_id=1, eos_token_id=2,
        cls_token_id=1, sep_token_id=2)
    config._attn_implementation = impl
    return config


def inputs(seed: int = 0) -> dict[str, torch.Tensor]:
    """Three rows of 16, 11 and 6 real tokens (right padding with the pad id)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, V, (B, T), generator=g)
    mask = torch.ones(B, T, dtype=torch.long)
    mask[1, 11:] = 0
    mask[2, 6:] = 0
    return dict(input_ids=ids.masked_fill(mask == 0, PAD), attention_mask=mask)
