"""Whole-word n-gram masking (ALBERT's create_masked_lm_predictions), reproducible from a seed.

A *word* is a token with its word-start flag set plus the continuation tokens after it.
Masking picks n-grams of whole words: n in 1..max_ngram with p(n) proportional to 1/n
(6/11, 3/11, 2/11 for max_ngram 3), so a word is masked entirely or not at all. About
`masked_lm_prob` of the tokens are chosen, capped at `max_predictions_per_seq`; each chosen
token becomes [MASK] with p 0.8, a random id with p 0.1, and stays itself with p 0.1.

Differences from the official script, on purpose: the RNG is a seeded numpy Generator (the
official one is unseeded and global), and a random replacement is never a special token: it
is drawn from the tokenizer's `replacement_ids` (every id but [PAD] [UNK] [CLS] [SEP] [MASK],
control and unused pieces), which need not be a contiguous range (BERT's vocab.txt puts its
specials at ids 100-103).
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class MaskingConfig:
    mask_token_id: int
    # (R,) int32: the ids a random replacement is drawn from (Tokenizer.replacement_ids).
    # Stored as a read-only array, not a tuple: indexing it costs nothing per call, and it
    # pickles as one buffer to data workers. Left out of == and repr (30,000 numbers).
    replacement_ids: np.ndarray = field(compare=False, repr=False)
    masked_lm_prob: float = 0.15
    max_predictions_per_seq: int = 20
    max_ngram: int = 3

    def __post_init__(self) -> None:
        ids = np.array(self.replacement_ids, dtype=np.int32)  # a copy: frozen means frozen
        if ids.ndim != 1 or len(ids) == 0 or (ids < 0).any():
            raise ValueError("replacement_ids: expected a non-empty 1-D array of token ids "
                             f"(Tokenizer.replacement_ids), got shape {ids.shape}")
        ids.setflags(write=False)
        object.__setattr__(self, "replacement_ids", ids)
        if not 0.0 < self.masked_lm_prob < 1.0:
            raise ValueError(f"masked_lm_prob={self.masked_lm_prob}: must be in (0, 1)")
        if self.max_ngram < 1:
            raise ValueError(f"max_ngram={self.max_ngram}: must be at least 1")
        if self.max_predictions_per_seq < 1:
            raise ValueError("max_predictions_per_seq must be at least 1")

    @property
    def ngram_probs(self) -> np.ndarray:
        weights = 1.0 / np.arange(1, self.max_ngram + 1)
        return weights / weights.sum()


def word_spans(word_start: np.ndarray, maskable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the maskable words. A word begins at a flagged token or after an
    unmaskable token (e.g. [SEP]), and stops at the next begin or unmaskable token."""
    n = len(word_start)
    begins = maskable & (word_start | ~np.concatenate(([False], maskable[:-1])))
    starts = np.flatnonzero(begins)
    # A word ends where the next word begins or at the first unmaskable token after it.
    stops = np.flatnonzero(begins | ~maskable)
    stops = np.append(stops, n)
    ends = stops[np.searchsorted(stops, starts, side="right")]
    return starts, ends


def choose_masked_positions(word_start: np.ndarray, maskable: np.ndarray, cfg: MaskingConfig,
                            rng: np.random.Generator) -> np.ndarray:
    """Sorted token positions to predict: whole-word n-grams (the reference's algorithm)."""
    starts, ends = word_spans(word_start, maskable)
    budget = min(cfg.max_predictions_per_seq,
                 max(1, int(round(int(maskable.sum()) * cfg.masked_lm_prob))))
    grams = choose_ngrams(starts, ends, budget, cfg, rng)
    if not grams:
        return np.zeros(0, dtype=np.int64)
    words = [w for f, n in grams for w in range(f, f + n)]  # an n-gram may straddle a [SEP]
    return np.sort(np.concatenate([np.arange(starts[w], ends[w]) for w in words]))


def choose_ngrams(starts: np.ndarray, ends: np.ndarray, budget: int, cfg: MaskingConfig,
                  rng: np.random.Generator) -> list[tuple[int, int]]:
    """(first word, n) of each masked n-gram; at most `budget` tokens in all.

    Every word is a candidate start, visited in random order; n is drawn with p ~ 1/n
    (renormalised where fewer than max_ngram words remain) and shrunk while the n-gram would
    overflow the budget; n-grams never overlap. Plain Python inside: ~20 candidates a call.
    """
    num_words = len(starts)
    cum = [0, *np.cumsum(ends - starts).tolist()]  # tokens before word i
    cdfs = _ngram_cdfs(cfg.max_ngram)
    order = rng.permutation(num_words).tolist()
    draws = rng.random(num_words).tolist()
    covered = bytearray(num_words)
    grams: list[tuple[int, int]] = []
    count = 0
    for first, u in zip(order, draws, strict=True):
        if count >= budget:
            break
        if covered[first]:
            continue
        longest = min(cfg.max_ngram, num_words - first)
        n = min(bisect.bisect_right(cdfs[longest - 1], u) + 1, longest)
        while n > 1 and count + cum[first + n] - cum[first] > budget:
            n -= 1
        size = cum[first + n] - cum[first]
        if count + size > budget or any(covered[first:first + n]):
            continue
        covered[first:first + n] = b"\x01" * n
        grams.append((first, n))
        count += size
    return grams


@functools.lru_cache(maxsize=16)
def _ngram_cdfs(max_ngram: int) -> list[list[float]]:
    """CDF of n for each number of words left (1 .. max_ngram), p(n) ~ 1/n."""
    out = []
    for longest in range(1, max_ngram + 1):
        w = 1.0 / np.arange(1, longest + 1)
        out.append(np.cumsum(w / w.sum()).tolist())
    return out


def replacement_ids(original: np.ndarray, cfg: MaskingConfig,
                    rng: np.random.Generator) -> np.ndarray:
    """80% [MASK], 10% a random id of cfg.replacement_ids (uniform), 10% unchanged."""
    u = rng.random(len(original))
    allowed = cfg.replacement_ids
    random_ids = allowed[rng.integers(0, len(allowed), len(original))]
    out = np.where(u < 0.8, cfg.mask_token_id, original)
    return np.where(u >= 0.9, random_ids, out).astype(original.dtype)


def mask_tokens(tokens: np.ndarray, word_start: np.ndarray, maskable: np.ndarray,
                cfg: MaskingConfig, rng: np.random.Generator):
    """Returns (masked input ids, labels with -100 where not predicted, positions)."""
    positions = choose_masked_positions(word_start, maskable, cfg, rng)
    labels = np.full(len(tokens), -100, dtype=np.int64)
    labels[positions] = tokens[positions]
    masked = tokens.copy()
    masked[positions] = replacement_ids(tokens[positions], cfg, rng)
    return masked, labels, positions
