"""Training on several data directories at once, with weights (`--data a:0.7,b:0.3`), as
Megatron-LM's blended datasets do.

The run config's `data` is one directory, or a comma-separated list of directories each with
an optional `:WEIGHT`. Weights are normalised to sum to 1; a list without any weights
(`a,b`) weighs each directory by its size, so the blend is the directories concatenated.

An epoch of a blend has L items, as many as its directories' training items together; of them
directory d gets exactly c_d = round(w_d L) (largest remainders, so the c_d sum to L),
blend indices [C_d, C_d + c_d) with C_d = c_0 + ... + c_{d-1}. The shuffled sampler permutes
the L indices as it does a single directory's, which mixes the directories throughout the
epoch. Directory d is read as an endless stream of its n_d items: blend epoch e takes stream
positions [e c_d, (e + 1) c_d), position s being item s mod n_d drawn as pass s // n_d over d
(the pass is the item's epoch in d: its dynamic masks and pairs). So a down-weighted directory
shows the next items in the next epoch, an up-weighted one repeats its items in the same
epoch, each repeat with fresh masks; every item is read as often as any other of its directory,
to within one. Everything is keyed by (seed, epoch, index): the blend is reproducible and a
resume continues it exactly.

The directories must agree on what a batch of theirs holds: the tokenizer (its fingerprint),
max_seq_length, max_predictions_per_seq, packing and the pair task (objective). Evaluation,
the MLM baseline and the run's tokenizer come from the first directory. A blend needs the
shuffled sampler: objectives that read streams (XLNet's plm) take one directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from litebert.data.integrity import DataError
from litebert.data.manifest import DataManifest, open_data
from litebert.tokenization import Tokenizer

if TYPE_CHECKING:  # in annotations only: the run config parses --data without torch
    import torch

# What every directory of a blend must share: its items then collate into one batch shape.
AGREED = ("tokenizer", "max_seq_length", "max_predictions_per_seq", "packing", "objective")
BLEND_PREFIX = "blend:"  # a blend's data digest: blend:DIGEST*WEIGHT,DIGEST*WEIGHT


class Items(Protocol):  # litebert.objectives.Items, without importing the objectives
    directory: Path

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]: ...

    def set_epoch(self, epoch: int) -> None: ...

    def collate(self, items: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]: ...


class ItemSource(Protocol):  # an Objective, as far as opening its items goes
    @property
    def sampling(self) -> str: ...

    def dataset(self, data: DataManifest, split: str, seed: int) -> Any: ...


@dataclass(frozen=True)
class DataSpec:
    """The run config's `data`: directories and their weights (None: by size)."""

    directories: tuple[Path, ...]
    weights: tuple[float, ...] | None

    @property
    def first(self) -> Path:
        """The directory of evaluation, the MLM baseline and the run's tokenizer."""
        return self.directories[0]

    @property
    def blended(self) -> bool:
        return len(self.directories) > 1


def parse_data(text: str) -> DataSpec:
    """`DIR`, or `DIR[:WEIGHT],DIR[:WEIGHT],...` (all weighted or none) -> DataSpec; a
    DataError sentence for anything else. An existing directory is taken whole, whatever its
    name holds."""
    if Path(text).is_dir():
        return DataSpec((Path(text),), None)
    if "," not in text and not _weighted(text):
        return DataSpec((Path(_split_weight(text, text)[0]),), None)
    parts = [part.strip() for part in text.split(",")]
    if any(not part for part in parts):
        raise DataError(f"--data {text}: an empty entry; write DIR:WEIGHT,DIR:WEIGHT")
    pairs = [_split_weight(part, text) for part in parts]
    weighted = [w is not None for _, w in pairs]
    if any(weighted) and not all(weighted):
        raise DataError(f"--data {text}: give every directory a weight (DIR:WEIGHT,...) or "
                        f"none (weights by size)")
    directories = tuple(Path(d) for d, _ in pairs)
    if len(set(directories)) < len(directories):
        raise DataError(f"--data {text}: a directory is listed twice; give it one weight")
    if not all(weighted):
        return DataSpec(directories, None)
    total = sum(w for _, w in pairs if w is not None)
    return DataSpec(directories, tuple(w / total for _, w in pairs if w is not None))


