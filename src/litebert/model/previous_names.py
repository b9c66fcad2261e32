"""The previous release's names of the generic classes, kept so that code and model
directories written for it keep working.

That release called every class `Albert*`, though a head builds on any registered backbone.
The generic classes are now `Encoder*` (a head on an encoder backbone) and `PreTrainedModel`;
`AlbertModel` stays the ALBERT backbone's name. Two things still say the old names:

- code: `litebert.AlbertForMaskedLM` and the rest are these aliases (the same class objects);
- directories in litebert's own layout, whose config.json `architectures` named our classes:
  `PREVIOUS_NAMES` maps each such name to today's (model/auto.py reads through it). A bare
  backbone was "AlbertModel" there, now families.BACKBONE_CLASS.

transformers-facing names did not change: an ALBERT-layout directory still says
AlbertForMaskedLM, a BERT one BertForMaskedLM (the family adapters' class_names).
"""

from __future__ import annotations

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
