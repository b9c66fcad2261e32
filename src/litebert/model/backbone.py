"""Backbones: the registry that AlbertConfig.backbone names, and the protocol heads rely on.

    BACKBONES["albert"]                        the class (model/albert.py registers itself)
    build_backbone(config, add_pooling_layer)  an instance, for a head to hold at `albert`

Every head holds its backbone at `self.albert`, whatever the backbone: `albert.` is the
canonical prefix of every backbone key in state dicts, checkpoints and the family adapters
(see families/base.py), so it stays that name for any backbone. Everything that needs more
than the forward pass (heads, Auto classes, layer-wise lr decay, FSDP units, FLOP counts,
unrolling) goes through the `Backbone` protocol, never through a class name. A new backbone
is one module whose class is decorated with `@register_backbone("name")`, imported by
litebert/model/__init__.py (a class outside the package registers the same way before the
model is built); config.json's `backbone` then selects it. A backbone has a transformers
layout when a family adapter lists it in its `backbones` ("albert": the albert, bert,
electra and roberta families; "xlnet": the xlnet family); any other is saved in litebert's
own (families/litebert.py).

This module imports no backbone (the backbones import it), so anything in the package may
import it; importing it runs litebert/model/__init__.py first, which registers ours.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import ClassVar, Protocol, TypeVar, cast

import torch
from torch import nn

from litebert.config import (
    AlbertConfig,
    BackboneConfig,
    ConfigError,
    register_backbone_config,
)
from litebert.model.outputs import BaseModelOutput

DEFAULT_BACKBONE = "albert"
FsdpUnits = list[tuple[nn.Module, bool]]  # (module, reshard_after_forward), in sharding order


class Backbone(Protocol):
    """What a backbone offers. AlbertModel (model/albert.py) is the reference implementation.

    A backbone is an nn.Module (in practice a litebert.model.AlbertPreTrainedModel subclass,
    which brings init_weights, save_pretrained and from_pretrained) with a `config`, built as
    `cls(config, add_pooling_layer)`: None follows config.use_pooler, True asks for a pooler
    (the head reads pooler_output; a backbone that cannot have one raises ConfigError saying
    so), False for none. A pooler lives at `pooler`, so a directory without one loads with it
    newly initialised, as for ALBERT.
    """

    config: AlbertConfig
    # The dataclass of this backbone's own settings (config.backbone_config), defined in its
    # module; registered with the backbone (litebert.config.register_backbone_config).
    config_class: ClassVar[type[BackboneConfig]]
    # The position that summarises a sequence, for the pooler and the summary heads: 0 for
    # templates with [CLS] first (BERT-style), -1 for XLNet's `A <sep> B <sep> <cls>` with the
    # padding on the left, so that the last position is <cls> in every row.
    summary_position: ClassVar[int]
    # Whether token_type_ids index an embedding (ALBERT: one row per type, type_vocab_size
    # of them) or are only compared (XLNet's "same segment or not"): litebert.compat checks
    # that a tokenizer's type ids have rows when they index one.
    embeds_token_types: ClassVar[bool]

    def __init__(self, config: AlbertConfig, add_pooling_layer: bool | None = None) -> None:
        ...

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                 token_type_ids: torch.Tensor | None = None,
                 position_ids: torch.Tensor | None = None, output_hidden_states: bool = False,
                 mems: tuple[torch.Tensor, ...] | None = None,
                 use_mems: bool | None = None) -> BaseModelOutput:
        """input_ids (B, T); attention_mask (B, T), 1 = token, 0 = pad; token_type_ids and
        position_ids (B, T), None for the backbone's own (a backbone without token types or
        absolute positions ignores them); mems: what the previous segment's forward returned
        as `mems` (one tensor per layer, e.g. (M, B, H)), None for none; use_mems: whether to
        return memories for the next segment, None for the backbone's default (XLNet's:
        when config.mem_len > 0). The task heads pass False: fine-tuning has no memories,
        whatever mem_len a pre-trained config kept.

        Returns BaseModelOutput: last_hidden_state (B, T, H); pooler_output (B, H) when the
        backbone has a pooler, else None; hidden_states (L + 1 tensors (B, T, H)) with
        output_hidden_states; mems for the next segment, None for a backbone that keeps none."""
        ...

    def parameters(self, recurse: bool = True) -> Iterator[nn.Parameter]:
        """nn.Module's: every trained tensor of the backbone."""
        ...

    @property
    def input_embeddings(self) -> torch.Tensor:
        """The (V, E) word-embedding weight; the MLM head's decoder is tied to it."""
        ...

    def layer_depths(self) -> tuple[list[tuple[nn.Module | nn.Parameter, int]], int]:
        """(parts, L) for layer-wise lr decay (tasks/layer_decay.py): each submodule (or a
        parameter held by the backbone itself, e.g. XLNet's mask embedding) with its depth,
        and L, the layer positions. Depth 0 = the input side (embeddings, projections), k + 1
        = layer position k (0 <= k < L), L + 2 = level with the task head (a pooler). Every
        backbone parameter must be covered."""
        ...

    def fsdp_units(self) -> FsdpUnits:
        """The submodules FSDP shards on their own, before the root, with
        reshard_after_forward: False for a module applied at several depths (gathered once
        per forward, not once per use)."""
        ...

    @classmethod
    def flops_per_token(cls, config: AlbertConfig, seq_len: int) -> float:
        """Training FLOPs (forward + backward) per token of this backbone with `config`, at
        sequences of `seq_len`: what studies match at equal compute (model/counts.py)."""
        ...

    @classmethod
    def unrolled_config(cls, config: AlbertConfig) -> AlbertConfig:
        """The config of the same function with one set of weights per layer (`config` itself
        when nothing is shared); see model/unroll.py."""
        ...

    def unrolled_source(self, key: str) -> str:
        """For a key of the unrolled backbone's state dict (no `albert.` prefix), the key of
        this backbone's state dict whose tensor it copies."""
        ...


