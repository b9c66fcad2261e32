"""The vocabulary layouts of SentencePiece models, as data: ALBERT's and XLNet's special pieces
and their ids, user-defined symbols, default text settings, pair template and padding.

`train_sentencepiece(layout=...)` trains in one of them; a SentencePiece model read from disk
takes the layout whose [CLS]-like and [SEP]-like pieces it holds (`layout_of`), so that an
XLNet vocabulary (ours or the official one) gets XLNet's template, casing and padding.

Sources: google-research/albert (`[CLS]` 2, `[SEP]` 3, `[MASK]` 4 after `<pad>` 0 and `<unk>`
1); zihangdai/xlnet README's `spm_train` command and `data_utils.special_symbols` (`<unk>` 0
`<s>` 1 `</s>` 2 `<cls>` 3 `<sep>` 4 `<pad>` 5 `<mask>` 6 `<eod>` 7 `<eop>` 8), whose
`prepro_utils.preprocess_text` is ALBERT's with `lower=False` by default for the cased model
and accents stripped (keep_accents False), and the same "digit," re-split.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from litebert.tokenization.albert_text import ALBERT_CONTROL_SYMBOLS, ALBERT_USER_SYMBOLS
from litebert.tokenization.base import TextSettings, TokenizerError


@dataclass(frozen=True)
class SentencePieceLayout:
    """Everything that differs between ALBERT's and XLNet's SentencePiece tokenizers."""

    name: str
    # SentencePieceTrainer's ids and pieces for <unk>, <s>, </s>, <pad> (-1: none).
    trainer_ids: Mapping[str, Any]
    control_symbols: tuple[str, ...]  # never produced from text
    reserved_symbols: tuple[str, ...]  # user-defined pieces with fixed ids (XLNet's <eop>)
    text_symbols: tuple[str, ...]  # default user-defined symbols: always single pieces
    special_ids: Mapping[str, int]  # piece -> the id the trainer gives it (ids 0 .. n-1)
    cls_token: str
    sep_token: str
    settings: TextSettings  # the preprocessing a model in this layout is read with by default
    cls_last: bool  # A <sep> B <sep> <cls> (XLNet) instead of [CLS] A [SEP] B [SEP]
    pad_type_id: int  # token type of padding
    vocab_size: int  # default size when training
    # tokenizer_config.json entries beyond the special tokens found (transformers' names).
    hf_names: Mapping[str, str] = field(default_factory=dict)


ALBERT = SentencePieceLayout(
    name="albert",
    trainer_ids=dict(pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece="<pad>",
                     unk_piece="<unk>"),
    control_symbols=ALBERT_CONTROL_SYMBOLS, reserved_symbols=(), text_symbols=ALBERT_USER_SYMBOLS,
    special_ids={"<pad>": 0, "<unk>": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4},
    cls_token="[CLS]", sep_token="[SEP]",
    settings=TextSettings(do_lower_case=True, keep_accents=False),
    cls_last=False, pad_type_id=0, vocab_size=30000)

XLNET = SentencePieceLayout(
    name="xlnet",
    trainer_ids=dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1, unk_piece="<unk>", bos_piece="<s>",
                     eos_piece="</s>"),
    control_symbols=("<cls>", "<sep>", "<pad>", "<mask>", "<eod>"),
    reserved_symbols=("<eop>",),  # user-defined: "<eop>" written in the text marks a paragraph end
    text_symbols=(".", "(", ")", '"', "-", "\u2013", "\u00a3", "\u20ac"),
    special_ids={"<unk>": 0, "<s>": 1, "</s>": 2, "<cls>": 3, "<sep>": 4, "<pad>": 5,
                 "<mask>": 6, "<eod>": 7, "<eop>": 8},
    cls_token="<cls>", sep_token="<sep>",
    settings=TextSettings(do_lower_case=False, keep_accents=False),
    # Pad type 3: transformers' XLNetTokenizer and the official run_squad.py (SEG_ID_PAD).
    cls_last=True, pad_type_id=3, vocab_size=32000,
    hf_names={"bos_token": "<s>", "eos_token": "</s>"})

LAYOUTS: dict[str, SentencePieceLayout] = {layout.name: layout for layout in (ALBERT, XLNET)}


def get_layout(name: str) -> SentencePieceLayout:
    if name not in LAYOUTS:
        raise TokenizerError(f"unknown SentencePiece layout {name!r}; choose from "
                             f"{', '.join(LAYOUTS)}")
    return LAYOUTS[name]


def layout_of(has_piece: Callable[[str], bool]) -> SentencePieceLayout:
    """The layout whose cls and sep pieces the vocabulary holds; ALBERT's (cls first) for any
    other vocabulary, e.g. the sentencepiece test models with <s> and </s>."""
    return next((layout for layout in LAYOUTS.values()
                 if has_piece(layout.cls_token) and has_piece(layout.sep_token)), ALBERT)
