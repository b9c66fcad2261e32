"""`litebert.Tokenizer`: one API over every vocabulary kind (the backends in this package).

No backend turns "[CLS]", "<mask>", ... written inside raw text into special ids (the official
ALBERT and BERT code do not either; transformers does).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from litebert.cpus import usable_cpus
from litebert.files import atomic_write
from litebert.tokenization.albert_text import SPIECE_NAME
from litebert.tokenization.base import (
    ADDED_TOKENS_NAME,
    CONFIG_NAME,
    Backend,
    PairTemplate,
    TokenizerError,
    read_json,
    read_settings,
)
from litebert.tokenization.bpe import (
    BPE_SETTINGS,
    MERGES_TXT,
    VOCAB_JSON,
    ByteLevelBPEBackend,
    bpe_source,
    tokenizer_json_model,
)
from litebert.tokenization.hf_json import TOKENIZER_JSON, extra_tokens
from litebert.tokenization.sentencepiece import SentencePieceBackend
from litebert.tokenization.unigram_json import UnigramJsonBackend
from litebert.tokenization.wordpiece import VOCAB_NAME, WordPieceBackend

log = logging.getLogger("litebert")

# tokenizer_config.json's tokenizer_class -> backend, for directories with several vocabularies.
_CLASS_PREFIXES = {"sentencepiece": ("Albert", "XLNet", "T5", "Camembert"),
                   "wordpiece": ("Bert", "DistilBert", "Electra", "MobileBert"),
                   "bpe": ("Roberta", "GPT2", "Bart", "Longformer")}
_LOOKED_FOR = (f"{SPIECE_NAME} (SentencePiece), {VOCAB_NAME} (WordPiece), {VOCAB_JSON} + "
               f"{MERGES_TXT} (byte-level BPE), or a {TOKENIZER_JSON} of one of these")
# tokenizer.json's model type -> backend kind.
_JSON_MODELS = {"BPE": "bpe", "WordPiece": "wordpiece", "Unigram": "sentencepiece"}


class Tokenizer:
    """Encoding with the backend's pair template ([CLS] A [SEP] (B [SEP]), typed or, for
    ModernBERT's byte-level BPE, not; RoBERTa's <s> A </s> (</s> B </s>) or XLNet's
    A <sep> (B <sep>) <cls>), padding on the template's side, decoding, and fast batch
    encoding for data building."""

    def __init__(self, backend: Backend, path: Path):
        self._backend = backend
        self.path = path
        self.settings = backend.settings
        self.num_threads = usable_cpus()
        self._special = {name: _first_id(backend, names)
                         for name, names in backend.special_names.items()}
        self._fingerprint: str | None = None

    # ---- loading and saving ------------------------------------------------------------------

    @classmethod
    def from_pretrained(cls, directory: str | Path, **settings: Any) -> Tokenizer:
        """The vocabulary in DIR (see _LOOKED_FOR), with DIR/tokenizer_config.json if present;
        its tokenizer_class decides when there are several."""
        directory = Path(directory)
        if not directory.is_dir():
            raise TokenizerError(f"{directory}: not a directory")
        config = read_json(directory / CONFIG_NAME)
        kind, path = _find_vocabulary(directory, config)
        return cls(_backend(kind, path, config, settings, directory / CONFIG_NAME), path)

    @classmethod
    def from_file(cls, path: str | Path, **settings: Any) -> Tokenizer:
        """A bare SentencePiece model, WordPiece vocab.txt (suffix .txt), byte-level BPE
        vocab.json (merges.txt beside it), or a tokenizer.json (suffix .json) of one of these."""
        path = Path(path)
        if not path.is_file():
            raise TokenizerError(f"{path}: no such tokenizer file")
        kind = {".txt": "wordpiece", ".json": "bpe"}.get(path.suffix, "sentencepiece")
        if path.suffix == ".json":  # a vocab.json has no model: byte-level BPE
            kind = _JSON_MODELS.get(tokenizer_json_model(path), "bpe")
        return cls(_backend(kind, path, {}, settings, path), path)

    def save_pretrained(self, directory: str | Path) -> Path:
        """The backend's vocabulary files, tokenizer_config.json and tokenizer.json, which
        transformers' AutoTokenizer loads with these ids (see hf_json)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._backend.save(directory)
        specials = self._special_tokens()
        config = {**self._backend.hf_config(specials), "padding_side": self.padding_side}
        if self._backend.extra:  # transformers' own classes would rebuild the pipeline
            config["tokenizer_class"] = "PreTrainedTokenizerFast"
            self._copy_added_record(directory)
        atomic_write(directory / CONFIG_NAME,
                     json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        try:
            hf = self._backend.hf_tokenizer(specials, self._template_or_none())
        except TokenizerError as err:  # e.g. a SentencePiece char model: no equivalent
            log.warning("%s: no %s written: %s", directory, TOKENIZER_JSON, err)
            (directory / TOKENIZER_JSON).unlink(missing_ok=True)
            return directory
        atomic_write(directory / TOKENIZER_JSON, hf.to_str(pretty=True) + "\n")
        return directory

    def _copy_added_record(self, directory: Path) -> None:
        """litebert_added_tokens.json (added_tokens.py) goes along with the added words."""
        record = self.path.parent / ADDED_TOKENS_NAME
        target = directory / ADDED_TOKENS_NAME
        if record.is_file() and not (target.exists() and target.samefile(record)):
            atomic_write(target, record.read_bytes())

    def _special_tokens(self) -> dict[str, str]:
        """{"cls": "[CLS]", ...} for the special tokens the vocabulary has."""
        return {name: self._backend.pieces[i] for name, i in self._special.items()
                if i is not None}

    def _template_or_none(self) -> PairTemplate | None:
        has_both = self._special["cls"] is not None and self._special["sep"] is not None
        return self.template if has_both else None

    # ---- vocabulary --------------------------------------------------------------------------

    @property
    def kind(self) -> str:
        """'sentencepiece', 'wordpiece' or 'bpe'."""
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
    def eod_token_id(self) -> int | None:
        """XLNet's end-of-document piece <eod>; None in vocabularies without one."""
        return self._special.get("eod")

    @functools.cached_property
    def template(self) -> PairTemplate:
        """The backend's pair template: [CLS] A [SEP] B [SEP] with token types (ModernBERT's:
        without), RoBERTa's <s> A </s></s> B </s> without, or XLNet's A <sep> B <sep> <cls>
        (see PairTemplate)."""
        b = self._backend
        return PairTemplate(self._special_id("cls"), self._special_id("sep"), b.pair_separators,
                            b.typed_pairs, cls_last=b.cls_last, pad_type_id=b.pad_type_id)

    @property
    def padding_side(self) -> str:
        """"left" for XLNet's template (every row ends in <cls>), else "right"."""
        template = self._template_or_none()
        return "right" if template is None else template.padding_side

    @property
    def pad_token_type_id(self) -> int:
        """The token type of padding: 3 for XLNet's template, else 0."""
        return self._backend.pad_type_id

    @property
    def continuation_prefix(self) -> str:
        """What data building puts before a sentence that continues a document, so that its
        first word is tokenized as in running text: " " for byte-level BPE, "" otherwise."""
        return self._backend.continuation_prefix

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

    @functools.cached_property
    def word_start_ids(self) -> np.ndarray:
        """(V,) bool, read-only: the ids that begin a word wherever they stand ("▁" pieces,
        WordPiece tokens without "##", byte-level BPE tokens with "Ġ"). With "the first token
        of every text" this gives every word start encode_batch_flat reports, so a data
        directory derives them instead of storing them (litebert.data.word_starts)."""
        table = np.asarray(self._backend.word_start, dtype=np.bool_).copy()
        table.setflags(write=False)
        return table

    @property
    def fingerprint(self) -> str:
        """sha256 of everything the backend read (its model / vocabulary / merges) and the
        preprocessing settings (a cache key)."""
        if self._fingerprint is None:
            digest = hashlib.sha256(self._backend.content())
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

    def has_token(self, token: str) -> bool:
        """Whether `token` is in the vocabulary (convert_tokens_to_ids gives unk otherwise)."""
        return self._backend.token_to_id(token) is not None

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
                                 f"{', '.join(self._backend.special_names[name])})")
        return found

    # ---- encoding ----------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[str]:
        """The tokens of `text` (no special tokens)."""
        return [self._backend.pieces[i] for i in self._ids(_need_str(text))]

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        ids = self._ids(_need_str(text))
        return self.template.build(np.array(ids, dtype=np.int64))[0].tolist() \
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
        n_special = self.template.num_special(b is not None) if add_special_tokens else 0
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
        text_spans = [*a_off, *(b_off or [])]
        if add_special_tokens:  # the backend's template; special tokens span no text
            built, typed, special = self.template.build(
                np.array(a, dtype=np.int64), None if b is None else np.array(b, dtype=np.int64))
            ids, types = built.tolist(), typed.tolist()
            spans_left = iter(text_spans)
            spans = [(0, 0) if s else next(spans_left) for s in special.tolist()]
        else:
            ids, spans = [*a, *(b or [])], text_spans
            types = [0] * len(a) + [1 if self._backend.typed_pairs else 0] * len(b or [])
        out: dict[str, list] = {"input_ids": ids, "token_type_ids": types,
                                "attention_mask": [1] * len(ids)}
        if offsets:
            out["offset_mapping"] = spans
        return out

    def pad(self, rows: Sequence[dict[str, Any]], multiple_of: int = 8) -> dict[str, Any]:
        """Rows this tokenizer encoded (input_ids, token_type_ids, attention_mask, ...) as one
        batch of tensors, padded on `padding_side` with the pad id and `pad_token_type_id`
        (see litebert.padding.pad_batch)."""
        from litebert.padding import pad_batch

        if self.pad_token_id is None:
            raise TokenizerError(f"{self.path} has no pad token (looked for "
                                 f"{', '.join(self._backend.special_names['pad'])})")
        return pad_batch(rows, self.pad_token_id, multiple_of, side=self.padding_side,
                         fill={"token_type_ids": self.pad_token_type_id})

    def encode_batch_with_word_starts(self, texts: Sequence[str], num_threads: int | None = None
                                      ) -> list[tuple[np.ndarray, np.ndarray]]:
        """(int32 ids, bool word starts) per text, no special tokens; for data building.

        A word starts at a SentencePiece piece beginning with "▁", at a WordPiece token not
        beginning with "##", at a byte-level BPE token beginning with "Ġ" (a space), and at
        the first token of every text.
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


def _first_id(backend: Backend, names: Sequence[str]) -> int | None:
    return next((i for i in map(backend.token_to_id, names) if i is not None), None)


def _find_vocabulary(directory: Path, config: dict[str, Any]) -> tuple[str, Path]:
    """(backend kind, the file it reads) for a tokenizer directory: a vocabulary file, else
    its tokenizer.json (all transformers 5 saves)."""
    found = {kind: path for kind, path in (
        ("sentencepiece", directory / SPIECE_NAME), ("wordpiece", directory / VOCAB_NAME),
        ("bpe", bpe_source(directory, look_inside=False))) if path is not None and path.is_file()}
    named = str(config.get("tokenizer_class") or "")
    wanted = next((kind for kind, prefixes in _CLASS_PREFIXES.items()
                   if named.startswith(prefixes)), None)
    json_kind, words_added = _tokenizer_json_kind(directory)
    if json_kind is not None and words_added:  # only tokenizer.json holds added words
        return json_kind, directory / TOKENIZER_JSON
    if json_kind is not None and wanted not in found and json_kind not in found:
        found[json_kind] = directory / TOKENIZER_JSON  # a tokenizer.json alone, say
    if found:
        return (wanted, found[wanted]) if wanted in found else next(iter(found.items()))
    if (directory / TOKENIZER_JSON).is_file():
        raise TokenizerError(f"{directory}: {TOKENIZER_JSON} holds a "
                             f"{tokenizer_json_model(directory / TOKENIZER_JSON)} model; "
                             f"litebert reads BPE (byte-level), Unigram and WordPiece ones")
    raise TokenizerError(f"{directory}: no tokenizer files; expected {_LOOKED_FOR}")


def _tokenizer_json_kind(directory: Path) -> tuple[str | None, bool]:
    """The backend kind of DIR/tokenizer.json's model (None without one litebert reads), and
    whether it holds added words (added tokens that are not special)."""
    path = directory / TOKENIZER_JSON
    if not path.is_file():
        return None, False
    data = read_json(path)
    model = data.get("model")
    kind = _JSON_MODELS.get(str(model.get("type")) if isinstance(model, dict) else "")
    return kind, bool(extra_tokens(data))


def _backend(kind: str, path: Path, config: dict[str, Any], overrides: dict[str, Any],
             config_path: Path) -> Backend:
    if kind == "bpe":
        _check_bpe_settings(config, overrides, config_path)
        return ByteLevelBPEBackend(path)
    if kind == "wordpiece":
        return WordPieceBackend(path, read_settings(config, overrides, config_path))
    if path.suffix == ".json":
        return _unigram_json(path, config, overrides, config_path)
    # The defaults are those of the vocabulary's layout: XLNet's is cased.
    return SentencePieceBackend(
        path, lambda defaults: read_settings(config, overrides, config_path, defaults))


def _unigram_json(path: Path, config: dict[str, Any], overrides: dict[str, Any],
                  config_path: Path) -> Backend:
    """A Unigram tokenizer.json: its own pipeline decides the text rules."""
    if overrides:
        raise TokenizerError(f"{path}: text settings ({', '.join(sorted(overrides))}) do not "
                             f"apply to a {TOKENIZER_JSON}, whose pipeline decides them; "
                             f"use its {SPIECE_NAME}")
    return UnigramJsonBackend(path, read_json(path),
                              lambda defaults: read_settings(config, {}, config_path, defaults))


def _check_bpe_settings(config: dict[str, Any], overrides: dict[str, Any], source: Path) -> None:
    """Byte-level BPE reads text as it is, as RoBERTa does: no switches apply."""
    if overrides:
        raise TokenizerError(f"byte-level BPE takes no text settings (got "
                             f"{', '.join(sorted(overrides))}); it reads text as it is")
    expected = {"add_prefix_space": False, "trim_offsets": True}
    for name, value in expected.items():
        if config.get(name, value) != value:
            raise TokenizerError(f"{source}: {name}={config[name]!r} is not supported; "
                                 f"litebert's byte-level BPE is RoBERTa's ({name} {value})")
    for name, value in dataclasses.asdict(BPE_SETTINGS).items():
        if name in config and config[name] != value:
            raise TokenizerError(f"{source}: {name}={config[name]!r} does not apply to "
                                 "byte-level BPE, which reads text as it is; remove it")


_TRUNCATION = {True: "longest_first", False: "do_not_truncate", "longest_first": "longest_first",
               "only_first": "only_first", "only_second": "only_second",
               "do_not_truncate": "do_not_truncate"}


def _truncated_lengths(a: int, b: int | None, truncation: bool | str, max_length: int | None,
                       n_special: int) -> tuple[int, int]:
    """Lengths to keep of A and B, as transformers (its tokenizers library) truncates."""
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
    # As tokenizers: the named side must keep at least one token.
    if strategy == "only_second" and b is None:
        raise TokenizerError(f"truncation={truncation!r} needs a text pair")
    if strategy == "only_first":
        if excess >= a:
            raise TokenizerError(f"max_length={max_length}: cannot fit by truncating only the "
                                 f"first text (second text has {b_len} tokens)")
        return a - excess, b_len
    if strategy == "only_second":
        if excess >= b_len:
            raise TokenizerError(f"max_length={max_length}: cannot fit by truncating only the "
                                 f"second text (first text has {a} tokens)")
        return a, b_len - excess
    # longest_first, as tokenizers (so transformers) does it: cut the longer side; if both
    # must be cut, each keeps half the budget and the longer one (B on a tie) the odd token.
    # (The official BERT/ALBERT loop, one token at a time, gives the odd token to A.)
    if b is None:
        return budget, 0
    short = min(a, b_len)
    if short <= budget // 2:
        keep_short, keep_long = short, budget - short
    else:
        keep_short, keep_long = budget // 2, budget - budget // 2
    return (keep_long, keep_short) if a > b_len else (keep_short, keep_long)
