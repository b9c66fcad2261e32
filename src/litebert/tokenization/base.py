"""What every tokenizer backend shares: the error type, the text-preprocessing switches, the pair
template and the `Backend` protocol that `Tokenizer` drives."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

CONFIG_NAME = "tokenizer_config.json"
# Beside a tokenizer.json with added words: each one's id and former pieces (added_tokens.py).
ADDED_TOKENS_NAME = "litebert_added_tokens.json"


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


def read_json(path: Path) -> dict[str, Any]:
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


def read_settings(config: dict[str, Any], overrides: dict[str, Any], source: Path,
                  defaults: TextSettings | None = None) -> TextSettings:
    """TextSettings from tokenizer_config.json keys (others ignored) and keyword overrides,
    `defaults` for the rest."""
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
    return dataclasses.replace(defaults or TextSettings(), **values)


def pieces_by_id(vocab: dict[str, int], path: Path) -> list[str]:
    """Tokens by id; the ids must be 0 .. V-1, each once."""
    pieces: list[str | None] = [None] * len(vocab)
    for token, i in vocab.items():
        if not 0 <= i < len(vocab) or pieces[i] is not None:
            raise TokenizerError(f"{path}: token ids must be 0 .. {len(vocab) - 1}, each "
                                 f"once; {token!r} has id {i}")
        pieces[i] = token
    return [p for p in pieces if p is not None]


@dataclass(frozen=True)
class PairTemplate:
    """How one or two token sequences become a model input; each backend owns one.

    ALBERT, BERT:  [CLS] A [SEP] (B [SEP])        token types 0 ... 0 (1 ... 1)
    RoBERTa:       <s> A </s> (</s> B </s>)       token types all 0
    ModernBERT:    [CLS] A [SEP] (B [SEP])        token types all 0
    XLNet:         A <sep> (B <sep>) <cls>        token types 0 ... 0 (1 ... 1) 2, left padding
    """

    cls_id: int
    sep_id: int
    separators: int = 1  # separators between A and B: 1 ([SEP]) or 2 (</s></s>)
    typed_pairs: bool = True  # B and its closing separator get token type 1
    cls_last: bool = False  # XLNet: <cls> closes the input, with token type 2
    pad_type_id: int = 0  # token type of padding (XLNet's 3)

    @property
    def padding_side(self) -> str:
        """"left" when <cls> is last: the summary reads the last position, which must then be
        <cls> in every row of a batch."""
        return "left" if self.cls_last else "right"

    def parts(self, pair: bool) -> tuple[tuple[str, int], ...]:
        """The input in order as ("cls" | "sep" | "A" | "B", token type) items."""
        b_type = 1 if self.typed_pairs else 0
        body = [("A", 0), ("sep", 0)]
        if pair:
            body += [("sep", 0)] * (self.separators - 1) + [("B", b_type), ("sep", b_type)]
        return tuple([*body, ("cls", 2)] if self.cls_last else [("cls", 0), *body])

    def num_special(self, pair: bool) -> int:
        """Special tokens the template adds to one sequence (pair=False) or a pair."""
        return int(self._plans[pair][2].sum())

    def a_offset(self) -> int:
        """Position of A's first token."""
        return self._plans[False][0].index("A")

    def b_offset(self, a_len: int) -> int:
        """Position of B's first token in a pair whose A has `a_len` tokens."""
        return self._plans[True][0].index("B") - 1 + a_len  # the items before B, A as a_len

    @functools.cached_property
    def _plans(self) -> dict[bool, tuple[tuple[str, ...], np.ndarray, np.ndarray]]:
        """parts() per pair flag as item names, token types and special flags (build() is
        called once per instance when building data)."""
        plans = {}
        for pair in (False, True):
            parts = self.parts(pair)
            plans[pair] = (tuple(name for name, _ in parts),
                           np.array([kind for _, kind in parts], dtype=np.int64),
                           np.array([name in ("cls", "sep") for name, _ in parts]))
        return plans

    def build(self, a: np.ndarray, b: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, token types, special flags) as int64, int64, bool arrays of the input."""
        names, types, special = self._plans[b is not None]
        items: dict[str, Any] = {"A": a, "B": b, "cls": (self.cls_id,), "sep": (self.sep_id,)}
        arrays = [items[name] for name in names]
        lengths = [len(x) for x in arrays]
        ids = np.concatenate(arrays).astype(np.int64)  # (T,)
        return ids, np.repeat(types, lengths), np.repeat(special, lengths)


class Backend(Protocol):
    """One vocabulary kind (sentencepiece.py, wordpiece.py, bpe.py), as `Tokenizer` uses it."""

    kind: str  # "sentencepiece", "wordpiece", "bpe"
    pair_separators: int  # PairTemplate.separators
    typed_pairs: bool  # PairTemplate.typed_pairs
    cls_last: bool  # PairTemplate.cls_last
    pad_type_id: int  # PairTemplate.pad_type_id
    continuation_prefix: str  # put before a sentence that continues a document (data build)
    special_names: dict[str, tuple[str, ...]]  # "cls" -> candidate tokens, first found wins
    path: Path  # the file it was read from
    settings: TextSettings
    pieces: list[str]  # token of each id
    word_start: np.ndarray  # (V,) bool: the id begins a word wherever it stands
    extra: list[dict[str, Any]]  # added tokens that are not special (words, hf_json.extra_tokens)

    def content(self) -> bytes:
        """Everything the backend read, for the fingerprint."""
        ...

    def save(self, directory: Path) -> None:
        """Write the vocabulary files into `directory`."""
        ...

    def hf_config(self, specials: dict[str, str]) -> dict[str, Any]:
        """tokenizer_config.json; specials: {"cls": "[CLS]", ...} of the tokens present."""
        ...

    def hf_tokenizer(self, specials: dict[str, str], template: PairTemplate | None) -> Any:
        """A tokenizers.Tokenizer with the same ids (tokenizer.json); TokenizerError if none."""
        ...

    def special_mask(self) -> np.ndarray:
        """(V,) bool: ids that stand for no text."""
        ...

    def token_to_id(self, token: str) -> int | None: ...

    def batch_encode(self, texts: Sequence[str], num_threads: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All ids (int32), their word-start flags (bool) and each text's token count."""
        ...

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]: ...

    def decode(self, ids: list[int], specials: set[int]) -> str: ...


class TokenizersLibraryEncoding:
    """Encoding and decoding for the backends that a `tokenizers` pipeline runs (WordPiece,
    byte-level BPE): they set `tk` (the pipeline), `vocab` (token -> id) and `word_start`
    ((V,) bool) and inherit these."""

    tk: Any
    vocab: dict[str, int]
    word_start: np.ndarray

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def batch_encode(self, texts: Sequence[str], num_threads: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All ids (int32), their word starts and each text's token count (int64)."""
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
