"""The WordPiece backend (`vocab.txt`): BERT's tokenizer, run by the `tokenizers` library, so
its ids are those of transformers' BertTokenizer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, normalizers, pre_tokenizers
from tokenizers.models import WordPiece

from litebert.files import atomic_write
from litebert.tokenization.base import (
    PairTemplate,
    TextSettings,
    TokenizerError,
    TokenizersLibraryEncoding,
    pieces_by_id,
    read_json,
)
from litebert.tokenization.hf_json import (
    add_extra_tokens,
    extra_tokens,
    with_specials,
)

VOCAB_NAME = "vocab.txt"


class WordPieceBackend(TokenizersLibraryEncoding):
    kind = "wordpiece"
    pair_separators = 1  # [CLS] A [SEP] B [SEP]
    typed_pairs = True
    cls_last = False
    pad_type_id = 0
    continuation_prefix = ""  # every text is encoded alike, wherever it sits
    special_names: dict[str, tuple[str, ...]] = {
        "pad": ("[PAD]",), "unk": ("[UNK]",), "cls": ("[CLS]",), "sep": ("[SEP]",),
        "mask": ("[MASK]",)}

    def __init__(self, path: Path, settings: TextSettings):
        """path: a vocab.txt, or a tokenizer.json with a WordPiece model (transformers 5
        saves no vocab.txt; its BertTokenizer rebuilds BERT's pipeline around the
        vocabulary from tokenizer_config.json's settings, as this backend does)."""
        self.path = path
        self.settings = settings
        data = read_json(path) if path.suffix == ".json" else None
        lines = _json_vocab(data, path) if data is not None else _read_vocab_txt(path)
        # The same vocabulary gives the same bytes, whichever file it came from.
        self.vocab_bytes = "".join(f"{line}\n" for line in lines).encode("utf-8") \
            if data is not None else path.read_bytes()
        self.extra = extra_tokens(data) if data is not None else []
        self.pieces = lines + [t["content"] for t in self.extra]
        vocab = {token: i for i, token in enumerate(lines)}
        if "[UNK]" not in vocab:
            raise TokenizerError(f"{path}: a WordPiece vocabulary needs an [UNK] line")
        self.tk = HFTokenizer(WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
        self.tk.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=settings.tokenize_chinese_chars,
            strip_accents=settings.strip_accents, lowercase=settings.do_lower_case)
        self.tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        self.tk.decoder = decoders.WordPiece(prefix="##")
        add_extra_tokens(self.tk, self.extra, str(path))
        self.vocab = self.tk.get_vocab(with_added_tokens=True)
        self.word_start = np.array([not p.startswith("##") for p in self.pieces])

    # ---- files --------------------------------------------------------------------------------

    def content(self) -> bytes:
        """Everything this backend read (the fingerprint's input)."""
        if not self.extra:
            return self.vocab_bytes
        return self.vocab_bytes + json.dumps(self.extra, sort_keys=True).encode("utf-8")

    def save(self, directory: Path) -> None:
        target = directory / VOCAB_NAME
        if not (target.exists() and target.samefile(self.path)):
            atomic_write(target, self.vocab_bytes)

    def hf_config(self, specials: dict[str, str]) -> dict[str, Any]:
        s = self.settings
        return dict(tokenizer_class="BertTokenizer", do_lower_case=s.do_lower_case,
                    strip_accents=s.strip_accents, tokenize_chinese_chars=s.tokenize_chinese_chars,
                    **{f"{name}_token": token for name, token in specials.items()})

    def hf_tokenizer(self, specials: dict[str, str], template: PairTemplate | None) -> Any:
        """This backend's pipeline with BERT's post-processor and special tokens."""
        return with_specials(self.tk, specials, template)

    # ---- vocabulary and encoding ---------------------------------------------------------------

    def special_mask(self) -> np.ndarray:
        """(V,) bool: True for "[...]" tokens ([PAD] [UNK] [CLS] [SEP] [MASK] [unused12] ...),
        which BERT's vocabularies put anywhere (ids 0 and 100-103 in bert-base); no text
        tokenizes to them (BertPreTokenizer splits "[" off), so masking never draws them."""
        return np.array([len(p) > 2 and p[0] == "[" and p[-1] == "]" for p in self.pieces],
                        dtype=bool)


def _read_vocab_txt(path: Path) -> list[str]:
    """BERT's load_vocab: text mode (universal newlines), one token a line."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise TokenizerError(f"{path}: not UTF-8 text (byte {err.start})") from None
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _json_vocab(data: dict, path: Path) -> list[str]:
    """The tokens by id of a tokenizer.json's WordPiece model, the special tokens added
    beyond them included (extra_tokens gives the others)."""
    model = data.get("model")
    if not isinstance(model, dict) or not isinstance(model.get("vocab"), dict):
        raise TokenizerError(f"{path}: no WordPiece model with a vocabulary")
    vocab = dict(model["vocab"])
    for token in data.get("added_tokens") or []:
        if isinstance(token, dict) and token.get("special") and isinstance(token.get("id"), int):
            vocab.setdefault(str(token.get("content")), token["id"])
    if not all(isinstance(i, int) for i in vocab.values()):
        raise TokenizerError(f"{path}: model.vocab must map tokens to integer ids")
    return pieces_by_id(vocab, path)
