"""Reading a built data directory: Dataset, rank-aware sampler, padding collator.

Masks: with static masking they come from the directory; with dynamic masking each item is
masked when it is fetched, with a Generator seeded by (seed, epoch, index), so masks are
fresh every epoch, identical across runs, and independent of DataLoader workers and ranks.
Call `set_epoch(e)` on the dataset and the sampler at the start of every epoch.

Pairs: with static pairs (the reference) every item's A, B and label come from the
directory. With dynamic pairs the directory holds chunks, and the same per-item Generator
first draws the chunk's pair (split point, order, nsp partner, truncation:
litebert.data.instances.chunk_pair), then its masks; so pairs too are fresh every epoch and
reproducible, whatever the workers and ranks. `pair(index)` gives an item's pair alone.

Packed data (`--packing full-sentences` / `doc-sentences`, litebert.data.packing) has no
pairs: an item is its spans of text, read from the memory-mapped span arrays, with one
separator between documents. Every layout is the directory tokenizer's template
(`Tokenizer.template`), so a RoBERTa tokenizer gives <s> A </s></s> B </s> without types.

Batches (`PretrainingDataset.collate`) have one shape per directory, so a compiled training
step compiles once: every row is padded to the directory's max_seq_length, and masked items
carry a fixed number of prediction slots, the data's max_predictions_per_seq (unused slots
weighted 0), so the MLM head scores (B, P) slots, never a count that changes per batch. A
batch without padding leaves attention_mask out: the collator decides that on the host, and
the model takes its unmasked attention path without reading the mask back from the device.

Opening a directory compares every file's size with the manifest (litebert.data.integrity), so
a file cut short is a DataError naming it, not a shape error in the middle of training; every
array is read through litebert.data.blocks, which verifies each block the first time this
process reads it, so damage of the same size stops the run before the model sees it.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler

from litebert.data.attention_choice import check_attention
from litebert.data.attention_layout import lay_out
from litebert.data.blocks import DirectoryChecks
from litebert.data.build_config import SPLITS, BuildConfig
from litebert.data.instances import chunk_pair
from litebert.data.integrity import DataError
from litebert.data.manifest import DataManifest, as_data
from litebert.data.masking import mask_tokens
from litebert.data.packing import PackedSplit, assemble_packed, packed_document_ids
from litebert.data.permutation import FeistelPermutation
from litebert.data.splits import assemble, open_packed
from litebert.data.word_starts import WordStarts
from litebert.padding import pad_batch
from litebert.tokenization import Tokenizer

LABEL_KEYS = {"sop": "sentence_order_label", "nsp": "next_sentence_label"}
IGNORE = -100  # labels of tokens that are not predicted
# A masked batch's static prediction slots, (B, P) each (see prediction_slots).
SLOT_KEYS = ("masked_positions", "masked_ids", "masked_weights")


class PretrainingDataset(Dataset):
    """Items: input_ids, token_type_ids, attention_mask, labels (-100 = not predicted) and
    sentence_order_label / next_sentence_label (none for objective 'none'); with attention
    "document", document_ids (litebert.data.attention_layout). `collate` makes the static
    batches of the module docstring."""

    def __init__(self, data: DataManifest | str | Path, split: str = "train",
                 seed: int | None = None, masked: bool = True, attention: str = "full"):
        if split not in SPLITS:
            raise DataError(f"split={split!r}: choose from {SPLITS}")
        self.data = as_data(data)  # a directory is opened: DataError if a file was cut short
        self.directory, self.manifest = self.data.directory, self.data.content
        self.config: BuildConfig = self.data.config
        if self.config.packing == "streams":
            raise DataError(f"{self.directory}: built with --packing streams, whose items are "
                            "XLNet's windows of a stream; read it with objective plm "
                            "(litebert.objectives.plm_data.PLMDataset)")
        self.seed = self.config.seed if seed is None else seed
        # False: items carry their original ids and no labels (an objective that corrupts
        # its input itself, such as ELECTRA's generator slots, reads them so).
        self.masked = masked
        self.epoch = 0
        tokenizer = _tokenizer(self.directory)
        # The tokenizer's special ids (ELECTRA never corrupts them); None where it has none.
        self.special_ids = {"cls": tokenizer.cls_token_id, "sep": tokenizer.sep_token_id,
                            "mask": tokenizer.mask_token_id, "pad": tokenizer.pad_token_id}
        self.pad_id = tokenizer.pad_token_id or 0  # RoBERTa's is 1: its positions skip it
        self.template = tokenizer.template  # the layout of every item
        self.masking = self.config.masks(tokenizer)  # replacements: the directory's tokenizer's
        # Every array is read through `checks`: each block verified when first read here.
        checks = DirectoryChecks(self.directory, self.manifest, len(tokenizer))
        dtype = self.manifest["counts"]["token_dtype"]
        self.tokens = checks.open("tokens.bin", dtype, ids=True)
        # What chunk_pair reads: (S + 1,) sentence offsets, (D_split, 2) document ranges.
        self.offsets = checks.open("sentences.bin", np.int64)
        self.word_starts = WordStarts(self.tokens, self.offsets, tokenizer.word_start_ids)
        self.split = split
        self.instance_config = self.config.instance_config(self.template)
        self.rows = None  # (I, 5) FIELDS: static pairs
        self.chunks = None  # (C, 4) CHUNK_FIELDS: dynamic pairs
        self.packed: PackedSplit | None = None  # spans of text: full- / doc-sentences
        if self.config.packed:
            self.packed = open_packed(self.directory, split, checks)
            self.length = len(self.packed)
        elif self.config.pairs == "dynamic":
            self.chunks = checks.open(f"{split}.chunks.bin", np.int64, width=4)
            self.length = len(self.chunks)
        else:
            self.rows = checks.open(f"{split}.instances.bin", np.int64, width=5)
            self.length = len(self.rows)
        self.docs = (checks.open(f"{split}.documents.bin", np.int64, width=2)
                     if self.chunks is not None else np.zeros((0, 2), dtype=np.int64))
        if self.config.masking == "static":
            self.masks = checks.open(f"{split}.masks.bin", np.int32, width=2)
            self.mask_index = checks.open(f"{split}.mask_index.bin", np.int64)
            self._check_static_masks()
        self.label_key = LABEL_KEYS.get(self.config.objective)
        self.attention = attention  # what collate() adds for the model's attention
        try:
            check_attention(attention, self.packed is not None, str(self.directory))
        except ValueError as err:
            raise DataError(str(err)) from None

    def _check_static_masks(self) -> None:
        """Every stored mask fits the batch's prediction slots (one vectorised pass over
        the (I + 1,) index when the directory is opened, not a surprise mid-run)."""
        per_item = np.diff(self.mask_index)  # (I,) masked positions of each item
        slots = self.masking.max_predictions_per_seq
        if len(per_item) and int(per_item.max()) > slots:
            item = int(per_item.argmax())
            raise DataError(f"{self.directory}: item {item} of split {self.split!r} stores "
                            f"{int(per_item[item])} masked positions, more than the "
                            f"manifest's max_predictions_per_seq={slots}; the masks do not "
                            f"match the directory's config: rebuild it with `litebert build`")

    def collate(self, items: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        """A pre-training batch (B, max_seq_length) with this directory's padding id; masked
        items add the prediction slots (B, max_predictions_per_seq); attention_mask only
        when some row is padded; then laid out for the run's attention. Runs in the DataLoader
        workers: its host decisions cost the training step nothing."""
        width = self.config.max_seq_length
        batch = pad_batch(items, self.pad_id, width=width)
        if all(len(item["input_ids"]) == width for item in items):
            del batch["attention_mask"]  # consumers read litebert.padding.real_tokens(batch)
        if "labels" in batch:
            batch.update(prediction_slots(batch["labels"], self.masking.max_predictions_per_seq))
        return lay_out(batch, self.attention)

    def __len__(self) -> int:
        return self.length

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def item_rng(self, index: int) -> np.random.Generator:
        """The Generator of item `index` in this epoch: dynamic pairs, then dynamic masks."""
        return np.random.default_rng([self.seed, self.epoch, int(index)])

    def pair(self, index: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """(5,) FIELDS of item `index` in this epoch: as stored (static pairs), or drawn from
        its chunk with `rng`, by default a fresh item_rng(index) (dynamic pairs)."""
        if self.rows is not None:
            return self.rows[index]
        if self.chunks is None:
            raise DataError(f"{self.directory}: packing={self.config.packing!r} has no "
                            "sentence pairs; read items with dataset[index] or "
                            "dataset.inputs(index)")
        return chunk_pair(self.chunks[index], self.offsets, self.docs, self.instance_config,
                          self.item_rng(index) if rng is None else rng)

    def inputs(self, index: int, rng: np.random.Generator | None = None):
        """Item `index` before masking: ids, token types, word starts and maskable flags,
        (T,) each; `rng` draws a dynamic pair as in pair()."""
        return self._assemble(index, None if self.packed is not None else self.pair(index, rng))

    def _assemble(self, index: int, row: np.ndarray | None):
        if row is None:  # packed
            assert self.packed is not None
            return assemble_packed(self.tokens, self.word_starts, self.packed.spans_of(index),
                                   self.template)
        return assemble(self.tokens, self.word_starts, row, self.template)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        rng = self.item_rng(index)
        # The pair is drawn first, so pair(index) alone gives the same pair.
        row = None if self.packed is not None else self.pair(index, rng)
        ids, types, starts, maskable = self._assemble(index, row)
        if not self.masked:
            labels = None
        elif self.config.masking == "static":
            lo, hi = self.mask_index[index], self.mask_index[index + 1]
            positions, replaced = self.masks[lo:hi, 0], self.masks[lo:hi, 1]
            labels = np.full(len(ids), -100, dtype=np.int64)
            labels[positions] = ids[positions]
            ids[positions] = replaced
        else:
            ids, labels, _ = mask_tokens(ids, starts, maskable, self.masking, rng)
        item = {"input_ids": torch.from_numpy(ids), "token_type_ids": torch.from_numpy(types),
                "attention_mask": torch.ones(len(ids), dtype=torch.long)}
        if labels is not None:
            item["labels"] = torch.from_numpy(labels)
        if self.label_key and row is not None:
            item[self.label_key] = torch.tensor(int(row[4]))
        if self.attention == "document":
            item["document_ids"] = torch.from_numpy(self._document_ids(index))
        return item

    def _document_ids(self, index: int) -> np.ndarray:
        """(T,) the document of each position of packed item `index`."""
        assert self.packed is not None
        return packed_document_ids(self.packed.spans_of(index)[:, 1], self.template)


@dataclass(frozen=True)
class StreamData:
    """A directory of XLNet streams (`--packing streams`, litebert.data.streams) as the Trainer
    hands it to an objective: it has no items of its own (an objective that reads streams
    opens them with its dataset), no sentence-pair label."""

    data: DataManifest
    label_key: str | None = None

    @property
    def directory(self) -> Path:
        return self.data.directory

    @property
    def config(self) -> BuildConfig:
        return self.data.config


def open_training_data(data: DataManifest, seed: int) -> PretrainingDataset | StreamData:
    """A data directory's training split, objective-neutral: instances (PretrainingDataset)
    or streams (StreamData), as it was built."""
    if data.config.packing == "streams":
        return StreamData(data)
    return PretrainingDataset(data, "train", seed=seed)


def _tokenizer(directory: Path):
    """The copy of the tokenizer that `build` put in the directory (its ids are the data's)."""
    return Tokenizer.from_pretrained(directory / "tokenizer")


def collate(items: list[dict[str, torch.Tensor]], pad_id: int = 0,
            multiple_of: int = 8) -> dict[str, torch.Tensor]:
    """Pad to the longest item (rounded up to `multiple_of`, kinder to matmul kernels); the
    sentence-pair labels are stacked. See litebert.padding.pad_batch."""
    return pad_batch(items, pad_id, multiple_of)


def masked_slots(labels: torch.Tensor, slots: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T) labels -> (positions, used), (B, P) each: each row's predicted positions
    (labels != -100) packed left in increasing order, unused slots at position 0; a row with
    more than P keeps its first P. No host sync: the collator and ELECTRA's data slots (on the
    device) share it."""
    masked = (labels != IGNORE).to(torch.int8)  # (B, T)
    counts = masked.sum(-1).clamp(max=slots)  # (B,)
    if slots > masked.shape[1]:  # more slots than positions: pad, so the sort gives P columns
        masked = torch.nn.functional.pad(masked, (0, slots - masked.shape[1]))
    # A stable sort puts each row's masked positions first, in increasing order.
    order = torch.sort(masked, dim=1, descending=True, stable=True).indices[:, :slots]
    used = torch.arange(slots, device=labels.device)[None, :] < counts[:, None]  # (B, P)
    return order * used, used


def prediction_slots(labels: torch.Tensor, slots: int) -> dict[str, torch.Tensor]:
    """SLOT_KEYS of (B, T) labels, on the host: masked_slots' positions, their original ids,
    weight 1; unused slots at position 0 with id 0 and weight 0 (cramming's static MLM
    targets). A row with more than `slots` masked tokens is a ValueError."""
    largest = int((labels != IGNORE).sum(-1).max()) if labels.numel() else 0
    if largest > slots:
        raise ValueError(f"a row has {largest} masked tokens, more than its {slots} prediction "
                         "slots (max_predictions_per_seq)")
    positions, used = masked_slots(labels, slots)  # (B, P) each
    ids = labels.gather(1, positions.clamp(max=labels.shape[1] - 1)) * used  # (B, P)
    return dict(zip(SLOT_KEYS, (positions, ids, used.float()), strict=True))


# The shuffled sampler's order, recorded in every checkpoint (state.json "sampler_version"):
# 1 = one torch.randperm of all instances per epoch (checkpoints written before the version was
# recorded); 2 = a keyed Feistel permutation computed on demand (litebert.data.permutation).
# A run continues with the version its checkpoint was written with, so its order stays exact.
SAMPLER_VERSION = 2
SAMPLER_VERSIONS = (1, 2)
TAKE_BLOCK = 1 << 16  # positions computed at once when the sampler is iterated


class RankSampler(Sampler[int]):  # sampling "shuffled"
    """A disjoint, deterministic share of the indices for each rank, reshuffled per epoch.

    All ranks share one permutation of the N indices per epoch (seed, epoch), the "global
    order"; rank r takes its positions r, r + world, r + 2 world, ... of it, and the tail is
    dropped so all ranks take the same number of steps. So micro-batch i of all ranks
    together is the same slice of the global order whatever the number of ranks
    (litebert.train.state._batch_position relies on it). `take(start, stop)` gives a rank's
    indices at its positions [start, stop) and computes only those: with version 2 a
    micro-batch costs memory of its size, whatever N (version 1, kept to continue its
    checkpoints exactly, draws the whole permutation once per epoch).
    Rank and world size default to torchrun's RANK and WORLD_SIZE.
    """

    def __init__(self, length: int, rank: int | None = None, world_size: int | None = None,
                 seed: int = 0, shuffle: bool = True, version: int = SAMPLER_VERSION):
        self.length = length
        self.rank = int(os.environ.get("RANK", 0)) if rank is None else rank
        self.world = int(os.environ.get("WORLD_SIZE", 1)) if world_size is None else world_size
        if not 0 <= self.rank < self.world:
            raise ValueError(f"rank {self.rank} is outside world size {self.world}")
        if version not in SAMPLER_VERSIONS:
            raise ValueError(f"sampler_version={version!r}: this release knows "
                             f"{SAMPLER_VERSIONS}; continue the run with the release that "
                             f"wrote it")
        self.seed, self.shuffle, self.epoch, self.version = seed, shuffle, 0, version
        self._order: tuple[int, torch.Tensor] | None = None  # version 1: (epoch, (N,) order)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.length // self.world

    def take(self, start: int, stop: int) -> np.ndarray:
        """(stop - start,) int64: this rank's indices at its positions [start, stop) of the
        epoch (0 <= start <= stop <= len(self))."""
        if not 0 <= start <= stop <= len(self):
            raise IndexError(f"positions [{start}, {stop}) outside [0, {len(self)})")
        positions = np.arange(start, stop, dtype=np.int64) * self.world + self.rank  # global
        if not self.shuffle or not len(positions):
            return positions
        if self.version == 1:
            return self._randperm()[torch.from_numpy(positions)].numpy()
        return FeistelPermutation(self.length, self.seed, self.epoch)(positions)

    def _randperm(self) -> torch.Tensor:
        """Version 1's (N,) order of this epoch, drawn once per epoch."""
        if self._order is None or self._order[0] != self.epoch:
            g = torch.Generator().manual_seed(self.seed + self.epoch)
            self._order = (self.epoch, torch.randperm(self.length, generator=g))
        return self._order[1]

    def __iter__(self):
        # A copy: the iteration keeps this epoch's order though set_epoch comes meanwhile.
        return _iterate(copy.copy(self))


