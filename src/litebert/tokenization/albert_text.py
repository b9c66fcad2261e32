"""ALBERT's SentencePiece text conventions: the official preprocessing (fast, batched, and with
a character alignment for offsets) and its re-split of "digit," pieces.

The official code is google-research/albert tokenization.py (`preprocess_text`,
`encode_pieces`); `litebert.tokenization.Tokenizer` is the public API over this module.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

UNDERLINE = "\u2581"  # "▁", SentencePiece's word-start mark
SPIECE_NAME = "spiece.model"
# User-defined symbols of the official ALBERT 30k vocabulary (always single pieces).
ALBERT_USER_SYMBOLS = ("(", ")", '"', "-", ".", "\u2013", "\u00a3", "\u20ac")
ALBERT_CONTROL_SYMBOLS = ("[CLS]", "[SEP]", "[MASK]")
_WORD = re.compile(r"\S+")  # same notion of whitespace as str.split() (checked in tests)



class TextRules(Protocol):
    """The preprocessing switches (litebert.tokenization.TextSettings has them)."""

    @property
    def do_lower_case(self) -> bool: ...

    @property
    def remove_space(self) -> bool: ...

    @property
    def keep_accents(self) -> bool: ...


# ---- preprocess_text, plain, batched and with a character alignment -------------------------

@lru_cache(maxsize=1)
def combining_marks() -> dict[int, None]:
    """str.translate table deleting every character with a non-zero combining class."""
    return {c: None for c in range(sys.maxunicode + 1) if unicodedata.combining(chr(c))}


def preprocess_text(text: str, settings: TextRules) -> str:
    """The official ALBERT preprocessing (whole-string operations, C speed)."""
    if settings.remove_space:
        text = " ".join(text.split())
    text = text.replace("``", '"').replace("''", '"')
    if not settings.keep_accents and not text.isascii():
        text = unicodedata.normalize("NFKD", text).translate(combining_marks())
    return text.lower() if settings.do_lower_case else text


@lru_cache(maxsize=1)
def _combining_mask() -> np.ndarray:
    mask = np.zeros(sys.maxunicode + 1, dtype=bool)
    mask[list(combining_marks())] = True
    return mask


def preprocess_batch(texts: Sequence[str], settings: TextRules) -> list[str]:
    """preprocess_text of every text; combining marks go for all texts at once with numpy
    (str.translate is the slowest step otherwise)."""
    out = [" ".join(t.split()) for t in texts] if settings.remove_space else list(texts)
    out = [t.replace("``", '"').replace("''", '"') for t in out]
    if not settings.keep_accents:
        wide = [i for i, t in enumerate(out) if not t.isascii()]
        if wide:
            decomposed = [unicodedata.normalize("NFKD", out[i]) for i in wide]
            for i, text in zip(wide, _drop_marks(decomposed), strict=True):
                out[i] = text
    return [t.lower() for t in out] if settings.do_lower_case else out


def _drop_marks(texts: list[str]) -> list[str]:
    codes = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    keep = ~_combining_mask()[codes]
    if keep.all():
        return texts
    bounds = np.concatenate(([0], np.cumsum([len(t) for t in texts])))
    kept = np.concatenate(([0], np.cumsum(keep)))[bounds].tolist()
    joined = codes[keep].tobytes().decode("utf-32-le", "surrogatepass")
    return [joined[a:b] for a, b in zip(kept[:-1], kept[1:], strict=True)]


def aligned_preprocess(text: str, settings: TextRules) -> tuple[str, list[int], list[int]]:
    """preprocess_text(text) and, per output char, the [start, end) of the original chars."""
    if settings.remove_space:
        chars: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        previous = None
        for match in _WORD.finditer(text):
            a, b = match.span()
            if previous is not None:  # the joining space stands for the whole whitespace run
                chars.append(" ")
                starts.append(previous)
                ends.append(a)
            chars.extend(text[a:b])
            starts.extend(range(a, b))
            ends.extend(range(a + 1, b + 1))
            previous = b
        current = "".join(chars)
    else:
        current, starts, ends = text, list(range(len(text))), list(range(1, len(text) + 1))
    for pattern in ("``", "''"):
        if pattern in current:
            current, starts, ends = _replace_aligned(current, starts, ends, pattern)
    # ASCII keeps its length under NFKD and lower(); other text may grow ("ﬁ" -> "fi") or
    # shrink (combining marks dropped), so it is walked char by char.
    if not current.isascii() and (settings.do_lower_case or not settings.keep_accents):
        starts, ends = _expand_aligned(current, starts, ends, settings)
    normalized = preprocess_text(text, settings)
    if len(normalized) != len(starts):  # per-char and whole-string rules must agree
        raise RuntimeError(f"internal alignment error on {text!r}")
    return normalized, starts, ends


def _replace_aligned(text: str, starts: list[int], ends: list[int],
                     pattern: str) -> tuple[str, list[int], list[int]]:
    """str.replace(pattern, '"') keeping the spans; the quote spans both source chars."""
    parts = text.split(pattern)
    out_starts: list[int] = []
    out_ends: list[int] = []
    pos = 0
    for i, part in enumerate(parts):
        out_starts.extend(starts[pos:pos + len(part)])
        out_ends.extend(ends[pos:pos + len(part)])
        pos += len(part)
        if i < len(parts) - 1:
            out_starts.append(starts[pos])
            out_ends.append(ends[pos + len(pattern) - 1])
            pos += len(pattern)
    return '"'.join(parts), out_starts, out_ends


def _expand_aligned(text: str, starts: list[int], ends: list[int],
                    settings: TextRules) -> tuple[list[int], list[int]]:
    marks = combining_marks()
    out_starts: list[int] = []
    out_ends: list[int] = []
    pending = None  # start of dropped chars before the first kept one
    for c, s, e in zip(text, starts, ends, strict=True):
        if c.isascii():
            n = 1
        else:
            t = c if settings.keep_accents else unicodedata.normalize("NFKD", c).translate(marks)
            n = len(t.lower() if settings.do_lower_case else t)
        if n == 0:  # a dropped accent belongs to the letter before it
            if out_ends:
                out_ends[-1] = max(out_ends[-1], e)
            elif pending is None:
                pending = s
            continue
        out_starts.extend([s if pending is None else pending] * n)
        out_ends.extend([e] * n)
        pending = None
    return out_starts, out_ends


def map_span(b: int, e: int, text: str, starts: list[int], ends: list[int],
              original_length: int) -> tuple[int, int]:
    """A span of the preprocessed text -> the original text, leading whitespace trimmed."""
    while b < e and text[b].isspace():
        b += 1
    if b < e:
        return starts[b], ends[e - 1]
    position = starts[b] if b < len(starts) else original_length
    return position, position


# ---- the re-split of "digit," pieces --------------------------------------------------------

def split_number(sp: Any, piece: str) -> list[str]:
    """ALBERT's fix-up of a piece like "▁1990,": encode "1990" again, then ","."""
    sub = sp.encode(piece[:-1].replace(UNDERLINE, ""), out_type=str)
    if sub and piece[0] != UNDERLINE and sub[0][0] == UNDERLINE:
        sub = sub[1:] if len(sub[0]) == 1 else [sub[0][1:], *sub[1:]]
    return [*sub, piece[-1]]


def resplit(sp: Any, pieces: list[str], spans: list[tuple[int, int]] | None = None
            ) -> tuple[list[str], list[tuple[int, int]]]:
    """split_number over a piece sequence, carrying character spans along if given."""
    spans = spans if spans is not None else [(0, 0)] * len(pieces)
    out: list[str] = []
    out_spans: list[tuple[int, int]] = []
    for piece, span in zip(pieces, spans, strict=True):
        if is_number_comma(piece):
            sub = split_number(sp, piece)
            out.extend(sub)
            out_spans.extend(share_span(span, sub))
        else:
            out.append(piece)
            out_spans.append(span)
    return out, out_spans


def is_number_comma(piece: str) -> bool:
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def share_span(span: tuple[int, int], sub: list[str]) -> list[tuple[int, int]]:
    """Spans for re-split pieces: the comma is the last char, the digits lie right before it."""
    b, e = span
    out = [(max(b, e - 1), e)]
    pos = out[0][0]
    for piece in reversed(sub[:-1]):  # right to left: a leading "▁" may have no width
        start = max(b, pos - len(piece.replace(UNDERLINE, "")))
        out.append((start, pos))
        pos = start
    return out[::-1]
