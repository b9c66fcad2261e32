"""Checkpoint families: one adapter per `model_type` (see base.py for what an adapter does).

    FAMILIES["albert" | "bert" | "electra" | "litebert" | "modernbert" | "roberta" | "xlnet"]

Each adapter lives in its family's model package (litebert/models/<name>/adapter.py) and is
named by its ModelSpec (litebert.specs); FAMILIES is a read-only view of the registered
specs' adapters, which loads the built-in packages on first use. This package keeps what the
adapters share: the base class, and the choice of layout.

"litebert" is our own layout for what transformers cannot represent (attention-only or
FFN-only sharing, RoBERTa's position numbering with shared layers or a pair head, a backbone
other than "albert": see config.backbone). A model is saved in its config's family when that
family's layout holds it (`layout_for`); otherwise in ALBERT's layout when that holds it
(transformers reads the backbone), else in ours.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

from litebert.config import (
    DEFAULT_MODEL_TYPE,
    ModelConfig,
    choose_layout,
    layout_named,
    layout_names,
    read_layout,
)
from litebert.families.base import BACKBONE_CLASS, FamilyAdapter


class FamilyTable(Mapping[str, FamilyAdapter]):
    """model_type -> adapter, over the registered specs (litebert.specs)."""

    def __getitem__(self, model_type: str) -> FamilyAdapter:
        if model_type not in layout_names():
            raise KeyError(model_type)
        return family(model_type)

    def __iter__(self) -> Iterator[str]:
        return iter(layout_names())

    def __len__(self) -> int:
        return len(layout_names())


FAMILIES: Mapping[str, FamilyAdapter] = FamilyTable()


def family(model_type: str) -> FamilyAdapter:
    """The adapter of `model_type`; ConfigError listing the known ones otherwise."""
    return cast(FamilyAdapter, layout_named(model_type))


def read_config_dict(data: Mapping[str, Any],
                     source: str = "<dict>") -> tuple[ModelConfig, FamilyAdapter]:
    """A config.json's content -> (config, the adapter of the layout its weights are in)."""
    config, adapter = read_layout(data, source)
    return config, cast(FamilyAdapter, adapter)


def layout_for(config: ModelConfig,
               class_name: str | None = None) -> tuple[FamilyAdapter, str | None]:
    """The adapter a model (of class `class_name`) with `config` is saved with, and why that
    is not its own family's (None when it is): ALBERT's when that holds it, else ours. When
    both fail, `why` gives both reasons (litebert.config.choose_layout)."""
    adapter, why = choose_layout(config, class_name)
    return cast(FamilyAdapter, adapter), why


__all__ = ["BACKBONE_CLASS", "DEFAULT_MODEL_TYPE", "FAMILIES", "FamilyAdapter", "family",
           "layout_for", "read_config_dict"]
