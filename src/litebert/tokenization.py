"""One tokenizer API over SentencePiece (`spiece.model`) and WordPiece (`vocab.txt`).

SentencePiece ids are those of the official ALBERT code (google-research/albert,
`FullTokenizer` with `spm_model_file`): `preprocess_text` (collapse whitespace, `` and '' to
", NFKD with combining marks dropped, lower-case), SentencePiece, then ALBERT's re-split of
pieces like "▁1990," into "▁1990" + ",". transformers' fast AlbertTokenizer skips that
re-split, so it disagrees on numbers followed by commas.

WordPiece is BERT's (clean text, CJK split, punctuation split, lower-case, accent strip), run
by the `tokenizers` library; it gives the ids of transformers' BertTokenizer.

Neither backend turns "[CLS]", "[MASK]", ... written inside raw text into special ids (the
official ALBERT and BERT code do not either; transformers does).

Speed: `encode_batch_with_word_starts` runs SentencePiece's threaded batch encoder and only
re-encodes, piece by piece, the rare texts whose ids contain <unk> or a "digit," piece.
"""

from __future__ import annotations

import bz2
import dataclasses
import gzip
import hashlib
import io
import json
import lzma
import os
import re
import shutil
import sys
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

SPIECE_NAME = "spiece.model"
VOCAB_NAME = "vocab.txt"
CONFIG_NAME = "tokenizer_config.json"
UNDERLINE = "\u2581"  # "▁", SentencePiece's word-start mark
# User-defined symbols of the official ALBERT 30k vocabulary (always single pieces).
ALBERT_USER_SYMBOLS = ("(", ")", '"', "-", ".", "\u2013", "\u00a3", "\u20ac")
ALBERT_CONTROL_SYMBOLS = ("[CLS]", "[SEP]", "[MASK]")

# Candidate names per special token, first match wins. The sentencepiece test models have
# <s> and </s> instead of [CLS] and [SEP].
_SPECIAL_NAMES = {
    "pad": ("<pad>", "[PAD]"),
    "unk": ("<unk>", "[UNK]"),
    "cls": ("[CLS]", "<cls>", "<s>"),
    "sep": ("[SEP]", "<sep>", "</s>"),
    "mask": ("[MASK]", "<mask>"),
}
_WORD = re.compile(r"\S+")  # same notion of whitespace as str.split() (checked in tests)


class TokenizerError(ValueError):
    """A tokenizer file or argument that cannot be used; the message names it."""


@dataclass(frozen=True)
class TextSettings:
    """Preprocessing switches, with transformers' tokenizer_config.json names."""

    do_lower_case: bool = True
    remove_space: bool = True  # SentencePiece: collapse runs of whitespace, strip the ends
    keep_accents: bool = False  # SentencePiece: skip NFKD + combining-mark removal
    strip_accents: bool | None = None  # WordPiece: None follows do_lower_case, as in BERT
    tokenize_chinese_chars: bool = True  # WordPiece: every CJK character is its own word


_SETTING_NAMES = tuple(f.name for f in dataclasses.fields(TextSettings))


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON object file, {} when absent."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise TokenizerError(f"{path}, line {err.lineno}: invalid JSON ({err.msg})") from None
    except UnicodeDecodeError as err:
        raise TokenizerError(f"{path}: not UTF-8 text (byte {err.start})") from None
    if not isinstance(data, dict):
        raise TokenizerError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _settings(config: dict[str, Any], overrides: dict[str, Any], source: Path) -> TextSettings:
    """TextSettings from tokenizer_config.json keys (others ignored) and keyword overrides."""
    unknown = sorted(set(overrides) - set(_SETTING_NAMES))
    if unknown:
        raise TokenizerError(f"unknown tokenizer setting(s) {', '.join(unknown)}; "
                             f"choose from {', '.join(_SETTING_NAMES)}")
    values = {k: v for k, v in config.items() if k in _SETTING_NAMES}
    values.update(overrides)
    for name, value in values.items():
        if not (isinstance(value, bool) or (name == "strip_accents" and value is None)):
            where = source if name not in overrides else "argument"
            raise TokenizerError(f"{where}: {name} must be true or false, got {value!r}")
    return TextSettings(**values)


