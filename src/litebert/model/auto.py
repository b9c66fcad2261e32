"""Auto classes: the head class for a directory, chosen from its config.json, as in transformers.

    model = litebert.AutoModelForSequenceClassification.from_pretrained("electra-dir")

Each Auto class has candidate classes, the first being the usual one. One candidate: that
class, whatever the family (every head builds on every backbone). Several (pre-training:
ALBERT/BERT's MLM + SOP/NSP, ELECTRA's replaced-token detection): the class config.json's
`architectures` names, else the first the family has (`FamilyAdapter.class_names`), so
AutoModelForPreTraining on an ELECTRA directory is the discriminator, as in transformers. A
family with none of them gets the Auto class's `fallback`: RoBERTa's pre-training model is
its masked LM (transformers' AutoModelForPreTraining gives RobertaForMaskedLM too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from litebert.config import AlbertConfig, ConfigError
from litebert.families import FAMILIES, family
from litebert.model.albert import AlbertModel
from litebert.model.base import AlbertPreTrainedModel
from litebert.model.heads import (
    AlbertForMaskedLM,
    AlbertForMultipleChoice,
    AlbertForPreTraining,
    AlbertForQuestionAnswering,
    AlbertForSequenceClassification,
    AlbertForTokenClassification,
)
from litebert.model.hub import CheckpointError, read_config
from litebert.model.rtd import AlbertForReplacedTokenDetection

MODEL_CLASSES: dict[str, type[AlbertPreTrainedModel]] = {cls.__name__: cls for cls in (
    AlbertModel, AlbertForPreTraining, AlbertForMaskedLM, AlbertForSequenceClassification,
    AlbertForTokenClassification, AlbertForMultipleChoice, AlbertForQuestionAnswering,
    AlbertForReplacedTokenDetection)}


def named_class(config: AlbertConfig) -> str | None:
    """Our class that config.architectures names (ours, or a family's transformers name)."""
    if not config.architectures:
        return None
    name = config.architectures[0]
    if name in MODEL_CLASSES:
        return name
    for adapter in FAMILIES.values():
        for ours, theirs in adapter.class_names.items():
            if theirs == name:
                return ours
    return None


def choose_class(config: AlbertConfig, candidates: tuple[str, ...],
                 fallback: str | None = None) -> type[AlbertPreTrainedModel]:
    if len(candidates) == 1:
        return MODEL_CLASSES[candidates[0]]
    named = named_class(config)
    if named in candidates:
        return MODEL_CLASSES[named]
    adapter = family(config.model_type)
    for name in candidates:
        if name in adapter.class_names:
            return MODEL_CLASSES[name]
    if fallback is not None:
        return MODEL_CLASSES[fallback]
    raise ConfigError(f"model_type {config.model_type!r} has none of {', '.join(candidates)}")


class _AutoModel:
    candidates: ClassVar[tuple[str, ...]]
    fallback: ClassVar[str | None] = None  # when the family has none of the candidates

    def __init__(self) -> None:
        raise TypeError(f"{type(self).__name__} is not instantiated: use "
                        f"{type(self).__name__}.from_pretrained(directory) or .from_config(config)")

    @classmethod
    def model_class(cls, config: AlbertConfig) -> type[AlbertPreTrainedModel]:
        return choose_class(config, cls.candidates, cls.fallback)

    @classmethod
    def from_config(cls, config: AlbertConfig) -> AlbertPreTrainedModel:
        """A newly initialised model of the class this config calls for."""
        return cls.model_class(config)(config)

    @classmethod
    def from_pretrained(cls, directory: str | Path, *, strict: bool = False,
                        **config_overrides: Any) -> AlbertPreTrainedModel:
        """Load a model directory of any family into the class its config.json calls for."""
        directory = Path(directory)
        if not directory.is_dir():
            raise CheckpointError(f"{directory}: not a directory")
        model_cls = cls.model_class(read_config(directory))
        return model_cls.from_pretrained(directory, strict=strict, **config_overrides)


class AutoModel(_AutoModel):
    candidates = ("AlbertModel",)


class AutoModelForPreTraining(_AutoModel):
    candidates = ("AlbertForPreTraining", "AlbertForReplacedTokenDetection")
    fallback = "AlbertForMaskedLM"


class AutoModelForMaskedLM(_AutoModel):
    candidates = ("AlbertForMaskedLM",)


class AutoModelForSequenceClassification(_AutoModel):
    candidates = ("AlbertForSequenceClassification",)


class AutoModelForTokenClassification(_AutoModel):
    candidates = ("AlbertForTokenClassification",)


class AutoModelForQuestionAnswering(_AutoModel):
    candidates = ("AlbertForQuestionAnswering",)


class AutoModelForMultipleChoice(_AutoModel):
    candidates = ("AlbertForMultipleChoice",)


class AutoModelForReplacedTokenDetection(_AutoModel):
    candidates = ("AlbertForReplacedTokenDetection",)


AUTO_CLASSES = (AutoModel, AutoModelForPreTraining, AutoModelForMaskedLM,
                AutoModelForSequenceClassification, AutoModelForTokenClassification,
                AutoModelForQuestionAnswering, AutoModelForMultipleChoice,
                AutoModelForReplacedTokenDetection)
