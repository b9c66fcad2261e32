"""Raw arrays on disk, the storage of a data directory: written by appending, read by mapping.

Every array of a data directory is raw little-endian values with no header (its dtype and
shape are the layout's, litebert.data.builder), so reading one never unpickles anything.
"""

from __future__ import annotations

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
