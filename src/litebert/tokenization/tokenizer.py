"""`litebert.Tokenizer`: one API over every vocabulary kind (the backends in this package).

Neither backend turns "[CLS]", "[MASK]", ... written inside raw text into special ids (the
official ALBERT and BERT code do not either; transformers does).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from litebert.tokenization.albert_text import SPIECE_NAME
from litebert.tokenization.base import (
    CONFIG_NAME,
    PairTemplate,
    TokenizerError,
    read_json,
    read_settings,
)
from litebert.tokenization.sentencepiece import SentencePieceBackend
from litebert.tokenization.wordpiece import VOCAB_NAME, WordPieceBackend

# Candidate names per special token, first match wins. The sentencepiece test models have
# <s> and </s> instead of [CLS] and [SEP].
_SPECIAL_NAMES = {
    "pad": ("<pad>", "[PAD]"),
    "unk": ("<unk>", "[UNK]"),
    "cls": ("[CLS]", "<cls>", "<s>"),
    "sep": ("[SEP]", "<sep>", "</s>"),
    "mask": ("[MASK]", "<mask>"),
}


class Tokenizer:
    """[CLS] A [SEP] (B [SEP]) encoding, decoding and fast batch encoding for data building."""

    def __init__(self, backend: SentencePieceBackend | WordPieceBackend, path: Path):
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
        config = read_json(directory / CONFIG_NAME)
        text = read_settings(config, settings, directory / CONFIG_NAME)
        spiece, vocab = directory / SPIECE_NAME, directory / VOCAB_NAME
        bert = str(config.get("tokenizer_class", "")).startswith("Bert")
        if spiece.is_file() and not (bert and vocab.is_file()):
            return cls(SentencePieceBackend(spiece, text), spiece)
        if vocab.is_file():
            return cls(WordPieceBackend(vocab, text), vocab)
        raise TokenizerError(f"{directory}: no tokenizer files; expected {SPIECE_NAME} "
                             f"(SentencePiece) or {VOCAB_NAME} (WordPiece)")

    @classmethod
    def from_file(cls, path: str | Path, **settings: Any) -> Tokenizer:
        """A bare SentencePiece model or WordPiece vocab.txt (by suffix .txt)."""
        path = Path(path)
        if not path.is_file():
            raise TokenizerError(f"{path}: no such tokenizer file")
        text = read_settings({}, settings, path)
        if path.suffix == ".txt":
            return cls(WordPieceBackend(path, text), path)
        return cls(SentencePieceBackend(path, text), path)

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

    @functools.cached_property
    def template(self) -> PairTemplate:
        """The backend's pair template: [CLS] A [SEP] B [SEP] with token types, or RoBERTa's
        <s> A </s></s> B </s> without (see PairTemplate)."""
        return PairTemplate(self._special_id("cls"), self._special_id("sep"),
                            self._backend.pair_separators, self._backend.typed_pairs)

    @property
    def all_special_ids(self) -> list[int]:
        return sorted({i for i in self._special.values() if i is not None})

    @functools.cached_property
    def special_mask(self) -> np.ndarray:
        """(V,) bool, read-only: True for every id that stands for no text: the special tokens
        above plus the backend's own (SentencePiece control / unknown / unused pieces,
        WordPiece "[...]" tokens such as [unused12]). Unlike all_special_ids, which names only
        pad/unk/cls/sep/mask, this covers the whole vocabulary."""
        mask = self._backend.special_mask()
        mask[self.all_special_ids] = True
        mask.setflags(write=False)
        return mask

    @functools.cached_property
    def replacement_ids(self) -> np.ndarray:
        """(R,) int32, read-only, sorted: the ids masking may draw as random replacements,
        i.e. every id that is not in special_mask."""
        ids = np.flatnonzero(~self.special_mask).astype(np.int32)
        ids.setflags(write=False)
        return ids

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
        return [self._backend.pieces[i] for i in self._ids(_need_str(text))]

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
        if b is not None and b_off is not None:
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
        if b is not None and b_off is not None:
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


def _first_id(backend: SentencePieceBackend | WordPieceBackend, names: Sequence[str]) -> int | None:
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
