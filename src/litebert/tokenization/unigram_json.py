"""A SentencePiece vocabulary known only from its tokenizer.json (a Unigram model): what
transformers 5 saves for ALBERT and XLNet, without the spiece.model it was converted from.

The pipeline in the file (normalizer, pre-tokenizer, Unigram model, added tokens) is run as
it is by the tokenizers library. That is what transformers runs: its AlbertTokenizer and
XLNetTokenizer rebuild the same pipeline from tokenizer_config.json on loading, and a
PreTrainedTokenizerFast takes the file as it is. The official algorithm (sentencepiece.py)
needs the spiece.model; a directory that has one is read with it.

Special tokens, template and padding come from the vocabulary's SentencePiece layout
(layouts.py): ALBERT's [CLS] A [SEP] B [SEP], or XLNet's A <sep> B <sep> <cls>.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer as HFTokenizer

from litebert.tokenization.albert_text import UNDERLINE
from litebert.tokenization.base import (
    PairTemplate,
    TextSettings,
    TokenizerError,
    TokenizersLibraryEncoding,
    pieces_by_id,
)
from litebert.tokenization.hf_json import (
    extra_tokens,
    with_specials,
)
from litebert.tokenization.layouts import layout_of

# The parts of tokenizer.json that decide the ids of a text (the fingerprint's input).
_ENCODING_PARTS = ("normalizer", "pre_tokenizer", "model", "added_tokens")


class UnigramJsonBackend(TokenizersLibraryEncoding):
    kind = "sentencepiece"
    pair_separators = 1
    typed_pairs = True
    continuation_prefix = ""  # every text is encoded alike, wherever it sits
    special_names: dict[str, tuple[str, ...]] = {
        "pad": ("<pad>", "[PAD]"), "unk": ("<unk>", "[UNK]"), "cls": ("[CLS]", "<cls>", "<s>"),
        "sep": ("[SEP]", "<sep>", "</s>"), "mask": ("[MASK]", "<mask>"), "eod": ("<eod>",)}

    def __init__(self, path: Path, data: dict[str, Any],
                 settings: Callable[[TextSettings], TextSettings]):
        """data: the parsed tokenizer.json at `path`; settings: the text settings given the
        layout's defaults (recorded for the fingerprint; the file's pipeline applies them)."""
        self.path = path
        self.data = data
        try:
            self.tk = HFTokenizer.from_str(json.dumps(data))
        except Exception as err:  # the tokenizers library raises bare Exceptions
            raise TokenizerError(f"{path}: not a usable tokenizer.json ({err})") from None
        self.tk.no_padding()
        self.tk.no_truncation()
        self.vocab = self.tk.get_vocab(with_added_tokens=True)
        self.extra = extra_tokens(data)
        self.pieces = pieces_by_id(self.vocab, path)
        self.layout = layout_of(lambda piece: piece in self.vocab)
        self.cls_last, self.pad_type_id = self.layout.cls_last, self.layout.pad_type_id
        self.settings = settings(self.layout.settings)
        self.word_start = np.array([p.startswith(UNDERLINE) for p in self.pieces], dtype=bool)

    def content(self) -> bytes:
        """The parts of the file that decide the ids, canonically written."""
        parts = {name: self.data.get(name) for name in _ENCODING_PARTS}
        return json.dumps(parts, sort_keys=True, ensure_ascii=False).encode("utf-8")

    def save(self, directory: Path) -> None:
        """Nothing beyond tokenizer.json, which hf_tokenizer gives."""

    def hf_config(self, specials: dict[str, str]) -> dict[str, Any]:
        """A PreTrainedTokenizerFast, so that transformers runs the file as it is."""
        names = {f"{name}_token": token for name, token in specials.items()}
        if "cls" in specials and "sep" in specials:
            names.update(bos_token=specials["cls"], eos_token=specials["sep"])
        names.update(self.layout.hf_names)
        return dict(tokenizer_class="PreTrainedTokenizerFast",
                    model_input_names=["input_ids", "token_type_ids", "attention_mask"],
                    **names)

    def hf_tokenizer(self, specials: dict[str, str], template: PairTemplate | None) -> Any:
        return with_specials(self.tk, specials, template)

    def special_mask(self) -> np.ndarray:
        """(V,) bool: the special added tokens ([CLS], <pad>, ... as transformers marks them)
        and the unknown piece."""
        mask = np.zeros(len(self.pieces), dtype=bool)
        for token in self.data.get("added_tokens") or []:
            if token.get("special") and token.get("content") in self.vocab:
                mask[self.vocab[token["content"]]] = True
        unk = (self.data.get("model") or {}).get("unk_id")
        if isinstance(unk, int) and 0 <= unk < len(mask):
            mask[unk] = True
        return mask

    def decode(self, ids: list[int], specials: set[int]) -> str:
        return self.tk.decode(ids, skip_special_tokens=False)
