"""Per-block checksums of a data directory's arrays, verified as training reads them.

Opening a directory checks sizes only (litebert.data.integrity); `litebert data verify`
reads every byte, which no run can afford at each start on a 160 GB directory. So the build
also records the crc32 of every BLOCK_BYTES block of every array (*.bin) in CHECKSUMS, one
uint32 per block, file after file; the manifest's "blocks" entry says the block size and
where each file's checksums begin, and its "files" entry records CHECKSUMS' own sha256,
checked whenever a directory is opened for reading (4 bytes per 64 KiB: 10 MB for 160 GB).

A reader opens its arrays through `DirectoryChecks.open`: a `CheckedArray` verifies each
block the first time this process reads from it (a bitmap of one byte per block remembers
which it has seen), before handing out anything read from it: the crc32, and for arrays of
token ids that every id is below the vocabulary size. A DataLoader worker verifies what it
reads itself. A bad block is a CorruptBlock naming the file, the block and its bytes, and
`litebert data verify DIR`; nothing read from it reaches the model.

Directories built before these records still open: their token ids are checked against
the vocabulary, as above, and nothing else (said once per directory and process).

64 KiB is the kernel's usual fault-around: a read of one item through the memory map maps
that much around it anyway, and verifying it costs some 30 us (crc32 at about 2 GB/s).
"""

from __future__ import annotations

import hashlib
import logging
import zlib
from pathlib import Path
from typing import Any, Literal

import numpy as np

from litebert.data.arrays import memmap
from litebert.data.integrity import MANIFEST, DataError
from litebert.files import atomic_write, file_digest

log = logging.getLogger("litebert")

BLOCK_BYTES = 1 << 16
CHECKSUMS = "block_checksums.bin"  # (B,) uint32: crc32 of every block, file after file

_WARNED: set[Path] = set()  # directories whose manifest records no blocks, already said


class CorruptBlock(DataError):
    """A block of a data file that differs from what its build wrote."""


# ---- at build time --------------------------------------------------------------------------