def _iterate(sampler) -> Iterator[int]:
    """A sampler's indices one by one, computed TAKE_BLOCK at a time."""
    for start in range(0, len(sampler), TAKE_BLOCK):
        yield from sampler.take(start, min(start + TAKE_BLOCK, len(sampler))).tolist()


class StreamSampler(Sampler[int]):
    """Contiguous per-row streams that continue from one step to the next (what an objective
    that carries memories across steps reads; sampling "streams").

    The items are cut into world_size x groups x rows streams of consecutive indices, in the
    data's order. Step s gives batch row r of micro-batch g on rank k item
    start(k, g, r) + s, so each row reads its stream's next segment every step; the order
    is the same in every epoch. Iterating yields the indices micro-batch by micro-batch;
    `take(start, stop)` computes those at the positions [start, stop) of that sequence.

    mirrored (sampling "mirrored-streams", XLNet's bi_data): the items are two halves of
    equal length, the windows of a text read forwards and then of the same text read
    backwards (litebert.objectives.plm_data). Rows [0, rows/2) of every micro-batch read
    streams of the first half as above; row rows/2 + r reads, at the same step, the
    backward stream that mirrors row r's: of S streams per half, forward stream k is paired
    with backward stream S - 1 - k, which holds (up to where the windows fall) the same text
    read backwards, as the official code reverses each row of its batch.
    """

    def __init__(self, length: int, rank: int, world_size: int, rows: int, groups: int = 1,
                 mirrored: bool = False):
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is outside world size {world_size}")
        if mirrored and rows % 2:
            raise ValueError(f"mirrored streams need an even micro-batch (rows={rows}): half "
                             "of it reads the text forwards, half backwards")
        self.rank, self.world, self.rows, self.groups = rank, world_size, rows, groups
        self.mirrored = mirrored
        self.half = length // 2 if mirrored else length  # items of the forward streams
        per_row = rows // 2 if mirrored else rows  # forward streams per micro-batch
        self.streams = world_size * groups * per_row
        self.steps = self.half // self.streams  # segments per stream; the tail is dropped
        self.starts = self._starts(per_row)  # (G * R,) first item of each row's stream

    def _starts(self, per_row: int) -> np.ndarray:
        mine = np.arange(self.groups * per_row) + self.rank * self.groups * per_row
        starts = mine * self.steps  # (G * R',) first item of each of this rank's streams
        if self.mirrored:  # each micro-batch: its forward rows, then their mirrors
            backward = self.half + (self.streams - 1 - mine) * self.steps
            starts = np.concatenate([starts.reshape(self.groups, per_row),
                                     backward.reshape(self.groups, per_row)], axis=1)
        return starts.reshape(-1).astype(np.int64)

    def set_epoch(self, epoch: int) -> None:
        """Streams read the data in order, the same every epoch."""

    def __len__(self) -> int:
        return self.steps * self.groups * self.rows

    def take(self, start: int, stop: int) -> np.ndarray:
        """(stop - start,) int64: the indices at positions [start, stop) of the order: position
        p is step p // (G R), row p % (G R) of that step."""
        if not 0 <= start <= stop <= len(self):
            raise IndexError(f"positions [{start}, {stop}) outside [0, {len(self)})")
        positions = np.arange(start, stop, dtype=np.int64)
        per_step = len(self.starts)
        return self.starts[positions % per_step] + positions // per_step

    def __iter__(self):
        return _iterate(self)


def sampler_for(sampling: str, length: int, rank: int, world_size: int, rows: int,
                groups: int, seed: int,
                version: int = SAMPLER_VERSION) -> RankSampler | StreamSampler:
    """The sampler an objective's `sampling` asks for (rows = micro-batch size, groups =
    micro-batches per step; version: the shuffled order's, SAMPLER_VERSION)."""
    if sampling in ("streams", "mirrored-streams"):
        return StreamSampler(length, rank, world_size, rows, groups,
                             mirrored=sampling == "mirrored-streams")
    if sampling == "shuffled":
        return RankSampler(length, rank, world_size, seed=seed, version=version)
    raise ValueError(f"sampling={sampling!r}: choose 'shuffled', 'streams' or "
                     "'mirrored-streams'")
