"""One loader for the whole run (train/feed.py): epochs follow each other inside it, items
know their epoch in the workers, and the data position counts what the loop has taken."""

from __future__ import annotations

import itertools
import multiprocessing
from pathlib import Path

import numpy as np
import pytest
import torch

from litebert.data.integrity import DataError
from litebert.data.loader import RankSampler
from litebert.distributed import DistInfo
from litebert.train.feed import DataPosition, EpochChunks, batches
from litebert.train.run_config import PretrainConfig
from litebert.train.state import _batch_position

EPOCH = 1000  # an item's value: epoch * EPOCH + index


class Numbered:
    """Items that say which epoch drew them, as the real ones are keyed by it."""

    directory = Path("numbered")

    def __init__(self, n: int):
        self.n, self.epoch = n, 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {"x": torch.tensor(self.epoch * EPOCH + index)}

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def collate(self, items):
        return {"x": torch.stack([item["x"] for item in items])}


def take(count: int, workers: int, position: DataPosition, n: int = 10, micro: int = 3):
    stream = batches(Numbered(n), RankSampler(n, 0, 1, seed=5), micro, workers, position)
    return [b["x"].tolist() for b in itertools.islice(stream, count)]


def test_epochs_follow_each_other_with_their_own_order_and_items():
    position = DataPosition()
    got = take(7, 0, position)  # 3 micro-batches per epoch (10 // 3, the tail dropped)
    epochs = [{x // EPOCH for x in b} for b in got]
    assert epochs == [{0}] * 3 + [{1}] * 3 + [{2}]
    for e in (0, 1):
        seen = [x % EPOCH for b in got[3 * e:3 * e + 3] for x in b]
        sampler = RankSampler(10, 0, 1, seed=5)
        sampler.set_epoch(e)
        assert seen == list(sampler)[:9]  # the sampler's order of that epoch
    assert position == DataPosition(epoch=2, batch=1)


def test_workers_change_nothing_and_live_across_epochs():
    assert take(8, 2, DataPosition()) == take(8, 0, DataPosition())


@pytest.mark.parametrize("start", [(1, 1), (0, 3)])
def test_a_saved_position_continues_where_the_loop_stopped(start):
    """Mid-epoch, and after an epoch's last micro-batch (how the previous loader saved it)."""
    straight = take(8, 0, DataPosition())
    done = start[0] * 3 + start[1]
    position = DataPosition(*start)
    assert take(8 - done, 0, position) == straight[done:]
    assert position == DataPosition(epoch=2, batch=2)


def test_too_few_items_for_a_micro_batch_is_a_data_error():
    with pytest.raises(DataError, match="numbered: 2 instances give this rank no full "
                                        "micro-batch of 3"):
        take(1, 0, DataPosition(), n=2)


class Unlisted(RankSampler):
    """A sampler that may not be listed: the feed must ask for its micro-batches only."""

    def __iter__(self):
        raise AssertionError("the feed listed a whole epoch of the sampler")


class Damaged(Numbered):
    """Items whose index 5 is a DataError, as a damaged block of a data file is."""

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if index == 5:
            raise DataError("data/tokens.bin: block 0 is damaged; run `litebert data verify`")
        return super().__getitem__(index)


class Broken(Numbered):
    """Items whose index 5 raises an error of any other kind: a bug, not damaged data."""

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if index == 5:
            raise RuntimeError("a bug in an item")
        return super().__getitem__(index)


@pytest.mark.parametrize("workers", [0, 1])
def test_a_data_error_in_a_worker_is_its_one_sentence_and_ends_the_workers(workers):
    """Not torch's "Caught DataError in DataLoader worker process 0" and the worker's
    traceback; and no worker left behind (one that ignores SIGTERM would hang the exit)."""
    stream = batches(Damaged(10), RankSampler(10, 0, 1, shuffle=False), 2, workers,
                     DataPosition())
    assert [b["x"].tolist() for b in itertools.islice(stream, 2)] == [[0, 1], [2, 3]]
    with pytest.raises(DataError) as caught:
        next(stream)
    assert str(caught.value) == ("data/tokens.bin: block 0 is damaged; run `litebert data "
                                 "verify`")
    assert not multiprocessing.active_children()


def test_any_error_in_a_worker_ends_the_workers_with_its_traceback_kept():
    """A bug in a worker keeps torch's report (its traceback is the way to the bug), and the
    workers end with the feed, or the exit would wait on one that ignores SIGTERM."""
    stream = batches(Broken(10), RankSampler(10, 0, 1, shuffle=False), 2, 1, DataPosition())
    assert [b["x"].tolist() for b in itertools.islice(stream, 2)] == [[0, 1], [2, 3]]
    with pytest.raises(RuntimeError, match="a bug in an item") as caught:
        next(stream)
    assert "Traceback" in str(caught.value)  # the worker's, as torch gives it
    assert not multiprocessing.active_children()


def test_chunks_ask_the_sampler_for_their_positions_only(monkeypatch):
    monkeypatch.setattr(EpochChunks, "BLOCK", 2)  # blocks end inside an epoch
    chunks = EpochChunks(Unlisted(10, 0, 1, seed=5), 3, DataPosition(epoch=1, batch=1))
    got = list(itertools.islice(chunks, 4))  # 2 of epoch 1, 2 of epoch 2
    order = {e: RankSampler(10, 0, 1, seed=5) for e in (1, 2)}
    for e, sampler in order.items():
        sampler.set_epoch(e)
    expected = [[(1, j) for j in order[1].take(3 * i, 3 * i + 3).tolist()] for i in (1, 2)]
    expected += [[(2, j) for j in order[2].take(3 * i, 3 * i + 3).tolist()] for i in (0, 1)]
    assert got == expected


def test_a_position_saved_by_2_ranks_continues_exactly_on_4():
    """2 ranks x micro-batch 4 stop after 3 micro-batches; 4 ranks x 2 convert the position
    (_batch_position) and their chunks continue the global order one rank would read."""
    n, seed = 64, 3
    saved = {"epoch": 0, "batch": 3, "world_size": 2, "config": {"micro_batch_size": 4}}
    cfg = PretrainConfig(micro_batch_size=2, batch_size=8)
    batch = _batch_position(saved, cfg, DistInfo(0, 4, 0, torch.device("cpu")))
    assert batch == 3

    def global_order(world: int, micro: int, start: int, count: int) -> list[int]:
        ranks = [list(itertools.islice(EpochChunks(RankSampler(n, r, world, seed=seed), micro,
                                                   DataPosition(0, start)), count))
                 for r in range(world)]
        # micro-batch i of every rank together: rank-interleaved positions of the order
        rows = np.array([[[j for _, j in chunk] for chunk in rank] for rank in ranks])
        return rows.transpose(1, 2, 0).reshape(-1).tolist()  # (count, micro, world)

    one = RankSampler(n, 0, 1, seed=seed).take(0, n).tolist()
    assert global_order(2, 4, 0, 3) + global_order(4, 2, batch, 2) == one[:24 + 16]
