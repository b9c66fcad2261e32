"""Tests for litebert.tasks.word_labels: words with labels as windows, and predictions back.

The oracle is transformers' fast tokenizer on the same directory with
is_split_into_words=True (byte-level BPE with a prefix space) and word_ids()."""

from __future__ import annotations

import random

import numpy as np
import pytest
from tokenizers import pre_tokenizers
from transformers import AutoTokenizer

from litebert import Tokenizer
from litebert.tasks.word_labels import (
    IGNORE_INDEX,
    encode_words,
    scored_window,
    window_spans,
    word_predictions,
    word_windows,
)
from tests.fixtures_sp import generated_sentences
from tests.hf_dirs import FAMILIES

SHORT = [["Hello", "world", ",", "the", "cat's", "café", "sat", "on", "1,234", "mats", "."],
         ["A"], ["über", "naïve", "Résumé", "x", "(", "New", "York", ")"]]


def _oracle(directory) -> object:
    hf = AutoTokenizer.from_pretrained(str(directory))
    if isinstance(hf.backend_tokenizer.pre_tokenizer, pre_tokenizers.ByteLevel):
        # what add_prefix_space=True does for RoBERTa; ModernBERT's class ignores the kwarg
        hf.backend_tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True,
                                                                      use_regex=True)
    return hf


def _first_pieces(word_ids: list[int | None]) -> list[int]:
    return [i for i, w in enumerate(word_ids)
            if w is not None and (i == 0 or word_ids[i - 1] != w)]


@pytest.mark.parametrize("family", FAMILIES)
def test_short_sentences_match_transformers(hf_tokenizer_dir, family):
    directory = hf_tokenizer_dir(family)
    tok, hf = Tokenizer.from_pretrained(directory), _oracle(directory)
    labels = [[10 + i for i in range(len(words))] for words in SHORT]
    windows = word_windows(tok, SHORT, labels, max_seq_length=128, stride=16)
    assert [w.sentence for w in windows] == [0, 1, 2]  # short: one window each
    for words, tags, window in zip(SHORT, labels, windows, strict=True):
        encoding = hf(words, is_split_into_words=True)
        assert window.input_ids.tolist() == encoding["input_ids"]
        first = _first_pieces(encoding.word_ids())
        assert np.flatnonzero(window.word_index >= 0).tolist() == first
        assert window.labels[first].tolist() == tags
        assert window.word_index[first].tolist() == list(range(len(words)))
        assert (np.delete(window.labels, first) == IGNORE_INDEX).all()


def _long_sentences(n: int, seed: int) -> list[list[str]]:
    """Sentences of 1 .. ~300 words: generated English run together."""
    rng = random.Random(seed)
    text = [s.split() for s in generated_sentences(4 * n, seed=seed)]
    return [[w for part in text[4 * i:4 * i + rng.randint(1, 4)] for w in part][
        :rng.randint(1, 300)] for i in range(n)]


@pytest.mark.parametrize("family", ["bert", "roberta", "xlnet"])
@pytest.mark.parametrize(("max_seq_length", "stride"), [(8, 0), (8, 3), (16, 5), (33, 20),
                                                        (64, 1)])
def test_every_word_scored_once_and_round_trip(hf_tokenizer_dir, family, max_seq_length,
                                               stride):
    tok = Tokenizer.from_pretrained(hf_tokenizer_dir(family))
    sentences = _long_sentences(12, seed=max_seq_length + stride)
    rng = np.random.default_rng(stride)
    labels = [rng.integers(0, 9, len(words)).tolist() for words in sentences]
    windows = word_windows(tok, sentences, labels, max_seq_length, stride)
    assert max(len(w.input_ids) for w in windows) <= max_seq_length
    assert any(w.sentence == windows[i - 1].sentence for i, w in enumerate(windows) if i)
    scored = [(w.sentence, int(i)) for w in windows for i in w.word_index[w.word_index >= 0]]
    assert sorted(scored) == [(s, i) for s, words in enumerate(sentences)
                              for i in range(len(words))]
    for w in windows:  # labels exactly at the scored positions
        assert ((w.labels != IGNORE_INDEX) == (w.word_index >= 0)).all()
    back = word_predictions(windows, [w.labels for w in windows])
    assert [p.tolist() for p in back] == labels