@dataclass(frozen=True)
class RunData:
    """The run's data as read: each directory's manifest, read once (open_run_data), in the
    order of --data, and the weights (None: by size)."""

    parts: tuple[DataManifest, ...]
    weights: tuple[float, ...] | None

    @property
    def first(self) -> DataManifest:
        """The directory of evaluation, the MLM baseline and the run's tokenizer."""
        return self.parts[0]

    @property
    def blended(self) -> bool:
        return len(self.parts) > 1


def open_run_data(spec: DataSpec) -> RunData:
    """Every directory of `spec` opened (its manifest read and checked) once; a blend's must
    agree on what a batch holds (check_agreed)."""
    data = RunData(tuple(open_data(d) for d in spec.directories), spec.weights)
    if data.blended:
        check_agreed(data.parts)
    return data


def _weighted(part: str) -> bool:
    head, _, tail = part.rpartition(":")
    return bool(head) and _number(tail) is not None


def _meant_as_weight(part: str, tail: str) -> bool:
    """`DIR:abc` whose tail cannot be part of a path that exists: a weight written wrong
    (a path such as `c:/x` keeps its colon)."""
    return not Path(part).exists() and "/" not in tail and "\\" not in tail


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _split_weight(part: str, text: str) -> tuple[str, float | None]:
    """`DIR:WEIGHT` -> (DIR, WEIGHT); `DIR` -> (DIR, None)."""
    head, _, tail = part.rpartition(":")
    if not _weighted(part):
        if head and _meant_as_weight(part, tail):
            raise DataError(f"--data {text}: {tail!r} after {head}: is not a weight, and no "
                            f"directory is named {part}; write DIR:WEIGHT with a positive "
                            f"number (such as {head}:0.5)")
        return part, None
    weight = float(tail)
    if not (weight > 0 and np.isfinite(weight)):
        raise DataError(f"--data {text}: {head} has weight {tail}; weights must be positive "
                        f"numbers")
    return head, weight


