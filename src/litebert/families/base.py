"""The family adapter: one checkpoint family's config.json and state-dict layout.

Models are built from ModelConfig alone and name their parameters one way (ours, see
models/albert/model.py: the backbone under `backbone.`, `encoder.attentions.{n}` /
`encoder.ffns.{n}`).
`backbone.` (PREFIX) is the canonical backbone prefix whatever config.backbone names
(model/backbone.py: every head holds its backbone at `.backbone`); each adapter maps it to its
layout's prefix (`prefix`: "albert." in ALBERT's and litebert's own files, "bert.", ...), so
files keep their names. A layout says which backbones it has names for (`backbones`).
A family adapter translates at the directory boundary only, like torchtitan's
StateDictAdapter:
- config.json <-> ModelConfig, setting the structure fields to what the family builds,
- our canonical key <-> the key in the family's transformers layout,
- our class -> the family's transformers class name (absent: the family has no such model),
- key prefixes in its files that belong to heads a class may lack (ignored on load), and keys
  that repeat a tied weight.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import torch

from litebert.config import (
    DEFAULT_BACKBONE,
    STRUCTURE_FIELDS,
    ConfigError,
    ModelConfig,
    backbone_config_class,
    backbone_field_names,
    registered_backbone_configs,
)

# The name class_names give the bare backbone, whatever class config.backbone registers
# (model/auto.py resolves it); each family maps it to its XModel.
BACKBONE_CLASS = "EncoderModel"
# The canonical key prefix of a head's backbone: the attribute every head holds it at.
PREFIX = "backbone."
Pairs = tuple[tuple[str, str], ...]  # (our key prefix, their key prefix), most specific first


class FamilyAdapter(ABC):
    model_type: ClassVar[str]  # config.json's model_type
    title: ClassVar[str]  # the family's name in messages: "ALBERT", "RoBERTa", ...
    prefix: ClassVar[str]  # the backbone's key prefix under a head: "albert.", "bert.", ...
    # First parts of a bare backbone's keys (transformers saves XModel without the prefix).
    backbone_roots: ClassVar[tuple[str, ...]] = ("embeddings", "encoder", "pooler")
    class_names: ClassVar[dict[str, str]]  # our class name -> transformers' class name
    other_heads: ClassVar[tuple[str, ...]]  # prefixes (their names) of heads a class may lack
    tied_copies: ClassVar[tuple[str, ...]] = ()  # keys repeating a tied weight: never loaded
    # The backbones (config.backbone) whose parameters this layout names; None: any (ours).
    backbones: ClassVar[tuple[str, ...] | None] = ("albert",)

    # ---- config.json -----------------------------------------------------------------------

    @abstractmethod
    def config_from_dict(self, data: Mapping[str, Any], source: str) -> ModelConfig:
        """The family's config.json content -> ModelConfig (ConfigError naming `source`)."""

    @abstractmethod
    def config_to_dict(self, config: ModelConfig) -> dict[str, Any]:
        """ModelConfig -> the family's config.json content."""

    # ---- state dict ------------------------------------------------------------------------

    @abstractmethod
    def external_key(self, key: str, config: ModelConfig) -> str:
        """Our canonical key (backbone under `backbone.`) -> the family's key."""

    @abstractmethod
    def internal_key(self, key: str, config: ModelConfig) -> str | None:
        """The family's key -> our canonical key; None when no parameter of ours has it."""

    def prefix_to_file(self, key: str) -> str:
        """Our `backbone.` key under this layout's prefix; any other key as it is."""
        return rename(key, ((PREFIX, self.prefix),)) or key

    def prefix_from_file(self, key: str) -> str:
        """A key under this layout's prefix under our `backbone.`; any other as it is."""
        return rename(key, ((PREFIX, self.prefix),), reverse=True) or key

    def to_file(self, state: Mapping[str, torch.Tensor],
                config: ModelConfig) -> dict[str, torch.Tensor]:
        """Our canonical state -> the tensors a file of this family holds."""
        return {self.external_key(k, config): v for k, v in state.items()}

    def from_file(self, state: dict[str, torch.Tensor],
                  config: ModelConfig) -> dict[str, torch.Tensor]:
        """A file's tensors (their keys) without those that stand for nothing of ours."""
        return state

    # ---- what the layout holds -------------------------------------------------------------

    def cannot_hold(self, config: ModelConfig, class_name: str | None = None) -> str | None:
        """Why this family's layout cannot hold `config` (and the class), or None: a backbone
        it has no names for, else what `unsupported` says."""
        if self.backbones is not None and config.backbone not in self.backbones:
            return (f"{self.title}'s layout names the parameters of the "
                    f"{' or '.join(map(repr, self.backbones))} backbone only, not of "
                    f"backbone {config.backbone!r}")
        return self.unsupported(config, class_name)

    def unsupported(self, config: ModelConfig, class_name: str | None = None) -> str | None:
        """Why this family's layout cannot hold `config` (and the class) with the backbones
        it names, or None."""
        if class_name is not None and class_name not in self.class_names:
            return f"{self.model_type} has no equivalent of {class_name}"
        return None

    def transformers_class(self, class_name: str) -> str:
        return self.class_names.get(class_name, class_name)

    def ignorable(self, key: str) -> bool:
        """A key in a file of this family that a model may lack without error."""
        return key in self.tied_copies or key.startswith(self.other_heads)


