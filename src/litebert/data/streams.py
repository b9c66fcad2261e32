"""XLNet's data layout (`--packing streams`): each split as one contiguous stream of tokens.

XLNet's official data (zihangdai/xlnet, data_utils.py) is not a set of instances: the
documents are concatenated into one token stream, each closed by an end-of-document token,
with the sentence boundaries kept beside it, and sequences are cut out of that stream where
it is read, so that a sequence continues the text of the one before it and the memories of
a run carry real context. Here each split of a data directory is written as such a stream:

    {split}.stream.bin        (N_s,) uint16 (uint32 over 65,536 ids): the split's documents
                              in corpus order, each followed by the end-of-document token
    {split}.stream_flags.bin  (N_s,) uint8: bit 0 (WORD_START) where a token begins a word,
                              bit 1 (SENTENCE_START) where it begins a sentence

The end-of-document token is the tokenizer's `<eod>` (`eod_token_id`, XLNet's vocabulary);
a vocabulary without one (ALBERT's, BERT's, RoBERTa's) closes documents with its separator
(`sep_token_id`) instead. As in the official code (a blank line becomes a sentence holding
`<eod>` alone), that token is a sentence and a word of its own.

Windows: the official loop starts a sequence every `reuse_len` tokens (R) as long as a
whole sequence of `max_seq_length` (T) fits, so a stream of N tokens has
`count_windows(N, T, R)` = (N - T) // R + 1 windows (0 when N < T). Window w reads from
w * R: its first R tokens are the part whose states the next window reuses as memory, the
rest is room for `A <sep> B <sep> <cls>` (litebert.objectives.plm_data draws A and B).

`Stream` reads a stream forwards or, for XLNet's bidirectional data (`bi_data`), back to
front: the official code reverses every batch row of its data for the second half of the
batch. A reversed view keeps the word-start flags of the text read forwards (so spans of
whole words are found on the text flipped back, as the official `_sample_mask(reverse=True)`
does) and moves the sentence starts to the token after each boundary in its own order.

Writing reads tokens.bin and the sentence offsets one block of documents at a time (memory
stays flat); it draws nothing at random, so the files do not depend on the workers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from litebert.data.arrays import ArrayWriter, memmap
from litebert.data.blocks import DirectoryChecks
from litebert.data.packing import document_sentences

WORD_START, SENTENCE_START = 1, 2  # bits of {split}.stream_flags.bin
SCAN = 512  # tokens read per step when looking for a sentence boundary (doubled each step)
MEASURE_BLOCK = 1 << 20  # tokens read per step by measure_stream (memory stays flat)


def count_windows(length: int, seq_len: int, reuse_len: int) -> int:
    """Windows of the official loop over a stream of `length` tokens: one every reuse_len
    tokens while a whole sequence of seq_len fits."""
    return (length - seq_len) // reuse_len + 1 if length >= seq_len else 0


def write_streams(out: Path, split: str, blocks: Iterable[tuple[np.ndarray, np.ndarray]],
                  token_dtype: np.dtype, seq_len: int, reuse_len: int) -> dict[str, int]:
    """The stream of one split from its blocks of documents in order, each (ids, flags) as
    stream_block makes them. Returns the split's counts: "tokens" (N_s) and "instances"
    (its windows, each read once per epoch)."""
    ids = ArrayWriter(out / f"{split}.stream.bin", token_dtype)
    flags = ArrayWriter(out / f"{split}.stream_flags.bin", np.uint8)
    for block_ids, block_flags in blocks:
        ids.append(block_ids)
        flags.append(block_flags)
    ids.close()
    flags.close()
    return {"tokens": ids.count, "instances": count_windows(ids.count, seq_len, reuse_len)}


def stream_block(out: str, docs: np.ndarray, token_dtype: str, eod_id: int,
                 word_start_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A worker's task: (ids, flags) of a block of documents (docs: (d, 2) sentence
    ranges) of the data directory `out`, each document followed by `eod_id`; tokens.bin and
    sentences.bin are mapped, and only the block's bytes are read. Word starts come from
    the tokenizer's (V,) word_start_ids and the sentence starts (litebert.data.word_starts)."""
    directory = Path(out)
    tokens = memmap(directory / "tokens.bin", token_dtype)
    offsets = memmap(directory / "sentences.bin", np.int64)
    lo, hi = offsets[docs[:, 0]], offsets[docs[:, 1]]  # (d,) token range of each document
    sizes = hi - lo + 1  # (d,) with its closing token
    begins = np.cumsum(sizes) - sizes  # (d,) where each document starts in the block
    closers = begins + sizes - 1  # (d,)
    source = np.arange(int(sizes.sum())) + np.repeat(lo - begins, sizes)  # (n,) token index
    source[closers] = 0  # any valid index: overwritten below
    ids = tokens[source]
    ids[closers] = eod_id
    flags = word_start_ids[ids] * np.uint8(WORD_START)
    flags[closers] = WORD_START | SENTENCE_START
    sentences, doc_begins = document_sentences(docs)  # (k,) every sentence of the block
    doc = np.repeat(np.arange(len(docs)), np.diff(np.append(doc_begins, len(sentences))))
    flags[offsets[sentences] - lo[doc] + begins[doc]] |= WORD_START | SENTENCE_START
    return ids, flags


