"""ELECTRA's corruption: slots, [MASK] share, sampling, replacement labels, keyed randomness."""

from __future__ import annotations

import torch

from litebert.objectives import corruption as C
from tests.helpers.corruption import MASK, NEVER, rows


def slots_of(ids, mask, step=0, seed=1, p=0.15, max_len=128) -> C.Slots:
    candidates = C.maskable(ids, mask, NEVER)
    k = C.slots_per_row(mask, candidates, p, max_len)
    return C.draw_slots(ids, candidates, k, C.row_keys(ids, mask, seed, step), p, max_len)


def test_slots_per_row_follows_the_official_rule():
    ids, mask = rows([128, 40, 3, 2], 128)
    ids[2, 1] = MASK  # the third row's only word is [MASK]: nothing maskable
    k = C.slots_per_row(mask, C.maskable(ids, mask, NEVER), 0.15, 128)
    # round(0.15 * tokens) within [1, N], N = int(0.155 * 128) = 19; 0 without a candidate
    assert C.slot_count(128, 0.15) == 19
    assert k.tolist() == [19, 6, 0, 0]


def test_slots_fall_on_maskable_tokens_only_and_unused_slots_point_at_zero():
    ids, mask = rows([60, 30, 12], 64)
    ids[0, 5] = MASK
    s = slots_of(ids, mask)
    candidates = C.maskable(ids, mask, NEVER)
    picked = candidates.gather(1, s.positions)
    assert bool(picked[s.used].all()) and not bool(picked[~s.used].any())
    assert bool((s.positions[~s.used] == 0).all()) and bool((s.targets[~s.used] == 0).all())
    assert torch.equal(s.targets[s.used], ids.gather(1, s.positions)[s.used])


def test_randomness_is_keyed_by_step_and_row_not_by_padding_or_batch_company():
    ids, mask = rows([50, 37, 20], 56)
    whole = slots_of(ids, mask, step=3)
    again = slots_of(ids, mask, step=3)
    assert torch.equal(whole.positions, again.positions)
    assert not torch.equal(whole.positions, slots_of(ids, mask, step=4).positions)
    assert not torch.equal(whole.positions, slots_of(ids, mask, step=3, seed=2).positions)
    # Row 1 alone, padded to 40 instead of 56: the same slots.
    alone = slots_of(ids[1:2, :40], mask[1:2, :40], step=3)
    assert torch.equal(alone.positions, whole.positions[1:2])
    assert torch.equal(alone.keys, whole.keys[1:2])


def test_positions_are_uniform_over_candidates_and_85_percent_show_mask():
    ids, mask = rows([20] * 4000, 20, seed=3)  # 18 candidates per row, k = 3
    s = slots_of(ids, mask, p=0.15, max_len=20)
    counts = torch.bincount(s.positions[s.used], minlength=20)[1:19].float()  # (18,)
    expected = s.used.sum() / 18
    assert float((counts - expected).abs().max()) < 4 * expected.sqrt()  # ~4 standard errors
    shown = C.generator_input(ids, s, MASK)
    share = float((shown == MASK).sum()) / float(s.used.sum())
    # duplicates among a row's 3 slots hide a few [MASK]s; 0.85 minus at most ~1/18 of them
    assert 0.78 < share < 0.86


def test_generator_input_keeps_every_other_token():
    ids, mask = rows([30, 30], 32)
    s = slots_of(ids, mask)
    shown = C.generator_input(ids, s, MASK)
    changed = shown != ids
    at_slot = torch.zeros_like(changed).scatter(1, s.positions, s.used)
    assert not bool((changed & ~at_slot).any())
    assert bool((shown[changed] == MASK).all())


def test_sampling_follows_the_softmax_at_the_temperature():
    probs = torch.tensor([0.1, 0.2, 0.3, 0.4])
    logits = probs.log().expand(20000, 4)
    keys = C.mix(torch.arange(20000))
    drawn = C.sample(logits, keys)
    freq = torch.bincount(drawn, minlength=4).float() / 20000
    assert float((freq - probs).abs().max()) < 0.015
    hot = torch.bincount(C.sample(logits, keys, temperature=100.0), minlength=4).float()
    assert float((hot / 20000 - 0.25).abs().max()) < 0.015  # near uniform
    peaked = torch.full((5, 7), -30.0)
    peaked[torch.arange(5), torch.tensor([6, 0, 3, 3, 1])] = 30.0
    assert C.sample(peaked, keys[:5]).tolist() == [6, 0, 3, 3, 1]


def test_replace_labels_only_changed_tokens_and_the_later_slot_wins():
    ids = torch.tensor([[2, 11, 12, 13, 3]])
    slots = C.Slots(positions=torch.tensor([[1, 2, 1, 0, 1]]),
                    used=torch.tensor([[True, True, True, False, False]]),
                    targets=torch.tensor([[11, 12, 11, 0, 0]]), keys=torch.zeros(1, 5).long())
    # slot 1 samples 12; the unused slots (3 at position 0, 4 at position 1) write nothing
    fake, labels = C.replace(ids, slots, torch.tensor([[40, 12, 41, 77, 78]]))
    assert fake.tolist() == [[2, 41, 12, 13, 3]]  # position 1: the later used slot's 41
    assert labels.tolist() == [[0.0, 1.0, 0.0, 0.0, 0.0]]  # a sample equal to the original


def test_data_slots_are_the_datas_masked_positions():
    ids = torch.tensor([[2, 4, 11, 4, 3, 0], [2, 15, 4, 16, 3, 0]])
    labels = torch.full_like(ids, C.IGNORE)
    labels[0, 1], labels[0, 3], labels[1, 2] = 21, 23, 32
    original = C.original_ids({"input_ids": ids, "labels": labels})
    assert original.tolist() == [[2, 21, 11, 23, 3, 0], [2, 15, 32, 16, 3, 0]]
    s = C.data_slots(original, labels, torch.tensor([5, 6]), 3)  # 3 slots per row
    assert s.positions.tolist() == [[1, 3, 0], [2, 0, 0]]
    assert s.used.tolist() == [[True, True, False], [True, False, False]]
    assert s.targets.tolist() == [[21, 23, 0], [32, 0, 0]]
    wide = C.data_slots(original, labels, torch.tensor([5, 6]), 8)  # more slots than tokens
    assert wide.positions.shape == (2, 8) and torch.equal(wide.positions[:, :3], s.positions)