BACKBONES: dict[str, type[Backbone]] = {}  # name -> class; filled by @register_backbone

Cls = TypeVar("Cls", bound=type[Backbone])


def register_backbone(name: str) -> Callable[[Cls], Cls]:
    """Class decorator: config.backbone == `name` builds this class. A name already taken is
    an error (remove the old entry from BACKBONES first to replace it)."""

    def register(cls: Cls) -> Cls:
        if BACKBONES.get(name, cls) is not cls:
            raise ValueError(f"backbone {name!r} is already registered "
                             f"({BACKBONES[name].__qualname__})")
        register_backbone_config(name, cls.config_class)
        BACKBONES[name] = cls
        return cls

    return register


def backbone_class(config: AlbertConfig) -> type[Backbone]:
    """The class config.backbone names; ConfigError listing the registered ones otherwise."""
    try:
        return BACKBONES[config.backbone]
    except KeyError:
        raise ConfigError(
            f"backbone {config.backbone!r} is not registered; litebert knows "
            f"{', '.join(map(repr, BACKBONES))} (a backbone of your own is registered with "
            "litebert.model.backbone.register_backbone before the model is built)") from None


def build_backbone(config: AlbertConfig, add_pooling_layer: bool | None = None) -> Backbone:
    """A newly initialised backbone of the kind config.backbone names."""
    return backbone_class(config)(config, add_pooling_layer=add_pooling_layer)


def backbone_of(model: nn.Module) -> Backbone:
    """The backbone of a head model (at `albert`) or the model itself when it is one."""
    backbone = getattr(model, "albert", model)
    if not all(hasattr(backbone, name) for name in ("layer_depths", "fsdp_units",
                                                    "summary_position")):
        raise TypeError(f"{type(model).__name__} is neither a backbone (see "
                        "litebert.model.backbone.Backbone) nor a head holding one at `.albert`")
    return cast(Backbone, backbone)
