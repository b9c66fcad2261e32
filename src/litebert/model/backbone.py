"""Backbones: the registry that ModelConfig.backbone names, and the protocol heads rely on.

    BACKBONES["albert"]                        the class (models/albert/model.py registers itself)
    backbone_class(config)                     the class config.backbone names, its package
                                               imported first (litebert.specs)
    build_backbone(config, add_pooling_layer)  an instance, for a head to hold at `backbone`

Every head holds its backbone at `self.backbone`, whatever the backbone: `backbone.` is the
canonical prefix of every backbone key in state dicts and training checkpoints; the family
adapters map it to each layout's own prefix on disk (`albert.`, `bert.`, ...; see
families/base.py). Everything that needs more
than the forward pass (heads, Auto classes, layer-wise lr decay, FSDP units, FLOP counts,
unrolling) goes through the `Backbone` protocol, never through a class name. What a backbone
can do beyond it is declared, not probed: its class attribute `capabilities`
(`BackboneCapabilities`: the attention layouts it takes, two streams, memories, a pooler,
embeddings another encoder can share), which callers read before relying on any of it, and
which `register_backbone` requires.

A new backbone is a model package (litebert/models/<name>/, or one of your own that calls
litebert.specs.register_spec on import) whose ModelSpec names its config class and the module
whose class is decorated with `@register_backbone("name")`; config.json's `backbone` then
selects it, and the first lookup of the name imports that module. A backbone has a
transformers layout when a family adapter lists it in its `backbones` ("albert": the albert,
bert, electra and roberta families; "xlnet": the xlnet family; "modernbert": the
modernbert family); any other is saved in litebert's own (models/litebert/adapter.py).

This module imports no backbone (the backbones import it), so anything in the package may
import it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import ClassVar, Protocol, TypeVar, cast

import torch
from torch import nn

from litebert.config import (
    BackboneConfig,
    ConfigError,
    ModelConfig,
    register_backbone_config,
)
from litebert.data.attention_choice import ATTENTIONS
from litebert.model.attention import Layout
from litebert.model.outputs import BaseModelOutput
from litebert.specs import all_specs, find_spec

FsdpUnits = list[tuple[nn.Module, bool]]  # (module, reshard_after_forward), in sharding order


@dataclass(frozen=True)
class BackboneCapabilities:
    """What a backbone class offers beyond the `Backbone` protocol, declared once as its class
    attribute `capabilities`. Each flag promises protocol members or arguments (named below);
    callers read the flag and never probe for them.

    ALBERT: every attention layout, pooler, embed_encode. XLNet: "full" only, two_stream,
    memories, a pooler on request. ModernBERT (rotary positions, no token types, local
    sliding-window layers inside its own attention, embeddings = token embeddings + norm):
    every layout, two_stream (in the "full" layout only, with its config's query_stream),
    pooler=False, embed_encode=True: positions and windows are its own business, and
    `embeds_token_types` (on the class) says that it reads no token types.
    """

    # The run option `attention` values (litebert.data.attention_layout.ATTENTIONS) whose
    # batches the backbone reads: "full" always; "document" and "unpadded" mean that forward
    # takes `document_ids=` ((B, T) documents or (N,) unpadded rows; model/attention.py).
    attentions: tuple[str, ...] = ("full",)
    # Two-stream attention (XLNet's; ModernBERT's, model/two_stream.py): forward also takes
    # perm_mask, target_mapping and target_positions, and the class offers
    # query_stream_flops_per_target (`TwoStreamBackbone`).
    two_stream: bool = False
    # forward takes `mems` and returns the next segment's; False: it refuses them and
    # returns mems=None.
    memories: bool = False
    # It can hold a pooler (`add_pooling_layer=True`); build_backbone refuses to ask one of
    # a backbone that cannot.
    pooler: bool = True
    # Its input embeddings are one module that another encoder can read (ELECTRA's generator
    # shares the discriminator's): `EmbeddingSharingBackbone`'s names, build_encoder and
    # encode_with.
    embed_encode: bool = False

    def __post_init__(self) -> None:
        unknown = [a for a in self.attentions if a not in ATTENTIONS]
        if "full" not in self.attentions or unknown:
            raise ValueError(f"BackboneCapabilities.attentions={self.attentions!r}: list "
                             f"'full' and only layouts from {', '.join(ATTENTIONS)}")

    @property
    def document_ids(self) -> bool:
        """Whether forward takes `document_ids=` (any layout but "full" needs them)."""
        return self.attentions != ("full",)


class Backbone(Protocol):
    """What a backbone offers. AlbertModel (models/albert/model.py) is the reference implementation.

    A backbone is an nn.Module (in practice a litebert.model.PreTrainedModel subclass,
    which brings init_weights, save_pretrained and from_pretrained) with a `config`, built as
    `cls(config, add_pooling_layer)`: None follows config.use_pooler, True asks for a pooler
    (the head reads pooler_output; build_backbone refuses it, in a ConfigError, for a backbone
    whose capabilities.pooler is False), False for none. A pooler lives at `pooler`, so a
    directory without one loads with it newly initialised, as for ALBERT.
    """

    config: ModelConfig
    # The dataclass of this backbone's own settings (config.backbone_config), defined in its
    # package's config.py and named by its ModelSpec; register_backbone checks that the two
    # agree (litebert.config.register_backbone_config).
    config_class: ClassVar[type[BackboneConfig]]
    # The position that summarises a sequence, for the pooler and the summary heads: 0 for
    # templates with [CLS] first (BERT-style), -1 for XLNet's `A <sep> B <sep> <cls>` with the
    # padding on the left, so that the last position is <cls> in every row.
    summary_position: ClassVar[int]
    # Whether token_type_ids index an embedding (ALBERT: one row per type, type_vocab_size
    # of them) or are only compared (XLNet's "same segment or not"): litebert.compat checks
    # that a tokenizer's type ids have rows when they index one.
    embeds_token_types: ClassVar[bool]
    capabilities: ClassVar[BackboneCapabilities]  # what it offers beyond this protocol

    def __init__(self, config: ModelConfig, add_pooling_layer: bool | None = None) -> None:
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
    def flops_per_token(cls, config: ModelConfig, seq_len: int) -> float:
        """Training FLOPs (forward + backward) per token of this backbone with `config`, at
        sequences of `seq_len`: what studies match at equal compute (model/counts.py)."""
        ...

    @classmethod
    def unrolled_config(cls, config: ModelConfig) -> ModelConfig:
        """The config of the same function with one set of weights per layer (`config` itself
        when nothing is shared); see model/unroll.py."""
        ...

    def unrolled_source(self, key: str) -> str:
        """For a key of the unrolled backbone's state dict (no `backbone.` prefix), the key of
        this backbone's state dict whose tensor it copies."""
        ...


class TwoStreamBackbone(Backbone, Protocol):
    """A backbone with capabilities.two_stream (models/xlnet/model.py's,
    models/modernbert/model.py's)."""

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                 token_type_ids: torch.Tensor | None = None,
                 position_ids: torch.Tensor | None = None, output_hidden_states: bool = False,
                 mems: tuple[torch.Tensor, ...] | None = None, use_mems: bool | None = None,
                 *, perm_mask: torch.Tensor | None = None,
                 target_mapping: torch.Tensor | None = None,
                 target_positions: torch.Tensor | None = None) -> BaseModelOutput:
        """As Backbone's, and (by keyword): perm_mask (B, T, T), 1 = query i may not see key j;
        target_mapping (B, P, T) one-hot rows or target_positions (B, P): the query stream's
        targets, whose states (B, P, H) are then last_hidden_state."""
        ...

    @classmethod
    def query_stream_flops_per_target(cls, config: ModelConfig, seq_len: int) -> float:
        """Training FLOPs of the query stream per predicted token (flops_per_token counts
        the content stream)."""
        ...


