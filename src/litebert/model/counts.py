"""Parameter counts of presets and of the paper's ablations, without allocating weights, and
training FLOPs per token (the backbone's own count, and the MLM head's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from litebert.config import ModelConfig
from litebert.model.backbone import backbone_class
from litebert.model.base import PreTrainedModel
from litebert.model.heads import EncoderForMaskedLM, EncoderForPreTraining


@dataclass
class CountRow:
    name: str
    config: ModelConfig
    backbone: int
    with_heads: int
    paper: str = ""  # the paper's rounded figure, where it gives one


def count(config: ModelConfig) -> tuple[int, int]:
    """(backbone, backbone + MLM and SOP heads), built on the meta device: no memory used.
    A backbone that can hold no pooler for the SOP head (ModernBERT's) counts the MLM head."""
    model: PreTrainedModel
    with torch.device("meta"):
        if backbone_class(config).capabilities.pooler:
            model = EncoderForPreTraining(config)
        else:
            model = EncoderForMaskedLM(config)
    return model.num_parameters(only_backbone=True), model.num_parameters()


# Table 1 and Table 3 / Table 4 of the paper (vocabulary 30k), rounded as printed there.
PAPER_PRESETS = {"albert-base": "12M", "albert-large": "18M", "albert-xlarge": "60M",
                 "albert-xxlarge": "235M", "bert-base": "108M", "bert-large": "334M",
                 "bert-xlarge": "1270M"}
PAPER_EMBEDDING = {(64, "none"): "87M", (128, "none"): "89M", (256, "none"): "93M",
                   (768, "none"): "108M", (64, "all"): "10M", (128, "all"): "12M",
                   (256, "all"): "16M", (768, "all"): "31M"}
PAPER_SHARING = {(768, "all"): "31M", (768, "attention"): "83M", (768, "ffn"): "57M",
                 (768, "none"): "108M", (128, "all"): "12M", (128, "attention"): "64M",
                 (128, "ffn"): "38M", (128, "none"): "89M"}


def preset_rows(presets: Mapping[str, Mapping[str, Any]]) -> list[CountRow]:
    rows = []
    for name in presets:
        config = ModelConfig.from_preset(name)
        rows.append(CountRow(name, config, *count(config), PAPER_PRESETS.get(name, "")))
    return rows


def ablation_rows() -> list[CountRow]:
    """ALBERT-base with E in {64, 128, 256, 768} x sharing (paper Tables 3 and 4)."""
    rows: list[CountRow] = []
    for (E, sharing), paper in {**PAPER_EMBEDDING, **PAPER_SHARING}.items():
        name = f"albert-base E={E} sharing={sharing}"
        if any(r.name == name for r in rows):
            continue
        config = ModelConfig.from_preset("albert-base", embedding_size=E, sharing=sharing)
        rows.append(CountRow(name, config, *count(config), paper))
    return rows


def parameter_tables(presets: Mapping[str, Mapping[str, Any]]) -> str:
    """`litebert params`: the presets' counts, then the paper's ablation, as text tables."""
    header = (f"{'model':<36} {'L':>3} {'H':>5} {'E':>5} {'heads':>5} {'FFN':>6} "
              f"{'sharing':>9} {'backbone':>14} {'+MLM & SOP':>14} {'paper':>6}")
    lines = []
    for title, rows in (("Presets", preset_rows(presets)),
                        ("Paper ablation (ALBERT-base, Tables 3 and 4)", ablation_rows())):
        lines += ["", title, header, "-" * len(header)]
        for r in rows:
            c = r.config
            lines.append(f"{r.name:<36} {c.num_hidden_layers:>3} {c.hidden_size:>5} "
                         f"{c.embedding_size:>5} {c.num_attention_heads:>5} "
                         f"{c.intermediate_size:>6} {c.sharing:>9} {r.backbone:>14,} "
                         f"{r.with_heads:>14,} {r.paper:>6}")
    return "\n".join(lines)


def encoder_flops_per_token(config: ModelConfig, seq_len: int) -> float:
    """Training FLOPs per token of the backbone config.backbone names (forward + backward, 2
    FLOPs a multiply-add), at sequences of `seq_len`: the backbone's own count
    (`flops_per_token`, model/backbone.py; ALBERT's in models/albert/model.py)."""
    return backbone_class(config).flops_per_token(config, seq_len)


def mlm_head_flops_per_token(config: ModelConfig, predicted: float) -> float:
    """Training FLOPs per token of an MLM head that scores a `predicted` share of the tokens:
    dense H->E, then the E x V decoder."""
    E = config.embedding_size
    return 6.0 * predicted * (config.hidden_size * E + E * config.vocab_size)
