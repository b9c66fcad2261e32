"""Small ELECTRA and RoBERTa configs, ours and transformers', shared by the family and model
tests."""

from __future__ import annotations

import torch
import transformers

import litebert
from tests.helpers.models import VOCAB, make_inputs, small_config

# ELECTRA's structure, said with AlbertConfig's fields (not with the family name).
ELECTRA_FIELDS = dict(model_type="electra", sharing="none", hidden_act="gelu",
                      embedding_projection="when_sizes_differ", use_pooler=False,
                      classifier_head="first_token", classifier_act="gelu", mlm_act="gelu")


def electra_config(**overrides) -> litebert.ModelConfig:
    """H 32, E 16 (unless overridden), 3 layers, 4 heads, vocabulary 99."""
    layers = overrides.get("num_hidden_layers", 3)
    base = dict(ELECTRA_FIELDS, num_hidden_layers=layers, num_hidden_groups=layers)
    return small_config(**{**base, **overrides})


def hf_electra_config(num_labels: int = 3, **overrides) -> transformers.ElectraConfig:
    base = dict(vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=3,
                num_attention_heads=4, intermediate_size=37, max_position_embeddings=64,
                num_labels=num_labels)
    return transformers.ElectraConfig(**{**base, **overrides})


# RoBERTa's structure, said with AlbertConfig's fields (roberta-tiny holds them too).
ROBERTA_FIELDS = dict(model_type="roberta", sharing="none", embedding_projection="never",
                      use_pooler=True, classifier_head="first_token", classifier_act="tanh",
                      mlm_act="gelu", position_numbering="after_pad")
PAD = 1  # RoBERTa's <pad>; <s> is 0, </s> 2


def roberta_config(**overrides) -> litebert.ModelConfig:
    """roberta-tiny made small: H = E = 32, 3 layers, 4 heads, vocabulary 99, 64 positions
    after the pad id (max_position_embeddings 66)."""
    layers = overrides.get("num_hidden_layers", 3)
    base = dict(vocab_size=VOCAB, hidden_size=32, embedding_size=32, num_hidden_layers=layers,
                num_hidden_groups=layers, num_attention_heads=4, intermediate_size=37,
                max_position_embeddings=66)
    return litebert.ModelConfig.from_preset("roberta-tiny", **{**base, **overrides})


def hf_roberta_config(num_labels: int = 3, **overrides) -> transformers.RobertaConfig:
    base = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                intermediate_size=37, max_position_embeddings=66, type_vocab_size=1,
                layer_norm_eps=1e-5, num_labels=num_labels)
    return transformers.RobertaConfig(**{**base, **overrides})


def roberta_inputs(left: bool = False, **kw) -> dict[str, torch.Tensor]:
    """make_inputs' padded batch with RoBERTa's pad id and no token types; `left` moves each
    row's padding to its start (the real tokens keep their order)."""
    x = make_inputs(**kw)
    mask = x["attention_mask"]
    ids = x["input_ids"].masked_fill(mask == 0, PAD)
    if left:
        order = torch.argsort(mask, dim=1, stable=True)  # pads (0) first
        ids, mask = ids.gather(1, order), mask.gather(1, order)
    return dict(input_ids=ids, attention_mask=mask)


def xlnet_config(**overrides) -> litebert.ModelConfig:
    """xlnet-tiny made small: H = E = 32, 2 layers, 4 heads, FFN 37, vocabulary 50, no
    dropout (the parity tests compare in train mode too)."""
    layers = overrides.get("num_hidden_layers", 2)
    base = dict(vocab_size=50, hidden_size=32, embedding_size=32, num_hidden_layers=layers,
                num_hidden_groups=layers, num_attention_heads=4, intermediate_size=37,
                hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                classifier_dropout_prob=0.0)
    return litebert.ModelConfig.from_preset("xlnet-tiny", **{**base, **overrides})


def albert_xlnet_config(**overrides) -> litebert.ModelConfig:
    """albert-xlnet-tiny made small: xlnet_config's with E 16 and one shared layer."""
    base = dict(embedding_size=16, sharing="all", num_hidden_groups=1, model_type="litebert")
    return xlnet_config(**{**base, **overrides})


def hf_xlnet_config(num_labels: int = 3, **overrides) -> transformers.XLNetConfig:
    base = dict(vocab_size=50, d_model=32, n_layer=2, n_head=4, d_inner=37, dropout=0.0,
                summary_last_dropout=0.0, mem_len=None, num_labels=num_labels)
    return transformers.XLNetConfig(**{**base, **overrides})
