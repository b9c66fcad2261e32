"""The byte-level BPE backend (RoBERTa's, GPT-2's): `vocab.json` + `merges.txt`, or the BPE model
of a `tokenizer.json`, run by the `tokenizers` library as transformers' RobertaTokenizer runs it
(add_prefix_space False, trim_offsets True), so its ids and offsets are RoBERTa's.

Text is read as it is (no lower-casing, no accent removal). A word starts at a token beginning
with "Ġ" (a byte-level space) and at each text's first token. The special tokens and the pair
template are the vocabulary's flavour (bpe_flavours.py): RoBERTa's <s> A </s></s> B </s>, or
ModernBERT's [CLS] A [SEP] B [SEP], both with one token type. As in the other backends,
"<mask>" or "[MASK]" written in raw text is not the mask id (transformers makes it one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, pre_tokenizers, processors
from tokenizers.models import BPE
from tokenizers.pre_tokenizers import ByteLevel

from litebert.files import atomic_write
from litebert.tokenization.base import (
    PairTemplate,
    TextSettings,
    TokenizerError,
    TokenizersLibraryEncoding,
    pieces_by_id,
    read_json,
)
from litebert.tokenization.bpe_flavours import flavour_of
from litebert.tokenization.hf_json import (
    TOKENIZER_JSON,
    add_extra_tokens,
    add_special_tokens,
    extra_tokens,
)

VOCAB_JSON = "vocab.json"
MERGES_TXT = "merges.txt"
SPACE = "\u0120"  # "Ġ", the byte-level alphabet's space
# What the backend does to text: nothing (the switches exist for SentencePiece and WordPiece).
BPE_SETTINGS = TextSettings(do_lower_case=False, remove_space=False, keep_accents=True,
                            strip_accents=False, tokenize_chinese_chars=False)


class ByteLevelBPEBackend(TokenizersLibraryEncoding):
    kind = "bpe"
    typed_pairs = False  # RoBERTa and ModernBERT have one token type
    cls_last = False
    pad_type_id = 0
    # A sentence inside a document is encoded with the space before it, so its first word
    # is "Ġword" as in running text (fine-tuning encodes whole paragraphs), not "word".
    continuation_prefix = " "

    def __init__(self, path: Path):
        """path: a vocab.json (merges.txt beside it) or a tokenizer.json with a BPE model."""
        self.path = path
        self.settings = BPE_SETTINGS
        vocab, merges, self.added = _read(path)
        self.extra = extra_tokens(read_json(path)) if path.name == TOKENIZER_JSON else []
        self.flavour = flavour_of(lambda token: token in vocab)
        self.special_names = self.flavour.special_names
        self.pair_separators = self.flavour.pair_separators
        self.pieces = pieces_by_id(vocab, path) + [t["content"] for t in self.extra]
        self.merges = merges
        try:  # RobertaTokenizer's model: no unknown token, no dropout, no prefixes
            model = BPE(vocab, merges, dropout=None, continuing_subword_prefix="",
                        end_of_word_suffix="", fuse_unk=False)
        except Exception as err:  # tokenizers raises a bare Exception for a bad merge
            raise TokenizerError(f"{path}: not a usable BPE vocabulary ({err})") from None
        self.tk = HFTokenizer(model)
        self.tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        self.tk.decoder = decoders.ByteLevel()
        # Offsets without the "Ġ" a token starts with, as RobertaProcessing trims them.
        self.tk.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=True)
        add_extra_tokens(self.tk, self.extra, str(path))
        self.vocab = self.tk.get_vocab(with_added_tokens=True)
        self.word_start = np.array([p.startswith(SPACE) for p in self.pieces], dtype=bool)

    # ---- files --------------------------------------------------------------------------------

    def content(self) -> bytes:
        """What this backend read that matters, in one canonical form (the fingerprint's
        input): tokens, merges and the ids that stand for no text (added tokens among them).
        A vocab.json + merges.txt pair and the tokenizer.json saved from it give the same."""
        masked = np.flatnonzero(self.special_mask()).tolist()
        extra = [self.extra] if self.extra else []  # none: a fingerprint of the three parts
        return json.dumps([self.pieces, self.merges, masked, *extra],
                          ensure_ascii=False).encode("utf-8")

    def save(self, directory: Path) -> None:
        vocab = {piece: i for i, piece in enumerate(self.pieces)}
        atomic_write(directory / VOCAB_JSON, json.dumps(vocab, ensure_ascii=False) + "\n")
        merges = "".join(f"{a} {b}\n" for a, b in self.merges)
        atomic_write(directory / MERGES_TXT, "#version: 0.2\n" + merges)

    def hf_config(self, specials: dict[str, str]) -> dict[str, Any]:
        """tokenizer_config.json in the flavour's words (RobertaTokenizer's, or ModernBERT's
        PreTrainedTokenizerFast)."""
        names = {f"{name}_token": token for name, token in specials.items()}
        if self.flavour.cls_sep_are_bos_eos and "cls" in specials and "sep" in specials:
            names.update(bos_token=specials["cls"], eos_token=specials["sep"])
        return dict(tokenizer_class=self.flavour.hf_class, **self.flavour.hf_names, **names)

    def hf_tokenizer(self, specials: dict[str, str], template: PairTemplate | None) -> Any:
        """This backend's pipeline with the flavour's post-processor and special tokens."""
        hf = HFTokenizer.from_str(self.tk.to_str())
        # The mask token eats a space before it, in both flavours' released tokenizers.
        mask = [specials["mask"]] if "mask" in specials else []
        add_special_tokens(hf, [*specials.values(), *self.added], lstrip=mask)
        if template is not None:
            hf.post_processor = self.flavour.post_processor(template, specials["cls"],
                                                             specials["sep"])
        return hf

    # ---- vocabulary and encoding ---------------------------------------------------------------

    def special_mask(self) -> np.ndarray:
        """(V,) bool: True for tokens no text encodes to: those that are neither a byte nor the
        result of a merge (<s>, <pad>, </s>, <unk>, <mask>, [CLS], ..., GPT-2's
        <|endoftext|>), and the tokenizer.json's special added tokens (added words are text)."""
        made = set(ByteLevel.alphabet()) | {a + b for a, b in self.merges}
        added, words = set(self.added), {t["content"] for t in self.extra}
        return np.array([(p not in made or p in added) and p not in words for p in self.pieces],
                        dtype=bool)


