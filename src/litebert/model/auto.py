"""Auto classes: the head class for a directory, chosen from its config.json, as in transformers.

    model = litebert.AutoModelForSequenceClassification.from_pretrained("electra-dir")

Each Auto class has candidate classes, the first being the usual one. One candidate: that
class, whatever the family (every head builds on every backbone; AutoModel's candidate
stands for the class config.backbone names in the registry, model/backbone.py). Several
(pre-training: ALBERT/BERT's MLM + SOP/NSP, ELECTRA's replaced-token detection, XLNet's
permutation LM): the class config.json's
`architectures` names, else the first the family has (`FamilyAdapter.class_names`), so
AutoModelForPreTraining on an ELECTRA directory is the discriminator, as in transformers. A
family with none of them gets the Auto class's `fallback`: RoBERTa's pre-training model is
its masked LM (transformers' AutoModelForPreTraining gives RobertaForMaskedLM too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, cast

from litebert.config import DEFAULT_BACKBONE, ConfigError, ModelConfig
from litebert.families import BACKBONE_CLASS, FAMILIES, family
from litebert.model.backbone import BACKBONES, backbone_class
from litebert.model.base import PreTrainedModel
from litebert.model.beam_qa import EncoderForBeamQuestionAnswering
from litebert.model.heads import (
    EncoderForMaskedLM,
    EncoderForMultipleChoice,
    EncoderForPreTraining,
    EncoderForQuestionAnswering,
    EncoderForSequenceClassification,
    EncoderForTokenClassification,
)
from litebert.model.hub import CheckpointError, config_file, read_config
from litebert.model.permutation_lm import EncoderForPermutationLM
from litebert.model.previous_names import PREVIOUS_NAMES
from litebert.model.rtd import EncoderForReplacedTokenDetection

# Our classes by name. BACKBONE, the name the families give the bare backbone, stands for
# whichever backbone config.backbone names (see `model_class`); listed here is the default's.
BACKBONE = BACKBONE_CLASS
MODEL_CLASSES: dict[str, type[PreTrainedModel]] = {
    BACKBONE: cast(type[PreTrainedModel], BACKBONES[DEFAULT_BACKBONE])}
MODEL_CLASSES.update({cls.__name__: cls for cls in (
    EncoderForPreTraining, EncoderForMaskedLM, EncoderForSequenceClassification,
    EncoderForTokenClassification, EncoderForMultipleChoice, EncoderForQuestionAnswering,
    EncoderForReplacedTokenDetection, EncoderForBeamQuestionAnswering, EncoderForPermutationLM)})


def model_class(name: str, config: ModelConfig) -> type[PreTrainedModel]:
    """Our class called `name` (a head, or BACKBONE for config's backbone). A backbone is an
    PreTrainedModel (save_pretrained, from_pretrained), as model/backbone.py asks."""
    if name == BACKBONE:
        return cast(type[PreTrainedModel], backbone_class(config))
    return MODEL_CLASSES[name]


def named_class(config: ModelConfig) -> str | None:
    """Our class that config.architectures names (ours, the previous release's name of one,
    or a family's transformers name)."""
    if not config.architectures:
        return None
    name = PREVIOUS_NAMES.get(config.architectures[0], config.architectures[0])
    if name in MODEL_CLASSES:
        return name
    for adapter in FAMILIES.values():
        for ours, theirs in adapter.class_names.items():
            if theirs == name:
                return ours
    return None


def choose_class(config: ModelConfig, candidates: tuple[str, ...],
                 fallback: str | None = None) -> type[PreTrainedModel]:
    if len(candidates) == 1:
        return model_class(candidates[0], config)
    named = named_class(config)
    if named in candidates:
        return model_class(named, config)
    adapter = family(config.model_type)
    for name in candidates:
        if name in adapter.class_names:
            return model_class(name, config)
    if fallback is not None:
        return model_class(fallback, config)
    raise ConfigError(f"model_type {config.model_type!r} has none of {', '.join(candidates)}")


class _AutoModel:
    candidates: ClassVar[tuple[str, ...]]
    fallback: ClassVar[str | None] = None  # when the family has none of the candidates

    def __init__(self) -> None:
        raise TypeError(f"{type(self).__name__} is not instantiated: use "
                        f"{type(self).__name__}.from_pretrained(directory) or .from_config(config)")

    @classmethod
    def model_class(cls, config: ModelConfig) -> type[PreTrainedModel]:
        return choose_class(config, cls.candidates, cls.fallback)

    @classmethod
    def from_config(cls, config: ModelConfig) -> PreTrainedModel:
        """A newly initialised model of the class this config calls for."""
        return cls.model_class(config)(config)

    @classmethod
    def from_pretrained(cls, directory: str | Path, *, strict: bool = False,
                        **config_overrides: Any) -> PreTrainedModel:
        """Load a model directory of any family into the class its config.json calls for."""
        directory = Path(directory)
        if not directory.is_dir():
            raise CheckpointError(f"{directory}: not a directory")
        config = read_config(directory)
        try:
            model_cls = cls.model_class(config)
        except ConfigError as err:  # e.g. a backbone nothing registered
            raise ConfigError(f"{config_file(directory)}: {err}") from None
        return model_cls.from_pretrained(directory, strict=strict, **config_overrides)


class AutoModel(_AutoModel):
    candidates = (BACKBONE,)


class AutoModelForPreTraining(_AutoModel):
    candidates = ("EncoderForPreTraining", "EncoderForReplacedTokenDetection",
                  "EncoderForPermutationLM")
    fallback = "EncoderForMaskedLM"


class AutoModelForMaskedLM(_AutoModel):
    candidates = ("EncoderForMaskedLM",)


class AutoModelForSequenceClassification(_AutoModel):
    candidates = ("EncoderForSequenceClassification",)


class AutoModelForTokenClassification(_AutoModel):
    candidates = ("EncoderForTokenClassification",)


class AutoModelForQuestionAnswering(_AutoModel):
    candidates = ("EncoderForQuestionAnswering",)


class AutoModelForBeamQuestionAnswering(_AutoModel):
    """XLNet's span head with its answer classifier (XLNetForQuestionAnswering)."""

    candidates = ("EncoderForBeamQuestionAnswering",)


class AutoModelForMultipleChoice(_AutoModel):
    candidates = ("EncoderForMultipleChoice",)


class AutoModelForReplacedTokenDetection(_AutoModel):
    candidates = ("EncoderForReplacedTokenDetection",)


AUTO_CLASSES = (AutoModel, AutoModelForPreTraining, AutoModelForMaskedLM,
                AutoModelForSequenceClassification, AutoModelForTokenClassification,
                AutoModelForQuestionAnswering, AutoModelForBeamQuestionAnswering,
                AutoModelForMultipleChoice, AutoModelForReplacedTokenDetection)
