"""litebert: ALBERT ("A Lite BERT") as a fast, complete PyTorch toolkit."""

from litebert.config import PRESETS, AlbertConfig, ConfigError
from litebert.model import (
    AlbertForMaskedLM,
    AlbertForMultipleChoice,
    AlbertForPreTraining,
    AlbertForQuestionAnswering,
    AlbertForSequenceClassification,
    AlbertForTokenClassification,
    AlbertModel,
    CheckpointError,
)
from litebert.tokenization import Tokenizer

__version__ = "0.1.0"
__all__ = [
    "PRESETS", "AlbertConfig", "AlbertForMaskedLM", "AlbertForMultipleChoice",
    "AlbertForPreTraining", "AlbertForQuestionAnswering", "AlbertForSequenceClassification",
    "AlbertForTokenClassification", "AlbertModel", "CheckpointError", "ConfigError", "Tokenizer",
]