# ---- ALBERT's preprocess_text, plain and with a character alignment -------------------------

@lru_cache(maxsize=1)
def _combining_marks() -> dict[int, None]:
    """str.translate table deleting every character with a non-zero combining class."""
    return {c: None for c in range(sys.maxunicode + 1) if unicodedata.combining(chr(c))}


def preprocess_text(text: str, settings: TextSettings) -> str:
    """The official ALBERT preprocessing (whole-string operations, C speed)."""
    if settings.remove_space:
        text = " ".join(text.split())
    text = text.replace("``", '"').replace("''", '"')
    if not settings.keep_accents and not text.isascii():
        text = unicodedata.normalize("NFKD", text).translate(_combining_marks())
    return text.lower() if settings.do_lower_case else text


@lru_cache(maxsize=1)
def _combining_mask() -> np.ndarray:
    mask = np.zeros(sys.maxunicode + 1, dtype=bool)
    mask[list(_combining_marks())] = True
    return mask


def preprocess_batch(texts: Sequence[str], settings: TextSettings) -> list[str]:
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


def _aligned_preprocess(text: str, settings: TextSettings) -> tuple[str, list[int], list[int]]:
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
                    settings: TextSettings) -> tuple[list[int], list[int]]:
    marks = _combining_marks()
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


def _map_span(b: int, e: int, text: str, starts: list[int], ends: list[int],
              original_length: int) -> tuple[int, int]:
    """A span of the preprocessed text -> the original text, leading whitespace trimmed."""
    while b < e and text[b].isspace():
        b += 1
    if b < e:
        return starts[b], ends[e - 1]
    position = starts[b] if b < len(starts) else original_length
    return position, position


# ---- SentencePiece ---------------------------------------------------------------------------

