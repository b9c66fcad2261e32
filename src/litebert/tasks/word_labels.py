"""Word-labelled sentences (token classification) as model windows, and back.

Encoding (`word_windows`): every word is tokenized on its own as if a space came before it,
as transformers encodes pre-split words (`is_split_into_words=True`; byte-level BPE with
add_prefix_space=True): byte-level BPE gets its "Ġ", SentencePiece its "▁". A word that
tokenizes to nothing (e.g. a lone control character) becomes the unknown token, so that
every word still gets a prediction (transformers would drop it). The word's label goes on
its FIRST piece; other pieces and the special tokens get IGNORE_INDEX (-100), as
transformers' run_ner.py with label_all_tokens=False.

Windows: a sentence whose pieces do not fit `max_seq_length` minus the template's special
tokens is cut into windows of whole words; consecutive windows overlap by at most `stride`
pieces (and always advance by at least one word). A single word longer than a window keeps
only its first pieces (its label stays on its first piece).

Scoring rule: each word is scored in exactly one window: among the windows that hold it, the
one whose centre (in pieces) is nearest the word's centre, the earlier one on a tie. A word
near a window's edge has little context on that side; the nearest centre maximises the
smaller side. Only scored words carry a label and a word index, so a loss or a metric over
the windows counts every word once.

Decoding (`word_predictions`): per-window predicted ids or logits back to one prediction
per word, read at the scored first pieces; rows padded on the left (XLNet) or right are
both read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from litebert.tokenization.base import PairTemplate
from litebert.tokenization.tokenizer import Tokenizer

IGNORE_INDEX = -100


@dataclass(frozen=True)
class WordWindow:
    """One model input: (T,) int64 arrays, T <= max_seq_length, unpadded."""
    input_ids: np.ndarray
    token_type_ids: np.ndarray
    attention_mask: np.ndarray
    labels: np.ndarray  # the label at scored first pieces, IGNORE_INDEX elsewhere
    word_index: np.ndarray  # the word (in its sentence) scored at this token, else -1
    sentence: int  # index of the sentence in the input
    num_words: int  # words in that sentence (word_predictions sizes its output with it)


def encode_words(tokenizer: Tokenizer, sentences: Sequence[Sequence[str]]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(all piece ids (P,) int64, pieces per word (N,) int64) of every word of every
    sentence, in order; each word encoded alone after a space (see the module docstring)."""
    texts = [" " + word for words in sentences for word in words]
    if not texts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    ids, _, lengths = tokenizer.encode_batch_flat(texts)
    ids, lengths = ids.astype(np.int64), lengths.astype(np.int64)
    empty = np.flatnonzero(lengths == 0)
    if empty.size:  # a word must keep a piece to be scored: the unknown token stands for it
        unk = tokenizer.unk_token_id
        if unk is None:
            raise ValueError(f"word {int(empty[0])} has no pieces and the tokenizer has no "
                             "unknown token to stand for it")
        starts = np.cumsum(lengths) - lengths  # (N,)
        ids = np.insert(ids, starts[empty], unk)
        lengths[empty] = 1
    return ids, lengths


def window_spans(lengths: np.ndarray, budget: int, stride: int) -> list[tuple[int, int]]:
    """[start, end) word ranges of the windows of one sentence whose words have `lengths`
    pieces (each already cut to `budget`): greedy, as many whole words as fit, the next
    window starting at the first word from which at most `stride` pieces reach the end of
    this one and from which the next word still fits (so every window ends further)."""
    n = len(lengths)
    cum = np.concatenate([[0], np.cumsum(lengths)])  # (n + 1,) piece offset of each word
    spans: list[tuple[int, int]] = []
    start = 0
    while True:
        end = int(np.searchsorted(cum, cum[start] + budget, side="right")) - 1
        end = max(end, start + 1)
        spans.append((start, end))
        if end >= n:
            return spans
        # the first word j with at most `stride` pieces from j to the end, but late enough
        # that word `end` fits after it (else the next window would end where this one does)
        overlap = int(np.searchsorted(cum, cum[end] - stride, side="left"))
        fit = int(np.searchsorted(cum, cum[end + 1] - budget, side="left"))
        start = max(start + 1, overlap, fit)


