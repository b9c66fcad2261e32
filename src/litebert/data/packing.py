"""Packed instances: RoBERTa's FULL-SENTENCES and DOC-SENTENCES (Liu et al. 2019, §4.2).

`BuildConfig.packing` chooses how a split's text becomes instances:
- pairs: segment pairs (litebert.data.instances), the reference's and today's layout;
- full-sentences: contiguous sentences of the split's documents, in order, packed up to
  max_seq_length tokens; when a document ends, the next one follows in the same instance
  after one separator token. The split's documents only: held-out text is never packed
  with training text;
- doc-sentences: the same, but an instance never crosses a document boundary, so the
  last instance of a document is usually shorter.
- xlnet: no instances at all, but one stream of text per split that XLNet's windows are
  cut from when read (litebert.data.streams).

Layout, with the directory tokenizer's template (litebert.tokenization.PairTemplate):

    cls  doc 1 ...  sep  doc 2 ...  sep  doc 3 ...  sep        [CLS] .. [SEP] / <s> .. </s>
         doc 1 ...  sep  doc 2 ...  sep  doc 3 ...  sep  cls   XLNet's <cls> last (cls_last)

one `sep` between documents, token types all 0, every special token unmaskable.

Sentences stay whole: a sentence that does not fit in the room left starts the next
instance. A sentence longer than a whole instance's room (max_seq_length - 2 tokens) is
cut instead: its first piece fills the room left, the rest follows in pieces of a whole
instance's room, and its last piece is packed with the sentences after it. No text is
dropped: every token of a split is in exactly one instance per copy (`dupe_factor`).

short_seq_prob does not apply: RoBERTa fills every instance as far as whole sentences go
and draws no shorter target lengths (doc-sentences still ends each document with a shorter
instance). Its value is ignored here, though it stays in the cache key.

On disk an instance is a list of *spans*, contiguous token ranges of tokens.bin, one per
document it holds (a split's documents need not be contiguous in tokens.bin: held-out
documents lie between them):

    {split}.spans.bin       (P, 2) int64: token start and length of each span
    {split}.span_index.bin  (I + 1,) int64: first span of each instance, then P

Packing reads sentence offsets only (never token ids), in order, one block of documents at
a time; it draws nothing at random, so the output does not depend on the workers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from litebert.data.word_starts import WordStarts
from litebert.tokenization.base import PairTemplate

PACKINGS = ("pairs", "full-sentences", "doc-sentences", "xlnet")  # xlnet: litebert.data.streams
DOCS_PER_BLOCK = 256  # documents packed between two writes


class Packer:
    """Packs sentences, fed document by document in order, into instances of at most
    max_seq_length tokens; completed instances wait until `take()`."""

    def __init__(self, max_seq_length: int, cross_documents: bool):
        self.room = max_seq_length - 2  # text and document separators: cls ... sep
        self.cross_documents = cross_documents
        self.open: list[list[int]] = []  # [token start, length] spans of the open instance
        self.used = 0  # tokens of the open instance, separators between documents included
        self.spans: list[list[int]] = []  # spans of the completed instances
        self.counts: list[int] = []  # spans per completed instance
        self.cut_sentences = 0  # sentences longer than an instance, cut into pieces

    def add_document(self, sentence_offsets: list[int]) -> None:
        """One document: the token offsets of its k sentences, then its end (k + 1)."""
        new_document = True
        for start, end in zip(sentence_offsets[:-1], sentence_offsets[1:], strict=True):
            self._add_sentence(start, end - start, new_document)
            new_document = False
        if not self.cross_documents:
            self.close()

    def _add_sentence(self, start: int, length: int, new_document: bool) -> None:
        if length <= self.room:  # whole: here, or at the start of the next instance
            if self._separator(new_document) + length > self.room - self.used:
                self.close()
            self._append(start, length, new_document)
            return
        self.cut_sentences += 1
        while length > 0:  # longer than an instance: fill the room left, then whole rooms
            fits = self.room - self.used - self._separator(new_document)
            if fits <= 0:
                self.close()
                continue
            take = min(length, fits)
            self._append(start, take, new_document)
            new_document = False
            start, length = start + take, length - take
            if length:
                self.close()

    def _separator(self, new_document: bool) -> int:
        """1 when text of a new document joins an instance that already holds text."""
        return int(new_document and bool(self.open))

    def _append(self, start: int, length: int, new_document: bool) -> None:
        if new_document or not self.open:
            self.used += self._separator(new_document)
            self.open.append([start, length])
        else:  # the same document, so the very next tokens of tokens.bin
            self.open[-1][1] += length
        self.used += length

    def close(self) -> None:
        """Complete the open instance (if it holds anything)."""
        if self.open:
            self.spans.extend(self.open)
            self.counts.append(len(self.open))
            self.open, self.used = [], 0

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        """(P_b, 2) spans and (I_b,) spans per instance completed since the last take."""
        spans = np.asarray(self.spans, dtype=np.int64).reshape(-1, 2)
        counts = np.asarray(self.counts, dtype=np.int64)
        self.spans, self.counts = [], []
        return spans, counts


def pack_documents(docs: np.ndarray, offsets: np.ndarray, packer: Packer
                   ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """A split's documents through `packer`, a block of DOCS_PER_BLOCK documents at a time:
    yields what Packer.take returns, the last time with the open instance closed.
    docs: (D_split, 2) sentence ranges; offsets: (S + 1,) token offset of every sentence,
    then N (memory-mapped is fine: it is read block by block)."""
    for block in range(0, len(docs), DOCS_PER_BLOCK):
        for first, last in docs[block:block + DOCS_PER_BLOCK].tolist():
            packer.add_document(offsets[first:last + 1].tolist())
        yield packer.take()
    packer.close()
    yield packer.take()


def separator_positions(lengths: np.ndarray, first: int = 1) -> np.ndarray:
    """Positions of the separators between documents in an instance whose spans have
    `lengths` (k,) and whose text starts at `first` (1 after a leading cls, 0 when the cls is
    last: template.a_offset()): each span but the last is followed by one."""
    return first + np.cumsum(lengths[:-1]) + np.arange(len(lengths) - 1)


def assemble_packed(tokens: np.ndarray, word_starts: WordStarts | np.ndarray, spans: np.ndarray,
                    template: PairTemplate):
    """cls span sep span ... sep (span sep ... sep cls when the template's cls is last): ids,
    token types (all 0), word starts and maskable flags, as assemble() gives them for a
    pair. spans: (k, 2) token start and length."""
    lengths = spans[:, 1]
    first = template.a_offset()  # where the text starts: 1 after a leading cls, else 0
    seps = separator_positions(lengths, first)  # (k - 1,)
    size = int(lengths.sum()) + len(lengths) + 1
    ids = np.full(size, template.sep_id, dtype=np.int64)
    starts = np.zeros(size, dtype=bool)
    maskable = np.ones(size, dtype=bool)
    cls = size - 1 if template.cls_last else 0
    ids[cls] = template.cls_id
    maskable[[cls, first + size - 2]] = False  # the cls and the sep after the last span
    maskable[seps] = False
    begins = np.concatenate(([first], seps + 1))  # (k,) position of each span's first token
    for begin, (start, length) in zip(begins.tolist(), spans.tolist(), strict=True):
        ids[begin:begin + length] = tokens[start:start + length]
        starts[begin:begin + length] = word_starts[start:start + length]
    return ids, np.zeros(size, dtype=np.int64), starts, maskable


def packed_document_ids(lengths: np.ndarray, template: PairTemplate) -> np.ndarray:
    """(T,) int64 for the instance assemble_packed makes of spans with `lengths` (k,): the
    index (0 .. k - 1) of the document each position belongs to. A separator belongs to the
    document it closes; the cls to the first document (the last when the template puts it
    last), so every document keeps the special tokens it would have alone."""
    sizes = lengths + 1  # each span and the separator after it
    sizes[-1 if template.cls_last else 0] += 1  # the cls
    return np.repeat(np.arange(len(lengths), dtype=np.int64), sizes)


@dataclass(frozen=True)
class PackedSplit:
    """The packed instances of one split (memory-mapped by splits.open_packed)."""

    spans: np.ndarray  # (P, 2) int64: token start and length of each span
    index: np.ndarray  # (I + 1,) int64: first span of each instance, then P

    def __len__(self) -> int:
        return max(len(self.index) - 1, 0)

    def spans_of(self, index: int) -> np.ndarray:
        """(k, 2) spans of instance `index`."""
        return self.spans[self.index[index]:self.index[index + 1]]

    def lengths(self) -> np.ndarray:
        """(I,) tokens of every instance, specials and document separators included."""
        if len(self) == 0:
            return np.zeros(0, dtype=np.int64)
        text = np.add.reduceat(self.spans[:, 1], self.index[:-1])  # (I,): no instance is empty
        return text + np.diff(self.index) + 1  # cls, a sep after every span
