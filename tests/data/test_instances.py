"""Segment pairs: the reference's semantics, checked statistically on synthetic documents."""

from __future__ import annotations

import numpy as np
import pytest

from litebert.data.instances import InstanceConfig, _truncate, document_instances


def synthetic_corpus(seed=0, docs=1500, min_sents=2, max_sents=30, max_len=30):
    """Sentence offsets and (D, 2) document sentence ranges of random lengths."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(min_sents, max_sents + 1, docs)
    lengths = rng.integers(3, max_len + 1, counts.sum())
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    firsts = np.concatenate([[0], np.cumsum(counts)])
    return offsets, np.stack([firsts[:-1], firsts[1:]], axis=1)


def all_instances(cfg, offsets, docs, seed=1):
    rng = np.random.default_rng(seed)
    per_doc = [document_instances(d, offsets, docs, cfg, rng) for d in range(len(docs))]
    return per_doc, np.concatenate(per_doc)


def doc_of_token(offsets, docs, positions):
    doc_token_starts = offsets[docs[:, 0]]
    return np.searchsorted(doc_token_starts, positions, side="right") - 1


@pytest.mark.parametrize("objective", ["sop", "nsp"])
def test_pairs_fit_and_are_non_empty(objective):
    offsets, docs = synthetic_corpus()
    cfg = InstanceConfig(max_seq_length=128, objective=objective)
    _, rows = all_instances(cfg, offsets, docs)
    assert np.all(rows[:, 1] >= 1) and np.all(rows[:, 3] >= 1)
    assert np.all(rows[:, 1] + rows[:, 3] <= cfg.max_tokens)


def test_sop_label_one_is_swapped_order():
    offsets, docs = synthetic_corpus()
    cfg = InstanceConfig(max_seq_length=128, objective="sop", short_seq_prob=0.0)
    _, rows = all_instances(cfg, offsets, docs)
    same = doc_of_token(offsets, docs, rows[:, 0]) == doc_of_token(offsets, docs, rows[:, 2])
    swapped = rows[same & (rows[:, 4] == 1)]
    in_order = rows[same & (rows[:, 4] == 0)]
    assert np.all(swapped[:, 2] < swapped[:, 0])  # B (the earlier text) precedes A
    assert np.all(in_order[:, 0] < in_order[:, 2])
    balance = len(swapped) / same.sum()
    assert 0.47 < balance < 0.53, balance
    # Pairs across documents only come from one-sentence chunks, always labelled 1.
    assert np.all(rows[~same, 4] == 1)


def test_nsp_random_next_comes_from_another_document():
    offsets, docs = synthetic_corpus()
    cfg = InstanceConfig(max_seq_length=128, objective="nsp")
    _, rows = all_instances(cfg, offsets, docs)
    da, db = doc_of_token(offsets, docs, rows[:, 0]), doc_of_token(offsets, docs, rows[:, 2])
    assert np.all(da[rows[:, 4] == 0] == db[rows[:, 4] == 0])
    assert np.all(rows[rows[:, 4] == 0, 0] < rows[rows[:, 4] == 0, 2])
    assert np.mean(da[rows[:, 4] == 1] != db[rows[:, 4] == 1]) > 0.99
    assert 0.5 <= rows[:, 4].mean() < 0.65  # 0.5 + the one-sentence chunks


def test_short_targets_about_ten_percent():
    offsets, docs = synthetic_corpus(docs=4000, min_sents=40, max_sents=60)
    cfg = InstanceConfig(max_seq_length=128, objective="sop", short_seq_prob=0.1)
    per_doc, _ = all_instances(cfg, offsets, docs)
    first_lengths = np.array([d[0, 1] + d[0, 3] for d in per_doc])
    short = np.mean(first_lengths < cfg.max_tokens)
    assert 0.075 < short < 0.115, short


def test_none_objective_is_one_segment_within_one_document():
    offsets, docs = synthetic_corpus(docs=300)
    cfg = InstanceConfig(max_seq_length=64, objective="none")
    _, rows = all_instances(cfg, offsets, docs)
    assert np.all(rows[:, 3] == 0) and np.all(rows[:, 4] == -1)
    end_doc = doc_of_token(offsets, docs, rows[:, 0] + rows[:, 1] - 1)
    assert np.all(doc_of_token(offsets, docs, rows[:, 0]) == end_doc)


def test_every_sentence_is_used_once_without_nsp():
    """SOP puts no sentence back: concatenated chunk spans tile the document (before
    truncation, which only trims), so instances start in document order."""
    offsets, docs = synthetic_corpus(docs=200)
    cfg = InstanceConfig(max_seq_length=512, objective="sop", short_seq_prob=0.0)
    per_doc, _ = all_instances(cfg, offsets, docs)
    for d, rows in enumerate(per_doc):
        firsts = np.minimum(rows[:, 0], rows[:, 2])
        same = doc_of_token(offsets, docs, rows[:, 2]) == d
        assert np.all(np.diff(firsts[same]) > 0)


def reference_truncate(a_len, b_len, max_tokens):
    """The reference's loop: cut one token at a time from the longer side (B on ties)."""
    while a_len + b_len > max_tokens:
        if a_len > b_len:
            a_len -= 1
        else:
            b_len -= 1
    return a_len, b_len


@pytest.mark.parametrize("a, b, m", [(100, 100, 150), (200, 10, 100), (10, 200, 100),
                                     (51, 50, 100), (50, 51, 100), (7, 3, 20), (300, 299, 1)])
def test_truncation_lengths_match_the_reference(a, b, m):
    rng = np.random.default_rng(0)
    _, a_len, _, b_len, _ = _truncate(0, a, 1000, b, 0, m, rng)
    assert (a_len, b_len) == reference_truncate(a, b, m)


def test_truncation_takes_front_and_back_evenly():
    rng = np.random.default_rng(0)
    fronts = [_truncate(0, 1000, 5000, 10, 0, 510, rng)[0] for _ in range(2000)]
    assert abs(np.mean(fronts) / 500 - 0.5) < 0.01  # 500 tokens cut, half from the front


def test_reproducible_from_seed():
    offsets, docs = synthetic_corpus(docs=100)
    cfg = InstanceConfig(max_seq_length=128, objective="nsp")
    assert np.array_equal(all_instances(cfg, offsets, docs, 3)[1],
                          all_instances(cfg, offsets, docs, 3)[1])
    assert not np.array_equal(all_instances(cfg, offsets, docs, 3)[1],
                              all_instances(cfg, offsets, docs, 4)[1])