# ---- helpers the adapters share ------------------------------------------------------------

def rename(key: str, pairs: Pairs, *, reverse: bool = False) -> str | None:
    """Swap the first matching prefix (ours -> theirs, or back); None when none matches."""
    for ours, theirs in pairs:
        old, new = (theirs, ours) if reverse else (ours, theirs)
        if key.startswith(old):
            return new + key[len(old):]
    return None


# Keys that only describe the file or the training run that wrote it.
IGNORED_KEYS = frozenset({
    "label2id", "transformers_version", "torch_dtype", "dtype", "output_past", "_name_or_path",
    "use_cache", "gradient_checkpointing", "position_embedding_type"})
SHARED_FIELDS = frozenset(f.name for f in dataclasses.fields(ModelConfig)) \
    - {"extra", "backbone_config"}
# Written by every family; the rest is the family's own.
COMMON_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
               "intermediate_size", "hidden_act", "hidden_dropout_prob",
               "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
               "initializer_range", "layer_norm_eps", "pad_token_id", "num_labels",
               "problem_type", "architectures")
_STRUCTURE_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ModelConfig)
                       if f.name in STRUCTURE_FIELDS}
# The heads' parts of every transformers family here (model/head_parts.py): the summary token
# pooled, a bias in every dense layer, norm and decoder. ModernBERT's differ.
BIASED_HEADS: dict[str, Any] = dict(classifier_pooling="cls", head_dense_bias=True,
                                    head_norm_bias=True, decoder_bias=True)


def config_fields(backbone: str) -> frozenset[str]:
    """The flat config.json names a config on `backbone` reads: the shared fields, that
    backbone's own, and every other registered backbone's (accepted at their defaults)."""
    backbone_config_class(backbone)  # ConfigError for an unregistered name
    return SHARED_FIELDS | {name for config_class in registered_backbone_configs().values()
                            for name in backbone_field_names(config_class)}


def build_config(values: Mapping[str, Any], source: str,
                 consumed: frozenset[str] | set[str] = frozenset()) -> ModelConfig:
    """ModelConfig from merged config.json values; unknown keys (not ignored, not consumed by
    the adapter) are kept in `extra` and written back on save."""
    try:
        fields = config_fields(values.get("backbone", DEFAULT_BACKBONE))
        known = {k: v for k, v in values.items() if k in fields}
        extra = {k: v for k, v in values.items()
                 if k not in fields and k not in IGNORED_KEYS and k not in consumed}
        return ModelConfig.from_fields(**known, extra=extra)
    except (ConfigError, TypeError) as err:
        raise ConfigError(f"{source}: {err}") from None


def check_encoder(data: Mapping[str, Any], source: str) -> None:
    """What no family here supports: relative positions, decoders."""
    kind = data.get("position_embedding_type", "absolute")
    if kind != "absolute":
        raise ConfigError(f"{source}: position_embedding_type={kind!r} is not supported "
                          "(only 'absolute', as in BERT, ALBERT and ELECTRA)")
    if data.get("is_decoder") or data.get("add_cross_attention"):
        raise ConfigError(f"{source}: decoder models are not supported")


def common_dict(config: ModelConfig) -> dict[str, Any]:
    out: dict[str, Any] = dict(config.extra)
    out.update({k: getattr(config, k) for k in COMMON_KEYS})
    return out


def numbering(config: ModelConfig) -> str:
    """The albert backbone's position numbering (the families that hold only that backbone
    read it; the field lives in its config, models/albert/model.py's AlbertBackboneConfig)."""
    return str(config.backbone_fields()["position_numbering"])


def heads_mismatch(config: ModelConfig) -> str | None:
    """Why `config`'s heads are not BIASED_HEADS, or None."""
    held = config.flat_fields()
    for key, value in BIASED_HEADS.items():
        if held[key] != value:
            return f"has heads with {key}={value!r}, not {held[key]!r}"
    return None


def structure_dict(config: ModelConfig) -> dict[str, Any]:
    """The structure fields that differ from ALBERT's, and the backbone's own fields that
    differ from its defaults, for layouts that do not imply them."""
    shared = {k: getattr(config, k) for k, default in _STRUCTURE_DEFAULTS.items()
              if getattr(config, k) != default}
    return {**shared, **config.backbone_fields(changed_only=True)}


def finish_dict(out: dict[str, Any], config: ModelConfig) -> dict[str, Any]:
    if config.id2label is not None:
        out["id2label"] = {str(k): v for k, v in config.id2label.items()}
        out["label2id"] = {v: k for k, v in config.id2label.items()}
    return {k: v for k, v in out.items() if v is not None}
