"""Raw array files: written by appending, read whole by mapping or in ranges by pread."""

import numpy as np

from litebert.data.arrays import ArrayWriter, PreadArray, ReleasableMap, memmap, read_range


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


def _rss_file_mb() -> float:
    status = open("/proc/self/status").read().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith("RssFile:")) / 1024


def test_a_released_map_hands_its_pages_back_and_still_reads(tmp_path):
    """Touching every page of a map makes it resident in this process; release() drops it
    from the process (the data stays readable, from the page cache)."""
    values = np.arange(4 << 20, dtype=np.int64)  # 32 MB
    values.tofile(tmp_path / "big.bin")
    mapped = ReleasableMap(tmp_path / "big.bin", np.int64)
    before = _rss_file_mb()
    assert int(mapped.array[::512].sum()) == int(values[::512].sum())  # a read on every page
    touched = _rss_file_mb()
    mapped.release()
    released = _rss_file_mb()
    assert touched - before > 24 and touched - released > 24, (before, touched, released)
    assert np.array_equal(mapped.array[-3:], values[-3:])
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert ReleasableMap(empty, np.int64).array.size == 0
    ReleasableMap(empty, np.int64).release()
