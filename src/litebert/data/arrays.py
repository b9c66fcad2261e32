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


def read_range(path: Path, dtype, start: int, stop: int) -> np.ndarray:
    """Elements start .. stop of the array in `path`, read with one pread: a bounded read that
    leaves nothing mapped (a map swept end to end stays resident in the process)."""
    size = np.dtype(dtype).itemsize
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.pread(fd, max(stop - start, 0) * size, start * size)
    finally:
        os.close(fd)
    return np.frombuffer(data, dtype=dtype).copy()
