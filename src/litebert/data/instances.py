"""Documents -> segment pairs, with the semantics of ALBERT's create_pretraining_data.py.

Works on sentence *lengths and offsets* only: an instance is two token spans into the shared
token array, so building instances never touches token ids and costs O(sentences).

Per document (sentences s_0 .. s_n-1), reproducing the reference:
- target length = max_seq_length - 3, but with p = short_seq_prob a random int in
  [2, max_seq_length - 3] (fine-tuning sees short inputs too);
- sentences are packed into a chunk until it reaches the target or the document ends;
- A = the first `a_end` sentences of the chunk (a_end random in [1, len-1]), B = the rest;
- sop: with p 0.5 A and B are swapped, label 1 (0 = in order);
- nsp: with p 0.5 B comes from a random other document (label 1) and the unused sentences
  of the chunk go back to the document;
- a chunk of ONE sentence has no B of its own: as in the reference, its B is taken from a
  random other document and labelled 1 for both sop and nsp;
- none: A = the whole chunk, no B, label -1;
- the pair is cut to max_seq_length - 3 tokens by removing tokens from the longer side, each
  from the front or the back with p 0.5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OBJECTIVES = ("sop", "nsp", "none")
# One instance: token spans of A and B in the token array, and the label.
FIELDS = ("a_start", "a_len", "b_start", "b_len", "label")


@dataclass(frozen=True)
class InstanceConfig:
    max_seq_length: int = 512
    objective: str = "sop"
    short_seq_prob: float = 0.1

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective={self.objective!r}: choose from {OBJECTIVES}")
        if self.max_seq_length < 8:
            raise ValueError(f"max_seq_length={self.max_seq_length}: must be at least 8")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise ValueError(f"short_seq_prob={self.short_seq_prob}: must be in [0, 1]")

    @property
    def max_tokens(self) -> int:
        """Tokens of A + B: room for [CLS] A [SEP] B [SEP]."""
        return self.max_seq_length - 3


def document_instances(doc: int, sent_offsets: np.ndarray, docs: np.ndarray,
                       cfg: InstanceConfig, rng: np.random.Generator) -> np.ndarray:
    """Instances of document `doc` as an (k, 5) int64 array of FIELDS.

    sent_offsets: (S + 1,) token offset of every sentence, then the end.
    docs: (D, 2) first and one-past-last sentence of each document of this split; NSP draws
    its random B documents from these.
    """
    first, last = int(docs[doc, 0]), int(docs[doc, 1])
    lengths = np.diff(sent_offsets[first:last + 1]).tolist()
    target = cfg.max_tokens
    if rng.random() < cfg.short_seq_prob:
        target = int(rng.integers(2, cfg.max_tokens + 1))
    out: list[tuple[int, int, int, int, int]] = []
    chunk_start, chunk_len, i = 0, 0, 0
    while i < len(lengths):
        chunk_len += lengths[i]
        if i == len(lengths) - 1 or chunk_len >= target:
            count = i - chunk_start + 1
            pair, put_back = _pair(first + chunk_start, count, doc, target, sent_offsets,
                                   docs, cfg, rng)
            out.append(_truncate(*pair, cfg.max_tokens, rng))
            i -= put_back
            chunk_start, chunk_len = i + 1, 0
        i += 1
    return np.asarray(out, dtype=np.int64).reshape(-1, len(FIELDS))


def _pair(chunk: int, count: int, doc: int, target: int, offsets: np.ndarray,
          docs: np.ndarray, cfg: InstanceConfig, rng: np.random.Generator
          ) -> tuple[tuple[int, int, int, int, int], int]:
    """((a_start, a_len, b_start, b_len, label), sentences to put back) for one chunk."""
    start, end = int(offsets[chunk]), int(offsets[chunk + count])
    if cfg.objective == "none":
        return (start, end - start, 0, 0, -1), 0
    a_end = int(rng.integers(1, count)) if count >= 2 else 1
    split = int(offsets[chunk + a_end])
    if count == 1 or (cfg.objective == "nsp" and rng.random() < 0.5):
        b_start, b_len = _random_b(doc, target - (split - start), offsets, docs, rng)
        return (start, split - start, b_start, b_len, 1), count - a_end
    if cfg.objective == "sop" and rng.random() < 0.5:
        return (split, end - split, start, split - start, 1), 0  # swapped
    return (start, split - start, split, end - split, 0), 0


def _random_b(doc: int, want: int, offsets: np.ndarray, docs: np.ndarray,
              rng: np.random.Generator) -> tuple[int, int]:
    """Sentences of another document from a random start until `want` tokens are reached."""
    num_docs = len(docs)
    other = doc
    for _ in range(10):  # the reference tries 10 times, then accepts its own document
        other = int(rng.integers(0, num_docs))
        if other != doc:
            break
    first, last = int(docs[other, 0]), int(docs[other, 1])
    begin = int(rng.integers(first, last))
    # Smallest number of whole sentences from `begin` reaching `want` tokens (or the end).
    ends = offsets[begin + 1:last + 1]
    stop = int(np.searchsorted(ends - offsets[begin], max(want, 1)))
    end = int(ends[min(stop, len(ends) - 1)])
    return int(offsets[begin]), end - int(offsets[begin])


def _truncate(a_start: int, a_len: int, b_start: int, b_len: int, label: int, max_tokens: int,
              rng: np.random.Generator) -> tuple[int, int, int, int, int]:
    """Remove tokens from the longer side (B on ties), each from its front or back."""
    excess = a_len + b_len - max_tokens
    if excess > 0:
        # Cut the longer side down to the shorter, then alternate (the reference's loop).
        gap = abs(a_len - b_len)
        first_cut = min(excess, gap)
        rest = excess - first_cut
        cut_a = (first_cut if a_len > b_len else 0) + rest // 2
        cut_b = excess - cut_a
        a_start, a_len = _cut(a_start, a_len, cut_a, rng)
        b_start, b_len = _cut(b_start, b_len, cut_b, rng)
    return a_start, a_len, b_start, b_len, label


def _cut(start: int, length: int, remove: int, rng: np.random.Generator) -> tuple[int, int]:
    if remove <= 0:
        return start, length
    from_front = int(rng.binomial(remove, 0.5))
    return start + from_front, length - remove
