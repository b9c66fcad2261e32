"""XLNet's pre-training items: windows of a split's stream (`--packing streams`,
litebert.data.streams) laid out, targeted and ordered as the official code does
(zihangdai/xlnet data_utils.py: create_tfrecords, _split_a_and_b, _sample_mask, _local_perm).

An item is window w of the stream (T = max_seq_length, R = reuse_len, from w * R):

    reuse (R tokens)  A  <sep>  B  <sep>  <cls>          token types 0 .. 0 0, 1 .. 1, 2

- reuse: the stream's next R tokens, the part whose states the next window keeps as memory;
- A and B (`split_a_and_b`, |A| + |B| = T - R - 3): A begins right after the reused part
  and ends at a sentence boundary; B is A's continuation, or, half of the time (always when
  no boundary falls within reach), whole sentences from a random place of the stream; the
  longer side is cut from its right until they fit. `next_sentence_label` is 1 when B is
  random (BERT's convention; the official label is the opposite and unused);
- targets (`sample_targets`): num_predict per sequence, ceil(P/2) in the reused part and
  floor(P/2) in the rest, each part sampled on its own: spans of n whole words, n in
  1..max_span with p(n) ~ 1/n, each placed in a context of n * mask_alpha / mask_beta
  tokens (K = 6: about one token in six is predicted), then single tokens drawn uniformly
  until the count is reached;
- order (`local_perm_ranks`): ranks shuffled within blocks of perm_size (one permutation for
  every block, as the official reshape-and-shuffle does; by default perm_size = reuse_len,
  the paper's 256, or the rest's length when that is shorter), for the reused part and the
  rest separately; `perm_mask` turns ranks and targets into who-sees-whom.

Departures from the official code, each on purpose:
- Spans are whole words. The official span loop tests the word start of the span's first
  piece instead of the piece it has reached, so every piece counts as a word and "n-gram"
  means n pieces (xlnet pull request #16, issue #220); here n counts words. A span of n
  words may hold more pieces than the count still needs: it is then shortened by whole
  words, and skipped when its first word alone is too long.
- Targets are drawn anew every epoch from a Generator keyed by (seed, epoch, index), like
  litebert.data.loader's items; the official masks are fixed when the records are written
  (issue #241). The A/B split and the factorisation order are drawn per epoch too.
- The two <sep> and the <cls> of the layout are never targets, and the count is reached
  among the other tokens: the official spans and fill may land on them, and _local_perm
  then drops them, leaving fewer than num_predict targets. A span stops at them.

bi_data: the dataset holds 2n items, the n windows of the stream read forwards, then the n
windows of the stream read backwards (the official code reverses half of each batch's rows;
its targets are drawn on the text flipped back, so spans stay whole words, as here). The
sampler "mirrored-streams" (litebert.data.loader.StreamSampler) puts both in every batch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from litebert.data.blocks import DirectoryChecks
from litebert.data.build_config import SPLITS
from litebert.data.integrity import DataError
from litebert.data.manifest import DataManifest, as_data
from litebert.data.streams import Stream, count_windows, open_stream
from litebert.tokenization import Tokenizer

SPECIALS = 3  # <sep> after A, <sep> after B, <cls>


class PLMDataset(Dataset):
    """Items (T = max_seq_length, P = num_predict): input_ids, token_type_ids,
    attention_mask (all 1: windows are never padded), perm_rank (T,) int64, is_target (T,)
    bool, is_functional (T,) bool (the layout's <sep>s and <cls>), target_positions (P,)
    int64 (ascending; 0 in padding slots), target_ids (P,) int64, target_weights (P,)
    float32 (0 in padding slots), next_sentence_label () int64 (1 = B is random)."""

    def __init__(self, data: DataManifest | str | Path, split: str = "train",
                 seed: int | None = None, *, num_predict: int | None = None,
                 perm_size: int | None = None, max_span: int = 5, mask_alpha: int = 6,
                 mask_beta: int = 1, bi_data: bool = False):
        if split not in SPLITS:
            raise DataError(f"split={split!r}: choose from {SPLITS}")
        opened = as_data(data)  # a directory is opened: DataError if a file was cut short
        self.directory, self.split, config = opened.directory, split, opened.config
        manifest = opened.content
        if config.packing != "streams":
            raise DataError(f"{self.directory}: built with --packing {config.packing}; "
                            "objective plm reads XLNet's streams: rebuild with "
                            "`litebert data build ... --objective none --packing streams`")
        self.seed = config.seed if seed is None else seed
        self.epoch = 0
        self.seq_len, self.reuse_len = config.max_seq_length, config.reuse_length
        self.num_predict = (self.seq_len * mask_beta // mask_alpha if num_predict is None
                            else num_predict)
        self.perm_size = (min(self.reuse_len, self.seq_len - self.reuse_len)
                          if perm_size is None else perm_size)
        self.spans = dict(max_span=max_span, mask_alpha=mask_alpha, mask_beta=mask_beta)
        self._check(max_span, mask_alpha, mask_beta)
        self.bi_data = bi_data
        tokenizer = Tokenizer.from_pretrained(self.directory / "tokenizer")
        self.sep_id, self.cls_id = tokenizer.sep_token_id, tokenizer.cls_token_id
        if self.sep_id is None or self.cls_id is None:
            raise DataError(f"{self.directory / 'tokenizer'}: the tokenizer has no separator "
                            "or <cls> token, which XLNet's layout needs")
        self.stream = open_stream(self.directory, split, manifest["counts"]["token_dtype"],
                                  DirectoryChecks(self.directory, manifest, len(tokenizer)))
        self.windows = count_windows(len(self.stream), self.seq_len, self.reuse_len)

    def _check(self, max_span: int, mask_alpha: int, mask_beta: int) -> None:
        new = self.seq_len - self.reuse_len
        if not 0 < self.perm_size <= min(self.reuse_len, new):
            raise ValueError(f"perm_size={self.perm_size}: must be in 1 .. reuse_len "
                             f"({self.reuse_len}) and at most max_seq_length - reuse_len "
                             f"({new}), as the official code asserts: the order is shuffled "
                             "within blocks of perm_size in each part")
        if not 0 < self.num_predict <= self.seq_len - SPECIALS:
            raise ValueError(f"num_predict={self.num_predict}: must be in 1 .. "
                             f"{self.seq_len - SPECIALS} (max_seq_length less <sep> <sep> <cls>)")
        if max_span < 1 or mask_alpha < 1 or mask_beta < 1:
            raise ValueError(f"max_span={max_span}, mask_alpha={mask_alpha}, mask_beta="
                             f"{mask_beta}: must all be positive")

    def __len__(self) -> int:
        return self.windows * (2 if self.bi_data else 1)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def item_rng(self, index: int) -> np.random.Generator:
        """The Generator of item `index` in this epoch: its pair, targets and order."""
        return np.random.default_rng([self.seed, self.epoch, int(index)])

    def collate(self, items: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        """Every item has the same shapes: stacked, no padding."""
        return {key: torch.stack([item[key] for item in items]) for key in items[0]}

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if not 0 <= index < len(self):
            raise IndexError(f"item {index} of {len(self)}")
        rng = self.item_rng(index)
        view, start = self.window(index)
        backward = view.reverse
        ids, types, words, functional, label = self._layout(view, start, rng)
        r, goal = self.reuse_len, self.num_predict
        is_target, _ = self.draw_targets(words, functional, rng, backward)
        ranks = np.concatenate([local_perm_ranks(r, self.perm_size, rng),
                                r + local_perm_ranks(self.seq_len - r, self.perm_size, rng)])
        positions = np.flatnonzero(is_target)  # (<= P,) ascending
        slots = np.zeros(goal, dtype=np.int64)
        slots[:len(positions)] = positions
        weights = np.zeros(goal, dtype=np.float32)
        weights[:len(positions)] = 1.0
        return {"input_ids": torch.from_numpy(ids), "token_type_ids": torch.from_numpy(types),
                "attention_mask": torch.ones(self.seq_len, dtype=torch.long),
                "perm_rank": torch.from_numpy(ranks), "is_target": torch.from_numpy(is_target),
                "is_functional": torch.from_numpy(functional),
                "target_positions": torch.from_numpy(slots),
                "target_ids": torch.from_numpy(ids[slots] * (weights > 0)),
                "target_weights": torch.from_numpy(weights),
                "next_sentence_label": torch.tensor(label, dtype=torch.long)}

    def draw_targets(self, words: np.ndarray, functional: np.ndarray,
                     rng: np.random.Generator, backward: bool
                     ) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """is_target (T,) bool: ceil(P/2) targets in the reused part, floor(P/2) in the
        rest, each part sampled on its own; and the spans among them in item positions."""
        r, goal = self.reuse_len, self.num_predict
        masks, spans = [], []
        for offset, part, count in ((0, slice(0, r), goal - goal // 2),
                                    (r, slice(r, None), goal // 2)):
            mask, found = targets_and_spans(words[part], functional[part], count, rng,
                                            reverse=backward, **self.spans)
            masks.append(mask)
            spans += [(offset + begin, offset + end) for begin, end in found]
        return np.concatenate(masks), spans

    def window(self, index: int) -> tuple[Stream, int]:
        """(view, start): the stream as item `index` reads it (backwards for the second
        half of a bi_data dataset) and the position in that view where its window begins."""
        backward = index >= self.windows
        view = self.stream.reversed() if backward else self.stream
        return view, (index - self.windows if backward else index) * self.reuse_len

    def layout(self, index: int, rng: np.random.Generator | None = None):
        """_layout of item `index` in this epoch, for reports (items do not carry their word
        starts). The layout is the first thing an item's Generator draws, so the default, a
        fresh item_rng(index), gives the item's own A, B and label; a report that replays
        the item's later draws passes that Generator and goes on drawing from it."""
        if not 0 <= index < len(self):
            raise IndexError(f"item {index} of {len(self)}")
        view, start = self.window(index)
        return self._layout(view, start, self.item_rng(index) if rng is None else rng)

    def _layout(self, view: Stream, start: int, rng: np.random.Generator):
        """reuse A <sep> B <sep> <cls> of the window at `start`: ids, token types, word
        starts (of the text read forwards), functional flags (T,) each, and the label."""
        r = self.reuse_len
        a0, a1, b0, b1, label = split_a_and_b(view, start + r, self.seq_len - r - SPECIALS, rng)
        sep, cls = np.array([self.sep_id]), np.array([self.cls_id])
        ids = np.concatenate([view.tokens(start, a1), sep, view.tokens(b0, b1), sep, cls])
        yes = np.ones(1, dtype=bool)
        words = np.concatenate([view.word_starts(start, a1), yes, view.word_starts(b0, b1),
                                yes, yes])
        a_len, b_len = a1 - a0, b1 - b0
        assert len(ids) == self.seq_len, (len(ids), a_len, b_len)
        types = np.zeros(self.seq_len, dtype=np.int64)
        types[r + a_len + 1:] = 1
        types[-1] = 2
        functional = np.zeros(self.seq_len, dtype=bool)
        functional[[r + a_len, self.seq_len - 2, self.seq_len - 1]] = True
        return ids, types, words, functional, label


# ---- A and B ---------------------------------------------------------------------------------

def split_a_and_b(view: Stream, begin: int, total: int, rng: np.random.Generator
                  ) -> tuple[int, int, int, int, int]:
    """(a_begin, a_end, b_begin, b_end, label) of A and B after position `begin` of the
    stream, |A| + |B| = total, as the official _split_a_and_b draws them: label 1 = B from
    a random place (whole sentences), 0 = B continues A. The stream must hold
    begin + total tokens and more."""
    n = len(view)
    cuts = begin + 1 + np.flatnonzero(view.sentence_starts(begin + 1, begin + total))
    end = view.next_sentence_start(begin + total)  # the first boundary out of reach, or n
    if len(cuts) == 0 or rng.random() < 0.5:
        label = 1
        a_end = end if len(cuts) == 0 else int(rng.choice(cuts))
        b_len = max(1, total - (a_end - begin))
        b_begin = int(rng.integers(0, n - b_len))  # 0 .. n - 1 - b_len
        b_end = min(view.next_sentence_start(b_begin + b_len), n - 1)
        b_begin = view.sentence_start_at_or_before(b_begin)
    else:
        label = 0
        a_end = int(rng.choice(cuts))
        b_begin, b_end = a_end, end
    a_len, b_len = trim_pair(a_end - begin, b_end - b_begin, total)
    return begin, begin + a_len, b_begin, b_begin + b_len, label


def trim_pair(a: int, b: int, total: int) -> tuple[int, int]:
    """Lengths after the official loop that cuts one token off the longer side (B on a
    tie) until a + b <= total, in closed form."""
    excess = a + b - total
    if excess <= 0:
        return a, b
    if a > b:
        cut = min(excess, a - b)
        a -= cut
    else:
        cut = min(excess, b - a)
        b -= cut
    excess -= cut  # the sides are equal now (or nothing is left to cut): B, A, B, ...
    return a - excess // 2, b - (excess + 1) // 2


# ---- targets ---------------------------------------------------------------------------------

def span_probabilities(max_span: int) -> np.ndarray:
    """(max_span,) p(n) ~ 1/n for n = 1 .. max_span."""
    p = 1.0 / np.arange(1, max_span + 1)
    return p / p.sum()


def sample_spans(word_starts: np.ndarray, functional: np.ndarray, goal: int,
                 rng: np.random.Generator, *, max_span: int = 5, mask_alpha: int = 6,
                 mask_beta: int = 1) -> list[tuple[int, int]]:
    """[begin, end) spans of whole words, in order, holding at most `goal` tokens (the
    official _sample_mask's span loop with n counting words; see the module docstring).
    A functional token is a word of its own that no span includes."""
    length = len(word_starts)
    after = np.zeros(length, dtype=bool)
    after[1:] = functional[:-1]
    bounds = np.flatnonzero(word_starts | functional | after)  # where a word begins
    begins = np.flatnonzero((word_starts | after) & ~functional)  # where a span may begin
    walls = np.flatnonzero(functional)
    p = span_probabilities(max_span)
    spans: list[tuple[int, int]] = []
    count = cursor = 0
    while cursor < length and count < goal:
        n = min(int(rng.choice(max_span, p=p)) + 1, goal - count)
        context = n * mask_alpha // mask_beta
        left = int(rng.integers(context))
        k = np.searchsorted(begins, cursor + left)
        if k == len(begins):
            break
        begin = int(begins[k])
        first = int(np.searchsorted(bounds, begin, side="right"))  # where word 2 begins
        if first + n - 1 >= len(bounds):
            break  # as the official loop: a span must end before the segment does
        end = int(bounds[first + n - 1])  # where word n + 1 begins
        wall = np.searchsorted(walls, begin)
        if wall < len(walls):
            end = min(end, int(walls[wall]))
        if end - begin > goal - count:  # too many pieces: keep the words that fit
            fits = bounds[(bounds > begin) & (bounds <= begin + goal - count)]
            if len(fits) == 0:  # its first word alone is too long: step over it
                cursor = int(bounds[first]) + context - left
                continue
            end = int(fits[-1])
        spans.append((begin, end))
        count += end - begin
        cursor = end + context - left
    return spans


def sample_targets(word_starts: np.ndarray, functional: np.ndarray, goal: int,
                   rng: np.random.Generator, *, reverse: bool = False, max_span: int = 5,
                   mask_alpha: int = 6, mask_beta: int = 1) -> np.ndarray:
    """(L,) bool: `goal` targets of one part of a sequence (fewer only when it has fewer
    non-functional tokens): the spans of sample_spans, then single tokens drawn uniformly
    from the rest. reverse: the part is text read backwards; it is sampled flipped back,
    so spans are whole words of the text (word_starts are those of the text forwards)."""
    return targets_and_spans(word_starts, functional, goal, rng, reverse=reverse,
                             max_span=max_span, mask_alpha=mask_alpha, mask_beta=mask_beta)[0]


def targets_and_spans(word_starts: np.ndarray, functional: np.ndarray, goal: int,
                      rng: np.random.Generator, *, reverse: bool = False, max_span: int = 5,
                      mask_alpha: int = 6, mask_beta: int = 1
                      ) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """sample_targets' mask, and the [begin, end) spans among its targets in the part's own
    positions (the rest are the single-token fill; `litebert data stats` tells them apart)."""
    length = len(word_starts)
    if reverse:
        word_starts, functional = word_starts[::-1], functional[::-1]
    mask = np.zeros(length, dtype=bool)
    spans = sample_spans(word_starts, functional, goal, rng, max_span=max_span,
                         mask_alpha=mask_alpha, mask_beta=mask_beta)
    for begin, end in spans:
        mask[begin:end] = True
    free = np.flatnonzero(~mask & ~functional)
    missing = min(goal - int(mask.sum()), len(free))
    if missing > 0:
        mask[rng.choice(free, size=missing, replace=False)] = True
    if not reverse:
        return mask, spans
    return mask[::-1].copy(), [(length - end, length - begin) for begin, end in spans]


# ---- factorisation order ---------------------------------------------------------------------

def local_perm_ranks(length: int, perm_size: int, rng: np.random.Generator) -> np.ndarray:
    """(length,) int64 rank of each position in the factorisation order of the official
    _local_perm: blocks of perm_size in order, and within every block the same random
    permutation (it shuffles the rows of the [perm_size, blocks] transposed index). Where
    perm_size does not divide `length` (the official code cannot), the last, shorter block
    keeps the relative order of that permutation's first entries."""
    shuffle = rng.permutation(perm_size)  # (perm_size,)
    full, rest = divmod(length, perm_size)
    blocks = np.arange(full)[:, None] * perm_size  # (full, 1)
    ranks = (blocks + shuffle[None, :]).reshape(-1)
    tail = full * perm_size + np.argsort(np.argsort(shuffle[:rest]))  # (rest,)
    return np.concatenate([ranks, tail]).astype(np.int64)


def perm_mask(perm_rank: torch.Tensor, is_target: torch.Tensor, is_functional: torch.Tensor,
              reuse_len: int) -> torch.Tensor:
    """(B, T, T) bool, True where position i cannot see position j (transformers' and the
    official perm_mask), from (B, T) ranks, targets and functional flags, as _local_perm
    builds it for each part and get_dataset joins the parts:

    - within a part, a token that is neither a target nor functional sees every such token
      and none of the others; a target sees those and the targets and functional tokens
      ranked before it (not itself); a functional token sees those ranked before it and
      itself;
    - the reused part sees nothing of the rest; the rest sees all of the reused part.
    (The content stream adds the diagonal itself: a token always sees its own content.)
    """
    hidden = is_target | is_functional  # (B, T) what the order can hide
    rank = torch.where(hidden, perm_rank, torch.full_like(perm_rank, -1))
    own = torch.where(is_target, rank, rank + 1)  # targets do not see themselves
    mask = (own[:, :, None] <= rank[:, None, :]) & hidden[:, None, :]  # (B, T, T)
    part = torch.arange(perm_rank.shape[1], device=perm_rank.device) >= reuse_len  # (T,)
    same = part[:, None] == part[None, :]  # (T, T)
    reuse_row_new_col = ~part[:, None] & part[None, :]
    return torch.where(same, mask, reuse_row_new_col)
