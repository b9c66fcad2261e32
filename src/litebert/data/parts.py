"""The parts of a corpus that `litebert data build` reads in parallel, and how their reports add
up to the report of one sequential read.

A part is a piece of one input file, fixed by the inputs alone (never by the number of
workers), so every build of the same corpus reads the same parts (a build of one shard of
several cuts them finer where a shard's share calls for it, litebert.data.shard_plan):

- an uncompressed "bert" or "jsonl" file: byte ranges of PART_BYTES. A worker moves both
  ends of its range forward to where a document may start (jsonl: the next line start;
  bert: the next blank line, `litebert.readers.text.document_boundary`), so a document that
  straddles a boundary is read whole by the part in which it starts;
- a Parquet file: runs of row groups of about PART_BYTES (uncompressed) each;
- anything else, whole: a compressed file (a .gz stream cannot be entered in the middle), a
  "paragraphs" file (the whole file is one document, cut every MAX_DOCUMENT_SENTENCES
  sentences, which only a sequential read can place), an Arrow file or saved dataset.

A worker numbers lines from 1 within its part; `StatsFolder` adds the parts' reports in part
order, shifting each "file:line" by the lines of the file's earlier parts, so the corpus
report equals that of reading the files one after the other.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from litebert.files import compression_of
from litebert.readers import READERS, CorpusStats, Document, count_document, detect_format, expand
from litebert.readers.lines import WHOLE, count_lines, line_boundary
from litebert.readers.parquet import row_group_sizes
from litebert.readers.text import document_boundary

# 8 MB: a few seconds of one worker's tokenizing. Small enough that the last parts leave
# workers idle only briefly (16 MB gave a 50 MB corpus 4 parts, 16+16+16+2: with 2 workers
# one waited a third of the time); large enough that the per-part cost (an open, a seek, a
# scan to the next blank line, 4 temporary arrays, a histogram sent back) stays milliseconds
# and 160 GB stays 20,000 parts (a shard's manifest keeps a line of report per part).
PART_BYTES = 8 << 20
MAX_LINE_CHARS = 100_000  # what read_documents cuts lines at (its default max_line_chars)
TEXT_KINDS = ("bert", "paragraphs")  # their readers note a file that holds no text


@dataclass(frozen=True)
class Part:
    index: int  # position in corpus order
    file: int  # which of the expanded inputs
    path: str
    kind: str  # the reader (format) of the file
    start: int  # byte offset, first row group, or 0 (whole file)
    stop: int  # byte offset, one-past-last row group, or -1 (whole file)
    size: int  # bytes (uncompressed text, row groups' bytes, file size): balances shards
    first: bool  # the file's first part
    last: bool  # the file's last part


Span = tuple[int, Path, str, int, int, int]  # file, path, kind, start, stop, size


def plan_parts(inputs: list[str | Path], fmt: str, text_field: str = "text",
               most_bytes: int | None = None) -> list[Part]:
    """Every part of `inputs` in corpus order (the format of each file decided as
    read_documents decides it); byte ranges and runs of row groups of PART_BYTES, or of
    `most_bytes` when that is less (a sharded build's share, litebert.data.shard_plan)."""
    part_bytes = PART_BYTES if most_bytes is None else max(min(most_bytes, PART_BYTES), 1)
    spans: list[Span] = []
    for file, path in enumerate(expand(inputs)):
        kind = detect_format(path, fmt, MAX_LINE_CHARS)
        spans += [(file, path, kind, *span) for span in _file_spans(path, kind, part_bytes)]
    return numbered(spans)


def numbered(spans: list[Span]) -> list[Part]:
    """Parts of spans in corpus order: indices, and each file's first and last marked."""
    return [Part(index=i, file=file, path=str(path), kind=kind, start=start, stop=stop,
                 size=size, first=i == 0 or spans[i - 1][0] != file,
                 last=i == len(spans) - 1 or spans[i + 1][0] != file)
            for i, (file, path, kind, start, stop, size) in enumerate(spans)]


def span_of(part: Part) -> Span:
    return part.file, Path(part.path), part.kind, part.start, part.stop, part.size


def _file_spans(path: Path, kind: str, part_bytes: int) -> list[tuple[int, int, int]]:
    """(start, stop, size) of each part of one file."""
    if path.is_dir():
        return [(*WHOLE, sum(f.stat().st_size for f in path.rglob("*") if f.is_file()))]
    size = path.stat().st_size
    if kind in ("bert", "jsonl") and not compression_of(path):
        return [(at, min(at + part_bytes, size), min(part_bytes, size - at))
                for at in range(0, max(size, 1), part_bytes)]
    if kind == "parquet":
        return _group_spans(row_group_sizes(path), part_bytes) or [(*WHOLE, size)]
    return [(*WHOLE, size)]


def _group_spans(sizes: list[int], part_bytes: int) -> list[tuple[int, int, int]]:
    """Runs of consecutive row groups of at least `part_bytes` (the last may be less)."""
    spans, first, total = [], 0, 0
    for group, size in enumerate(sizes):
        total += size
        if total >= part_bytes or group == len(sizes) - 1:
            spans.append((first, group + 1, total))
            first, total = group + 1, 0
    return spans


# ---- reading one part (in a worker) ----------------------------------------------------------

def read_part(part: Part, span: tuple[int, int], stats: CorpusStats,
              text_field: str) -> Iterator[Document]:
    """The documents of one part (`span`: its `document_span`), counted into `stats`, lines
    numbered within the part."""
    for doc in READERS[part.kind].read(Path(part.path), stats, MAX_LINE_CHARS,
                                       text_field=text_field, label_field=None, span=span):
        count_document(stats, doc)
        yield doc


def by_bytes(part: Part) -> bool:
    """A byte range of a text or JSON-lines file (lines numbered within it)."""
    return part.stop >= 0 and part.kind in ("bert", "jsonl")


def document_span(part: Part) -> tuple[int, int]:
    """What a part reads: a byte range moved forward to document starts (see the module
    docstring); row groups and whole files as planned."""
    if not by_bytes(part):
        return part.start, part.stop
    if part.kind == "jsonl":
        with open(part.path, "rb") as f:
            return line_boundary(f, part.start), line_boundary(f, part.stop)
    path = Path(part.path)
    with open(path, "rb") as f:
        stop = line_boundary(f, part.stop)
    # A part inside one long document owns nothing: looking for its start stops at its end,
    # so a file of huge documents is scanned once in all, not once per part.
    start = document_boundary(path, part.start, MAX_LINE_CHARS, until=stop)
    if start == stop:
        return stop, stop
    return start, document_boundary(path, part.stop, MAX_LINE_CHARS)


def part_lines(part: Part, span: tuple[int, int]) -> int:
    """Lines of the file read by this part: what shifts the line numbers of the next one
    (0 for a whole file, and for row groups: they are numbered as in the whole file)."""
    return count_lines(Path(part.path), span) if by_bytes(part) else 0


# ---- the parts' reports, added up -------------------------------------------------------------

def stats_record(stats: CorpusStats) -> dict[str, Any]:
    """A part's report as plain data (for a shard's manifest), lossless for `StatsFolder`."""
    return {"read": stats.read, "sentences": stats.sentences, "characters": stats.characters,
            "bytes": stats.bytes, "counts": dict(stats.counts),
            "examples": {k: list(v) for k, v in stats.examples.items()}}


class StatsFolder:
    """The corpus report of parts added in part order, as one sequential read makes it."""

    def __init__(self) -> None:
        self.stats = CorpusStats()
        self._lines: dict[int, int] = {}  # file -> lines of its parts added so far
        self._documents: dict[int, int] = {}  # file -> documents so far

    def add(self, part: Part, record: dict[str, Any], lines: int) -> None:
        s = self.stats
        if part.first:
            s.files += 1
            s.formats[part.kind] = s.formats.get(part.kind, 0) + 1
        shift = self._lines.get(part.file, 0)
        self._lines[part.file] = shift + lines
        self._documents[part.file] = self._documents.get(part.file, 0) + record["read"]
        s.read += record["read"]
        s.sentences += record["sentences"]
        s.characters += record["characters"]
        s.bytes += record["bytes"]
        for kind, count in record["counts"].items():
            s.counts[kind] = s.counts.get(kind, 0) + count
            room = s.max_examples - len(s.examples.get(kind, []))
            kept = [_shifted(e, part.path, shift) for e in record["examples"].get(kind, [])]
            if room > 0 and kept:
                s.examples.setdefault(kind, []).extend(kept[:room])
                s.notes.extend(kept[:room])
        if part.last and part.kind in TEXT_KINDS and not self._documents[part.file]:
            s.note("empty_documents", part.path, "no text in the file")


def _shifted(example: str, path: str, lines: int) -> str:
    """"path:12: why" with the line number moved on by `lines` (other examples as they are)."""
    if not lines:
        return example
    prefix = f"{path}:"
    match = re.match(re.escape(prefix) + r"(\d+)", example)
    if match is None:
        return example
    return f"{prefix}{int(match.group(1)) + lines}{example[match.end():]}"


def part_record(part: Part) -> dict[str, Any]:
    return asdict(part)
