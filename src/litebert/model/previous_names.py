"""The previous release's names of the generic classes and of the heads' backbone, kept so
that code, model directories and training checkpoints written for it keep working.

That release called every class `Albert*`, though a head builds on any registered backbone.
The generic classes are `Encoder*` (a head on an encoder backbone) and `PreTrainedModel`;
`AlbertModel` stays the ALBERT backbone's name. Two things still say the old names:

- code: `litebert.AlbertForMaskedLM` and the rest are these aliases (the same class objects);
- directories in litebert's own layout, whose config.json `architectures` named our classes:
  `PREVIOUS_NAMES` maps each such name to today's (model/auto.py reads through it). A bare
  backbone was "AlbertModel" there, now families.BACKBONE_CLASS.

transformers-facing names did not change: an ALBERT-layout directory still says
AlbertForMaskedLM, a BERT one BertForMaskedLM (the family adapters' class_names).

Heads held their backbone at `albert`, so a training checkpoint of that release (the model's
own parameter names: model.safetensors, a sharded checkpoint's keys and its optimizer's
parameter names) says `albert.` where the live model says `backbone.`: `current_key` and
`previous_key` translate one name, `rename_tree` a whole state dict in place
(litebert.train.checkpoint reads through them). Exported directories never changed: the
family adapters write each layout's own prefix (families/base.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from litebert.families import BACKBONE_CLASS
from litebert.model.base import PreTrainedModel
from litebert.model.beam_qa import EncoderForBeamQuestionAnswering
from litebert.model.heads import (
    EncoderForMaskedLM,
    EncoderForMultipleChoice,
    EncoderForPreTraining,
    EncoderForQuestionAnswering,
    EncoderForSequenceClassification,
    EncoderForTokenClassification,
    MaskedLMHead,
    SentencePairHead,
)
from litebert.model.permutation_lm import EncoderForPermutationLM
from litebert.model.rtd import EncoderForReplacedTokenDetection

AlbertPreTrainedModel = PreTrainedModel
AlbertForPreTraining = EncoderForPreTraining
AlbertForMaskedLM = EncoderForMaskedLM
AlbertForSequenceClassification = EncoderForSequenceClassification
AlbertForTokenClassification = EncoderForTokenClassification
AlbertForMultipleChoice = EncoderForMultipleChoice
AlbertForQuestionAnswering = EncoderForQuestionAnswering
AlbertForReplacedTokenDetection = EncoderForReplacedTokenDetection
AlbertForBeamQuestionAnswering = EncoderForBeamQuestionAnswering
AlbertForPermutationLM = EncoderForPermutationLM
AlbertMLMHead = MaskedLMHead
AlbertSOPHead = SentencePairHead

# An old `architectures` name -> today's class name (our layout's; see the docstring).
PREVIOUS_NAMES: dict[str, str] = {"AlbertModel": BACKBONE_CLASS} | {
    cls.__name__.replace("Encoder", "Albert", 1): cls.__name__ for cls in (
        EncoderForPreTraining, EncoderForMaskedLM, EncoderForSequenceClassification,
        EncoderForTokenClassification, EncoderForMultipleChoice, EncoderForQuestionAnswering,
        EncoderForReplacedTokenDetection, EncoderForBeamQuestionAnswering,
        EncoderForPermutationLM)}

_PREVIOUS_SEGMENT = re.compile(r"(^|\.)albert\.")  # the backbone's attribute, any depth
_CURRENT_SEGMENT = re.compile(r"(^|\.)backbone\.")


def current_key(key: str) -> str:
    """A parameter name of the previous release (`discriminator.albert.x`) -> today's
    (`discriminator.backbone.x`); today's names come back unchanged."""
    return _PREVIOUS_SEGMENT.sub(r"\1backbone.", key)


def previous_key(key: str) -> str:
    """Today's parameter name -> the previous release's (current_key's inverse)."""
    return _CURRENT_SEGMENT.sub(r"\1albert.", key)


def holds_previous_names(keys: set[str]) -> bool:
    """Whether the keys (a checkpoint's) name the backbone the previous release's way."""
    return any(_PREVIOUS_SEGMENT.search(k) for k in keys)


def rename_tree(tree: Any, rename: Callable[[str], str]) -> None:
    """Rename in place every string key of the nested dicts and every string in the lists
    of `tree` (a DCP state dict: model tensors by name, optimizer state by name and its
    param groups' `params` lists of names); the containers stay the same objects, so what
    holds one of them sees the new names."""
    if isinstance(tree, dict):
        for key in list(tree):
            value = tree.pop(key)
            rename_tree(value, rename)
            tree[rename(key) if isinstance(key, str) else key] = value
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            if isinstance(value, str):
                tree[i] = rename(value)
            else:
                rename_tree(value, rename)
