"""Models: the backbone registry and protocol (`backbone.py`), task heads on any backbone
(`heads.py`; XLNet's beam-search span head in `beam_qa.py`), replaced-token detection
(`rtd.py`, ELECTRA's discriminator), output records (`outputs.py`),
weight init and save/load (`base.py`), model directories in the families' layouts (`hub.py`),
unrolling shared layers (`unroll.py`), activation checkpointing per layer position
(`checkpointing.py`), Auto classes (`auto.py`) and parameter counts
(`counts.py`), the permutation language model (`permutation_lm.py`), and the parts that more
than one backbone builds from (`attention.py`, `layers.py`, `rope.py`, `two_stream.py`). The
backbones themselves live in their model packages (litebert/models/<name>/model.py), which
the registry imports when a config names them. The heads are `Encoder*`; their previous
`Albert*` names are aliases (`previous_names.py`)."""

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

__all__ = [
    "BACKBONES", "MODEL_CLASSES", "Backbone",
    "build_backbone", "register_backbone",
    "EncoderForBeamQuestionAnswering", "EncoderForMaskedLM", "EncoderForMultipleChoice",
    "EncoderForPreTraining", "EncoderForQuestionAnswering", "EncoderForReplacedTokenDetection",
    "EncoderForSequenceClassification", "EncoderForTokenClassification",
    "EncoderForPermutationLM", "PreTrainedModel", "AutoModel",
    "AutoModelForBeamQuestionAnswering", "AutoModelForMaskedLM", "AutoModelForMultipleChoice",
    "AutoModelForPreTraining", "AutoModelForQuestionAnswering",
    "AutoModelForReplacedTokenDetection", "AutoModelForSequenceClassification",
    "AutoModelForTokenClassification", "CheckpointError",
    "unroll", "set_activation_checkpointing",
    # the previous release's names (previous_names.py)
    "AlbertForBeamQuestionAnswering", "AlbertForMaskedLM", "AlbertForMultipleChoice",
    "AlbertForPermutationLM", "AlbertForPreTraining", "AlbertForQuestionAnswering",
    "AlbertForReplacedTokenDetection", "AlbertForSequenceClassification",
    "AlbertForTokenClassification", "AlbertPreTrainedModel",
]
