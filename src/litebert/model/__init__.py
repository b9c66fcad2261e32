"""Models: the backbone registry and protocol (`backbone.py`), the ALBERT backbone (`albert.py`,
top to bottom in one file; registered as "albert"), task heads on any backbone (`heads.py`;
XLNet's beam-search span head in `beam_qa.py`),
replaced-token detection (`rtd.py`, ELECTRA's discriminator), output records (`outputs.py`),
weight init and save/load (`base.py`), model directories in the families' layouts (`hub.py`),
unrolling shared layers (`unroll.py`), activation checkpointing per layer position
(`checkpointing.py`), Auto classes (`auto.py`) and parameter counts
(`counts.py`); the XLNet backbone (`xlnet.py`, registered as "xlnet") and its permutation
language model (`permutation_lm.py`); the ModernBERT backbone (`modernbert.py`, registered as
"modernbert"). The heads are `Encoder*`; their previous `Albert*` names are aliases
(`previous_names.py`)."""

from litebert.config import PRESETS, AlbertConfig, ModelConfig  # built once backbones register
from litebert.model.albert import AlbertModel  # registers the "albert" backbone
from litebert.model.auto import (
    MODEL_CLASSES,
    AutoModel,
    AutoModelForBeamQuestionAnswering,
    AutoModelForMaskedLM,
    AutoModelForMultipleChoice,
    AutoModelForPreTraining,
    AutoModelForQuestionAnswering,
    AutoModelForReplacedTokenDetection,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
)
from litebert.model.backbone import BACKBONES, Backbone, build_backbone, register_backbone
from litebert.model.base import PreTrainedModel
from litebert.model.beam_qa import EncoderForBeamQuestionAnswering
from litebert.model.checkpointing import set_activation_checkpointing
from litebert.model.heads import (
    EncoderForMaskedLM,
    EncoderForMultipleChoice,
    EncoderForPreTraining,
    EncoderForQuestionAnswering,
    EncoderForSequenceClassification,
    EncoderForTokenClassification,
)
from litebert.model.hub import CheckpointError
from litebert.model.modernbert import ModernBertModel  # registers the "modernbert" backbone
from litebert.model.permutation_lm import EncoderForPermutationLM
from litebert.model.previous_names import (
    AlbertForBeamQuestionAnswering,
    AlbertForMaskedLM,
    AlbertForMultipleChoice,
    AlbertForPermutationLM,
    AlbertForPreTraining,
    AlbertForQuestionAnswering,
    AlbertForReplacedTokenDetection,
    AlbertForSequenceClassification,
    AlbertForTokenClassification,
    AlbertPreTrainedModel,
)
from litebert.model.rtd import EncoderForReplacedTokenDetection
from litebert.model.unroll import unroll
from litebert.model.xlnet import XLNetModel  # registers the "xlnet" backbone

__all__ = [
    "PRESETS", "AlbertConfig", "ModelConfig", "BACKBONES", "MODEL_CLASSES", "Backbone",
    "build_backbone", "register_backbone",
    "EncoderForBeamQuestionAnswering", "EncoderForMaskedLM", "EncoderForMultipleChoice",
    "EncoderForPreTraining", "EncoderForQuestionAnswering", "EncoderForReplacedTokenDetection",
    "EncoderForSequenceClassification", "EncoderForTokenClassification",
    "EncoderForPermutationLM", "AlbertModel", "PreTrainedModel", "AutoModel",
    "AutoModelForBeamQuestionAnswering", "AutoModelForMaskedLM", "AutoModelForMultipleChoice",
    "AutoModelForPreTraining", "AutoModelForQuestionAnswering",
    "AutoModelForReplacedTokenDetection", "AutoModelForSequenceClassification",
    "AutoModelForTokenClassification", "CheckpointError", "ModernBertModel", "XLNetModel",
    "unroll", "set_activation_checkpointing",
    # the previous release's names (previous_names.py)
    "AlbertForBeamQuestionAnswering", "AlbertForMaskedLM", "AlbertForMultipleChoice",
    "AlbertForPermutationLM", "AlbertForPreTraining", "AlbertForQuestionAnswering",
    "AlbertForReplacedTokenDetection", "AlbertForSequenceClassification",
    "AlbertForTokenClassification", "AlbertPreTrainedModel",
]