def end_of_document_id(tokenizer) -> int:
    """The token that closes each document of a stream: `<eod>`, or the separator of a
    vocabulary that has none."""
    eod = getattr(tokenizer, "eod_token_id", None)
    eod = tokenizer.sep_token_id if eod is None else eod
    if eod is None:
        raise ValueError(f"{tokenizer!r} has neither <eod> nor a separator token to close "
                         "the documents of a stream; use a tokenizer with one")
    return int(eod)


def stream_files(split: str) -> tuple[str, str]:
    return f"{split}.stream.bin", f"{split}.stream_flags.bin"


def open_stream(directory: Path, split: str, token_dtype: str,
                checks: DirectoryChecks | None = None) -> Stream:
    """The stream of `split` in a data directory, memory-mapped, read forwards; read
    through `checks` (litebert.data.blocks) when given."""
    ids_name, flags_name = stream_files(split)
    if checks is not None:
        return Stream(checks.open(ids_name, token_dtype, ids=True),
                      checks.open(flags_name, np.uint8))
    return Stream(memmap(directory / ids_name, token_dtype),
                  memmap(directory / flags_name, np.uint8))


def measure_stream(stream: Stream, eod_id: int, seq_len: int, reuse_len: int
                   ) -> dict[str, int | float]:
    """What `litebert data stats` reports of a split's stream, from its flags alone (read
    block by block, so a corpus of any size fits): tokens, documents (the closing `eod_id`
    tokens, each a sentence of its own), windows of the official loop, and the documents'
    shape without their closers: sentences per document and pieces per word, the two
    things XLNet's A/B split and whole-word spans are drawn from."""
    closers = sentences = words = 0
    for lo in range(0, len(stream), MEASURE_BLOCK):
        ids = np.asarray(stream.ids[lo:lo + MEASURE_BLOCK])  # (<= block,) as stored
        flags = np.asarray(stream.flags[lo:lo + MEASURE_BLOCK])  # (<= block,) uint8
        sentence = (flags & SENTENCE_START) > 0
        closers += int(np.count_nonzero(sentence & (ids == eod_id)))
        sentences += int(np.count_nonzero(sentence))
        words += int(np.count_nonzero(flags & WORD_START))
    tokens = len(stream)
    return {"tokens": tokens, "documents": closers,
            "windows": count_windows(tokens, seq_len, reuse_len),
            "seq_len": seq_len, "reuse_len": reuse_len,
            "sentences_per_document": round((sentences - closers) / max(closers, 1), 3),
            "pieces_per_word": round((tokens - closers) / max(words - closers, 1), 3)}


@dataclass(frozen=True)
class Stream:
    """A split's stream read forwards or backwards (`reverse`); positions are those of the
    reading order, 0 .. len - 1. Slices are [start, stop) in that order."""

    ids: np.ndarray  # (N,) the stream as written
    flags: np.ndarray  # (N,) uint8 WORD_START | SENTENCE_START, as written
    reverse: bool = False

    def __len__(self) -> int:
        return len(self.ids)

    def reversed(self) -> Stream:
        return Stream(self.ids, self.flags, not self.reverse)

    def _stored(self, values: np.ndarray, start: int, stop: int) -> np.ndarray:
        """values[start:stop] in this view's order (values as stored)."""
        if not self.reverse:
            return values[start:stop]
        n = len(self.ids)
        return values[n - stop:n - start][::-1]

    def tokens(self, start: int, stop: int) -> np.ndarray:
        """(stop - start,) int64 ids."""
        return self._stored(self.ids, start, stop).astype(np.int64)

    def word_starts(self, start: int, stop: int) -> np.ndarray:
        """(stop - start,) bool: the token begins a word of the text read forwards."""
        return (self._stored(self.flags, start, stop) & WORD_START) > 0

    def sentence_starts(self, start: int, stop: int) -> np.ndarray:
        """(stop - start,) bool: a sentence begins at the position in this view's order (a
        boundary between it and the one before; position 0 always)."""
        if not self.reverse:  # stored position 0 is a sentence start (written so)
            return (self.flags[start:stop] & SENTENCE_START) > 0
        # Reversed k and k - 1 are stored n - 1 - k and n - k: the boundary between them is
        # the sentence start stored at n - k (and reversed 0 begins the view).
        n = len(self.ids)
        lo, hi = n - stop + 1, n - start + 1
        stored = (self.flags[lo:min(hi, n)] & SENTENCE_START) > 0
        if hi > n:
            stored = np.append(stored, True)
        return stored[::-1]

    def next_sentence_start(self, pos: int) -> int:
        """The first sentence start at or after `pos`, or len(self) when there is none."""
        n, size = len(self), SCAN
        while pos < n:
            found = np.flatnonzero(self.sentence_starts(pos, min(pos + size, n)))
            if len(found):
                return pos + int(found[0])
            pos, size = pos + size, 2 * size
        return n

    def sentence_start_at_or_before(self, pos: int) -> int:
        """The last sentence start at or before `pos` (0 at the latest)."""
        size = SCAN
        stop = pos + 1
        while stop > 0:
            lo = max(stop - size, 0)
            found = np.flatnonzero(self.sentence_starts(lo, stop))
            if len(found):
                return lo + int(found[-1])
            stop, size = lo, 2 * size
        return 0