def record_blocks(directory: Path, names: list[str]
                  ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Write CHECKSUMS for the arrays `names` of `directory`. Returns the manifest's "blocks"
    entry, {"bytes": block size, "file": CHECKSUMS, "first": {name: its first block's
    index}}, and each array's {size, sha256} (files.file_digest's record), made in the same
    read, so that a build reads its arrays back once."""
    first: dict[str, int] = {}
    digests: dict[str, dict[str, Any]] = {}
    crcs: list[np.ndarray] = []
    count = 0
    for name in sorted(set(names) - {CHECKSUMS}):
        first[name] = count
        file_crcs, digests[name] = read_blocks(directory / name, BLOCK_BYTES)
        crcs.append(file_crcs)
        count += len(file_crcs)
    table = np.concatenate(crcs) if crcs else np.zeros(0, dtype=np.uint32)
    atomic_write(directory / CHECKSUMS, table.astype("<u4").tobytes())
    return {"bytes": BLOCK_BYTES, "file": CHECKSUMS, "first": first}, digests


def read_blocks(path: Path, block_bytes: int) -> tuple[np.ndarray, dict[str, Any]]:
    """(B,) uint32 crc32 of each block of a file, and its {size, sha256}, read one block at
    a time."""
    crcs, whole, size = [], hashlib.sha256(), 0
    with open(path, "rb", buffering=0) as f:
        while block := f.read(block_bytes):
            crcs.append(zlib.crc32(block))
            whole.update(block)
            size += len(block)
    return np.array(crcs, dtype=np.uint32), {"size": size, "sha256": whole.hexdigest()}


# ---- at read time ---------------------------------------------------------------------------

class DirectoryChecks:
    """What a reader of one data directory verifies: the block checksums of its manifest,
    if it records them, and token ids below `vocab_size`."""

    def __init__(self, directory: Path, manifest: dict[str, Any], vocab_size: int):
        self.directory, self.vocab_size = directory, vocab_size
        self.table: dict[str, Any] | None = manifest.get("blocks")
        self.crcs = np.zeros(0, dtype=np.uint32)
        if self.table is None:
            self._say_ids_only(manifest)
        else:
            self.crcs = self._checksums(manifest)

    def _checksums(self, manifest: dict[str, Any]) -> np.ndarray:
        """CHECKSUMS, mapped, once its sha256 matches the manifest's record of it."""
        assert self.table is not None
        path = self.directory / self.table["file"]
        recorded = manifest.get("files", {}).get(self.table["file"], {}).get("sha256")
        if file_digest(path)["sha256"] != recorded:
            raise CorruptBlock(f"{path}: the block checksums differ from {MANIFEST}'s record "
                               f"of them; run `litebert data verify {self.directory}` to see "
                               "what else changed, then rebuild")
        return memmap(path, np.dtype("<u4"))

    def _say_ids_only(self, manifest: dict[str, Any]) -> None:
        if self.directory in _WARNED:
            return
        _WARNED.add(self.directory)
        verify = (f"`litebert data verify {self.directory}` is the only check of the rest"
                  if manifest.get("files") else "nothing checks the rest")
        log.warning("%s: %s records no block checksums (built before they were), so reading "
                    "checks only that token ids are below the vocabulary size (%d); %s",
                    self.directory, MANIFEST, self.vocab_size, verify)

    def open(self, name: str, dtype: Any, width: int = 1, ids: bool = False):
        """The array `name`, memory-mapped, (N,) or (N / width, width): a CheckedArray when
        there is anything to verify (ids: its values are token ids), else the plain map."""
        array = memmap(self.directory / name, dtype)
        if width > 1:
            array = array.reshape(-1, width)
        crcs = None
        if self.table is not None and name in self.table["first"]:
            first = self.table["first"][name]
            crcs = self.crcs[first:first + -(-array.nbytes // self.table["bytes"])]
        if crcs is None and not ids:
            return array
        return CheckedArray(array, self.directory, name, crcs,
                            self.vocab_size if ids else None,
                            self.table["bytes"] if self.table else BLOCK_BYTES)


class CheckedArray:
    """A memory-mapped array read like a numpy array (indexing, len, shape, searchsorted),
    each block verified the first time this process reads from it (see the module
    docstring). Indices along the first axis decide the blocks read."""

    def __init__(self, array: np.ndarray, directory: Path, name: str, crcs: np.ndarray | None,
                 vocab_size: int | None, block_bytes: int):
        self.array, self.directory, self.name = array, directory, name
        self.shape, self.dtype, self.ndim = array.shape, array.dtype, array.ndim
        self.crcs, self.vocab_size, self.block_bytes = crcs, vocab_size, block_bytes
        self.row_bytes = array.itemsize * int(np.prod(array.shape[1:], dtype=np.int64))
        self.raw = array.reshape(-1).view(np.uint8)  # (bytes,) the same map
        self.verified = np.zeros(-(-self.raw.size // block_bytes), dtype=bool)  # (blocks,)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key):
        self.check_rows(key[0] if isinstance(key, tuple) else key)
        return self.array[key]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """The whole array (numpy functions given the array itself): every block verified."""
        self.check_range(0, len(self))
        return self.array if dtype is None else self.array.astype(dtype)

    def searchsorted(self, values, side: Literal["left", "right"] = "left"):
        """np.searchsorted over a sorted (N,) array. The answer rests on the elements either
        side of it, which are verified; should they not bracket the value, a damaged block
        elsewhere misled the search, and verifying every block names it."""
        found = self.array.searchsorted(values, side=side)
        n = len(self)
        at, value = np.atleast_1d(found).tolist(), np.atleast_1d(values).tolist()
        if not n or not at:
            return found
        self.check_range(max(min(at) - 1, 0), min(max(at) + 1, n))
        left = side == "left"
        for v, i in zip(value, at, strict=True):
            below = i == 0 or (self.array[i - 1] < v if left else self.array[i - 1] <= v)
            above = i == n or (v <= self.array[i] if left else v < self.array[i])
            if not (below and above):
                self.check_range(0, n)
        return found

    def check_rows(self, rows) -> None:
        """Verify the blocks that rows `rows` of the first axis (an index, a slice, an array
        of indices or a mask) lie in."""
        n = len(self)
        if isinstance(rows, (int, np.integer)):
            i = int(rows) + (n if rows < 0 else 0)
            if 0 <= i < n:  # outside: numpy raises its IndexError
                self.check_range(i, i + 1)
        elif isinstance(rows, slice):
            start, stop, step = rows.indices(n)
            if step < 0:
                start, stop = stop + 1, start + 1
            if start < stop:
                self.check_range(start, stop)
        elif rows is None or rows is Ellipsis:
            self.check_range(0, n)
        else:
            at = np.asarray(rows)
            at = np.flatnonzero(at) if at.dtype == bool else at.reshape(-1).astype(np.int64)
            at = np.where(at < 0, at + n, at)
            at = at[(at >= 0) & (at < n)]
            firsts, lasts = at * self.row_bytes, (at + 1) * self.row_bytes - 1
            self._check_blocks(np.unique(np.concatenate([firsts, lasts]) // self.block_bytes))

    def check_range(self, start: int, stop: int) -> None:
        """Verify the blocks of rows start .. stop (stop > start)."""
        first = start * self.row_bytes // self.block_bytes
        last = (stop * self.row_bytes - 1) // self.block_bytes
        if first == last:  # most reads: one block, looked up without a numpy reduction
            if not self.verified[first]:
                self._verify(first)
        elif not self.verified[first:last + 1].all():
            self._check_blocks(np.arange(first, last + 1))

    def _check_blocks(self, blocks: np.ndarray) -> None:
        for block in blocks[~self.verified[blocks]].tolist():
            self._verify(block)

    def _verify(self, block: int) -> None:
        data = self.raw[block * self.block_bytes:(block + 1) * self.block_bytes]
        if self.crcs is not None and zlib.crc32(data.data) != int(self.crcs[block]):
            raise self._bad(block, "differs from its checksum in the build's records")
        if self.vocab_size is not None and data.size:
            top = int(data.view(self.dtype).max())
            if top >= self.vocab_size:
                raise self._bad(block, f"holds token id {top:,}, outside the vocabulary of "
                                       f"{self.vocab_size:,}")
        self.verified[block] = True

    def _bad(self, block: int, what: str) -> CorruptBlock:
        start = block * self.block_bytes
        stop = min(start + self.block_bytes, self.raw.size)
        return CorruptBlock(f"{self.directory / self.name}: block {block} (bytes {start:,} to "
                            f"{stop:,}) {what}, so the file changed after its build; nothing "
                            f"was trained on it: run `litebert data verify {self.directory}` "
                            "to see every damaged file, then rebuild")
