"""A batch's training FLOPs (litebert/train/flops.py) against counts written out by hand: the
multiply-adds of each linear layer, the attention products and the MLM head, for rows of
different lengths and a known number of MLM targets."""

from __future__ import annotations

import pytest
import torch

import litebert.model  # noqa: F401  (registers the backbones the presets name)
from litebert.config import ModelConfig
from litebert.data.attention_layout import with_unpadded_rows
from litebert.model.counts import encoder_flops_per_token, mlm_head_flops_per_token
from litebert.train.flops import batch_flops, mlm_flops

LENGTHS = [512, 300, 77]  # real tokens of each row
TARGETS = 130  # real MLM targets of the batch
SLOTS = 3 * 80  # prediction slots the head scores (B x max_predictions_per_seq)
TRAIN = 2 * 3  # FLOPs of a multiply-add (2), forward + backward (3 x forward)


def albert_by_hand(hidden: int, embedding: int, ffn: int, layers: int, vocab: int,
                   length: int) -> float:
    """Per token at a row of `length`: the E->H projection (when E != H), then per layer
    q, k, v and output projections, the two FFN matrices and the two attention products
    (q.k over `length` keys, then the weighted sum of `length` values)."""
    projection = embedding * hidden if embedding != hidden else 0
    per_layer = 4 * hidden * hidden + 2 * hidden * ffn + 2 * length * hidden
    return TRAIN * (projection + layers * per_layer)


def head_by_hand(hidden: int, embedding: int, vocab: int) -> float:
    """Per target: the head's dense H -> E, then the E x V decoder."""
    return TRAIN * (hidden * embedding + embedding * vocab)


def modernbert_by_hand(length: int) -> float:
    """modernbert-base per token: 22 layers of Wqkv (3 H^2) and Wo (H^2), GeGLU's Wi
    (H x 2I) and Wo (I x H); every third layer (0, 3, ...) attends over the row, the others
    over a window of 128 each side (129 keys at most)."""
    hidden, ffn = 768, 1152
    total = 0
    for layer in range(22):
        keys = length if layer % 3 == 0 else min(length, 129)
        total += 4 * hidden * hidden + 3 * hidden * ffn + 2 * keys * hidden
    return TRAIN * total


def by_hand(preset: str, length: int) -> float:
    if preset == "albert-base":  # E 128, H 768, FFN 3072, 12 layer positions, vocab 30000
        return albert_by_hand(768, 128, 3072, 12, 30000, length)
    if preset == "bert-base":  # E = H: no projection
        return albert_by_hand(768, 768, 3072, 12, 30000, length)
    return modernbert_by_hand(length)


HEADS = {"albert-base": head_by_hand(768, 128, 30000),
         "bert-base": head_by_hand(768, 768, 30000),
         "modernbert-base": head_by_hand(768, 768, 50368)}


@pytest.mark.parametrize("preset", ["albert-base", "bert-base", "modernbert-base"])
def test_a_padded_batch_counts_its_real_rows_and_every_position(preset):
    config = ModelConfig.from_preset(preset)
    flops = mlm_flops(config, LENGTHS, [512] * 3, TARGETS, SLOTS)
    model = sum(n * by_hand(preset, n) for n in LENGTHS) + TARGETS * HEADS[preset]
    hardware = 3 * 512 * by_hand(preset, 512) + SLOTS * HEADS[preset]
    assert flops.model == pytest.approx(model, rel=1e-12)
    assert flops.hardware == pytest.approx(hardware, rel=1e-12)
    assert flops.tokens == 889 and flops.positions == 1536
    assert flops.padding_share == pytest.approx(1 - 889 / 1536)


@pytest.mark.parametrize("preset", ["albert-base", "bert-base", "modernbert-base"])
def test_full_rows_count_as_the_per_token_count_and_shorter_rows_less(preset):
    """The issue's claim: at rows of 512 the batch's count is the old one (per-token count
    at 512 x tokens, the head at the masked share); at shorter rows it is lower."""
    config = ModelConfig.from_preset(preset)
    tokens, targets = 4 * 512, 256
    old = tokens * (encoder_flops_per_token(config, 512)
                    + mlm_head_flops_per_token(config, targets / tokens))
    full = mlm_flops(config, [512] * 4, [512] * 4, targets, targets)
    assert full.model == pytest.approx(old, rel=1e-12)
    assert full.hardware == pytest.approx(full.model, rel=1e-12)
    assert full.padding_share == 0.0
    shorter = [512, 400, 200, 100]
    new = mlm_flops(config, shorter, [512] * 4, targets, targets)
    old_shorter = sum(shorter) * (encoder_flops_per_token(config, 512)
                                  + mlm_head_flops_per_token(config, targets / sum(shorter)))
    assert new.model < old_shorter < new.hardware


def mlm_batch(lengths: list[int], width: int, targets: int, slots: int):
    mask = torch.zeros(len(lengths), width, dtype=torch.long)
    for row, n in enumerate(lengths):
        mask[row, :n] = 1
    weights = torch.zeros(len(lengths), slots)
    weights.view(-1)[:targets] = 1.0
    return {"input_ids": mask * 5, "attention_mask": mask, "masked_weights": weights,
            "masked_positions": torch.zeros(len(lengths), slots, dtype=torch.long)}


def test_a_collated_batch_is_read_padded_unpadded_and_by_document():
    config = ModelConfig.from_preset("albert-base")
    lengths, width, head = [64, 40, 9, 30], 64, HEADS["albert-base"]
    padded = batch_flops(config, mlm_batch(lengths, width, 20, 10))
    assert padded.model == pytest.approx(
        sum(n * by_hand("albert-base", n) for n in lengths) + 20 * head, rel=1e-12)
    assert padded.hardware == pytest.approx(
        4 * width * by_hand("albert-base", width) + 40 * head, rel=1e-12)
    # No row padded: the collator leaves the mask out, and every position is real.
    full = mlm_batch([width] * 2, width, 20, 10)
    del full["attention_mask"]
    assert batch_flops(config, full).padding_share == 0.0
    # Unpadded: N = real + filler, the filler one segment at its own width.
    unpadded = with_unpadded_rows(mlm_batch(lengths, width, 20, 10))
    N = unpadded["document_ids"].numel()
    flops = batch_flops(config, unpadded)
    assert flops.model == padded.model and flops.positions == N
    assert flops.tokens == 143 < N <= 4 * width
    assert padded.model < flops.hardware < padded.hardware
    # Document attention: each document attends within itself.
    documents = mlm_batch([64, 64], width, 20, 10)
    documents["document_ids"] = torch.tensor([[0] * 30 + [1] * 34, [0] * 64])
    by_document = batch_flops(config, documents)
    assert by_document.model == pytest.approx(
        sum(n * by_hand("albert-base", n) for n in (30, 34, 64)) + 20 * head, rel=1e-12)
