"""The rows of the lite-vs-bert study: ALBERT's Table 1 shapes against BERT's, and the parts
every measurement shares (a model built fast, a synthetic pre-training batch).

The paper's figures beside each row: Table 1's parameter count as printed, and Table 2's
speed-up over BERT-large at the same number of TPUs and batch 4,096 (BERT-xlarge's from the
paper's first version, where ALBERT-xlarge was 2.4x faster than it).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from litebert.config import ModelConfig
from litebert.model.counts import encoder_flops_per_token, mlm_head_flops_per_token
from litebert.model.heads import EncoderForPreTraining

VOCAB = 30_000  # the paper's SentencePiece vocabulary
MASK_SHARE = 0.15  # MLM targets per row, as in pre-training
INIT_STD = 0.02


@dataclass(frozen=True)
class Row:
    name: str  # a preset of litebert.config.PRESETS
    paper_params: str  # Table 1, as printed
    paper_speedup: float  # Table 2: speed over BERT-large (BERT-xlarge: version 1)
    partner: str  # the row on the other side with the same L and H ("" for none)


ROWS: tuple[Row, ...] = (
    Row("albert-base", "12M", 5.6, "bert-base"),
    Row("albert-large", "18M", 1.7, "bert-large"),
    Row("albert-xlarge", "60M", 0.6, "bert-xlarge"),
    Row("albert-xxlarge", "235M", 0.3, ""),
    Row("bert-base", "108M", 4.7, "albert-base"),
    Row("bert-large", "334M", 1.0, "albert-large"),
    Row("bert-xlarge", "1270M", 0.42, "albert-xlarge"),  # 1.0 / 2.4 (v1: xlarge 2.4x it)
)
BY_NAME = {row.name: row for row in ROWS}
REFERENCE = "bert-large"  # Table 2's speed-ups are over it


def row_config(name: str, **overrides) -> ModelConfig:
    """The row's preset at the paper's vocabulary, with `overrides` (e.g. fewer layers)."""
    return ModelConfig.from_preset(name, **{"vocab_size": VOCAB, **overrides})


def flops_per_sequence(name: str, length: int, **overrides) -> float:
    """Training FLOPs (forward + backward) of one sequence of `length` tokens: the encoder's
    and the MLM head's at its 15% of targets (litebert.model.counts)."""
    config = row_config(name, **overrides)
    per_token = (encoder_flops_per_token(config, length)
                 + mlm_head_flops_per_token(config, MASK_SHARE))
    return per_token * length


def meta_model(config: ModelConfig) -> EncoderForPreTraining:
    """The pre-training model (MLM + sentence order) on the meta device: every tensor's
    shape and dtype, no storage."""
    with torch.device("meta"):
        return EncoderForPreTraining(config)


def fast_model(config: ModelConfig, seed: int = 0) -> EncoderForPreTraining:
    """The pre-training model on the CPU with values drawn uniformly (std 0.02) instead of
    its initialiser: memory and speed do not depend on the values, and normal_ over a
    billion weights takes minutes on two cores. Tied weights stay tied."""
    model = meta_model(config).to_empty(device="cpu")
    gen = torch.Generator().manual_seed(seed)
    bound = INIT_STD * 3 ** 0.5  # uniform(-b, b) has std b / sqrt(3)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.zero_()
            elif p.dim() == 1:  # LayerNorm weights
                p.fill_(1.0)
            else:
                p.uniform_(-bound, bound, generator=gen)
    return model


def synthetic_batch(config: ModelConfig, batch: int, length: int,
                    seed: int = 0) -> dict[str, torch.Tensor]:
    """A full pre-training batch: (batch, length) ids, two segments, 15% MLM targets at the
    same positions in every row, a sentence-order label per row."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, config.vocab_size, (batch, length), generator=gen)  # (B, T)
    types = torch.zeros_like(ids)
    types[:, length // 2:] = 1
    labels = torch.full_like(ids, -100)
    every = max(1, round(1 / MASK_SHARE))
    labels[:, 1::every] = ids[:, 1::every]
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": types,
            "labels": labels,
            "sentence_order_label": torch.randint(0, 2, (batch,), generator=gen)}


def small_overrides(name: str) -> dict:
    """The row shrunk to seconds (the quick study, tests): 2 layers of width 64, ALBERT's
    sharing and factorised embedding kept."""
    shared = row_config(name).sharing != "none"
    return dict(num_hidden_layers=2, num_hidden_groups=1 if shared else 2, hidden_size=64,
                num_attention_heads=2, intermediate_size=128,
                embedding_size=32 if shared else 64, vocab_size=1000)
