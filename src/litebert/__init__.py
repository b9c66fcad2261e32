"""litebert: ALBERT ("A Lite BERT") and its family of encoder pre-training methods (BERT,
RoBERTa, ELECTRA, XLNet, ModernBERT) as one fast, complete PyTorch toolkit."""

import importlib
from typing import Any

# Where each top-level name lives. They are imported when first used (PEP 562), not when the
# package is: every process that imports any litebert module runs this file first, and the
# data build's worker processes, which need only numpy and the tokenizers, would otherwise
# each import torch (about 2 s and 220 MB per worker) for nothing.
_EXPORTS = {
    # A config reads its backbone's config class from the model registry (litebert.specs),
    # which imports that backbone's package on first use.
    "PRESETS": "litebert.config", "AlbertConfig": "litebert.config",
    "ModelConfig": "litebert.config", "ConfigError": "litebert.config",
    "FAMILIES": "litebert.families",
    "AlbertModel": "litebert.models.albert.model",
    "ModernBertModel": "litebert.models.modernbert.model",
    "XLNetModel": "litebert.models.xlnet.model",
    "Tokenizer": "litebert.tokenization",
    **dict.fromkeys((
        "EncoderForBeamQuestionAnswering", "EncoderForMaskedLM", "EncoderForMultipleChoice",
        "EncoderForPermutationLM", "EncoderForPreTraining", "EncoderForQuestionAnswering",
        "EncoderForReplacedTokenDetection", "EncoderForSequenceClassification",
        "EncoderForTokenClassification", "AutoModel", "AutoModelForBeamQuestionAnswering",
        "AutoModelForMaskedLM", "AutoModelForMultipleChoice", "AutoModelForPreTraining",
        "AutoModelForQuestionAnswering",
        "AutoModelForReplacedTokenDetection", "AutoModelForSequenceClassification",
        "AutoModelForTokenClassification", "CheckpointError", "unroll",
        # the previous release's names of the Encoder* classes (model/previous_names.py)
        "AlbertForBeamQuestionAnswering", "AlbertForMaskedLM", "AlbertForMultipleChoice",
        "AlbertForPermutationLM", "AlbertForPreTraining", "AlbertForQuestionAnswering",
        "AlbertForReplacedTokenDetection", "AlbertForSequenceClassification",
        "AlbertForTokenClassification"),
        "litebert.model"),
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'litebert' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__version__ = "0.1.0"
__all__ = [
    "FAMILIES", "PRESETS", "ModelConfig", "ConfigError", "Tokenizer", "CheckpointError",
    "EncoderForBeamQuestionAnswering", "EncoderForMaskedLM", "EncoderForMultipleChoice",
    "EncoderForPermutationLM", "EncoderForPreTraining", "EncoderForQuestionAnswering",
    "EncoderForReplacedTokenDetection", "EncoderForSequenceClassification",
    "EncoderForTokenClassification", "AlbertModel", "ModernBertModel", "XLNetModel",
    "AutoModel", "AutoModelForBeamQuestionAnswering", "AutoModelForMaskedLM",
    "AutoModelForMultipleChoice", "AutoModelForPreTraining", "AutoModelForQuestionAnswering",
    "AutoModelForReplacedTokenDetection", "AutoModelForSequenceClassification",
    "AutoModelForTokenClassification", "unroll",
    "AlbertConfig", "AlbertForBeamQuestionAnswering", "AlbertForMaskedLM",
    "AlbertForMultipleChoice", "AlbertForPermutationLM",
    "AlbertForPreTraining", "AlbertForQuestionAnswering", "AlbertForReplacedTokenDetection",
    "AlbertForSequenceClassification", "AlbertForTokenClassification",
]
