"""The loader's samplers and the unmasked items an objective with its own corruption reads."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from litebert.data.loader import PretrainingDataset, RankSampler, StreamSampler, sampler_for
from tests.train import test_pretrain

data_dir = test_pretrain.data_dir  # the SOP corpus fixture (built once for this module)


def steps_of(sampler: StreamSampler, rows: int, groups: int) -> np.ndarray:
    """(steps, groups, rows) indices in the order the loop reads them."""
    return np.array(list(sampler)).reshape(-1, groups, rows)


def test_streams_continue_row_by_row_from_step_to_step():
    per_rank = [steps_of(StreamSampler(103, rank, 2, rows=4, groups=2), 4, 2)
                for rank in range(2)]
    for steps in per_rank:
        assert steps.shape == (6, 2, 4)  # 103 // (2 ranks x 2 groups x 4 rows) = 6 each
        assert (np.diff(steps, axis=0) == 1).all()  # each row reads the next item every step
    firsts = np.concatenate([s[0].reshape(-1) for s in per_rank])
    assert sorted(firsts.tolist()) == list(range(0, 96, 6))  # 16 streams, disjoint
    everything = np.concatenate([s.reshape(-1) for s in per_rank])
    assert len(set(everything.tolist())) == len(everything) == 96
    again = StreamSampler(103, 1, 2, rows=4, groups=2)
    again.set_epoch(3)  # streams read the data in order, every epoch alike
    assert list(again) == list(StreamSampler(103, 1, 2, rows=4, groups=2))


def test_the_objectives_sampling_picks_the_sampler():
    assert isinstance(sampler_for("shuffled", 10, 0, 1, 2, 1, seed=0), RankSampler)
    assert isinstance(sampler_for("streams", 10, 0, 1, 2, 1, seed=0), StreamSampler)
    mirrored = sampler_for("mirrored-streams", 10, 0, 1, 2, 1, seed=0)
    assert isinstance(mirrored, StreamSampler) and mirrored.mirrored
    with pytest.raises(ValueError, match="sampling='random': choose 'shuffled', 'streams' "
                                         "or 'mirrored-streams'"):
        sampler_for("random", 10, 0, 1, 2, 1, seed=0)


def test_mirrored_streams_read_half_the_rows_backwards():
    # 2 x 50 items: 50 read forwards, then the same text's 50 windows read backwards.
    per_rank = [steps_of(StreamSampler(100, rank, 2, rows=4, groups=2, mirrored=True), 4, 2)
                for rank in range(2)]
    streams = 2 * 2 * 2  # ranks x groups x forward rows
    for steps in per_rank:
        assert steps.shape == (50 // streams, 2, 4)
        assert (steps[..., :2] < 50).all() and (steps[..., 2:] >= 50).all()
        assert (np.diff(steps, axis=0) == 1).all()
        # Row 2 + r mirrors row r: forward stream k, backward stream streams - 1 - k.
        k = steps[0, :, :2] // 6
        assert np.array_equal((steps[0, :, 2:] - 50) // 6, streams - 1 - k)
    everything = np.concatenate([s.reshape(-1) for s in per_rank])
    assert len(set(everything.tolist())) == len(everything) == 96
    assert len(StreamSampler(100, 0, 2, rows=4, groups=2, mirrored=True)) == 6 * 2 * 4


def test_unmasked_items_are_the_masked_items_originals(data_dir):
    masked = PretrainingDataset(data_dir, "train", seed=3)
    plain = PretrainingDataset(data_dir, "train", seed=3, masked=False)
    for i in range(5):
        a, b = masked[i], plain[i]
        assert "labels" not in b and set(b) == set(a) - {"labels"}
        original = torch.where(a["labels"] != -100, a["labels"], a["input_ids"])
        assert torch.equal(b["input_ids"], original)
        assert torch.equal(b["token_type_ids"], a["token_type_ids"])