class Encoder(Protocol):
    """The layers of a backbone without its embeddings (`build_encoder`'s module)."""

    def fsdp_units(self) -> FsdpUnits:
        """As Backbone.fsdp_units, for this encoder's modules."""
        ...


class EmbeddingSharingBackbone(Backbone, Protocol):
    """A backbone with capabilities.embed_encode: embeddings, then an encoder, each a module
    of its own, so that a second encoder (ELECTRA's generator) can read these embeddings.
    Without a pooler its parameters are those two modules' alone."""

    # Attribute names, and so state-dict prefixes within the backbone, of the two modules.
    embeddings_name: ClassVar[str]
    encoder_name: ClassVar[str]

    @classmethod
    def build_encoder(cls, config: ModelConfig) -> Encoder:
        """A newly made encoder of `config` (the one this backbone holds at encoder_name,
        with the same state-dict keys), to run on these embeddings."""
        ...

    def encode_with(self, encoder: Encoder, input_ids: torch.Tensor,
                    attention_mask: torch.Tensor | None = None,
                    token_type_ids: torch.Tensor | None = None,
                    position_ids: torch.Tensor | None = None,
                    document_ids: torch.Tensor | None = None,
                    states: list | None = None) -> tuple[torch.Tensor, Layout]:
        """These embeddings of input_ids (B, T), then `encoder` (this backbone's own, or
        another from build_encoder) laid out for the batch: (last hidden state (B, T, H) of
        that encoder, the Layout). One call, not two, because the layout decides both sides:
        document positions feed the embeddings, and the encoder's dropout the kernel."""
        ...


# What each capability promises on the class, checked when it is registered.
PROMISED = {"two_stream": ("query_stream_flops_per_target",),
            "embed_encode": ("embeddings_name", "encoder_name", "build_encoder", "encode_with")}


# name -> class; filled by @register_backbone when the module defining the class is imported
# (`load_backbone` imports a spec's module on first lookup).
BACKBONES: dict[str, type[Backbone]] = {}

Cls = TypeVar("Cls", bound=type[Backbone])


def register_backbone(name: str) -> Callable[[Cls], Cls]:
    """Class decorator: config.backbone == `name` builds this class. A name already taken is
    an error (remove the old entry from BACKBONES first to replace it)."""

    def register(cls: Cls) -> Cls:
        check_capabilities(cls)
        if BACKBONES.get(name, cls) is not cls:
            raise ValueError(f"backbone {name!r} is already registered "
                             f"({BACKBONES[name].__qualname__})")
        register_backbone_config(name, cls.config_class)
        BACKBONES[name] = cls
        return cls

    return register