# ---- reading the files -------------------------------------------------------------------------

def bpe_source(directory: Path, look_inside: bool) -> Path | None:
    """The file a byte-level BPE backend would read in `directory`: vocab.json when merges.txt
    is beside it, else (look_inside: parsing it) a tokenizer.json holding a BPE model."""
    if (directory / VOCAB_JSON).is_file() and (directory / MERGES_TXT).is_file():
        return directory / VOCAB_JSON
    path = directory / TOKENIZER_JSON
    if look_inside and path.is_file() and tokenizer_json_model(path) == "BPE":
        return path
    return None


def tokenizer_json_model(path: Path) -> str:
    """The model type of a tokenizer.json ("BPE", "Unigram", "WordPiece", ...)."""
    model = read_json(path).get("model")
    return str(model.get("type", "unknown")) if isinstance(model, dict) else "unknown"


def _read(path: Path) -> tuple[dict[str, int], list[tuple[str, str]], list[str]]:
    """(vocab, merges, added tokens) of a tokenizer.json (a JSON object with a "model") or of a
    vocab.json and the merges.txt beside it."""
    if not path.is_file():
        raise TokenizerError(f"{path}: no such file (byte-level BPE reads {VOCAB_JSON} + "
                             f"{MERGES_TXT} or {TOKENIZER_JSON})")
    data = read_json(path)
    if "model" in data:
        return _read_tokenizer_json(data, path)
    return _checked_vocab(data, path), _read_merges(path), []


def _read_merges(vocab_path: Path) -> list[tuple[str, str]]:
    path = vocab_path.with_name(MERGES_TXT)
    if not path.is_file():
        raise TokenizerError(f"{path}: no such file; byte-level BPE needs it beside "
                             f"{vocab_path.name}")
    try:
        lines = path.read_bytes().decode("utf-8").split("\n")
    except UnicodeDecodeError as err:
        raise TokenizerError(f"{path}: not UTF-8 text (byte {err.start})") from None
    merges = []
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\r")
        if not line or line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise TokenizerError(f"{path}, line {number}: expected two tokens separated by "
                                 f"one space, got {line[:60]!r}")
        merges.append((parts[0], parts[1]))
    return merges


def _read_tokenizer_json(data: dict[str, Any], path: Path
                         ) -> tuple[dict[str, int], list[tuple[str, str]], list[str]]:
    model = data.get("model")
    if not isinstance(model, dict) or model.get("type") != "BPE":
        kind = model.get("type", "no") if isinstance(model, dict) else "no"
        raise TokenizerError(f"{path}: holds a {kind} model, not byte-level BPE")
    vocab = _checked_vocab(model.get("vocab"), path)
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
              for m in model.get("merges") or []]
    if not all(len(m) == 2 and all(isinstance(t, str) for t in m) for m in merges):
        raise TokenizerError(f"{path}: model.merges must be pairs of tokens")
    added = []  # the special ones: extra_tokens() gives the others
    for token in data.get("added_tokens") or []:
        if isinstance(token, dict) and isinstance(token.get("content"), str) \
                and token.get("special", True):
            added.append(token["content"])
            if isinstance(token.get("id"), int):  # they may lie beyond the model's ids
                vocab.setdefault(token["content"], token["id"])
    return vocab, [(a, b) for a, b in merges], added


def _checked_vocab(vocab: Any, path: Path) -> dict[str, int]:
    if not isinstance(vocab, dict) or not all(isinstance(i, int) for i in vocab.values()):
        raise TokenizerError(f"{path}: the vocabulary must be a JSON object of token: id")
    missing = [c for c in ByteLevel.alphabet() if c not in vocab]
    if missing:
        raise TokenizerError(f"{path}: not a byte-level BPE vocabulary: {len(missing)} of the "
                             f"256 byte tokens are missing (e.g. {missing[0]!r})")
    return dict(vocab)
