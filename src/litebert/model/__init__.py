"""Models: the backbone (`albert.py`, top to bottom in one file), task heads (`heads.py`),
replaced-token detection (`rtd.py`, ELECTRA's discriminator), output records (`outputs.py`),
weight init and save/load (`base.py`), model directories in the families' layouts (`hub.py`),
unrolling shared layers (`unroll.py`), Auto classes (`auto.py`) and parameter counts
(`counts.py`)."""

from litebert.model.albert import AlbertModel
from litebert.model.auto import (
    MODEL_CLASSES,
    AutoModel,
    AutoModelForMaskedLM,
    AutoModelForMultipleChoice,
    AutoModelForPreTraining,
    AutoModelForQuestionAnswering,
    AutoModelForReplacedTokenDetection,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
)
from litebert.model.base import AlbertPreTrainedModel
from litebert.model.heads import (
    AlbertForMaskedLM,
    AlbertForMultipleChoice,
    AlbertForPreTraining,
    AlbertForQuestionAnswering,
    AlbertForSequenceClassification,
    AlbertForTokenClassification,
)
from litebert.model.hub import CheckpointError
from litebert.model.rtd import AlbertForReplacedTokenDetection
from litebert.model.unroll import unroll

__all__ = [
    "MODEL_CLASSES", "AlbertForMaskedLM", "AlbertForMultipleChoice", "AlbertForPreTraining",
    "AlbertForQuestionAnswering", "AlbertForReplacedTokenDetection",
    "AlbertForSequenceClassification", "AlbertForTokenClassification", "AlbertModel",
    "AlbertPreTrainedModel", "AutoModel", "AutoModelForMaskedLM", "AutoModelForMultipleChoice",
    "AutoModelForPreTraining", "AutoModelForQuestionAnswering",
    "AutoModelForReplacedTokenDetection", "AutoModelForSequenceClassification",
    "AutoModelForTokenClassification", "CheckpointError", "unroll",
]
