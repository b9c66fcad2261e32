"""Statistical and property tests of whole-word n-gram masking."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litebert.data.masking import (
    MaskingConfig,
    choose_masked_positions,
    choose_ngrams,
    mask_tokens,
    word_spans,
)

NORMAL = np.arange(5, 1000)  # ids 0-4: <pad> <unk> [CLS] [SEP] [MASK]
CFG = MaskingConfig(mask_token_id=4, replacement_ids=NORMAL, max_predictions_per_seq=10_000)


def random_sequence(rng, n=128, word_start_p=0.7):
    tokens = rng.integers(5, 1000, n)
    word_start = rng.random(n) < word_start_p
    maskable = np.ones(n, dtype=bool)
    maskable[[0, n // 2, n - 1]] = False  # [CLS], [SEP], [SEP]
    return tokens, word_start, maskable


def test_ngram_lengths_follow_one_over_n():
    rng = np.random.default_rng(0)
    starts = np.arange(2000)
    ends = starts + 1
    lengths = []
    for _ in range(200):
        lengths += [n for _, n in choose_ngrams(starts, ends, 200, CFG, rng)]
    freq = np.bincount(lengths, minlength=4)[1:] / len(lengths)
    assert len(lengths) > 15_000
    np.testing.assert_allclose(freq, [6 / 11, 3 / 11, 2 / 11], atol=0.015)


def test_max_ngram_one_is_whole_word_masking():
    rng = np.random.default_rng(1)
    cfg = MaskingConfig(mask_token_id=4, replacement_ids=NORMAL, max_ngram=1)
    grams = choose_ngrams(np.arange(50), np.arange(1, 51), 20, cfg, rng)
    assert {n for _, n in grams} == {1}


def test_mask_rate_is_fifteen_percent_and_capped():
    rng = np.random.default_rng(2)
    rates = []
    for _ in range(300):
        tokens, ws, maskable = random_sequence(rng)
        positions = choose_masked_positions(ws, maskable, CFG, rng)
        rates.append(len(positions) / maskable.sum())
    assert 0.14 <= np.mean(rates) <= 0.16  # budget = round(0.15 * maskable)
    capped = MaskingConfig(mask_token_id=4, replacement_ids=NORMAL, max_predictions_per_seq=20)
    for _ in range(50):
        tokens, ws, maskable = random_sequence(rng, n=512)
        assert len(choose_masked_positions(ws, maskable, capped, rng)) <= 20


def test_eighty_ten_ten():
    rng = np.random.default_rng(3)
    kinds = np.zeros(3)
    for _ in range(600):
        tokens, ws, maskable = random_sequence(rng)
        masked, labels, positions = mask_tokens(tokens, ws, maskable, CFG, rng)
        new, old = masked[positions], tokens[positions]
        kinds += [(new == 4).sum(), ((new == old) & (new != 4)).sum(),
                  ((new != old) & (new != 4)).sum()]
        assert np.all((new == 4) | (new >= 5))  # never a special id but [MASK]
    frac = kinds / kinds.sum()
    assert kinds.sum() > 10_000
    np.testing.assert_allclose(frac, [0.8, 0.1, 0.1], atol=0.012)


def test_labels_hold_originals_and_specials_are_never_masked():
    rng = np.random.default_rng(4)
    tokens, ws, maskable = random_sequence(rng)
    masked, labels, positions = mask_tokens(tokens, ws, maskable, CFG, rng)
    assert np.all(labels[positions] == tokens[positions])
    assert np.all(labels[np.setdiff1d(np.arange(len(tokens)), positions)] == -100)
    assert maskable[positions].all()


def test_same_seed_same_masks():
    tokens, ws, maskable = random_sequence(np.random.default_rng(5))
    a = mask_tokens(tokens, ws, maskable, CFG, np.random.default_rng(9))
    b = mask_tokens(tokens, ws, maskable, CFG, np.random.default_rng(9))
    c = mask_tokens(tokens, ws, maskable, CFG, np.random.default_rng(10))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(a[2], c[2])


def test_word_spans_stop_at_special_tokens():
    ws = np.array([0, 1, 0, 0, 1, 0, 1, 0], dtype=bool)
    maskable = np.array([0, 1, 1, 0, 1, 1, 1, 0], dtype=bool)
    starts, ends = word_spans(ws, maskable)
    assert starts.tolist() == [1, 4, 6] and ends.tolist() == [3, 6, 7]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=80),
       st.integers(0, 2**32 - 1), st.integers(1, 4), st.integers(1, 30))
def test_whole_words_only_and_within_budget(flags, seed, max_ngram, cap):
    ws = np.array([f[0] for f in flags])
    maskable = np.array([f[1] for f in flags])
    cfg = MaskingConfig(mask_token_id=4, replacement_ids=NORMAL, max_ngram=max_ngram,
                        max_predictions_per_seq=cap)
    positions = choose_masked_positions(ws, maskable, cfg, np.random.default_rng(seed))
    chosen = np.zeros(len(ws), dtype=bool)
    chosen[positions] = True
    assert not (chosen & ~maskable).any()
    assert len(positions) <= min(cap, max(1, round(maskable.sum() * 0.15)))
    for s, e in zip(*word_spans(ws, maskable), strict=True):
        assert chosen[s:e].all() or not chosen[s:e].any()  # a word is all in or all out


def test_random_replacements_come_only_from_the_replacement_ids():
    """BERT's layout: specials at 0 and 100-103, so the allowed ids are not one range."""
    allowed = np.setdiff1d(np.arange(200), [0, 100, 101, 102, 103])
    cfg = MaskingConfig(mask_token_id=103, replacement_ids=allowed,
                        max_predictions_per_seq=10_000)
    rng = np.random.default_rng(6)
    drawn = []
    for _ in range(1500):
        tokens, ws, maskable = random_sequence(rng, n=128)
        tokens = rng.choice(allowed, len(tokens))
        masked, _, positions = mask_tokens(tokens, ws, maskable, cfg, rng)
        new, old = masked[positions], tokens[positions]
        drawn.append(new[(new != 103) & (new != old)])
    drawn = np.concatenate(drawn)
    assert len(drawn) > 2000
    assert np.isin(drawn, allowed).all()
    counts = np.bincount(drawn, minlength=200)[allowed]
    assert counts.min() > 0  # uniform over every allowed id, holes or not
    assert counts.max() < 4 * counts.mean()


def test_masking_config_keeps_its_ids_and_pickles():
    import pickle

    source = np.arange(5, 50)
    cfg = MaskingConfig(mask_token_id=4, replacement_ids=source)
    source[0] = 4  # the caller's array is copied, not shared
    assert cfg.replacement_ids[0] == 5 and not cfg.replacement_ids.flags.writeable
    again = pickle.loads(pickle.dumps(cfg))
    assert np.array_equal(again.replacement_ids, cfg.replacement_ids)
    assert again.mask_token_id == 4 and again == cfg
    with pytest.raises(ValueError, match="replacement_ids"):
        MaskingConfig(mask_token_id=4, replacement_ids=np.zeros(0, dtype=np.int64))
