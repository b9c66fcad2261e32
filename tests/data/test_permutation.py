"""The keyed permutation the shuffled sampler reads its order from (data/permutation.py)."""

from __future__ import annotations

import numpy as np
import pytest

from litebert.data.permutation import FeistelPermutation


def whole(n: int, seed: int = 0, epoch: int = 0) -> np.ndarray:
    return FeistelPermutation(n, seed, epoch)(np.arange(n))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 16, 17, 63, 64, 65, 100, 1000, 4097])
def test_it_is_a_permutation_of_every_size(n):
    for seed in range(8):
        values = whole(n, seed, epoch=seed % 3)
        assert values.dtype == np.int64
        assert np.array_equal(np.sort(values), np.arange(n))


def test_any_positions_give_the_values_of_the_whole_permutation():
    n = 1001  # not a power of two: positions whose values walk cycles
    f = FeistelPermutation(n, 7, 2)
    full = f(np.arange(n))
    picks = np.array([1000, 0, 500, 3, 3, 999])
    assert np.array_equal(f(picks), full[picks])
    assert f(np.array([], dtype=np.int64)).shape == (0,)
    with pytest.raises(IndexError):
        f(np.array([n]))


def test_deterministic_per_seed_and_epoch_and_different_otherwise():
    n = 500
    assert np.array_equal(whole(n, 3, 1), whole(n, 3, 1))
    others = [whole(n, 3, 2), whole(n, 4, 1), whole(n, 2**70, 1), whole(n, -1, 1)]
    for other in others:
        assert np.mean(other == whole(n, 3, 1)) < 0.05  # ~1/n by chance


def test_positions_are_spread_uniformly():
    """Over many keys, each index lands at each position about equally often, and the first
    two positions take every ordered pair about equally often: a rotation, a permutation
    that keeps neighbours together or a weak round function fails (chi-square far above its
    degrees of freedom)."""
    n, keys = 12, 6000
    firsts = np.stack([FeistelPermutation(n, seed, seed // 7)(np.arange(n))
                       for seed in range(keys)])  # (keys, n)
    where = np.zeros((n, n))  # (index, position) counts
    np.add.at(where, (firsts, np.broadcast_to(np.arange(n), firsts.shape)), 1)
    expected = keys / n
    chi2 = ((where - expected) ** 2 / expected).sum()
    assert chi2 < 2 * (n - 1) ** 2  # degrees of freedom (n-1)^2 = 121; mean 121, sd ~16
    pairs = np.zeros((n, n))
    np.add.at(pairs, (firsts[:, 0], firsts[:, 1]), 1)
    off = ~np.eye(n, dtype=bool)
    expected = keys / (n * (n - 1))
    chi2 = ((pairs[off] - expected) ** 2 / expected).sum()
    assert pairs[~off].sum() == 0 and chi2 < 2 * (n * (n - 1) - 1)
