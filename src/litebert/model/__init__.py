"""ALBERT backbone, task heads and model directories."""

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
