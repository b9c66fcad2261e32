"""Documents -> segment pairs, with the semantics of ALBERT's create_pretraining_data.py.

Works on sentence *lengths and offsets* only: an instance is two token spans into the shared
token array, so building instances never touches token ids and costs O(sentences).

Per document (sentences s_0 .. s_n-1), reproducing the reference:
- target length = max_tokens = max_seq_length - the template's special tokens of a pair
  (`specials`: 3 for [CLS] A [SEP] B [SEP], 4 for RoBERTa's <s> A </s></s> B </s>), but
  with p = short_seq_prob a random int in [2, max_tokens] (fine-tuning sees short inputs too);
- sentences are packed into a chunk until it reaches the target or the document ends;
- A = the first `a_end` sentences of the chunk (a_end random in [1, len-1]), B = the rest;
- sop: with p 0.5 A and B are swapped, label 1 (0 = in order);
- nsp: with p 0.5 B comes from a random other document (label 1) and the unused sentences
  of the chunk go back to the document;
- a chunk of ONE sentence has no B of its own: as in the reference, its B is taken from a
  random other document and labelled 1 for both sop and nsp (`sop_single_sentence="random"`).
  For sop that mixes topic into the order task (~53% of sop labels end up 1, and a
  cross-document pair is always 1), so `sop_single_sentence="skip"` drops such chunks: every sop
  pair is then two parts of one chunk, label 1 exactly when swapped. The rule is sop's only:
  for nsp a random B is a genuine negative, and `none` has no B, so "skip" with either is
  an error (InstanceConfig);
- none: A = the whole chunk, no B, label -1;
- the pair is cut to max_tokens by removing tokens from the longer side, each from the front
  or the back with p 0.5.

Two ways to use this (`BuildConfig.pairs`):
- static: `document_instances` draws every pair once, at build time (the reference);
- dynamic: `document_chunks` stores only the packing (CHUNK_FIELDS), and `chunk_pair` draws
  the split point, the order, the nsp partner and the truncation when an item is read, so
  each epoch sees new pairs and the pair head cannot memorise them. The chunks are fixed at
  build time, so nsp cannot put the unused sentences of a chunk back into the document (that
  would change the chunks after it): a chunk whose B comes from another document simply
  leaves its own tail unseen that epoch, and there is one item per chunk, where static nsp
  makes a few more instances out of the sentences it puts back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

OBJECTIVES = ("sop", "nsp", "none")
SINGLE_SENTENCE = ("random", "skip")  # what sop does with a chunk of one sentence
# One instance: token spans of A and B in the token array, and the label.
FIELDS = ("a_start", "a_len", "b_start", "b_len", "label")
# One chunk (dynamic pairs): its first sentence (an index into the sentence offsets), its
# number of sentences, its document (a row of the split's document ranges) and the target
# length it was packed to (a random B is drawn to fill it up).
CHUNK_FIELDS = ("first_sentence", "sentences", "document", "target")

Row = tuple[int, int, int, int, int]  # FIELDS


@dataclass(frozen=True)
class InstanceConfig:
    max_seq_length: int = 512
    objective: str = "sop"
    short_seq_prob: float = 0.1
    sop_single_sentence: str = "random"
    specials: int = 3  # tokens the pair template adds to a pair (PairTemplate.num_special)

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective={self.objective!r}: choose from {OBJECTIVES}")
        if self.max_seq_length < 8:
            raise ValueError(f"max_seq_length={self.max_seq_length}: must be at least 8")
        if not 2 <= self.specials <= 4:
            raise ValueError(f"specials={self.specials}: a pair template adds 2 to 4 tokens")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise ValueError(f"short_seq_prob={self.short_seq_prob}: must be in [0, 1]")
        if self.sop_single_sentence not in SINGLE_SENTENCE:
            raise ValueError(f"sop_single_sentence={self.sop_single_sentence!r}: choose from "
                             f"{SINGLE_SENTENCE}")
        if self.sop_single_sentence == "skip" and self.objective != "sop":
            raise ValueError(
                f"sop_single_sentence='skip' is for objective 'sop' only, not "
                f"{self.objective!r}: for nsp a B from another document is a genuine negative "
                "(keep 'random'), and 'none' has no B")

    @property
    def max_tokens(self) -> int:
        """Tokens of A + B: room for the template's specials ([CLS] A [SEP] B [SEP]: 3)."""
        return self.max_seq_length - self.specials

    @property
    def skips_single(self) -> bool:
        """Chunks of one sentence give no instance (sop with sop_single_sentence='skip')."""
        return self.sop_single_sentence == "skip"


