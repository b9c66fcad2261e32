"""Small model configs, deterministic inputs with padding, MLM labels, randomized weights,
and output comparison."""

from __future__ import annotations

import torch

import litebert

VOCAB = 99


def small_config(**overrides) -> litebert.ModelConfig:
    base = dict(vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=4,
                num_attention_heads=4, intermediate_size=37, max_position_embeddings=64,
                classifier_dropout_prob=0.1)
    return litebert.ModelConfig.from_fields(**{**base, **overrides})


def randomize(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Every parameter random (LayerNorm weights around 1), so a mis-mapped tensor shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g) * 0.2
            p.copy_(noise + 1.0 if "norm" in name.lower() and name.endswith("weight") else noise)
    return model


def make_inputs(batch: int = 3, seq: int = 11, seed: int = 1) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, VOCAB, (batch, seq), generator=g)
    mask = torch.ones_like(ids)
    mask[1, seq - 4:] = 0  # padded rows
    mask[2, seq - 1:] = 0
    ids[mask == 0] = 0
    types = torch.zeros_like(ids)
    types[:, seq // 2:] = 1
    return dict(input_ids=ids, attention_mask=mask, token_type_ids=types)


def mlm_labels(inputs: dict[str, torch.Tensor], seed: int = 2) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    ids = inputs["input_ids"]
    chosen = (torch.rand(ids.shape, generator=g) < 0.3) & (inputs["attention_mask"] == 1)
    chosen[0, 1] = True
    return torch.where(chosen, ids, torch.full_like(ids, -100))


def outputs_equal(a, b) -> None:
    a.eval()
    b.eval()
    x = make_inputs()
    with torch.no_grad():
        torch.testing.assert_close(a(**x).last_hidden_state, b(**x).last_hidden_state)
