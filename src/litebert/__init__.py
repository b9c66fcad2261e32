"""litebert: ALBERT ("A Lite BERT") as a fast, complete PyTorch toolkit."""

from litebert.config import PRESETS, AlbertConfig, ConfigError
from litebert.families import FAMILIES
from litebert.model import (
    AlbertForMaskedLM,
    AlbertForMultipleChoice,
    AlbertForPermutationLM,
    AlbertForPreTraining,
    AlbertForQuestionAnswering,
    AlbertForReplacedTokenDetection,
    AlbertForSequenceClassification,
    AlbertForTokenClassification,
    AlbertModel,
    AutoModel,
    AutoModelForMaskedLM,
    AutoModelForMultipleChoice,
    AutoModelForPreTraining,
    AutoModelForQuestionAnswering,
    AutoModelForReplacedTokenDetection,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    CheckpointError,
    XLNetModel,
    unroll,
)
from litebert.tokenization import Tokenizer

__version__ = "0.1.0"
__all__ = [
    "FAMILIES", "PRESETS", "AlbertConfig", "AlbertForMaskedLM", "AlbertForMultipleChoice",
    "AlbertForPreTraining", "AlbertForQuestionAnswering", "AlbertForReplacedTokenDetection",
    "AlbertForSequenceClassification", "AlbertForTokenClassification", "AlbertModel",
    "AutoModel", "AutoModelForMaskedLM", "AutoModelForMultipleChoice",
    "AutoModelForPreTraining", "AutoModelForQuestionAnswering",
    "AutoModelForReplacedTokenDetection", "AutoModelForSequenceClassification",
    "AutoModelForTokenClassification", "CheckpointError", "ConfigError", "Tokenizer", "unroll",
    "AlbertForPermutationLM", "XLNetModel",
]
