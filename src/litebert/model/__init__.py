"""Models: the ALBERT/BERT backbone (`albert.py`, top to bottom in one file), task heads
(`heads.py`), output records (`outputs.py`), weight init and save/load (`base.py`), model
directories in transformers' layouts (`hub.py`) and parameter counts (`counts.py`)."""

from litebert.model.albert import AlbertModel
from litebert.model.base import AlbertPreTrainedModel
from litebert.model.heads import (
    MODEL_CLASSES,
    AlbertForMaskedLM,
    AlbertForMultipleChoice,
    AlbertForPreTraining,
    AlbertForQuestionAnswering,
    AlbertForSequenceClassification,
    AlbertForTokenClassification,
)
from litebert.model.hub import CheckpointError

__all__ = [
    "MODEL_CLASSES", "AlbertForMaskedLM", "AlbertForMultipleChoice", "AlbertForPreTraining",
    "AlbertForQuestionAnswering", "AlbertForSequenceClassification",
    "AlbertForTokenClassification", "AlbertModel", "AlbertPreTrainedModel", "CheckpointError",
]