@pytest.mark.parametrize(("budget", "stride"), [(1, 0), (3, 2), (7, 0), (7, 6), (20, 9)])
def test_windows_keep_words_whole_and_overlap_by_at_most_stride(budget, stride):
    rng = np.random.default_rng(budget * 31 + stride)
    for _ in range(50):
        lengths = rng.integers(1, budget + 1, rng.integers(1, 60))  # (n,) pieces per word
        cum = np.concatenate([[0], np.cumsum(lengths)])
        spans = window_spans(lengths, budget, stride)
        assert spans[0][0] == 0 and spans[-1][1] == len(lengths)
        for (s0, e0), (s1, e1) in zip(spans[:-1], spans[1:], strict=True):
            assert s0 < s1 <= e0 < e1  # advancing, nothing skipped
            assert cum[e0] - cum[s1] <= max(stride, 0) or s1 == s0 + 1
        assert all(cum[e] - cum[s] <= budget for s, e in spans)
        chosen = scored_window(lengths, spans)
        for i, w in enumerate(chosen):
            assert spans[w][0] <= i < spans[w][1]


def test_scored_window_is_the_nearest_centre():
    lengths = np.ones(10, dtype=np.int64)
    # windows [0, 6) and [4, 10) (centres 3 and 7): word 4 (centre 4.5) is nearer 3, word 5
    # (5.5) nearer 7
    assert scored_window(lengths, [(0, 6), (4, 10)]).tolist() == [0] * 5 + [1] * 5
    # windows [0, 5) and [4, 9) (centres 2.5 and 6.5): word 4 (4.5) ties, the first wins
    assert scored_window(lengths[:9], [(0, 5), (4, 9)]).tolist() == [0] * 5 + [1] * 4
    # pieces, not words, place the centres: counting words, word 2 would tie (first window);
    # the 5-piece word 0 moves the first centre to 3.5, so word 2 (6.5) goes to the second
    assert scored_window(np.array([5, 1, 1, 1, 1]), [(0, 3), (2, 5)]).tolist() == \
        [0, 0, 1, 1, 1]


def test_word_longer_than_a_window_keeps_its_first_pieces(hf_tokenizer_dir):
    tok = Tokenizer.from_pretrained(hf_tokenizer_dir("bert"))
    long_word = "thecatsatonthemat" * 3
    pieces = tok.tokenize(long_word)
    assert len(pieces) > 6
    windows = word_windows(tok, [["the", long_word, "cat"]], [[1, 2, 3]], max_seq_length=8,
                           stride=2)
    assert [len(w.input_ids) for w in windows] == [3, 8, 2 + len(tok.tokenize("cat"))]
    assert windows[1].input_ids[1:7].tolist() == tok.convert_tokens_to_ids(pieces[:6])
    assert [p.tolist() for p in word_predictions(windows, [w.labels for w in windows])] == \
        [[1, 2, 3]]


def test_xlnet_left_padding_is_read_from_the_right_end(hf_tokenizer_dir):
    tok = Tokenizer.from_pretrained(hf_tokenizer_dir("xlnet"))
    assert tok.padding_side == "left"
    sentences = _long_sentences(5, seed=3)
    labels = [[i % 7 for i in range(len(words))] for words in sentences]
    windows = word_windows(tok, sentences, labels, max_seq_length=24, stride=6)
    assert all(w.input_ids[-1] == tok.cls_token_id for w in windows)
    width, classes = 32, 7
    logits = np.random.default_rng(0).normal(size=(len(windows), width, classes))  # (B, W, C)
    for b, w in enumerate(windows):
        row = logits[b, width - len(w.labels):]  # left padding: the window sits at the end
        scored = w.labels >= 0
        row[scored, w.labels[scored]] = 100.0
    assert [p.tolist() for p in word_predictions(windows, logits, "left")] == labels
    assert [p.tolist() for p in word_predictions(windows, logits, "right")] != labels


def test_empty_sentences_and_empty_words_keep_their_place(hf_tokenizer_dir):
    tok = Tokenizer.from_pretrained(hf_tokenizer_dir("bert"))
    sentences = [["a", "\u200b", "b"], [], ["c"]]  # a zero-width space tokenizes to nothing
    ids, lengths = encode_words(tok, sentences)
    assert lengths.tolist() == [1, 1, 1, 1] and ids[1] == tok.unk_token_id
    windows = word_windows(tok, sentences, [[1, 2, 3], [], [4]], max_seq_length=16, stride=2)
    back = word_predictions(windows, [w.labels for w in windows])
    assert [p.tolist() for p in back] == [[1, 2, 3], [], [4]]


def test_bad_arguments(hf_tokenizer_dir):
    tok = Tokenizer.from_pretrained(hf_tokenizer_dir("bert"))
    with pytest.raises(ValueError, match="no room"):
        word_windows(tok, [["a"]], max_seq_length=2)
    with pytest.raises(ValueError, match="stride"):
        word_windows(tok, [["a"]], max_seq_length=8, stride=6)
    with pytest.raises(ValueError, match="2 words but 1 labels"):
        word_windows(tok, [["a", "b"]], [[0]])
    windows = word_windows(tok, [["a"]])
    with pytest.raises(ValueError, match="prediction row"):
        word_predictions(windows, [np.zeros(1)])
