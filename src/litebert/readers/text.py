"""The text formats: a file of lines, read with bounded memory (see `litebert.readers.lines`).

- "bert": the format of BERT's create_pretraining_data.py: one sentence per line, a blank
  line between documents.
- "paragraphs": running text. Blank lines separate paragraphs; the lines of one paragraph
  are joined with a space (so soft-wrapped text such as reStructuredText reads right, and a
  file with one paragraph per line and no blank lines reads as one long paragraph). Each
  paragraph is split into sentences by `split_sentences`. A whole file is one document
  (cut every MAX_DOCUMENT_SENTENCES sentences).

A `data build` worker reads a "bert" file by spans of bytes (litebert.data.parts), each
widened to whole documents by `document_boundary`; a "paragraphs" file is one document and
is read whole. With a span, the file-level "no text in the file" note is left to the caller,
which alone knows whether the other spans held text.

`sniff` tells them apart for "auto" by the file's first SNIFF_LINES lines: "bert" when a
blank line separates non-blank lines and at least 75% of the non-blank lines read as exactly
one sentence that ends in . ! ? (or a closing quote/bracket after one); otherwise
"paragraphs".
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import litebert.readers.base as base  # MAX_DOCUMENT_SENTENCES read at call time
from litebert.readers.base import CorpusStats, Document, Format, cut_document
from litebert.readers.lines import Span, is_blank, line_boundary, lines, skip_line, text_lines
from litebert.readers.sentences import split_sentences

SNIFF_LINES = 200
_SENTENCE_END = re.compile(r"[.!?\u2026][\"'\u201d\u2019)\]]*$")


def _read_bert(path: Path, stats: CorpusStats, max_chars: int, span: Span | None = None,
               **_) -> Iterator[Document]:
    sentences: list[str] = []
    first = 0
    yielded = span is not None  # a span's caller notes an empty file
    for lineno, text, cut in text_lines(path, stats, max_chars, span):
        sentence = text.strip()
        if sentence:
            if not sentences:
                first = lineno
            sentences.append(sentence)
            if len(sentences) > base.MAX_DOCUMENT_SENTENCES:
                yield cut_document(sentences, f"{path}:{first}", stats)
                sentences, first = sentences[-1:], lineno
        elif not cut and sentences:  # a blank line ends the document
            yield Document(sentences, f"{path}:{first}")
            sentences, yielded = [], True
    if sentences:
        yield Document(sentences, f"{path}:{first}")
    elif not yielded:
        stats.note("empty_documents", str(path), "no text in the file")


def _paragraphs(path: Path, stats: CorpusStats, max_chars: int) -> Iterator[tuple[int, str]]:
    """(first line, text) of each blank-line-separated block, its lines joined by a space.

    A block that grows past max_chars is handed on at a line boundary, to bound memory.
    """
    block: list[str] = []
    first = size = 0
    for lineno, text, cut in text_lines(path, stats, max_chars):
        text = text.strip()
        if text:
            if not block:
                first = lineno
            block.append(text)
            size += len(text) + 1
            if size <= max_chars:
                continue
        elif cut or not block:
            continue
        yield first, " ".join(block)
        block, size = [], 0
    if block:
        yield first, " ".join(block)


def _read_paragraphs(path: Path, stats: CorpusStats, max_chars: int,
                     span: Span | None = None, **_) -> Iterator[Document]:
    sentences: list[str] = []
    first = 0
    for lineno, paragraph in _paragraphs(path, stats, max_chars):
        if not sentences:
            first = lineno
        sentences.extend(split_sentences(paragraph))
        while len(sentences) > base.MAX_DOCUMENT_SENTENCES:
            yield cut_document(sentences, f"{path}:{first}", stats)
            sentences, first = sentences[base.MAX_DOCUMENT_SENTENCES:], lineno
    if sentences:
        yield Document(sentences, f"{path}:{first}")
    elif span is None:  # a span's caller notes an empty file
        stats.note("empty_documents", str(path), "no text in the file")


def document_boundary(path: Path, offset: int, max_chars: int, until: int | None = None) -> int:
    """Where the first "bert" document that starts at or after `offset` may be read from:
    the start of the first blank line (as `_read_bert` sees one) from the first line start
    at or after `offset` on, or the end of the file (0 at 0). A reader that starts there has
    the state of one that read the file from its beginning (no document open), so spans cut
    there read exactly the documents of the whole file. With `until` (a line start), the
    search gives up there and returns it: a span that ends at `until` then holds nothing."""
    if offset <= 0:
        return 0
    limit = 4 * max_chars  # as lines() reads: a longer line is cut, never blank
    with open(path, "rb", buffering=1 << 20) as f:
        at = line_boundary(f, offset)
        while (until is None or at < until) and (raw := f.readline(limit)):
            whole = len(raw) < limit or raw.endswith(b"\n")
            if whole and is_blank(raw, max_chars):
                return at
            at += len(raw) + (0 if whole else skip_line(f))
    return at if until is None else min(at, until)


def sniff(path: Path, max_line_chars: int = 100_000) -> str:
    """"bert" or "paragraphs", by the rule in the module docstring."""
    scratch = CorpusStats()  # sniffing must not count anything twice
    read = lines(path, scratch, max_line_chars)
    head = [text.strip() for _, text, _ in itertools.islice(read, SNIFF_LINES)]
    read.close()
    while head and not head[-1]:
        head.pop()
    text = [line for line in head if line]
    separated = len(text) > 1 and any(not line for line in head[head.index(text[0]):])
    single = sum(1 for line in text
                 if _SENTENCE_END.search(line) and len(split_sentences(line)) == 1)
    return "bert" if separated and single >= 0.75 * len(text) else "paragraphs"


BERT = Format("bert", _read_bert, "text with one sentence a line (bert)", lines=True)
PARAGRAPHS = Format("paragraphs", _read_paragraphs, "running text (paragraphs)", lines=True)
