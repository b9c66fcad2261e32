"""The loader's samplers, its static batches and the unmasked items an objective with its own
corruption reads."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from litebert.data.integrity import DataError
from litebert.data.loader import (
    SLOT_KEYS,
    PretrainingDataset,
    RankSampler,
    StreamSampler,
    sampler_for,
)
from litebert.padding import real_tokens
from tests.data.builds import small_build


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


# ---- the static batch of a data directory ------------------------------------------------------

def by_length(ds: PretrainingDataset, full: bool, n: int) -> list[dict[str, torch.Tensor]]:
    """The first n items that fill the directory's max_seq_length (full) or do not."""
    width = ds.config.max_seq_length
    items = (ds[i] for i in range(len(ds)))
    chosen = [x for x in items if (len(x["input_ids"]) == width) == full]
    assert len(chosen) >= n, "the corpus fixture has too few items of that kind"
    return chosen[:n]


def test_a_batch_has_the_directorys_width_and_prediction_slots(data_dir):
    ds = PretrainingDataset(data_dir, "train", seed=0)
    T, P = ds.config.max_seq_length, ds.masking.max_predictions_per_seq  # 64, 20
    items = by_length(ds, full=False, n=2) + by_length(ds, full=True, n=1)
    batch = ds.collate(items)
    for key in ("input_ids", "token_type_ids", "labels", "attention_mask"):
        assert batch[key].shape == (3, T), key  # not the longest row: the directory's length
    lengths = torch.tensor([len(x["input_ids"]) for x in items])
    assert torch.equal(batch["attention_mask"], (torch.arange(T) < lengths[:, None]).long())
    positions, ids, weights = (batch[k] for k in SLOT_KEYS)
    assert positions.shape == ids.shape == weights.shape == (3, P)
    assert (positions.dtype, ids.dtype, weights.dtype) == (torch.long, torch.long,
                                                           torch.float32)
    for row, item in enumerate(items):
        where = (item["labels"] != -100).nonzero().flatten()  # increasing positions
        n = len(where)
        assert 0 < n < P  # some slots unused: they must be weighted 0
        assert positions[row, :n].tolist() == where.tolist()
        assert ids[row, :n].tolist() == item["labels"][where].tolist()  # the original ids
        assert weights[row, :n].eq(1).all() and weights[row, n:].eq(0).all()
        assert positions[row, n:].eq(0).all() and ids[row, n:].eq(0).all()
    assert weights.sum() == (batch["labels"] != -100).sum()


def test_attention_mask_is_left_out_exactly_when_no_row_is_padded(data_dir):
    ds = PretrainingDataset(data_dir, "train", seed=0)
    full, short = by_length(ds, full=True, n=3), by_length(ds, full=False, n=1)
    unpadded = ds.collate(full)
    assert "attention_mask" not in unpadded
    assert unpadded["input_ids"].shape == (3, ds.config.max_seq_length)
    assert torch.equal(real_tokens(unpadded), torch.ones(3, ds.config.max_seq_length,
                                                         dtype=torch.long))
    padded = ds.collate(full[:2] + short)
    assert "attention_mask" in padded and padded["attention_mask"][2].eq(0).any()


def test_unmasked_items_get_no_prediction_slots(data_dir):
    ds = PretrainingDataset(data_dir, "train", seed=0, masked=False)
    batch = ds.collate([ds[i] for i in range(3)])
    assert not set(SLOT_KEYS) & set(batch) and "labels" not in batch


def test_static_masks_beyond_max_predictions_per_seq_are_a_data_error(tmp_path,
                                                                       corpus_and_tokenizer):
    _, directory = small_build(tmp_path, corpus_and_tokenizer, masking="static")
    ds = PretrainingDataset(directory, "train")
    stored = int(np.diff(ds.mask_index).max())  # the most masks one item stores
    batch = ds.collate([ds[i] for i in range(4)])
    assert batch["masked_weights"].sum() == int(ds.mask_index[4] - ds.mask_index[0])
    manifest = directory / "manifest.json"
    data = json.loads(manifest.read_text())
    data["config"]["max_predictions_per_seq"] = stored - 1  # a config its masks do not fit
    manifest.write_text(json.dumps(data))
    named = re.escape(str(directory))
    with pytest.raises(DataError, match=rf"{named}: item \d+ of split 'train' stores {stored} "
                                        rf"masked positions, more than .*"
                                        rf"max_predictions_per_seq={stored - 1}"):
        PretrainingDataset(directory, "train")


# ---- the shuffled sampler -------------------------------------------------------------------

