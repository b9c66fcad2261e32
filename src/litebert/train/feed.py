"""Micro-batches for the training loop: one DataLoader for the whole run.

Items are drawn per (seed, epoch, index), so an epoch's items must know their epoch. The
batch sampler here hands the loader (epoch, index) pairs, epoch after epoch, and the dataset
wrapper sets each item's epoch where the item is made: in the worker that makes it. So one
loader serves every epoch, its workers live as long as the run (persistent, with their
prefetched batches), and an epoch boundary is no pause for new workers to start. Workers
change nothing but speed: the same items in the same order with any number of them.

The loop's data position (epoch, micro-batch) counts the batches the loop has taken, not
those the workers have prefetched; a checkpoint saves it, and the sampler starts from it.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from dataclasses import dataclass
from typing import cast

import torch
from torch.utils.data import DataLoader, Dataset

from litebert.data.integrity import DataError
from litebert.objectives import Items
from litebert.train.preemption import SIGNALS as PREEMPTION_SIGNALS


@dataclass
class DataPosition:
    """Where the loop is in its data: `batch` micro-batches (per rank) taken into epoch
    `epoch`. batches() advances it as the loop takes them; a checkpoint saves it."""

    epoch: int = 0
    batch: int = 0


class EpochItems:
    """`items[(epoch, index)]`: item `index` as epoch `epoch` draws it."""

    def __init__(self, items: Items):
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, key: tuple[int, int]) -> dict[str, torch.Tensor]:
        epoch, index = key
        self.items.set_epoch(epoch)  # an attribute: the item's draw reads it
        return self.items[index]


class EpochChunks:
    """Lists of `micro` (epoch, index) pairs from `start` (epoch, micro-batch) on, each epoch
    in the sampler's order for it, forever; a partial last micro-batch is dropped.

    The sampler computes only the positions asked for (`sampler.take`), BLOCK micro-batches at
    a time: an epoch start or a resume costs the first block, never the whole epoch's order."""

    BLOCK = 256  # micro-batches computed at once: a few hundred KB, one numpy call

    def __init__(self, sampler, micro: int, start: DataPosition):
        # A copy: the loop advances its own position while workers still prefetch.
        self.sampler, self.micro, self.start = sampler, micro, (start.epoch, start.batch)

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        epoch, first = self.start
        while True:
            per_epoch = len(self.sampler) // self.micro
            for block in range(first, per_epoch, self.BLOCK):
                stop = min(block + self.BLOCK, per_epoch)
                self.sampler.set_epoch(epoch)  # take() reads it
                rows = self.sampler.take(block * self.micro, stop * self.micro)
                for row in rows.reshape(-1, self.micro).tolist():  # (micro,) each
                    yield [(epoch, j) for j in row]
            epoch, first = epoch + 1, 0


def ignore_preemption(worker_id: int) -> None:
    """In a loader worker: a scheduler that signals every process of the job must not kill
    the workers the step in progress still reads from; the main process decides when to
    stop (train/preemption.py), and its workers end with it."""
    for sig in PREEMPTION_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


def batches(dataset: Items, sampler, micro: int, workers: int,
            position: DataPosition, pin: bool = False):
    """Micro-batches forever from `position` (updated as the loop takes them). pin:
    page-locked batches, which a CUDA copy with non_blocking=True overlaps with the step."""
    per_epoch = len(sampler) // micro
    if per_epoch == 0:
        raise DataError(f"{dataset.directory}: {len(dataset)} instances give this rank no "
                        f"full micro-batch of {micro}; lower micro_batch_size")
    if position.batch >= per_epoch:  # saved after an epoch's last micro-batch
        position.epoch, position.batch = position.epoch + 1, 0
    # Its own generator: creating a loader must not draw from the global RNG, which drives
    # dropout and is restored exactly on resume.
    loader: DataLoader = DataLoader(
        cast(Dataset, EpochItems(dataset)), batch_sampler=EpochChunks(sampler, micro, position),
        collate_fn=dataset.collate, num_workers=workers, pin_memory=pin,
        prefetch_factor=4 if workers else None, worker_init_fn=ignore_preemption,
        generator=torch.Generator().manual_seed(position.epoch))
    iterator = iter(loader)
    try:
        for batch in iterator:
            position.batch += 1
            if position.batch >= per_epoch:
                position.epoch, position.batch = position.epoch + 1, 0
            yield batch
    except DataError as err:  # a damaged block a worker read (litebert.data.blocks)
        raise type(err)(worker_sentence(err)) from None
    finally:
        # Whatever ends the feed, its workers end with it. An error's traceback holds the
        # iterator in a cycle that only the garbage collector would break, after the exit
        # handlers, whose join of a worker that ignores SIGTERM (ignore_preemption) would
        # never return. torch has no public call for this; without it (a later torch), the
        # collector still ends them.
        shutdown = getattr(iterator, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()


def worker_sentence(err: Exception) -> str:
    """The message of an error raised in a loader worker, as it was raised there: torch
    raises it again here with "Caught ... in DataLoader worker" and the worker's traceback
    as its text, which the user would see instead of the one sentence."""
    text = str(err)
    if not text.startswith("Caught "):
        return text
    name = f"{type(err).__module__}.{type(err).__qualname__}: "
    return text.rpartition(name)[2].strip() if name in text else text
