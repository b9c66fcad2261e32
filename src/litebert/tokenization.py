"""One tokenizer API over SentencePiece (`spiece.model`) and WordPiece (`vocab.txt`).

SentencePiece ids are those of the official ALBERT code (google-research/albert `FullTokenizer`
with `spm_model_file`): `preprocess_text`, SentencePiece, then the re-split of pieces like
"▁1990," into "▁1990" + "," (see `litebert.albert_spm`). transformers' AlbertTokenizer skips
that re-split and handles user-defined symbols differently, so it often disagrees.
WordPiece is BERT's, run by the `tokenizers` library: the ids of transformers' BertTokenizer.
Neither backend turns "[CLS]", "[MASK]", ... written inside raw text into special ids (the
official ALBERT and BERT code do not either; transformers does).

Speed: the batch path runs SentencePiece's threaded batch encoder, then applies the re-split
with a per-id table in numpy; a text is re-encoded piece by piece only when an <unk> in it may
hide text that changes the ids (rare vocabularies, see `_unknown_text_risks`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from litebert.albert_spm import (
    ALBERT_USER_SYMBOLS,
    SPIECE_NAME,
    UNDERLINE,
    TokenizerError,
    aligned_preprocess,
    is_number_comma,
    map_span,
    preprocess_batch,
    preprocess_text,
    resplit,
    split_number,
    train_sentencepiece,
)

__all__ = ["ALBERT_USER_SYMBOLS", "TextSettings", "Tokenizer", "TokenizerError",
           "preprocess_text", "train_sentencepiece"]

VOCAB_NAME = "vocab.txt"
CONFIG_NAME = "tokenizer_config.json"
# Candidate names per special token, first match wins. The sentencepiece test models have
# <s> and </s> instead of [CLS] and [SEP].
_SPECIAL_NAMES = {
    "pad": ("<pad>", "[PAD]"),
    "unk": ("<unk>", "[UNK]"),
    "cls": ("[CLS]", "<cls>", "<s>"),
    "sep": ("[SEP]", "<sep>", "</s>"),
    "mask": ("[MASK]", "<mask>"),
}


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
            if is_number_comma(piece):
                pieces = split_number(self.sp, piece)
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
            pieces = resplit(self.sp, self.sp.encode(prepared[i], out_type=str))[0]
            id_parts[i] = np.array(self.ids_of(pieces), dtype=np.int32)
            start_parts[i] = np.array([p.startswith(UNDERLINE) for p in pieces], dtype=bool)
        lengths = np.fromiter((p.size for p in id_parts), dtype=np.int64, count=len(id_parts))
        return np.concatenate(id_parts), np.concatenate(start_parts), lengths

    def ids_of(self, pieces: list[str]) -> list[int]:
        return [self.sp.piece_to_id(p) for p in pieces]

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        normalized, starts, ends = aligned_preprocess(text, self.settings)
        if not normalized:
            return [], []
        result = self.sp.encode(normalized, out_type="offset_mapping")
        pieces, spans = resplit(self.sp, result["pieces"], list(result["offsets"]))
        offsets = [map_span(b, e, normalized, starts, ends, len(text)) for b, e in spans]
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


def _supports_numpy(sp: Any) -> bool:
    try:
        return sp.encode([""], out_type="numpy") is not None
    except (ValueError, TypeError):
        return False


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
            keys = ["input_ids", "token_type_ids", "attention_mask"]
            keys += ["offset_mapping"] if return_offsets_mapping else []
            return {key: [row[key] for row in rows] for key in keys}
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
        if not texts:
            return []
        ids, starts, lengths = self.encode_batch_flat(texts, num_threads)
        ends = np.cumsum(lengths)[:-1]
        return list(zip(np.split(ids, ends), np.split(starts, ends), strict=True))

    def encode_batch_flat(self, texts: Sequence[str], num_threads: int | None = None
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """encode_batch_with_word_starts as three arrays: all ids (int32), all word starts
        (bool) and the number of tokens of each text (int64); no per-text arrays."""
        if isinstance(texts, str):
            raise TokenizerError("expected a list of texts, got one str")
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TokenizerError(f"texts[{i}] is a {type(t).__name__}, not a str")
        ids, starts, lengths = self._backend.batch_encode(texts, num_threads or self.num_threads)
        ends = np.cumsum(lengths)
        starts[(ends - lengths)[lengths > 0]] = True
        return ids, starts, lengths

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
    return next((i for i in map(backend.token_to_id, names) if i is not None), None)


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