class _SentencePiece:
    kind = "sentencepiece"
    file_name = SPIECE_NAME

    def __init__(self, path: Path, settings: TextSettings):
        import sentencepiece as spm

        self.settings = settings
        self.sp = spm.SentencePieceProcessor()
        try:
            self.sp.LoadFromSerializedProto(path.read_bytes())
        except (RuntimeError, OSError, TypeError) as err:
            raise TokenizerError(f"{path}: not a SentencePiece model ({err})") from None
        self.pieces = [self.sp.id_to_piece(i) for i in range(self.sp.get_piece_size())]
        self.word_start = np.array([p.startswith(UNDERLINE) for p in self.pieces])
        self.numpy_out = _supports_numpy(self.sp)
        self._build_split_table()
        self.unk_always, self.unk_hazards = self._unknown_text_risks()

    def _build_split_table(self) -> None:
        """Per id, the ids (and word starts) that replace it: itself, or ALBERT's re-split
        of a "digit," piece. The batch path applies the table with numpy alone."""
        extra_ids: list[int] = []
        extra_starts: list[bool] = []
        size = len(self.pieces)
        self.rep_start = np.arange(size, dtype=np.int64)
        self.rep_len = np.ones(size, dtype=np.int64)
        for i, piece in enumerate(self.pieces):
            if _is_number_comma(piece):
                pieces = self.split_number(piece)
                self.rep_start[i], self.rep_len[i] = size + len(extra_ids), len(pieces)
                extra_ids += self.ids_of(pieces)
                extra_starts += [p.startswith(UNDERLINE) for p in pieces]
        self.has_splits = bool(extra_ids)
        self.rep_ids = np.concatenate([np.arange(size), extra_ids]).astype(np.int32)
        self.rep_word_start = np.concatenate([self.word_start, np.array(extra_starts, bool)])

    def _unknown_text_risks(self) -> tuple[bool, tuple[str, ...]]:
        """When the text behind an <unk> id can change ids or word starts.

        SentencePiece makes <unk> of runs of characters that have no one-character piece. If
        "," and "▁" have one, such a run never ends in "digit," nor starts with "▁"; and
        piece_to_id(run) is <unk> again unless the run is one of the "hazard" pieces made of
        such characters only (e.g. "[CLS]" in a lower-cased vocabulary).
        """
        sp = self.sp
        known = {p for i, p in enumerate(self.pieces) if len(p) == 1 and not (
            sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i) or sp.is_byte(i))}
        hazards = tuple(p for i, p in enumerate(self.pieces)
                        if not sp.is_unknown(i) and all(c not in known for c in p))
        return "," not in known or UNDERLINE not in known, hazards

    def token_to_id(self, token: str) -> int | None:
        i = self.sp.piece_to_id(token)
        return i if self.pieces[i] == token else None

    def batch_encode(self, texts: Sequence[str], num_threads: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ids of all texts in one array, their word-start flags, and each text's length."""
        prepared = preprocess_batch(texts, self.settings)
        if self.numpy_out:
            arrays = self.sp.encode(prepared, out_type="numpy", num_threads=num_threads)
        else:  # sentencepiece < 0.2.1
            arrays = [np.asarray(a, dtype=np.int32) for a in
                      self.sp.encode(prepared, out_type=int, num_threads=num_threads)]
        lengths = np.fromiter((a.size for a in arrays), dtype=np.int64, count=len(arrays))
        flat = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int32)
        risky = self._risky_texts(flat, lengths, prepared)
        ids, starts, lengths = self._apply_splits(flat, lengths)
        if risky:
            ids, starts, lengths = self._redo(ids, starts, lengths, risky, prepared)
        return ids, starts, lengths

    def _apply_splits(self, flat: np.ndarray, lengths: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.has_splits or not (self.rep_len[flat] > 1).any():
            return flat, self.word_start[flat], lengths
        n = self.rep_len[flat]
        ends = np.cumsum(n)
        index = np.repeat(self.rep_start[flat] - (ends - n), n) + np.arange(ends[-1])
        out_bounds = np.concatenate(([0], ends))[np.concatenate(([0], np.cumsum(lengths)))]
        return self.rep_ids[index], self.rep_word_start[index], np.diff(out_bounds)

    def _risky_texts(self, flat: np.ndarray, lengths: np.ndarray, prepared: list[str]
                     ) -> list[int]:
        """Texts with an <unk> whose text may matter (see _unknown_text_risks)."""
        if not (self.unk_always or self.unk_hazards):
            return []
        owners = np.repeat(np.arange(len(lengths)), lengths)[flat == self.sp.unk_id()]
        return [i for i in np.unique(owners).tolist() if self.unk_always or any(
            h in self.sp.normalize(prepared[i]) for h in self.unk_hazards)]

    def _redo(self, ids: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
              risky: list[int], prepared: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Replace the risky texts' ids by the official piece-by-piece algorithm's."""
        bounds = np.cumsum(lengths)[:-1]
        id_parts, start_parts = np.split(ids, bounds), np.split(starts, bounds)
        for i in risky:
            pieces = self.resplit_pieces(self.sp.encode(prepared[i], out_type=str))
            id_parts[i] = np.array(self.ids_of(pieces), dtype=np.int32)
            start_parts[i] = np.array([p.startswith(UNDERLINE) for p in pieces], dtype=bool)
        lengths = np.fromiter((p.size for p in id_parts), dtype=np.int64, count=len(id_parts))
        return np.concatenate(id_parts), np.concatenate(start_parts), lengths

    def ids_of(self, pieces: list[str]) -> list[int]:
        return [self.sp.piece_to_id(p) for p in pieces]

    def split_number(self, piece: str) -> list[str]:
        """ALBERT's fix-up of a piece like "▁1990,": encode "1990" again, then ","."""
        sub = self.sp.encode(piece[:-1].replace(UNDERLINE, ""), out_type=str)
        if sub and piece[0] != UNDERLINE and sub[0][0] == UNDERLINE:
            sub = sub[1:] if len(sub[0]) == 1 else [sub[0][1:], *sub[1:]]
        return [*sub, piece[-1]]

    def resplit_pieces(self, pieces: list[str]) -> list[str]:
        return self.resplit(pieces, [(0, 0)] * len(pieces))[0]

    def resplit(self, pieces: list[str], spans: list[tuple[int, int]]
                ) -> tuple[list[str], list[tuple[int, int]]]:
        """split_number over a piece sequence, carrying the character spans along."""
        out: list[str] = []
        out_spans: list[tuple[int, int]] = []
        for piece, span in zip(pieces, spans, strict=True):
            if _is_number_comma(piece):
                sub = self.split_number(piece)
                out.extend(sub)
                out_spans.extend(_share_span(span, sub))
            else:
                out.append(piece)
                out_spans.append(span)
        return out, out_spans

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        normalized, starts, ends = _aligned_preprocess(text, self.settings)
        if not normalized:
            return [], []
        result = self.sp.encode(normalized, out_type="offset_mapping")
        pieces, spans = self.resplit(result["pieces"], list(result["offsets"]))
        offsets = [_map_span(b, e, normalized, starts, ends, len(text)) for b, e in spans]
        return self.ids_of(pieces), offsets

    def decode(self, ids: list[int], specials: set[int]) -> str:
        """SentencePiece decoding between special tokens, which are written as names."""
        out: list[str] = []
        run: list[int] = []
        for i in ids:
            if i in specials:
                if run:
                    out.append(self.sp.decode(run))
                    run = []
                out.append(self.pieces[i])
            else:
                run.append(i)
        if run:
            out.append(self.sp.decode(run))
        return " ".join(out)


def _is_number_comma(piece: str) -> bool:
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def _share_span(span: tuple[int, int], sub: list[str]) -> list[tuple[int, int]]:
    """Spans for re-split pieces: the comma is the last char, the digits lie right before it."""
    b, e = span
    out = [(max(b, e - 1), e)]
    pos = out[0][0]
    for piece in reversed(sub[:-1]):  # right to left: a leading "▁" may have no width
        start = max(b, pos - len(piece.replace(UNDERLINE, "")))
        out.append((start, pos))
        pos = start
    return out[::-1]


def _supports_numpy(sp: Any) -> bool:
    try:
        sp.encode([""], out_type="numpy")
    except (ValueError, TypeError):
        return False
    return True


# ---- WordPiece -------------------------------------------------------------------------------

class _WordPiece:
    kind = "wordpiece"
    file_name = VOCAB_NAME

    def __init__(self, path: Path, settings: TextSettings):
        from tokenizers import Tokenizer as HFTokenizer
        from tokenizers import decoders, normalizers, pre_tokenizers
        from tokenizers.models import WordPiece

        self.settings = settings
        try:  # the same reading as BERT's load_vocab: one token a line, trailing "\n" dropped
            lines = path.read_text(encoding="utf-8").split("\n")
        except UnicodeDecodeError as err:
            raise TokenizerError(f"{path}: not UTF-8 text (byte {err.start})") from None
        if lines and lines[-1] == "":
            lines.pop()
        self.pieces = lines
        vocab = {token: i for i, token in enumerate(lines)}
        if "[UNK]" not in vocab:
            raise TokenizerError(f"{path}: a WordPiece vocabulary needs an [UNK] line")
        self.tk = HFTokenizer(WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
        self.tk.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=settings.tokenize_chinese_chars,
            strip_accents=settings.strip_accents, lowercase=settings.do_lower_case)
        self.tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        self.tk.decoder = decoders.WordPiece(prefix="##")
        self.vocab = vocab
        self.word_start = np.array([not p.startswith("##") for p in self.pieces])

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def batch_encode(self, texts: Sequence[str], num_threads: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # tokenizers picks its own thread count (RAYON_NUM_THREADS); num_threads is unused.
        encodings = self.tk.encode_batch_fast(list(texts), add_special_tokens=False)
        arrays = [np.array(e.ids, dtype=np.int32) for e in encodings]
        lengths = np.fromiter((a.size for a in arrays), dtype=np.int64, count=len(arrays))
        flat = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int32)
        return flat, self.word_start[flat], lengths

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        encoding = self.tk.encode(text, add_special_tokens=False)
        return list(encoding.ids), list(encoding.offsets)

    def decode(self, ids: list[int], specials: set[int]) -> str:
        return self.tk.decode(ids, skip_special_tokens=False)


# ---- the public tokenizer --------------------------------------------------------------------

class Tokenizer:
    """[CLS] A [SEP] (B [SEP]) encoding, decoding and fast batch encoding for data building."""

    def __init__(self, backend: _SentencePiece | _WordPiece, path: Path):
        self._backend = backend
        self.path = path
        self.settings = backend.settings
        self.num_threads = os.cpu_count() or 1
        self._special = {name: _first_id(backend, names) for name, names in _SPECIAL_NAMES.items()}
        self._fingerprint: str | None = None

    # ---- loading and saving ------------------------------------------------------------------

    @classmethod
    def from_pretrained(cls, directory: str | Path, **settings: Any) -> Tokenizer:
        """DIR/spiece.model or DIR/vocab.txt, with DIR/tokenizer_config.json if present."""
        directory = Path(directory)
        if not directory.is_dir():
            raise TokenizerError(f"{directory}: not a directory")
        config = _read_json(directory / CONFIG_NAME)
        text = _settings(config, settings, directory / CONFIG_NAME)
        spiece, vocab = directory / SPIECE_NAME, directory / VOCAB_NAME
        bert = str(config.get("tokenizer_class", "")).startswith("Bert")
        if spiece.is_file() and not (bert and vocab.is_file()):
            return cls(_SentencePiece(spiece, text), spiece)
        if vocab.is_file():
            return cls(_WordPiece(vocab, text), vocab)
        raise TokenizerError(f"{directory}: no tokenizer files; expected {SPIECE_NAME} "
                             f"(SentencePiece) or {VOCAB_NAME} (WordPiece)")

    @classmethod
    def from_file(cls, path: str | Path, **settings: Any) -> Tokenizer:
        """A bare SentencePiece model or WordPiece vocab.txt (by suffix .txt)."""
        path = Path(path)
        if not path.is_file():
            raise TokenizerError(f"{path}: no such tokenizer file")
        text = _settings({}, settings, path)
        if path.suffix == ".txt":
            return cls(_WordPiece(path, text), path)
        return cls(_SentencePiece(path, text), path)

    def save_pretrained(self, directory: str | Path) -> Path:
        """Copy the model/vocab file and write tokenizer_config.json (transformers reads both)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / self._backend.file_name
        if not target.exists() or not target.samefile(self.path):
            shutil.copyfile(self.path, target)
        config = json.dumps(self._hf_config(), indent=2, sort_keys=True, ensure_ascii=False)
        (directory / CONFIG_NAME).write_text(config + "\n", encoding="utf-8")
        return directory

    def _hf_config(self) -> dict[str, Any]:
        s = self.settings
        names = {f"{k}_token": self._backend.pieces[i] for k, i in self._special.items()
                 if i is not None}
        if self.kind == "wordpiece":
            return dict(tokenizer_class="BertTokenizer", do_lower_case=s.do_lower_case,
                        strip_accents=s.strip_accents,
                        tokenize_chinese_chars=s.tokenize_chinese_chars, **names)
        if "cls_token" in names and "sep_token" in names:  # AlbertTokenizer's bos/eos
            names.update(bos_token=names["cls_token"], eos_token=names["sep_token"])
        return dict(tokenizer_class="AlbertTokenizer", do_lower_case=s.do_lower_case,
                    remove_space=s.remove_space, keep_accents=s.keep_accents, **names)

    # ---- vocabulary --------------------------------------------------------------------------

    @property
    def kind(self) -> str:
        """'sentencepiece' or 'wordpiece'."""
        return self._backend.kind

    @property
    def vocab_size(self) -> int:
        return len(self._backend.pieces)

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        return f"Tokenizer({self.kind}, {self.path}, vocab_size={self.vocab_size})"

    @property
    def pad_token_id(self) -> int | None:
        return self._special["pad"]

    @property
    def unk_token_id(self) -> int | None:
        return self._special["unk"]

    @property
    def cls_token_id(self) -> int | None:
        return self._special["cls"]

    @property
    def sep_token_id(self) -> int | None:
        return self._special["sep"]

    @property
    def mask_token_id(self) -> int | None:
        return self._special["mask"]

    @property
    def all_special_ids(self) -> list[int]:
        return sorted({i for i in self._special.values() if i is not None})

    @property
    def fingerprint(self) -> str:
        """sha256 of the model/vocab bytes and the preprocessing settings (a cache key)."""
        if self._fingerprint is None:
            digest = hashlib.sha256(self.path.read_bytes())
            settings = json.dumps(dataclasses.asdict(self.settings), sort_keys=True)
            digest.update(f"\n{self.kind}\n{settings}".encode())
            self._fingerprint = digest.hexdigest()
        return self._fingerprint

    def convert_ids_to_tokens(self, ids: int | Iterable[int]) -> str | list[str]:
        if isinstance(ids, (int, np.integer)):
            return self._backend.pieces[self._check_id(int(ids))]
        return [self._backend.pieces[self._check_id(int(i))] for i in ids]

    def convert_tokens_to_ids(self, tokens: str | Iterable[str]) -> int | list[int]:
        if isinstance(tokens, str):
            return self._token_id(tokens)
        return [self._token_id(t) for t in tokens]

    def _token_id(self, token: str) -> int:
        found = self._backend.token_to_id(token)
        if found is not None:
            return found
        if self.unk_token_id is None:
            raise TokenizerError(f"{token!r} is not in {self.path} and it has no unknown token")
        return self.unk_token_id

    def _check_id(self, i: int) -> int:
        if not 0 <= i < self.vocab_size:
            raise TokenizerError(f"token id {i} is outside the vocabulary of {self.path} "
                                 f"(size {self.vocab_size})")
        return i

    def _special_id(self, name: str) -> int:
        found = self._special[name]
        if found is None:
            raise TokenizerError(f"{self.path} has no {name} token (looked for "
                                 f"{', '.join(_SPECIAL_NAMES[name])})")
        return found

    # ---- encoding ----------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[str]:
        """The tokens of `text` (no special tokens)."""
        return self.convert_ids_to_tokens(self._ids(_need_str(text)))

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        ids = self._ids(_need_str(text))
        return [self._special_id("cls"), *ids, self._special_id("sep")] \
            if add_special_tokens else ids

    def _ids(self, text: str) -> list[int]:
        return self._backend.batch_encode([text], 1)[0].tolist()

    def __call__(self, text: str | list[str], text_pair: str | list[str] | None = None, *,
                 add_special_tokens: bool = True, truncation: bool | str = False,
                 max_length: int | None = None,
                 return_offsets_mapping: bool = False) -> dict[str, list]:
        """transformers-style encoding; a list of texts (and pairs) gives lists of rows."""
        if isinstance(text, (list, tuple)):
            pairs = [None] * len(text) if text_pair is None else text_pair
            if len(pairs) != len(text):
                raise TokenizerError(f"{len(text)} texts but {len(pairs)} text pairs")
            rows = [self(a, b, add_special_tokens=add_special_tokens, truncation=truncation,
                         max_length=max_length, return_offsets_mapping=return_offsets_mapping)
                    for a, b in zip(text, pairs, strict=True)]
            return {key: [row[key] for row in rows] for key in (rows[0] if rows else {})}
        a, a_off = self._ids_and_offsets(_need_str(text), return_offsets_mapping)
        b, b_off = (None, None) if text_pair is None else \
            self._ids_and_offsets(_need_str(text_pair), return_offsets_mapping)
        n_special = (2 if b is None else 3) if add_special_tokens else 0
        keep_a, keep_b = _truncated_lengths(len(a), None if b is None else len(b), truncation,
                                            max_length, n_special)
        a, a_off = a[:keep_a], a_off[:keep_a]
        if b is not None:
            b, b_off = b[:keep_b], b_off[:keep_b]
        return self._assemble(a, a_off, b, b_off, add_special_tokens, return_offsets_mapping)

    def _ids_and_offsets(self, text: str, offsets: bool) -> tuple[list[int], list]:
        if offsets:
            return self._backend.encode_with_offsets(text)
        ids = self._ids(text)
        return ids, [None] * len(ids)

    def _assemble(self, a: list[int], a_off: list, b: list[int] | None, b_off: list | None,
                  add_special_tokens: bool, offsets: bool) -> dict[str, list]:
        ids, types, spans = list(a), [0] * len(a), list(a_off)
        if add_special_tokens:
            cls_id, sep_id = self._special_id("cls"), self._special_id("sep")
            ids, types, spans = [cls_id, *ids, sep_id], [0, *types, 0], [(0, 0), *spans, (0, 0)]
        if b is not None:
            tail = [*b, sep_id] if add_special_tokens else list(b)
            ids += tail
            types += [1] * len(tail)
            spans += [*b_off, (0, 0)] if add_special_tokens else list(b_off)
        out = {"input_ids": ids, "token_type_ids": types, "attention_mask": [1] * len(ids)}
        if offsets:
            out["offset_mapping"] = spans
        return out

    def encode_batch_with_word_starts(self, texts: Sequence[str], num_threads: int | None = None
                                      ) -> list[tuple[np.ndarray, np.ndarray]]:
        """(int32 ids, bool word starts) per text, no special tokens; for data building.

        A word starts at a SentencePiece piece beginning with "▁", at a WordPiece token not
        beginning with "##", and at the first token of every text.
        """
        if isinstance(texts, str):
            raise TokenizerError("encode_batch_with_word_starts takes a list of texts, got a str")
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TokenizerError(f"texts[{i}] is a {type(t).__name__}, not a str")
        if not texts:
            return []
        ids, starts, lengths = self._backend.batch_encode(texts, num_threads or self.num_threads)
        ends = np.cumsum(lengths)
        starts[(ends - lengths)[lengths > 0]] = True
        return list(zip(np.split(ids, ends[:-1]), np.split(starts, ends[:-1]), strict=True))

    # ---- decoding ----------------------------------------------------------------------------

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False) -> str:
        ids = [self._check_id(int(i)) for i in (ids.tolist() if hasattr(ids, "tolist") else ids)]
        specials = set(self.all_special_ids)
        if skip_special_tokens:
            ids = [i for i in ids if i not in specials]
        return self._backend.decode(ids, specials)


def _need_str(text: Any) -> str:
    if not isinstance(text, str):
        raise TokenizerError(f"expected text as a str, got {type(text).__name__}")
    return text


def _first_id(backend: _SentencePiece | _WordPiece, names: Sequence[str]) -> int | None:
    for name in names:
        found = backend.token_to_id(name)
        if found is not None:
            return found
    return None


_TRUNCATION = {True: "longest_first", False: "do_not_truncate", "longest_first": "longest_first",
               "only_first": "only_first", "only_second": "only_second",
               "do_not_truncate": "do_not_truncate"}


def _truncated_lengths(a: int, b: int | None, truncation: bool | str, max_length: int | None,
                       n_special: int) -> tuple[int, int]:
    """Lengths to keep of A and B; 'longest_first' removes one token at a time from the
    longer side (from B on ties), as transformers does."""
    strategy = _TRUNCATION.get(truncation) if isinstance(truncation, (bool, str)) else None
    if strategy is None:
        raise TokenizerError(f"truncation={truncation!r}: use True, False or one of "
                             "'longest_first', 'only_first', 'only_second', 'do_not_truncate'")
    b_len = b or 0
    if strategy == "do_not_truncate":
        return a, b_len
    if max_length is None:
        raise TokenizerError(f"truncation={truncation!r} needs max_length")
    budget = max_length - n_special
    excess = a + b_len - budget
    if budget < 0:
        raise TokenizerError(f"max_length={max_length} leaves no room: {n_special} special "
                             "tokens are added")
    if excess <= 0:
        return a, b_len
    if strategy == "only_first" or (strategy == "only_second" and b is None):
        if excess > a:
            raise TokenizerError(f"max_length={max_length}: cannot fit by truncating only the "
                                 f"first text (second text has {b_len} tokens)")
        return a - excess, b_len
    if strategy == "only_second":
        if excess > b_len:
            raise TokenizerError(f"max_length={max_length}: cannot fit by truncating only the "
                                 f"second text (first text has {a} tokens)")
        return a, b_len - excess
    # longest_first: first level the longer side, then alternate, B first.
    cut = min(excess, abs(a - b_len))
    a, b_len = (a - cut, b_len) if a > b_len else (a, b_len - cut)
    excess -= cut
    return a - excess // 2, b_len - (excess - excess // 2)


# ---- training --------------------------------------------------------------------------------

def train_sentencepiece(inputs: Sequence[str | Path], out_dir: str | Path, *,
                        vocab_size: int = 30000, input_sentence_size: int = 1_000_000,
                        num_threads: int | None = None,
                        user_defined_symbols: Sequence[str] = ALBERT_USER_SYMBOLS,
                        seed_sentencepiece_size: int = 1_000_000,
                        character_coverage: float = 0.99995,
                        sentence_iterator: Iterable[str] | None = None,
                        do_lower_case: bool = True, keep_accents: bool = False,
                        max_sentence_length: int = 1 << 16, seed: int = 0) -> Path:
    """Train a unigram SentencePiece model with ALBERT's layout; returns out_dir/spiece.model.

    Ids: <pad>=0, <unk>=1, [CLS]=2, [SEP]=3, [MASK]=4, then `user_defined_symbols`. Lines of
    `inputs` (text files, .gz/.bz2/.xz, or directories of them) and then the strings of
    `sentence_iterator` are preprocessed as the tokenizer will preprocess them; SentencePiece
    samples `input_sentence_size` of them at random when there are more.
    """
    import sentencepiece as spm

    if not isinstance(vocab_size, int) or vocab_size <= 5 + len(user_defined_symbols):
        raise TokenizerError(f"vocab_size={vocab_size!r} must exceed the 5 special pieces plus "
                             f"{len(user_defined_symbols)} user-defined symbols")
    files = _training_files(inputs)
    if not files and sentence_iterator is None:
        raise TokenizerError("train_sentencepiece: no inputs and no sentence_iterator")
    settings = TextSettings(do_lower_case=do_lower_case, keep_accents=keep_accents)
    sentences = _training_sentences(files, sentence_iterator, settings)
    model = io.BytesIO()
    spm.set_random_generator_seed(seed)  # the sampling of input_sentence_size sentences
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=sentences, model_writer=model, model_type="unigram",
            vocab_size=vocab_size, hard_vocab_limit=False, character_coverage=character_coverage,
            pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece="<pad>", unk_piece="<unk>",
            control_symbols=list(ALBERT_CONTROL_SYMBOLS),
            user_defined_symbols=list(user_defined_symbols),
            input_sentence_size=input_sentence_size, shuffle_input_sentence=True,
            seed_sentencepiece_size=seed_sentencepiece_size,
            max_sentence_length=max_sentence_length,
            num_threads=num_threads or os.cpu_count() or 1, minloglevel=2)
    except (RuntimeError, OSError) as err:  # the C++ trainer's status, e.g. too few characters
        raise TokenizerError(f"SentencePiece training failed: {err}") from None
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / SPIECE_NAME
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(model.getvalue())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    Tokenizer(_SentencePiece(path, settings), path).save_pretrained(out_dir)
    return path


def _training_files(inputs: Sequence[str | Path]) -> list[Path]:
    if isinstance(inputs, (str, Path)):
        inputs = [inputs]
    files: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*")
                                if p.is_file() and not p.name.startswith(".")))
        elif path.is_file():
            files.append(path)
        else:
            raise TokenizerError(f"{path}: no such training file or directory")
    return files


def _open_text(path: Path) -> io.TextIOBase:
    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(path.suffix, open)
    # A stray bad byte in a large corpus should not stop training: it becomes U+FFFD.
    return opener(path, "rt", encoding="utf-8", errors="replace")


def _training_sentences(files: list[Path], extra: Iterable[str] | None,
                        settings: TextSettings) -> Iterator[str]:
    def raw() -> Iterator[str]:
        for path in files:
            with _open_text(path) as handle:
                yield from handle
        if extra is not None:
            yield from extra

    for line in raw():
        line = preprocess_text(line, settings)
        if line:
            yield line
