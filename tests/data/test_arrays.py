"""Raw array files: written by appending, read whole by mapping or in ranges by pread."""

import numpy as np

from litebert.data.arrays import ArrayWriter, PreadArray, memmap, read_range


def test_ranges_and_scattered_elements_read_what_was_written(tmp_path):
    values = np.arange(1000, dtype=np.int64) * 7 - 300
    writer = ArrayWriter(tmp_path / "a.bin", np.int64)
    writer.append(values[:400])
    writer.append(values[400:])
    writer.close()
    assert np.array_equal(memmap(tmp_path / "a.bin", np.int64), values)
    with PreadArray(tmp_path / "a.bin", np.int64) as array:
        assert np.array_equal(array.span(123, 456), values[123:456])
        assert array.span(10, 5).size == 0  # an empty range, not a negative read
        picks = np.array([999, 0, 512, 512, 3])
        assert np.array_equal(array.at(picks), values[picks])
    copy = read_range(tmp_path / "a.bin", np.int64, 990, 1000)
    copy[0] = 1  # writable, and a copy: the file is untouched
    assert np.array_equal(read_range(tmp_path / "a.bin", np.int64, 990, 1000), values[990:])
