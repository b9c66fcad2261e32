"""WordStarts: slices of derived word starts equal the flags computed the plain way."""

from __future__ import annotations

import numpy as np
import pytest

from litebert.data.word_starts import WordStarts


def _plain(tokens, offsets, table):  # every token's flag, the obvious way
    flags = table[tokens].copy()
    flags[offsets[:-1][offsets[:-1] < len(tokens)]] = True
    return flags


def test_every_slice_matches_the_plain_flags():
    rng = np.random.default_rng(0)
    table = rng.random(50) < 0.4
    lengths = rng.integers(1, 9, size=200)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = rng.integers(0, 50, size=offsets[-1]).astype(np.uint16)
    words = WordStarts(tokens, offsets, table)
    plain = _plain(tokens, offsets, table)
    assert len(words) == len(tokens)
    for a, b in rng.integers(0, len(tokens) + 1, size=(500, 2)):
        np.testing.assert_array_equal(words[a:b], plain[a:b])
    np.testing.assert_array_equal(words[:], plain)
    np.testing.assert_array_equal(words[-7:], plain[-7:])


def test_a_slice_is_a_copy_and_only_slices_are_taken():
    table = np.array([False, True])
    words = WordStarts(np.zeros(4, np.uint16), np.array([0, 2, 4]), table)
    flags = words[0:4]
    np.testing.assert_array_equal(flags, [True, False, True, False])
    flags[:] = False  # the caller may scribble on its copy
    np.testing.assert_array_equal(words[0:4], [True, False, True, False])
    with pytest.raises(TypeError, match="slice"):
        words[3]
    with pytest.raises(ValueError, match="contiguous"):
        words[0:4:2]
