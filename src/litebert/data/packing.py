"""Packed instances: RoBERTa's FULL-SENTENCES and DOC-SENTENCES (Liu et al. 2019, §4.2).

`BuildConfig.packing` chooses how a split's text becomes instances:
- pairs: segment pairs (litebert.data.instances), the reference's and today's layout;
- full-sentences: contiguous sentences of the split's documents, in order, packed up to
  max_seq_length tokens; when a document ends, the next one follows in the same instance
  after one separator token. The split's documents only: held-out text is never packed
  with training text;
- doc-sentences: the same, but an instance never crosses a document boundary, so the
  last instance of a document is usually shorter.
- streams: no instances at all, but one stream of text per split that XLNet's windows are
  cut from when read (litebert.data.streams). The previous release called it "xlnet", a
  name still accepted (PACKING_ALIASES).

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

Packing reads sentence offsets only (never token ids), a block of documents at a time, and
draws nothing at random, so the output does not depend on the workers. It is a greedy fill,
so it depends on sentence lengths alone: `sentence_table` (vectorised) finds for every
sentence of a block where an instance begun there must stop, and `pack_table` follows
those stops one instance at a time. Doc-sentences starts each block afresh; full-sentences
carries the tokens of the instance still open from one block into the next
(splits.write_packed), which gives exactly the packing of a fill sentence by sentence
across the whole split.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from litebert.data.word_starts import WordStarts
from litebert.tokenization.base import PairTemplate

PACKINGS = ("pairs", "full-sentences", "doc-sentences", "streams")  # streams: data.streams
# Earlier names of a packing, read as the current one wherever a config or manifest is read
# (BuildConfig, integrity.load_manifest); cache keys hash the earlier name (cache.KEY_NAMES),
# so a directory built under it is still a cache hit.
PACKING_ALIASES = {"xlnet": "streams"}


def packing_name(name: str) -> str:
    """The current name of packing `name` (an earlier name, or itself)."""
    return PACKING_ALIASES.get(name, name)


@dataclass(frozen=True)
class SentenceTable:
    """The sentences of a block of documents as packing sees them: positions are tokens of
    the block's text (its documents one after the other, no separators), 0 .. n_tokens.

    Packing is greedy and reads lengths only, so it is all in `fit`: fit[i] is the first
    sentence that no longer fits an instance begun at sentence i. `costs` counts a
    separator before every document: 1 (full-sentences), or more than an instance holds
    (doc-sentences: no instance crosses a document, so each block starts afresh)."""

    lengths: np.ndarray  # (n,) tokens of each sentence
    doc_first: np.ndarray  # (n,) bool: the sentence begins a document
    starts: np.ndarray  # (n + 1,) position of each sentence, then the block's end
    costs: np.ndarray  # (n + 1,) starts plus the separators before each sentence
    fit: np.ndarray  # (n,) first sentence that does not fit an instance begun at i (n: none)
    doc_tokens: np.ndarray  # (d,) token start of each document in tokens.bin
    room: int  # tokens of text and separators an instance holds (max_seq_length - 2)
    separator: int  # the cost of a separator (see above)


def document_sentences(docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n,) sentence index of every sentence of `docs` ((d, 2) sentence ranges), in order,
    and (d,) where each document's first sentence is in that list."""
    counts = docs[:, 1] - docs[:, 0]
    begins = np.cumsum(counts) - counts  # (d,)
    return np.arange(int(counts.sum())) + np.repeat(docs[:, 0] - begins, counts), begins


def sentence_table(docs: np.ndarray, offsets: np.ndarray, max_seq_length: int,
                   cross_documents: bool) -> SentenceTable:
    """The table of a block of documents: docs (d, 2) sentence ranges, offsets (S + 1,) the
    token offset of every sentence, then N (memory-mapped is fine)."""
    room = max_seq_length - 2  # text and document separators: cls ... sep
    separator = 1 if cross_documents else room + 1
    ids, begins = document_sentences(docs)
    lengths = offsets[ids + 1] - offsets[ids]  # (n,)
    doc_first = np.zeros(len(ids), dtype=bool)
    doc_first[begins] = True
    starts = np.concatenate(([0], np.cumsum(lengths)))
    costs = starts + separator * np.concatenate(([0], np.cumsum(doc_first)))
    # Begun at i, the instance holds i's text (its separator is not needed) and `room` more.
    fit = np.searchsorted(costs, costs[:-1] + separator * doc_first + room, side="right") - 1
    return SentenceTable(lengths, doc_first, starts, costs, fit,
                         np.asarray(offsets[docs[:, 0]], dtype=np.int64), room, separator)


def pack_table(table: SentenceTable, used: int) -> tuple[list[int], int]:
    """Greedy packing of a block, entered with an instance of `used` tokens open (0: none):
    the positions where instances begin (0 when entered with none), and the tokens of the
    instance still open at its end. Sentences stay whole; one longer than `room` fills the
    room left, then whole rooms, and its last piece is packed with the sentences after it.
    A step per instance: plain Python over memoryviews (cheap scalar reads)."""
    lengths, firsts, starts, costs, fit = (
        np.ascontiguousarray(a).data for a in (table.lengths, table.doc_first, table.starts,
                                               table.costs, table.fit))
    room, sep, n = table.room, table.separator, len(table.lengths)
    begins = [0] if used == 0 else []
    m = 0  # the next sentence
    while m < n:
        own_sep = sep * firsts[m] if used == 0 else 0  # a fresh instance needs none
        j = fit[m] if used == 0 else bisect.bisect_right(costs, costs[m] + room - used) - 1
        if j >= n:  # the rest of the block fits: the instance stays open
            return begins, used + costs[n] - costs[m] - own_sep
        before = used + costs[j] - costs[m] - (own_sep if j > m else 0)  # tokens open
        if lengths[j] <= room:  # j starts the next instance
            begins.append(starts[j])
            m, used = j, 0
            continue
        pos, left = starts[j], lengths[j]  # a sentence longer than an instance
        fits = room - before - (sep * firsts[j] if before else 0)
        if fits > 0:
            pos, left = pos + fits, left - fits
        begins.append(pos)
        while left > room:
            pos, left = pos + room, left - room
            begins.append(pos)
        m, used = j + 1, left
    return begins, used


def table_spans(table: SentenceTable, begins: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(P_b, 2) spans (token start in tokens.bin, length) of a block packed at `begins`, and
    (k,) the span each of those instances begins with: an instance's text is one stretch of
    the block, cut into a span per document."""
    doc_begins = table.starts[:-1][table.doc_first]  # (d,) where each document starts
    points = np.union1d(doc_begins, np.asarray(begins, dtype=np.int64))  # (P_b,) span starts
    lengths = np.diff(np.append(points, table.starts[-1]))
    doc = np.searchsorted(doc_begins, points, side="right") - 1
    spans = np.stack([table.doc_tokens[doc] + points - doc_begins[doc], lengths], axis=1)
    return spans, np.searchsorted(points, begins).astype(np.int64)


def pack_block(docs: np.ndarray, offsets: np.ndarray, max_seq_length: int
               ) -> tuple[np.ndarray, np.ndarray, int]:
    """Doc-sentences packing of a block of documents, which never crosses a document:
    spans, the first span of each instance (both as table_spans), and the sentences cut."""
    table = sentence_table(docs, offsets, max_seq_length, cross_documents=False)
    begins, _ = pack_table(table, 0)
    return (*table_spans(table, begins), long_sentences(table))


def long_sentences(table: SentenceTable) -> int:
    """Sentences longer than an instance holds (cut into pieces)."""
    return int(np.count_nonzero(table.lengths > table.room))


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