def check_capabilities(cls: type) -> None:
    """ValueError unless `cls` declares BackboneCapabilities and has what they promise."""
    declared = getattr(cls, "capabilities", None)  # the declaration itself, read once here
    if not isinstance(declared, BackboneCapabilities):
        raise ValueError(f"backbone class {cls.__qualname__} declares no capabilities: give "
                         f"it a class attribute `capabilities = BackboneCapabilities(...)` "
                         f"(litebert.model.backbone) saying what it offers")
    for flag, members in PROMISED.items():
        missing = [m for m in members if getattr(declared, flag) and not hasattr(cls, m)]
        if missing:
            raise ValueError(f"backbone class {cls.__qualname__} declares {flag} but lacks "
                             f"{', '.join(missing)}: add them or declare {flag}=False")


def load_backbone(name: str) -> None:
    """Import the module that registers the backbone `name`, when a spec defines it."""
    spec = find_spec(name)
    if name not in BACKBONES and spec is not None and spec.backbone_module is not None:
        importlib.import_module(spec.backbone_module)


def backbone_class(config: ModelConfig) -> type[Backbone]:
    """The class config.backbone names; ConfigError listing the registered ones otherwise."""
    load_backbone(config.backbone)
    try:
        return BACKBONES[config.backbone]
    except KeyError:
        raise ConfigError(
            f"backbone {config.backbone!r} is not registered; litebert knows "
            f"{', '.join(map(repr, all_backbones()))} (a backbone of your own comes in a "
            "model package whose ModelSpec names it: see litebert.specs)") from None


def all_backbones() -> dict[str, type[Backbone]]:
    """Every backbone: the specs' (their modules imported, in the registry's order), then
    those registered directly."""
    names = [spec.name for spec in all_specs() if spec.backbone_module is not None]
    for name in names:
        load_backbone(name)
    return {name: BACKBONES[name] for name in [*names, *BACKBONES] if name in BACKBONES}


def build_backbone(config: ModelConfig, add_pooling_layer: bool | None = None) -> Backbone:
    """A newly initialised backbone of the kind config.backbone names; ConfigError when a
    pooler is asked of one that cannot hold it."""
    cls = backbone_class(config)
    pooling = config.use_pooler if add_pooling_layer is None else add_pooling_layer
    if pooling and not cls.capabilities.pooler:
        raise ConfigError(f"backbone {config.backbone!r} has no pooler (capabilities.pooler "
                          f"is False): set use_pooler false, and a classifier_head that "
                          f"reads the summary token")
    return cls(config, add_pooling_layer=add_pooling_layer)


def backbones_with(capability: str) -> list[str]:
    """The registered backbones whose capabilities set the flag `capability`."""
    return [name for name, cls in all_backbones().items()
            if getattr(cls.capabilities, capability)]


def require_capability(config: ModelConfig, capability: str, needs: str) -> type[Backbone]:
    """The class config.backbone names when it declares the flag `capability`; else a
    ConfigError saying who needs it: `needs` is "<user> <what for>", e.g.
    "EncoderForPermutationLM predicts from a query stream"."""
    cls = backbone_class(config)
    if not getattr(cls.capabilities, capability):
        others = " or ".join(map(repr, backbones_with(capability))) or "one that declares it"
        raise ConfigError(f"{needs}, which backbone {config.backbone!r} has not: use backbone "
                          f"{others} (a backbone offers it by declaring "
                          f"capabilities.{capability})")
    return cls


def two_stream_class(config: ModelConfig, needs: str) -> type[TwoStreamBackbone]:
    """require_capability(config, "two_stream", needs), typed as what the flag promises."""
    return cast(type[TwoStreamBackbone], require_capability(config, "two_stream", needs))


def embedding_sharing_class(config: ModelConfig, needs: str) -> type[EmbeddingSharingBackbone]:
    """require_capability(config, "embed_encode", needs), typed as what the flag promises."""
    return cast(type[EmbeddingSharingBackbone],
                require_capability(config, "embed_encode", needs))


def check_attention(config: ModelConfig, attention: str) -> None:
    """ConfigError when the backbone cannot read batches laid out for the run's `attention`."""
    taken = backbone_class(config).capabilities.attentions
    if attention not in taken:
        raise ConfigError(f"attention={attention!r}: backbone {config.backbone!r} reads "
                          f"{', '.join(taken)} only (its capabilities.attentions); run with "
                          f"--attention {taken[0]}")


def backbone_of(model: nn.Module) -> Backbone:
    """The backbone of a head model (at `backbone`) or the model itself when it is one."""
    backbone = getattr(model, "backbone", model)
    if not isinstance(getattr(type(backbone), "capabilities", None), BackboneCapabilities):
        raise TypeError(f"{type(model).__name__} is neither a backbone (see "
                        "litebert.model.backbone.Backbone) nor a head holding one at `.backbone`")
    return cast(Backbone, backbone)
