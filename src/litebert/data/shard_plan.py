"""How `litebert data build --shard I/N` shares a corpus: N contiguous runs of parts, balanced
by bytes, none left empty while the corpus has N pieces to share.

Every shard's process makes the same plan from the inputs and N alone (no shard reads
another's), in four steps:

1. parts (litebert.data.parts) of at most a shard's share of the bytes, T / N: a corpus
   smaller than N parts of PART_BYTES is cut finer, a file under PART_BYTES too;
2. each byte range moved to document starts, as a worker would move it
   (parts.document_span), so that a part's size is the bytes it reads; a range that holds
   no document start is dropped (the part before it reads its bytes);
3. while there are fewer parts than shards, the largest part that holds more than one
   document (or Parquet row group) is cut at a document start near its middle;
4. shard i takes the parts whose middle byte lies in its share [i T/N, (i + 1) T/N), each
   shard's first part moved where needed so that every shard has one while there are N
   parts. A shard's bytes then differ from T/N by at most one part.

A shard gets nothing only when the corpus has fewer than N pieces to share: documents, or
files read whole (compressed, "paragraphs", Arrow); the build warns then. Parts tile the
documents in corpus order however they are cut, so the merged shards (litebert.data.merge)
hold exactly what a build of the whole corpus holds.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from litebert.data.parts import (
    MAX_LINE_CHARS,
    Part,
    Span,
    by_bytes,
    document_span,
    numbered,
    plan_parts,
    span_of,
)
from litebert.readers.lines import line_boundary
from litebert.readers.parquet import row_group_sizes
from litebert.readers.text import document_boundary


def plan_shards(inputs: list[str | Path], fmt: str, text_field: str,
                shards: int) -> list[list[Part]]:
    """The parts of each of `shards` shards, in corpus order (see the module docstring)."""
    planned = plan_parts(inputs, fmt, text_field)
    share = -(-sum(p.size for p in planned) // shards)  # bytes, rounded up
    if any(p.size > share for p in planned):
        planned = plan_parts(inputs, fmt, text_field, most_bytes=share)
    return assign(split_until(aligned(planned), shards), shards)


def aligned(planned: list[Part]) -> list[Part]:
    """Byte ranges moved to document starts, those left empty dropped (a file keeps one
    part, even an empty file: its first and last part carry its report)."""
    spans: list[Span] = []
    for part in planned:
        if not by_bytes(part):
            spans.append(span_of(part))
            continue
        start, stop = document_span(part)
        if start < stop or (part.last and (not spans or spans[-1][0] != part.file)):
            spans.append((part.file, Path(part.path), part.kind, start, stop, stop - start))
    return numbered(spans)


def split_until(pieces: list[Part], shards: int) -> list[Part]:
    """Parts cut in two, the largest first, until there are `shards` of them or none holds
    more than one document (or row group)."""
    whole: set[int] = set()  # indices (of the current list) of parts that cannot be cut
    while len(pieces) < shards:
        order = sorted((i for i in range(len(pieces)) if i not in whole),
                       key=lambda i: -pieces[i].size)
        cut = next(((i, at) for i in order if (at := _cut_point(pieces[i])) is not None), None)
        if cut is None:
            break
        i, at = cut
        whole = {j + (j > i) for j in whole}
        pieces = numbered([span_of(p) for p in pieces[:i]] + _halves(pieces[i], at)
                          + [span_of(p) for p in pieces[i + 1:]])
    return pieces


def _cut_point(part: Part) -> int | None:
    """Where `part` can be cut in two (a document start or row group strictly inside it,
    near its middle), or None."""
    if part.kind == "parquet" and part.stop >= 0:
        return (part.start + part.stop) // 2 if part.stop - part.start > 1 else None
    if not by_bytes(part):
        return None
    for at in (part.start + part.size // 2, part.start + 1):  # the middle, else the 2nd doc
        found = _document_start(part, at)
        # Past blank lines: each half must hold some text, a document to read.
        while part.start < found < part.stop and not _has_text(part, part.start, found):
            found = _document_start(part, found + 1)
        if part.start < found < part.stop and _has_text(part, found, part.stop):
            return found
    return None


def _has_text(part: Part, start: int, stop: int) -> bool:
    """Whether bytes start .. stop of the part's file hold more than white space (read up
    to the first that does)."""
    with open(part.path, "rb") as f:
        f.seek(start)
        left = stop - start
        while left > 0 and (block := f.read(min(left, 1 << 16))):
            if block.strip():
                return True
            left -= len(block)
    return False


def _document_start(part: Part, at: int) -> int:
    """The first place at or after `at` where a document of `part` may start (its stop at
    the latest): as parts.document_span moves a range's ends."""
    if part.kind == "jsonl":
        with open(part.path, "rb") as f:
            return min(line_boundary(f, at), part.stop)
    return document_boundary(Path(part.path), at, MAX_LINE_CHARS, until=part.stop)


def _halves(part: Part, at: int) -> list[Span]:
    path = Path(part.path)
    if part.kind == "parquet":
        sizes = row_group_sizes(path)
        bounds = ((part.start, at), (at, part.stop))
        return [(part.file, path, part.kind, a, b, sum(sizes[a:b])) for a, b in bounds]
    return [(part.file, path, part.kind, part.start, at, at - part.start),
            (part.file, path, part.kind, at, part.stop, part.stop - at)]


def assign(pieces: list[Part], shards: int) -> list[list[Part]]:
    """Contiguous runs of `pieces` for each shard: by the middle byte of each piece, with
    every shard given at least one piece while there are as many pieces as shards."""
    sizes = np.array([p.size for p in pieces], dtype=np.int64)  # (M,)
    total, count = int(sizes.sum()), len(pieces)
    if total:  # the share each middle byte falls in: floor(N (2 before + size) / (2 T))
        middles = 2 * (np.cumsum(sizes) - sizes) + sizes
        owner = np.minimum(middles * shards // (2 * total), shards - 1)
    else:
        owner = np.arange(count) * shards // max(count, 1)
    firsts = np.searchsorted(owner, np.arange(shards), side="left")  # (N,) first piece
    if count >= shards:  # move first pieces so that each shard keeps one
        for k in range(1, shards):
            firsts[k] = min(max(firsts[k], firsts[k - 1] + 1), count - shards + k)
    bounds = [*firsts.tolist(), count]
    return [pieces[bounds[k]:bounds[k + 1]] for k in range(shards)]


def shard_option(text: str) -> tuple[int, int]:
    """The value of `--shard I/N`: shard I (counted from 0) of N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: write the shard as I/N, e.g. 0/8") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"{text!r}: I must be in 0..N-1 (shards count from 0)")
    return i, n
