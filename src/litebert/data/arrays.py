"""Raw arrays on disk, the storage of a data directory: written by appending, read by mapping.

Every array of a data directory is raw little-endian values with no header (its dtype and
shape are the layout's, litebert.data.builder), so reading one never unpickles anything.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np

from litebert.files import AtomicFile


class ArrayWriter:
    """Appends arrays to `path` (an AtomicFile); `close()` puts the complete file in place."""

    def __init__(self, path: Path, dtype: np.dtype | type):
        self.path, self.dtype, self.count = path, np.dtype(dtype), 0
        self.file = AtomicFile(path)

    def append(self, values) -> None:
        arr = np.ascontiguousarray(values, dtype=self.dtype)
        self.file.write(arr.tobytes())
        self.count += arr.size  # elements, whatever the shape

    def close(self) -> None:
        self.file.commit()


def memmap(path: Path, dtype) -> np.ndarray:
    """The array in `path`, memory-mapped read-only (an empty file gives an empty array)."""
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=dtype)
    # A plain ndarray view of the mapping: slicing np.memmap objects costs ~1 us each.
    return np.memmap(path, dtype=dtype, mode="r").view(np.ndarray)


class PreadArray:
    """An array file read by ranges with pread: a bounded read that leaves nothing mapped (a
    map swept end to end, or touched at scattered pages, stays resident in the process: the
    kernel maps the cached pages around each page touched)."""

    def __init__(self, path: Path, dtype):
        self.path, self.dtype = path, np.dtype(dtype)

    def __enter__(self) -> PreadArray:
        self.fd = os.open(self.path, os.O_RDONLY)
        return self

    def __exit__(self, *exc) -> None:
        os.close(self.fd)

    def span(self, start: int, stop: int) -> np.ndarray:
        """Elements start .. stop, read-only."""
        size = self.dtype.itemsize
        data = os.pread(self.fd, max(stop - start, 0) * size, start * size)
        return np.frombuffer(data, dtype=self.dtype)

    def at(self, positions: np.ndarray) -> np.ndarray:
        """The elements at scattered positions, one pread each (k,)."""
        return np.array([self.span(p, p + 1)[0] for p in positions.tolist()], self.dtype)


def read_range(path: Path, dtype, start: int, stop: int) -> np.ndarray:
    """Elements start .. stop of the array in `path`, read with one pread, writable."""
    with PreadArray(path, dtype) as array:
        return array.span(start, stop).copy()


class ReleasableMap:
    """An array file mapped read-only (`array`) whose resident pages can be handed back
    (`release()`). Reads scattered over a large file leave the cached pages around each one
    mapped in this process (the kernel's fault-around) for as long as the mapping lives, so a
    worker reading a thousand held-out instances spread over a 2 GB tokens.bin held tens of
    MB of it; releasing every few dozen reads bounds that whatever the file's size. The pages
    stay in the page cache: a later read maps them again without I/O."""

    def __init__(self, path: Path, dtype):
        self.map: mmap.mmap | None = None
        self.array = np.zeros(0, dtype=dtype)
        if path.stat().st_size:
            with open(path, "rb") as file:
                self.map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
            self.array = np.frombuffer(self.map, dtype=dtype)

    def release(self) -> None:
        if self.map is not None:
            self.map.madvise(mmap.MADV_DONTNEED)

