"""The flavours of byte-level BPE vocabularies, as data: which special tokens they hold, where
training puts them, the pair template, and what tokenizer.json and tokenizer_config.json say.

Both flavours encode text alike (the same byte-level BPE, "Ġ" word starts, one token type);
they differ only around the text:

RoBERTa     <s> A </s></s> B </s>   <s>=0 <pad>=1 </s>=2 <unk>=3, bytes, merges, <mask> last
ModernBERT  [CLS] A [SEP] B [SEP]   bytes, merges, then [UNK] [CLS] [SEP] [PAD] [MASK]

`train_bpe(flavour=...)` trains in one of them; a vocabulary read from disk takes the flavour
whose cls and sep tokens it holds (`flavour_of`), RoBERTa's when none matches (GPT-2's
vocabulary, say).

Sources: fairseq's RoBERTa dictionary order and transformers' RobertaTokenizer; ModernBERT
(Warner et al. 2024): its config's ids (cls 50281, sep 50282, pad 50283 after [UNK] 50280,
[MASK] 50284, all after the OLMo merges) and its tokenizer.json, a TemplateProcessing of
[CLS] A [SEP] (B [SEP]) loaded by transformers as PreTrainedTokenizerFast.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from litebert.tokenization.base import PairTemplate, TokenizerError
from litebert.tokenization.hf_json import byte_level_template_processing, roberta_processing

# Builds the tokenizer.json post-processor from the template and the cls and sep tokens.
PostProcessor = Callable[[PairTemplate, str, str], Any]


@dataclass(frozen=True)
class BPEFlavour:
    """Everything that differs between RoBERTa's and ModernBERT's byte-level BPE tokenizers."""

    name: str
    tokens: Mapping[str, str]  # "cls" -> "<s>", ...: the special tokens by role
    leading: tuple[str, ...]  # roles given ids 0, 1, ... by training, before the 256 bytes
    trailing: tuple[str, ...]  # roles given the last ids by training, after the merges
    pair_separators: int  # separators between A and B (PairTemplate.separators)
    vocab_size: int  # default size when training
    post_processor: PostProcessor
    hf_class: str  # tokenizer_config.json's tokenizer_class
    cls_sep_are_bos_eos: bool  # tokenizer_config.json names cls and sep bos and eos too
    # tokenizer_config.json entries beyond the special tokens (transformers' names).
    hf_names: Mapping[str, Any] = field(default_factory=dict)

    @property
    def special_names(self) -> dict[str, tuple[str, ...]]:
        """Backend.special_names: one candidate token per role."""
        return {role: (token,) for role, token in self.tokens.items()}


ROBERTA = BPEFlavour(
    name="roberta",
    tokens={"cls": "<s>", "pad": "<pad>", "sep": "</s>", "unk": "<unk>", "mask": "<mask>"},
    leading=("cls", "pad", "sep", "unk"), trailing=("mask",),
    pair_separators=2, vocab_size=50265, post_processor=roberta_processing,
    hf_class="RobertaTokenizer", cls_sep_are_bos_eos=True,
    hf_names={"add_prefix_space": False, "trim_offsets": True, "errors": "replace"})

MODERNBERT = BPEFlavour(
    name="modernbert",
    tokens={"cls": "[CLS]", "pad": "[PAD]", "sep": "[SEP]", "unk": "[UNK]", "mask": "[MASK]"},
    leading=(), trailing=("unk", "cls", "sep", "pad", "mask"),
    # 50368: ModernBERT's vocabulary size (its OLMo merges and specials, padded to 64s).
    pair_separators=1, vocab_size=50368, post_processor=byte_level_template_processing,
    # ModernBERT's own tokenizer_config.json: no token types among the model inputs.
    hf_class="PreTrainedTokenizerFast", cls_sep_are_bos_eos=False,
    hf_names={"model_input_names": ["input_ids", "attention_mask"]})

FLAVOURS: dict[str, BPEFlavour] = {flavour.name: flavour for flavour in (ROBERTA, MODERNBERT)}


def get_flavour(name: str) -> BPEFlavour:
    if name not in FLAVOURS:
        raise TokenizerError(f"unknown byte-level BPE flavour {name!r}; choose from "
                             f"{', '.join(FLAVOURS)}")
    return FLAVOURS[name]


def flavour_of(has_token: Callable[[str], bool]) -> BPEFlavour:
    """The flavour whose cls and sep tokens the vocabulary holds; RoBERTa's for any other."""
    return next((flavour for flavour in FLAVOURS.values()
                 if has_token(flavour.tokens["cls"]) and has_token(flavour.tokens["sep"])),
                ROBERTA)
