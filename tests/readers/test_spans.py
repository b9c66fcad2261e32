"""Reading a file by spans of bytes (what a `data build` worker reads): the spans' lines,
numbered from 1 in each, are the file's lines."""

from __future__ import annotations

from litebert.readers import CorpusStats
from litebert.readers.lines import count_lines, line_boundary, lines


def test_spans_cut_at_line_starts_read_every_line_once(tmp_path):
    path = tmp_path / "t.txt"
    text = "\ufeffalpha\nbeta\r\n\ngamma delta\n" + "x" * 50 + "\nlast"
    path.write_bytes(text.encode("utf-8"))
    size = path.stat().st_size
    whole = [t for _, t, _ in lines(path, CorpusStats(), 1000)]
    with open(path, "rb") as f:
        cuts = sorted({line_boundary(f, at) for at in range(0, size + 1, 7)} | {size})
    got, numbers, stats = [], [], CorpusStats()
    for span in zip(cuts[:-1], cuts[1:], strict=True):
        read = list(lines(path, stats, 1000, span))
        got += [t for _, t, _ in read]
        numbers.append([n for n, _, _ in read])
        assert len(read) == count_lines(path, span)
    assert got == whole and whole[0] == "alpha"  # the BOM goes at the file's start only
    assert all(n == list(range(1, len(n) + 1)) for n in numbers)
    assert stats.bytes == size
