"""Small ELECTRA configs, ours and transformers', shared by the family and model tests."""

from __future__ import annotations

import transformers

import litebert
from tests.conftest import VOCAB, small_config

# ELECTRA's structure, said with AlbertConfig's fields (not with the family name).
ELECTRA_FIELDS = dict(model_type="electra", sharing="none", hidden_act="gelu",
                      embedding_projection="when_sizes_differ", use_pooler=False,
                      classifier_head="first_token", classifier_act="gelu", mlm_act="gelu")


def electra_config(**overrides) -> litebert.AlbertConfig:
    """H 32, E 16 (unless overridden), 3 layers, 4 heads, vocabulary 99."""
    layers = overrides.get("num_hidden_layers", 3)
    base = dict(ELECTRA_FIELDS, num_hidden_layers=layers, num_hidden_groups=layers)
    return small_config(**{**base, **overrides})


def hf_electra_config(num_labels: int = 3, **overrides) -> transformers.ElectraConfig:
    base = dict(vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=3,
                num_attention_heads=4, intermediate_size=37, max_position_embeddings=64,
                num_labels=num_labels)
    return transformers.ElectraConfig(**{**base, **overrides})