def blend_counts(sizes: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """(D,) int64 items of each directory per epoch: round(w_d L), L = sum(sizes), by largest
    remainders (ties to the earlier directory) so that they sum to L exactly; `sizes`
    themselves without weights."""
    sizes = np.asarray(sizes, dtype=np.int64)
    if weights is None:
        return sizes.copy()
    total = int(sizes.sum())
    exact = np.asarray(weights, dtype=np.float64) * total  # (D,)
    counts = np.floor(exact).astype(np.int64)
    short = total - int(counts.sum())
    order = np.argsort(-(exact - counts), kind="stable")  # largest remainder first
    counts[order[:short]] += 1
    return counts


class BlendedItems:
    """Items of several directories by weight (see the module docstring): blend index b ->
    (directory d, item j, pass over d); `locate` maps many at once."""

    def __init__(self, parts: list[Items], weights: tuple[float, ...] | None):
        self.parts = parts
        self.sizes = np.array([len(p) for p in parts], dtype=np.int64)  # (D,) n_d
        empty = np.flatnonzero(self.sizes == 0)
        if empty.size:
            raise DataError(f"{parts[int(empty[0])].directory}: no training items to blend; "
                            f"rebuild it or leave it out of --data")
        self.counts = blend_counts(self.sizes, None if weights is None else np.array(weights))
        self.ends = np.cumsum(self.counts)  # (D,) C_{d+1}
        self.weights = (tuple(float(w) for w in weights) if weights is not None
                        else tuple((self.sizes / self.sizes.sum()).tolist()))
        self.directory = parts[0].directory  # what messages and evaluation name
        self.collate = parts[0].collate  # the directories agree on the batch (check_agreed)
        self.epoch = 0

    def __len__(self) -> int:
        return int(self.ends[-1])

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def locate(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(n,) blend indices of this epoch -> (directory, item, pass over it), (n,) each."""
        indices = np.asarray(indices, dtype=np.int64)
        d = np.searchsorted(self.ends, indices, side="right")  # (n,)
        stream = self.epoch * self.counts[d] + indices - (self.ends[d] - self.counts[d])
        return d, stream % self.sizes[d], stream // self.sizes[d]

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        d, j, draw = (int(v[0]) for v in self.locate(np.array([index])))
        part = self.parts[d]
        part.set_epoch(draw)  # the item's masks and pair: its pass over its directory
        return part[j]


def open_items(data: RunData, objective: ItemSource, split: str, seed: int):
    """The items `objective` reads from the run's data: one directory's, or a blend's."""
    if not data.blended:
        return objective.dataset(data.first, split, seed)
    if objective.sampling != "shuffled":
        raise DataError(f"--data blends {len(data.parts)} directories, but objective "
                        f"sampling {objective.sampling!r} reads streams in order; a blend "
                        f"needs the shuffled sampler: train on one directory")
    return BlendedItems([objective.dataset(d, split, seed) for d in data.parts], data.weights)


def agreed_fields(data: DataManifest) -> dict[str, Any]:
    """AGREED of a data directory, from its manifest (and, for an older manifest without the
    tokenizer's fingerprint, the directory's copy of the tokenizer)."""
    fingerprint = data.content.get("tokenizer", {}).get("fingerprint")
    if fingerprint is None:
        fingerprint = Tokenizer.from_pretrained(data.directory / "tokenizer").fingerprint
    return {"tokenizer": fingerprint, **{k: getattr(data.config, k) for k in AGREED[1:]}}


def check_agreed(parts: tuple[DataManifest, ...]) -> None:
    """DataError naming both directories, the field and both values where a directory's
    AGREED differ from the first's."""
    first = agreed_fields(parts[0])
    for other in parts[1:]:
        fields = agreed_fields(other)
        for key in AGREED:
            if fields[key] != first[key]:
                what = "tokenizer (fingerprint)" if key == "tokenizer" else key
                raise DataError(
                    f"--data: {parts[0].directory} and {other.directory} differ in {what} "
                    f"({first[key]!r} and {fields[key]!r}); the directories of a blend must "
                    f"be built with the "
                    f"same tokenizer, max_seq_length, max_predictions_per_seq, packing and "
                    f"objective: rebuild one of them")


# ---- what a checkpoint records --------------------------------------------------------------

def data_digest(data: RunData, items: Any) -> str:
    """The data's content as a checkpoint records it: one directory's content digest, or
    blend:DIGEST*WEIGHT,... of a blend's (its weights as `items` normalised them)."""
    if not data.blended:
        return data.first.digest
    digests = [part.digest for part in data.parts]
    return BLEND_PREFIX + ",".join(f"{digest}*{weight!r}"
                                   for digest, weight in zip(digests, items.weights, strict=True))


def _read_digest(digest: str) -> tuple[list[str], list[float]]:
    if not digest.startswith(BLEND_PREFIX):
        return [digest], [1.0]
    pairs = [p.rsplit("*", 1) for p in digest[len(BLEND_PREFIX):].split(",")]
    return [d for d, _ in pairs], [float(w) for _, w in pairs]


def data_differences(then: str, now: str) -> list[tuple[str, Any, Any]]:
    """(what, then, now) for each way two data digests differ: the directories' number,
    a directory's content, the weights."""
    if then == now:
        return []
    (old, old_w), (new, new_w) = _read_digest(then), _read_digest(now)
    if len(old) == len(new) == 1:
        return [("data (its files' checksums)", then, now)]
    if len(old) != len(new):
        return [("data (directories blended)", len(old), len(new))]
    differ: list[tuple[str, Any, Any]] = [
        (f"data directory {k + 1} of the blend (its files' checksums)", a, b)
        for k, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
    if old_w != new_w:
        differ.append(("data weights", old_w, new_w))
    return differ
