"""Word starts of a data directory's tokens, derived rather than stored.

Whole-word masking, n-gram spans and XLNet's span targets need to know which tokens begin a
word. Every tokenizer backend decides that from the id alone (`Tokenizer.word_start_ids`),
except that the first token of a text is always a word start; pass 1 encodes one sentence
per text. So the flag of token t is `word_start_ids[tokens[t]]`, or'ed with "t is the first
token of a sentence" (sentences.bin). A word_starts.bin that directories of earlier releases
hold has exactly these values; nothing reads it.
"""

from __future__ import annotations

import numpy as np


class WordStarts:
    """`word_starts[a:b]`: the (b - a,) bool flags of tokens a .. b, computed on demand from
    the memory-mapped token ids and sentence offsets (a slice costs a gather of its ids and
    two binary searches; nothing the size of the corpus is held)."""

    def __init__(self, tokens: np.ndarray, offsets: np.ndarray, word_start_ids: np.ndarray):
        self.tokens = tokens  # (N,) token ids
        self.offsets = offsets  # (S + 1,) first token of each sentence, then N
        self.table = word_start_ids  # (V,) bool

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, key: slice) -> np.ndarray:
        if not isinstance(key, slice):
            raise TypeError(f"WordStarts takes a slice of tokens, not {type(key).__name__}")
        start, stop, step = key.indices(len(self.tokens))
        if step != 1:
            raise ValueError("WordStarts takes contiguous slices (step 1)")
        stop = max(start, stop)
        flags = self.table[self.tokens[start:stop]]  # (n,) a gather: a new array
        first, last = self.offsets.searchsorted((start, stop))  # sentences starting inside
        flags[self.offsets[first:last] - start] = True
        return flags
