"""The packing of `--packing full-sentences / doc-sentences` as it was first written: a
Packer fed sentence by sentence, kept as the reference the block-wise packing of
litebert.data.packing (sentence tables, a step per instance) must match exactly."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

DOCS_PER_BLOCK = 256  # documents packed between two takes


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