def document_instances(doc: int, sent_offsets: np.ndarray, docs: np.ndarray,
                       cfg: InstanceConfig, rng: np.random.Generator,
                       dropped: list[int] | None = None) -> np.ndarray:
    """Instances of document `doc` as an (k, 5) int64 array of FIELDS (static pairs).

    sent_offsets: (S + 1,) token offset of every sentence, then the end.
    docs: (D, 2) first and one-past-last sentence of each document of this split; NSP draws
    its random B documents from these.
    dropped: if given, the token count of every chunk skipped (sop_single_sentence='skip')
    is appended to it.
    """
    bounds, lengths = _sentences(doc, sent_offsets, docs)
    target = _target(cfg, rng)
    out: list[Row] = []

    def take(start: int, count: int) -> int:
        pair = _pair(bounds[start:start + count + 1], doc, target, sent_offsets, docs, cfg,
                     rng)
        if pair is None:
            _note_drop(dropped, bounds, start, count)
            return 0
        out.append(_truncate(*pair[0], cfg.max_tokens, rng))
        return pair[1]

    _pack(lengths, target, take)
    return np.asarray(out, dtype=np.int64).reshape(-1, len(FIELDS))


def document_chunks(doc: int, sent_offsets: np.ndarray, docs: np.ndarray,
                    cfg: InstanceConfig, rng: np.random.Generator,
                    dropped: list[int] | None = None) -> np.ndarray:
    """Chunks of document `doc` as an (k, 4) int64 array of CHUNK_FIELDS (dynamic pairs):
    the packing of `document_instances` with no pair drawn, so no sentence is put back.
    Chunks of one sentence are left out when cfg.skips_single (noted in `dropped`)."""
    first = int(docs[doc, 0])
    bounds, lengths = _sentences(doc, sent_offsets, docs)
    target = _target(cfg, rng)
    out: list[tuple[int, int, int, int]] = []

    def take(start: int, count: int) -> int:
        if count == 1 and cfg.skips_single:
            _note_drop(dropped, bounds, start, count)
        else:
            out.append((first + start, count, doc, target))
        return 0

    _pack(lengths, target, take)
    return np.asarray(out, dtype=np.int64).reshape(-1, len(CHUNK_FIELDS))


def chunk_pair(chunk: np.ndarray, sent_offsets: np.ndarray, docs: np.ndarray,
               cfg: InstanceConfig, rng: np.random.Generator) -> np.ndarray:
    """(5,) int64 instance (FIELDS) of one stored chunk (CHUNK_FIELDS), drawn with `rng`:
    split point, order, nsp partner and truncation, by the rules of `document_instances`
    (the sentences nsp would put back are left out, see the module's docstring)."""
    start, count, doc, target = (int(x) for x in chunk)
    bounds = sent_offsets[start:start + count + 1].tolist()
    pair = _pair(bounds, doc, target, sent_offsets, docs, cfg, rng)
    if pair is None:  # document_chunks stores no chunk that skips
        raise ValueError(f"chunk {tuple(chunk)}: one sentence, which sop_single_sentence="
                         "'skip' should have left out at build time")
    return np.asarray(_truncate(*pair[0], cfg.max_tokens, rng), dtype=np.int64)


def _target(cfg: InstanceConfig, rng: np.random.Generator) -> int:
    """A document's target length: max_tokens, or with p short_seq_prob a shorter one."""
    if rng.random() < cfg.short_seq_prob:
        return int(rng.integers(2, cfg.max_tokens + 1))
    return cfg.max_tokens


def _sentences(doc: int, sent_offsets: np.ndarray, docs: np.ndarray
               ) -> tuple[list[int], list[int]]:
    """The document's sentence offsets (k + 1: its end last) and lengths (k), as Python
    lists: the per-chunk steps below read a few of them, and a list read costs a fraction
    of a numpy scalar's."""
    first, last = int(docs[doc, 0]), int(docs[doc, 1])
    bounds = sent_offsets[first:last + 1]
    return bounds.tolist(), np.diff(bounds).tolist()


def _pack(lengths: list[int], target: int, take: Callable[[int, int], int]) -> None:
    """Packs sentences into chunks of `target` tokens or more (the last one of a document
    may be shorter); calls take(first sentence, count) on each chunk, which returns how many
    of the chunk's sentences go back to the document (nsp's unused B)."""
    chunk_start, chunk_len, i = 0, 0, 0
    while i < len(lengths):
        chunk_len += lengths[i]
        if i == len(lengths) - 1 or chunk_len >= target:
            i -= take(chunk_start, i - chunk_start + 1)
            chunk_start, chunk_len = i + 1, 0
        i += 1


def _note_drop(dropped: list[int] | None, bounds: list[int], chunk: int, count: int) -> None:
    if dropped is not None:
        dropped.append(bounds[chunk + count] - bounds[chunk])


def _pair(bounds: list[int], doc: int, target: int, offsets: np.ndarray, docs: np.ndarray,
          cfg: InstanceConfig, rng: np.random.Generator) -> tuple[Row, int] | None:
    """((a_start, a_len, b_start, b_len, label), sentences to put back) for one chunk, given
    the token offsets of its sentences and its end (`bounds`, count + 1); None for a chunk
    of one sentence that sop_single_sentence='skip' leaves out."""
    count = len(bounds) - 1
    start, end = bounds[0], bounds[-1]
    if cfg.objective == "none":
        return (start, end - start, 0, 0, -1), 0
    if count == 1 and cfg.skips_single:
        return None
    a_end = int(rng.integers(1, count)) if count >= 2 else 1
    split = bounds[a_end]
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
              rng: np.random.Generator) -> Row:
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