def shares(n: int, world: int, seed: int = 5, epoch: int = 0) -> list[np.ndarray]:
    """Each rank's whole epoch, from take()."""
    out = []
    for rank in range(world):
        sampler = RankSampler(n, rank, world, seed=seed)
        sampler.set_epoch(epoch)
        out.append(sampler.take(0, len(sampler)))
    return out


@pytest.mark.parametrize(("n", "world"), [(1, 1), (2, 2), (103, 2), (100, 4), (1000, 3)])
def test_ranks_take_disjoint_shares_of_one_permutation(n, world):
    per_rank = shares(n, world)
    assert {len(s) for s in per_rank} == {n // world}
    everything = np.concatenate(per_rank)
    assert len(np.unique(everything)) == len(everything) == n // world * world
    assert ((everything >= 0) & (everything < n)).all()
    # Rank r holds positions r, r + world, ... of the global order: interleaved back, one
    # order whose first usable positions are a world-size-independent permutation prefix.
    interleaved = np.stack(per_rank, axis=1).reshape(-1)
    assert np.array_equal(interleaved, shares(n, 1)[0][:len(interleaved)])


def test_the_order_is_fixed_per_epoch_and_new_every_epoch():
    a, again, other = shares(1000, 2, epoch=3), shares(1000, 2, epoch=3), shares(1000, 2, epoch=4)
    assert all(np.array_equal(x, y) for x, y in zip(a, again, strict=True))
    assert np.mean(a[0] == other[0]) < 0.05
    unshuffled = RankSampler(10, 1, 2, shuffle=False)
    assert list(unshuffled) == [1, 3, 5, 7, 9]


def test_take_and_iteration_agree_and_a_resume_continues_the_epoch(monkeypatch):
    monkeypatch.setattr("litebert.data.loader.TAKE_BLOCK", 7)  # blocks inside the epoch
    sampler = RankSampler(103, 1, 2, seed=9)
    sampler.set_epoch(2)
    straight = list(sampler)
    assert straight == sampler.take(0, len(sampler)).tolist()
    assert sampler.take(20, 28).tolist() == straight[20:28]  # a resume at position 20
    with pytest.raises(IndexError):
        sampler.take(50, 52)  # len 51


def test_micro_batches_continue_exactly_across_world_sizes():
    """2 ranks x micro-batch 4, stopped after 3 micro-batches (24 instances), continue as
    4 ranks x 2 at micro-batch 24 / (4 * 2) = 3 (litebert.train.state._batch_position):
    together they read exactly the global order one process would."""
    n, seed = 200, 11
    one = RankSampler(n, 0, 1, seed=seed).take(0, n)

    def global_slice(world: int, micro: int, batch: int) -> np.ndarray:
        rows = [RankSampler(n, r, world, seed=seed).take(batch * micro, (batch + 1) * micro)
                for r in range(world)]
        return np.stack(rows, axis=1).reshape(-1)  # (micro * world,) in global order

    before = np.concatenate([global_slice(2, 4, i) for i in range(3)])
    after = np.concatenate([global_slice(4, 2, i) for i in range(3, 7)])
    assert np.array_equal(np.concatenate([before, after]), one[:24 + 32])


def test_version_1_keeps_the_order_of_checkpoints_written_before_the_record():
    for rank in range(2):
        old = RankSampler(103, rank, 2, seed=5, version=1)
        old.set_epoch(1)
        order = torch.randperm(103, generator=torch.Generator().manual_seed(5 + 1))
        assert list(old) == order[:102][rank::2].tolist()  # the previous release's formula
        assert old.take(10, 14).tolist() == order[:102][rank::2][10:14].tolist()
    assert not np.array_equal(RankSampler(103, 0, 2, seed=5).take(0, 51),
                              RankSampler(103, 0, 2, seed=5, version=1).take(0, 51))
    with pytest.raises(ValueError, match="sampler_version=3: this release knows"):
        RankSampler(10, 0, 1, version=3)


def test_stream_take_gives_the_iterated_order_at_any_position():
    for mirrored in (False, True):
        sampler = StreamSampler(100, 1, 2, rows=4, groups=2, mirrored=mirrored)
        order = list(sampler)
        assert sampler.take(0, len(sampler)).tolist() == order
        assert sampler.take(13, 21).tolist() == order[13:21]


def test_an_iteration_keeps_its_epochs_order():
    sampler = RankSampler(50, 0, 1, seed=2)
    sampler.set_epoch(1)
    walk = iter(sampler)
    first = next(walk)
    sampler.set_epoch(2)  # as a DataLoader's owner may, before the iteration has ended
    expected = RankSampler(50, 0, 1, seed=2)
    expected.set_epoch(1)
    assert [first, *walk] == list(expected)
