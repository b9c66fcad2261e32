"""Checkpoint families: one adapter per `model_type` (see base.py for what an adapter does).

    FAMILIES["albert" | "bert" | "electra" | "litebert" | "modernbert" | "roberta" | "xlnet"]

"litebert" is our own layout for what transformers cannot represent (attention-only or
FFN-only sharing, RoBERTa's position numbering with shared layers or a pair head, a backbone
other than "albert": see config.backbone). A model
is saved in its config's family when that family's layout holds it (`layout_for`); otherwise
in ALBERT's layout when that holds it (transformers reads the backbone), else in ours.
Importing this package installs the config.json readers and writers that
ModelConfig.from_dict / to_dict use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litebert.config import ConfigError, ModelConfig, install_formats
from litebert.families.albert import AlbertAdapter
from litebert.families.base import BACKBONE_CLASS, FamilyAdapter
from litebert.families.bert import BertAdapter
from litebert.families.electra import ElectraAdapter
from litebert.families.litebert import LitebertAdapter
from litebert.families.modernbert import ModernBertAdapter
from litebert.families.roberta import RobertaAdapter
from litebert.families.xlnet import XLNetAdapter

FAMILIES: dict[str, FamilyAdapter] = {adapter.model_type: adapter for adapter in (
    AlbertAdapter(), BertAdapter(), ElectraAdapter(), LitebertAdapter(), ModernBertAdapter(),
    RobertaAdapter(), XLNetAdapter())}
# Google's albert_config.json names no model_type.
DEFAULT_MODEL_TYPE = "albert"


def family(model_type: str) -> FamilyAdapter:
    """The adapter of `model_type`; ConfigError listing the known ones otherwise."""
    try:
        return FAMILIES[model_type]
    except KeyError:
        raise ConfigError(f"unknown model_type {model_type!r}; litebert reads "
                          f"{', '.join(map(repr, FAMILIES))}") from None


def read_config_dict(data: Mapping[str, Any],
                     source: str = "<dict>") -> tuple[ModelConfig, FamilyAdapter]:
    """A config.json's content -> (config, the adapter of the layout its weights are in)."""
    try:
        adapter = family(data.get("model_type", DEFAULT_MODEL_TYPE))
    except ConfigError as err:
        raise ConfigError(f"{source}: {err}") from None
    return adapter.config_from_dict(data, source), adapter


def layout_for(config: ModelConfig,
               class_name: str | None = None) -> tuple[FamilyAdapter, str | None]:
    """The adapter a model (of class `class_name`) with `config` is saved with, and why that
    is not its own family's (None when it is): ALBERT's when that holds it, else ours. When
    both fail, `why` gives both reasons."""
    own = family(config.model_type)
    why = own.cannot_hold(config, class_name)
    if why is None:
        return own, None
    albert = FAMILIES["albert"]
    also = None if own is albert else albert.cannot_hold(config, class_name)
    if also is None and own is not albert:
        return albert, why
    reason = why if also is None or also == why else f"{why}; ALBERT's layout: {also}"
    return FAMILIES["litebert"], reason


class _Formats:
    """config.json by model_type, for ModelConfig.from_dict / to_dict."""

    def model_types(self) -> tuple[str, ...]:
        return tuple(FAMILIES)

    def config_from_dict(self, data: Mapping[str, Any], source: str) -> ModelConfig:
        return read_config_dict(data, source)[0]

    def config_to_dict(self, config: ModelConfig) -> dict[str, Any]:
        return layout_for(config)[0].config_to_dict(config)


install_formats(_Formats())

__all__ = ["BACKBONE_CLASS", "DEFAULT_MODEL_TYPE", "FAMILIES", "FamilyAdapter", "family",
           "layout_for", "read_config_dict"]
