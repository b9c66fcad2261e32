"""Segment pairs: the reference's semantics, checked statistically on synthetic documents."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from litebert.data.instances import (
    InstanceConfig,
    _truncate,
    chunk_pair,
    document_chunks,
    document_instances,
)


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


# ---- static output, the sop single-sentence rule, dynamic pairs -----------------------------

@pytest.mark.parametrize("objective, digest", [("sop", "13d5a89aa4ef6b1c"),
                                               ("nsp", "bd6d78d66059e1d5"),
                                               ("none", "b4968880ed63fd10")])
def test_static_instances_are_byte_identical_to_before_the_pair_options(objective, digest):
    """Digests of the instances the code made before `pairs` and `sop_single_sentence`
    existed: the defaults must keep every built directory's bytes (and cache hits)."""
    offsets, docs = synthetic_corpus(docs=300)
    _, rows = all_instances(InstanceConfig(max_seq_length=128, objective=objective), offsets,
                            docs)
    assert hashlib.sha256(rows.tobytes()).hexdigest()[:16] == digest


def same_document(offsets, docs, rows):
    return doc_of_token(offsets, docs, rows[:, 0]) == doc_of_token(offsets, docs, rows[:, 2])


def check_sop_order(rows):
    """Label 1 exactly when B (the earlier text) precedes A."""
    assert np.array_equal(rows[:, 4] == 1, rows[:, 2] < rows[:, 0])


def test_skip_keeps_sop_within_documents_and_balanced():
    # One-sentence documents and long sentences: many chunks of one sentence.
    offsets, docs = synthetic_corpus(docs=3000, min_sents=1, max_sents=8, max_len=60)
    rule = dict(max_seq_length=128, objective="sop")
    _, reference = all_instances(InstanceConfig(**rule), offsets, docs)
    assert np.mean(~same_document(offsets, docs, reference)) > 0.1
    assert reference[:, 4].mean() > 0.55  # what skip is for: the random Bs are all label 1
    dropped: list[int] = []
    rng = np.random.default_rng(1)
    skip = InstanceConfig(**rule, sop_single_sentence="skip")
    rows = np.concatenate([document_instances(d, offsets, docs, skip, rng, dropped)
                           for d in range(len(docs))])
    assert same_document(offsets, docs, rows).all()
    check_sop_order(rows)
    assert 0.47 < rows[:, 4].mean() < 0.53, rows[:, 4].mean()
    # The RNG streams part ways after the first skip, so the counts only roughly agree.
    assert abs(len(reference) - len(rows) - len(dropped)) < 0.1 * len(dropped)
    assert min(dropped) > 0


@pytest.mark.parametrize("objective", ["nsp", "none"])
def test_skip_is_for_sop_only(objective):
    with pytest.raises(ValueError, match="'skip' is for objective 'sop' only"):
        InstanceConfig(objective=objective, sop_single_sentence="skip")
    with pytest.raises(ValueError, match="sop_single_sentence='never'"):
        InstanceConfig(sop_single_sentence="never")


def all_chunks(cfg, offsets, docs, seed=1):
    rng = np.random.default_rng(seed)
    return np.concatenate([document_chunks(d, offsets, docs, cfg, rng)
                           for d in range(len(docs))])


def test_chunks_tile_each_document_and_skip_only_drops_single_sentences():
    offsets, docs = synthetic_corpus(docs=500, min_sents=1, max_sents=20, max_len=60)
    cfg = InstanceConfig(max_seq_length=128, objective="sop")
    chunks = all_chunks(cfg, offsets, docs)  # (C, 4) first sentence, count, document, target
    for d, (first, last) in enumerate(docs):
        mine = chunks[chunks[:, 2] == d]
        assert mine[0, 0] == first and mine[-1, 0] + mine[-1, 1] == last
        assert np.array_equal(mine[1:, 0], mine[:-1, 0] + mine[:-1, 1])  # contiguous, in order
    tokens = offsets[chunks[:, 0] + chunks[:, 1]] - offsets[chunks[:, 0]]
    last_of_doc = chunks[:, 0] + chunks[:, 1] == docs[chunks[:, 2], 1]
    assert np.all((tokens >= chunks[:, 3]) | last_of_doc)
    assert np.all((2 <= chunks[:, 3]) & (chunks[:, 3] <= cfg.max_tokens))
    # The packing draws only the targets, so skipping changes nothing else.
    skip = InstanceConfig(max_seq_length=128, objective="sop", sop_single_sentence="skip")
    assert np.array_equal(all_chunks(skip, offsets, docs), chunks[chunks[:, 1] > 1])


def drawn_pairs(cfg, chunks, offsets, docs, draws=3):
    return np.stack([chunk_pair(c, offsets, docs, cfg, np.random.default_rng([i, k]))
                     for k in range(draws) for i, c in enumerate(chunks)])


@pytest.mark.parametrize("rule", ["random", "skip"])
def test_dynamic_sop_pairs_split_a_chunk_in_two(rule):
    offsets, docs = synthetic_corpus(docs=600, min_sents=1, max_sents=20)
    cfg = InstanceConfig(max_seq_length=128, objective="sop", sop_single_sentence=rule)
    chunks = all_chunks(cfg, offsets, docs)
    rows = drawn_pairs(cfg, chunks, offsets, docs)
    assert np.all(rows[:, 1] + rows[:, 3] <= cfg.max_tokens) and np.all(rows[:, 3] >= 1)
    same = same_document(offsets, docs, rows)
    check_sop_order(rows[same])
    assert 0.47 < rows[same, 4].mean() < 0.53
    assert np.all(rows[~same, 4] == 1)
    single = np.tile(chunks[:, 1] == 1, 3)
    assert np.array_equal(~same, single) if rule == "random" else same.all()


def test_dynamic_nsp_pairs():
    offsets, docs = synthetic_corpus(docs=600)
    cfg = InstanceConfig(max_seq_length=128, objective="nsp")
    chunks = all_chunks(cfg, offsets, docs)
    rows = drawn_pairs(cfg, chunks, offsets, docs)
    same, label = same_document(offsets, docs, rows), rows[:, 4]
    assert same[label == 0].all() and np.all(rows[label == 0, 0] < rows[label == 0, 2])
    assert np.mean(~same[label == 1]) > 0.99
    assert 0.47 < label[np.tile(chunks[:, 1] > 1, 3)].mean() < 0.53


def test_dynamic_pairs_are_a_function_of_the_generator():
    offsets, docs = synthetic_corpus(docs=200)
    cfg = InstanceConfig(max_seq_length=128, objective="sop")
    chunks = all_chunks(cfg, offsets, docs)
    once, again = (drawn_pairs(cfg, chunks, offsets, docs, draws=2) for _ in range(2))
    assert np.array_equal(once, again)
    first, second = np.split(once, 2)
    assert np.mean(np.any(first != second, axis=1)) > 0.7  # another split, order or cut
    assert np.mean(first[:, 4] != second[:, 4]) > 0.3