def scored_window(lengths: np.ndarray, spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """(n,) int64: the window (index into spans) that scores each word: the nearest centre
    among the windows holding it, the first on a tie."""
    cum = np.concatenate([[0], np.cumsum(lengths)]).astype(np.float64)  # (n + 1,)
    centres = (cum[:-1] + cum[1:]) / 2  # (n,)
    bounds = np.array(spans, dtype=np.int64)  # (W, 2)
    words = np.arange(len(lengths))[:, None]  # (n, 1)
    inside = (words >= bounds[None, :, 0]) & (words < bounds[None, :, 1])  # (n, W)
    window_centres = (cum[bounds[:, 0]] + cum[bounds[:, 1]]) / 2  # (W,)
    distance = np.where(inside, np.abs(centres[:, None] - window_centres[None, :]), np.inf)
    return np.argmin(distance, axis=1)


def _window(template: PairTemplate, ids: np.ndarray, labels: np.ndarray, words: np.ndarray,
            sentence: int, num_words: int) -> WordWindow:
    """A window from its pieces (L,) and, per piece, its label and scored word (or -1)."""
    input_ids, types, _ = template.build(ids)  # (T,) each
    offset = template.a_offset()
    full_labels = np.full(len(input_ids), IGNORE_INDEX, dtype=np.int64)
    full_labels[offset:offset + len(ids)] = labels
    full_words = np.full(len(input_ids), -1, dtype=np.int64)
    full_words[offset:offset + len(ids)] = words
    return WordWindow(input_ids, types, np.ones(len(input_ids), dtype=np.int64), full_labels,
                      full_words, sentence, num_words)


def _sentence_windows(template: PairTemplate, ids: np.ndarray, lengths: np.ndarray,
                      labels: np.ndarray | None, budget: int, stride: int, sentence: int
                      ) -> list[WordWindow]:
    """The windows of one sentence: ids (P,) its pieces, lengths (n,) pieces per word."""
    n = len(lengths)
    if n == 0:  # still one window, so that the sentence keeps its place in the output
        empty = np.zeros(0, dtype=np.int64)
        return [_window(template, empty, empty, empty, sentence, 0)]
    word_of_piece = np.repeat(np.arange(n), lengths)  # (P,)
    first = np.concatenate([[0], np.cumsum(lengths)[:-1]])  # (n,) first piece of each word
    position = np.arange(len(ids)) - first[word_of_piece]  # (P,) piece's place in its word
    keep = position < budget  # a word longer than a window keeps its first pieces
    ids, word_of_piece, is_first = ids[keep], word_of_piece[keep], position[keep] == 0
    kept = np.minimum(lengths, budget)  # (n,)
    cum = np.concatenate([[0], np.cumsum(kept)])  # (n + 1,)
    spans = window_spans(kept, budget, stride)
    scorer = scored_window(kept, spans)  # (n,)
    word_labels = np.full(n, IGNORE_INDEX, dtype=np.int64) if labels is None else labels
    windows = []
    for w, (start, end) in enumerate(spans):
        piece = slice(int(cum[start]), int(cum[end]))
        words = word_of_piece[piece]  # (L,)
        scored = is_first[piece] & (scorer[words] == w)  # (L,)
        windows.append(_window(template, ids[piece],
                               np.where(scored, word_labels[words], IGNORE_INDEX),
                               np.where(scored, words, -1), sentence, n))
    return windows


def word_windows(tokenizer: Tokenizer, sentences: Sequence[Sequence[str]],
                 labels: Sequence[Sequence[int]] | None = None, max_seq_length: int = 512,
                 stride: int = 128) -> list[WordWindow]:
    """The windows of every sentence (lists of words), in order; `labels`: one label id per
    word (None for prediction). `stride`: the most pieces consecutive windows share."""
    template = tokenizer.template
    budget = max_seq_length - template.num_special(False)
    if budget < 1:
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for words beside "
                         f"{template.num_special(False)} special tokens")
    if not 0 <= stride < budget:
        raise ValueError(f"stride={stride} must be at least 0 and below the {budget} word "
                         f"pieces a window of max_seq_length={max_seq_length} holds")
    if labels is not None:
        _check_labels(sentences, labels)
    ids, lengths = encode_words(tokenizer, sentences)
    counts = np.array([len(words) for words in sentences], dtype=np.int64)  # (S,)
    word_ends = np.cumsum(counts)  # (S,)
    piece_ends = np.concatenate([[0], np.cumsum(lengths)])[word_ends]  # (S,)
    windows: list[WordWindow] = []
    for s in range(len(sentences)):
        words = slice(int(word_ends[s] - counts[s]), int(word_ends[s]))
        pieces = slice(int(piece_ends[s - 1]) if s else 0, int(piece_ends[s]))
        sentence_labels = None if labels is None else np.asarray(labels[s], dtype=np.int64)
        windows += _sentence_windows(template, ids[pieces], lengths[words], sentence_labels,
                                     budget, stride, s)
    return windows


def _check_labels(sentences: Sequence[Sequence[str]], labels: Sequence[Sequence[int]]) -> None:
    if len(labels) != len(sentences):
        raise ValueError(f"{len(sentences)} sentences but {len(labels)} label lists")
    for s, (words, tags) in enumerate(zip(sentences, labels, strict=True)):
        if len(words) != len(tags):
            raise ValueError(f"sentence {s}: {len(words)} words but {len(tags)} labels")


def word_predictions(windows: Sequence[WordWindow],
                     predictions: Sequence[np.ndarray] | np.ndarray,
                     padding_side: str = "right") -> list[np.ndarray]:
    """One prediction per word of each sentence: (n_s,) int64 per sentence, in order.

    predictions: per window, (W,) predicted ids or (W, C) logits (argmax taken), or one
    (B, W) / (B, W, C) array; W >= the window's length, the extra positions being padding on
    `padding_side` ("left" for XLNet, Tokenizer.padding_side)."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side={padding_side!r}; use 'left' or 'right'")
    if len(predictions) != len(windows):
        raise ValueError(f"{len(windows)} windows but {len(predictions)} prediction rows")
    num_sentences = max((w.sentence for w in windows), default=-1) + 1
    sizes = np.zeros(num_sentences, dtype=np.int64)  # (S,)
    for w in windows:
        sizes[w.sentence] = w.num_words
    offsets = np.concatenate([[0], np.cumsum(sizes)])  # (S + 1,)
    targets, values = [], []
    for window, row in zip(windows, predictions, strict=True):
        row = np.asarray(row)
        if row.ndim == 2:  # (W, C) logits
            row = row.argmax(axis=-1)
        length = len(window.word_index)
        if len(row) < length:
            raise ValueError(f"a prediction row of {len(row)} for a window of {length} tokens")
        row = row[len(row) - length:] if padding_side == "left" else row[:length]  # (T,)
        scored = window.word_index >= 0
        targets.append(offsets[window.sentence] + window.word_index[scored])
        values.append(row[scored])
    out = np.full(int(offsets[-1]), IGNORE_INDEX, dtype=np.int64)  # (sum n_s,)
    if targets:
        out[np.concatenate(targets)] = np.concatenate(values)
    return np.split(out, offsets[1:-1])
