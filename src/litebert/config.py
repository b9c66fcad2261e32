"""ModelConfig: the typed description every model is built from, and the backbones' own configs.

Field names follow transformers' configs (ALBERT's where families differ) so a `config.json`
reads and writes without translation. The config has two parts:
- the shared fields every backbone reads: vocabulary, sizes, depth, dropout, the ALBERT options
  that apply to any backbone (`embedding_size` with `embedding_projection`: factorised
  embeddings; `num_hidden_groups`, `inner_group_num` and `sharing`: cross-layer sharing), the
  task heads' structure and the labels;
- `backbone_config`: the settings only one backbone reads, a dataclass that the backbone's
  package defines (a `BackboneConfig` subclass in litebert/models/<name>/config.py) and names
  in its ModelSpec (litebert.specs). XLNet's memories and relative positions, ALBERT's
  position numbering and ModernBERT's attention pattern live there, so no backbone validates
  another's settings and a new backbone adds none here.

On disk a config is flat, as transformers writes it: `from_fields` (and `from_preset`,
`replace`) take the backbone's fields by their plain names and route them into
`backbone_config`; `flat_fields` gives them back. A field of another backbone is accepted at
its default (files of the previous release carried every structure field) and refused
otherwise.

The fields that are ours:
- `sharing`: which parts of a layer are shared across depth (the paper's ablation, Table 4).
  "all" is transformers' grouping; "attention" / "ffn" share only that part and have no
  transformers equivalent; "none" gives every layer its own weights.
- `model_type`: the checkpoint family whose layout a model directory is written in (see
  litebert.families). It decides file names only: the structure is in the fields.
- `backbone`: which registered backbone the heads are built on (litebert.model.backbone):
  "albert" under the albert, bert, electra and roberta families, "xlnet" under the xlnet
  family; litebert's own layout holds any.
- structure: `embedding_projection`, `use_pooler`, `classifier_head`, `classifier_act`,
  `mlm_act` (documented on the dataclass). A family's adapter sets them when it reads that
  family's config.json; their defaults are ALBERT's.
- the task heads' parts (model/head_parts.py builds the heads from them): `classifier_pooling`,
  `head_dense_bias`, `head_norm_bias`, `decoder_bias`; defaults are every family's but
  ModernBERT's, and layouts write them only when they differ.

`AlbertConfig` is the name of the previous release, kept as an alias of ModelConfig.

This module reads the model registry (litebert.specs) and nothing above it: a backbone's
config class, the presets and the config.json layout of a model_type are its spec's, whose
package is imported on first lookup. Reading a config.json imports the packages of the
families it names (their adapters) and no nn.Module.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from litebert.specs import OWN_LAYOUT, PresetTable, all_specs, find_spec

ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu", "swish", "tanh")
SHARING = ("all", "attention", "ffn", "none")
EMBEDDING_PROJECTIONS = ("always", "when_sizes_differ", "never")
# Sequence classifiers (ModelConfig.classifier_head): ALBERT/BERT's, ELECTRA/RoBERTa's, XLNet's,
# ModernBERT's.
CLASSIFIER_HEADS = ("pooler", "first_token", "summary", "pooled_norm")
# The task heads' parts (model/head_parts.py): ModelConfig.classifier_pooling, the biases.
CLASSIFIER_POOLINGS = ("cls", "mean")
HEAD_FIELDS = ("classifier_pooling", "head_dense_bias", "head_norm_bias", "decoder_bias")
# The shared structure fields and their defaults (ALBERT's); family adapters read and write
# them, with the backbone config's fields (`flat_fields`).
STRUCTURE_FIELDS = ("backbone", "embedding_projection", "use_pooler", "classifier_head",
                    "classifier_act", "mlm_act") + HEAD_FIELDS


class ConfigError(ValueError):
    """An invalid configuration; the message names the field and the fix."""


class ConfigLayout(Protocol):
    """What this module needs of a family adapter (litebert.families.FamilyAdapter, which a
    ModelSpec holds): config.json both ways, and whether its layout holds a config."""

    model_type: str

    def config_from_dict(self, data: Mapping[str, Any], source: str) -> ModelConfig: ...

    def config_to_dict(self, config: ModelConfig) -> dict[str, Any]: ...

    def cannot_hold(self, config: ModelConfig, class_name: str | None = None) -> str | None: ...


B = TypeVar("B", bound="BackboneConfig")


@dataclass
class BackboneConfig:
    """The settings of one backbone, beside the shared fields (a backbone with none uses this
    class as it is). A subclass lives in its backbone's package (its config.py), names its
    fields as transformers' config.json does, checks them in `validate` and is named by the
    package's ModelSpec (litebert.specs)."""

    def validate(self, config: ModelConfig) -> None:
        """Raise ConfigError naming the field when this config cannot hold with `config`'s
        shared fields. Called by ModelConfig after its own checks."""

    def max_sequence_length(self, config: ModelConfig) -> int:
        """The most tokens one input may hold (the backbone's position table's reach)."""
        return config.max_position_embeddings

    @classmethod
    def of(cls: type[B], config: ModelConfig) -> B:
        """`config.backbone_config` as this class: what a backbone's own code reads."""
        held = config.backbone_config
        if not isinstance(held, cls):
            raise ConfigError(f"backbone {config.backbone!r} has a "
                              f"{type(held).__name__}, not the {cls.__name__} asked for")
        return held

    def need(self, ok: bool, name: str, why: str) -> None:
        if not ok:
            raise ConfigError(f"{type(self).__name__}.{name}={getattr(self, name)!r}: {why}")


# Backbone name -> its config class: the specs' (filled on lookup) and those registered by
# register_backbone for a backbone class that no spec defines.
BACKBONE_CONFIGS: dict[str, type[BackboneConfig]] = {}


def register_backbone_config(name: str, config_class: type[BackboneConfig]) -> None:
    """The backbone `name` reads `config_class` (litebert.model.backbone.register_backbone
    calls this with the class's `config_class`). A name already taken by another class, a
    spec's included, is an error."""
    known = backbone_config_of_spec(name) or BACKBONE_CONFIGS.get(name, config_class)
    if known is not config_class:
        raise ValueError(f"backbone {name!r} already has the config {known.__qualname__}")
    BACKBONE_CONFIGS[name] = config_class


def backbone_config_of_spec(name: str) -> type[BackboneConfig] | None:
    """The config class of the backbone that the package registered as `name` defines."""
    spec = find_spec(name)
    return None if spec is None else spec.backbone_config


def backbone_config_class(name: str) -> type[BackboneConfig]:
    """The config class of the backbone `name`; ConfigError when none is registered."""
    if name not in BACKBONE_CONFIGS:
        found = backbone_config_of_spec(name)
        if found is None:
            known = registered_backbone_configs()
            raise ConfigError(
                f"backbone {name!r} is not registered; litebert knows "
                f"{', '.join(map(repr, known))} (a backbone of your own comes in a model "
                "package whose ModelSpec names it: see litebert.specs)")
        BACKBONE_CONFIGS[name] = found
    return BACKBONE_CONFIGS[name]


def registered_backbone_configs() -> dict[str, type[BackboneConfig]]:
    """Every backbone's config class by name: every spec's (in the registry's order), then
    those registered directly."""
    specs = {spec.name: spec.backbone_config for spec in all_specs()
             if spec.backbone_config is not None}
    for name, config_class in specs.items():
        BACKBONE_CONFIGS.setdefault(name, config_class)
    return {name: BACKBONE_CONFIGS[name] for name in [*specs, *BACKBONE_CONFIGS]}


def backbone_field_names(config_class: type[BackboneConfig]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(config_class))


@dataclass
class ModelConfig:
    # Defaults are albert-base (v2); `from_preset` gives the other sizes.
    vocab_size: int = 30000
    embedding_size: int = 128
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu_new"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    classifier_dropout_prob: float = 0.1
    pad_token_id: int = 0
    bos_token_id: int = 2
    eos_token_id: int = 3
    sharing: str = "all"
    model_type: str = "albert"
    # ---- structure (ours; defaults are ALBERT's) ----
    # The backbone under the heads, a name in litebert.model.backbone.BACKBONES. Three have
    # transformers layouts: "albert" (the embeddings -> shared layers -> pooler of
    # models/albert/model.py, which also builds BERT, ELECTRA and RoBERTa: those four
    # families), "xlnet" (models/xlnet/model.py: the xlnet family) and "modernbert"
    # (models/modernbert/model.py: the modernbert family). One that no family lists in its
    # `backbones` is saved in litebert's own layout.
    backbone: str = "albert"
    # The E->H linear after the embeddings: "always" (ALBERT, even when E == H),
    # "when_sizes_differ" (ELECTRA: only if embedding_size != hidden_size), "never" (BERT;
    # needs embedding_size == hidden_size).
    embedding_projection: str = "always"
    # The backbone's tanh(dense(h[:, 0])) pooler (ALBERT, BERT, RoBERTa); ELECTRA has none.
    # Heads that read it (pre-training's SOP/NSP, a "pooler" classifier) build it whatever
    # this says; heads that do not (MLM, tokens, spans, "first_token") leave it out.
    use_pooler: bool = True
    # Sequence classification: "pooler" = dropout + linear on the pooled output (ALBERT, BERT;
    # needs use_pooler); "first_token" = h[:, 0] -> dropout -> dense H->H -> classifier_act ->
    # dropout -> out_proj (ELECTRA with gelu; RoBERTa with tanh, which keeps its pooler for
    # multiple choice only); "summary" = XLNet's sequence summary: the summary token -> dense
    # H->H -> classifier_act -> dropout -> classifier; "pooled_norm" = ModernBERT's: the
    # pooled token (classifier_pooling) -> dense H->H -> classifier_act -> LayerNorm -> dropout
    # -> classifier, with the same transform before the token and span classifiers. Multiple
    # choice reads the pooler when there is one, else the same dense + classifier_act on the
    # summary token; with "pooled_norm" it reads its own head, pooler or not. The heads are
    # built from these fields by model/head_parts.py.
    classifier_head: str = "pooler"
    classifier_act: str = "gelu"
    # The MLM head's activation; None = hidden_act (ALBERT, BERT). ELECTRA's generator head
    # and RoBERTa's LM head use exact "gelu" whatever hidden_act says.
    mlm_act: str | None = None
    # ---- the task heads' parts (model/head_parts.py); ModernBERT's need non-defaults ----
    # What a classifier that does not read the pooler pools of the hidden states (transformers'
    # ModernBERT name and values): "cls" = the summary token (multiple choice with
    # "pooled_norm": the first unpadded token, as ModernBERT), "mean" = the mean over the
    # attention mask. classifier_head "pooler" reads the pooler: "cls" only.
    classifier_pooling: str = "cls"
    # Biases of the heads' transforms: the dense layer (MLM head, classifiers' dense or
    # summary, the discriminator's dense; ModernBERT's classifier_bias) and the LayerNorm (MLM
    # head, "pooled_norm"; ModernBERT's norm_bias, for its heads), and the MLM decoder's own
    # bias (ModernBERT's decoder_bias). True everywhere but in ModernBERT (false, false, true).
    head_dense_bias: bool = True
    head_norm_bias: bool = True
    decoder_bias: bool = True
    # Task heads (transformers' names).
    num_labels: int = 2
    id2label: dict[int, str] | None = None
    problem_type: str | None = None
    architectures: list[str] | None = None
    # The backbone's own settings (its module's BackboneConfig subclass); None: its defaults.
    backbone_config: BackboneConfig = None  # type: ignore[assignment]  # set in __post_init__
    extra: dict[str, Any] = field(default_factory=dict, repr=False)  # unknown keys, kept on save

    def __post_init__(self) -> None:
        if self.id2label is not None:
            self.id2label = {int(k): str(v) for k, v in self.id2label.items()}
            self.num_labels = len(self.id2label)
        self._need(isinstance(self.backbone, str) and bool(self.backbone), "backbone",
                   "must be the name of a registered backbone, e.g. 'albert'")
        wanted = backbone_config_class(self.backbone)
        if self.backbone_config is None:
            self.backbone_config = wanted()
        self._need(type(self.backbone_config) is wanted, "backbone_config",
                   f"backbone {self.backbone!r} reads a {wanted.__name__}")
        self._validate()

    def _need(self, ok: bool, name: str, why: str) -> None:
        if not ok:
            raise ConfigError(f"ModelConfig.{name}={getattr(self, name)!r}: {why}")

    def _validate(self) -> None:
        need = self._need
        for name in ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                     "num_hidden_groups", "inner_group_num", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size",
                     "num_labels"):
            value = getattr(self, name)
            need(isinstance(value, int) and value > 0, name, "must be a positive integer")
        need(self.hidden_size % self.num_attention_heads == 0, "hidden_size",
             f"must be divisible by num_attention_heads={self.num_attention_heads}")
        need(self.num_hidden_layers % self.num_hidden_groups == 0, "num_hidden_groups",
             f"must divide num_hidden_layers={self.num_hidden_layers}")
        need(self.hidden_act in ACTIVATIONS, "hidden_act", f"unknown; choose from {ACTIVATIONS}")
        need(self.sharing in SHARING, "sharing", f"unknown; choose from {SHARING}")
        known = layout_names()
        need(self.model_type in known, "model_type", f"unknown; choose from {known}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob",
                     "classifier_dropout_prob"):
            need(0.0 <= getattr(self, name) < 1.0, name, "must be in [0, 1)")
        need(self.initializer_range > 0, "initializer_range", "must be positive")
        need(self.layer_norm_eps > 0, "layer_norm_eps", "must be positive")
        need(isinstance(self.pad_token_id, int) and 0 <= self.pad_token_id < self.vocab_size,
             "pad_token_id", f"must be an id below vocab_size={self.vocab_size}")
        self._validate_structure()

    def _validate_structure(self) -> None:
        need = self._need
        need(self.embedding_projection in EMBEDDING_PROJECTIONS, "embedding_projection",
             f"unknown; choose from {EMBEDDING_PROJECTIONS}")
        if self.embedding_projection == "never":
            need(self.embedding_size == self.hidden_size, "embedding_size",
                 f"embedding_projection='never' (no E->H projection, as in BERT) needs "
                 f"embedding_size == hidden_size={self.hidden_size}")
        need(isinstance(self.use_pooler, bool), "use_pooler", "must be true or false")
        need(self.classifier_head in CLASSIFIER_HEADS, "classifier_head",
             f"unknown; choose from {CLASSIFIER_HEADS}")
        need(self.classifier_head != "pooler" or self.use_pooler, "classifier_head",
             "'pooler' reads the pooled output: it needs use_pooler=True (or use "
             "'first_token')")
        need(self.classifier_act in ACTIVATIONS, "classifier_act",
             f"unknown; choose from {ACTIVATIONS}")
        need(self.mlm_act is None or self.mlm_act in ACTIVATIONS, "mlm_act",
             f"unknown; choose from {ACTIVATIONS} or null (= hidden_act)")
        self._validate_heads()
        self.backbone_config.validate(self)

    def _validate_heads(self) -> None:
        need = self._need
        need(self.classifier_pooling in CLASSIFIER_POOLINGS, "classifier_pooling",
             f"unknown; choose from {CLASSIFIER_POOLINGS}")
        need(self.classifier_pooling == "cls" or self.classifier_head != "pooler",
             "classifier_pooling", "classifier_head 'pooler' reads the pooled output, not a "
             "pooling of the hidden states: use 'cls', or another classifier_head")
        for name in ("head_dense_bias", "head_norm_bias", "decoder_bias"):
            need(isinstance(getattr(self, name), bool), name, "must be true or false")

    # ---- derived ---------------------------------------------------------------------------

    @property
    def has_projection(self) -> bool:
        """Whether the backbone has the E->H projection (see `embedding_projection`)."""
        if self.embedding_projection == "when_sizes_differ":
            return self.embedding_size != self.hidden_size
        return self.embedding_projection == "always"

    @property
    def mlm_activation(self) -> str:
        """The activation the MLM head applies."""
        return self.mlm_act or self.hidden_act

    @property
    def max_sequence_length(self) -> int:
        """The most tokens one input may hold: max_position_embeddings, or less where the
        backbone's positions start later (RoBERTa's after the pad id: 514 -> 512)."""
        return self.backbone_config.max_sequence_length(self)

    @property
    def num_layer_positions(self) -> int:
        """Transformer layers applied in one forward pass (each group runs inner_group_num)."""
        return self.num_hidden_layers * self.inner_group_num

    def group_of_layer(self, i: int) -> int:
        """transformers' rule: layer i uses group int(i * G / L)."""
        return i * self.num_hidden_groups // self.num_hidden_layers

    @property
    def hf_compatible(self) -> bool:
        """Whether transformers can represent this model (attention/FFN-only sharing it cannot)."""
        return self.sharing in ("all", "none")

    def replace(self, **changes: Any) -> ModelConfig:
        """A copy with `changes`, the backbone's fields among them by their plain names (see
        from_fields). A new num_labels without new labels drops the old id2label (which would
        otherwise set num_labels back), as transformers does. A new `backbone` starts from its
        config's defaults."""
        relabelled = "num_labels" in changes and "id2label" not in changes
        if relabelled and self.id2label is not None \
                and len(self.id2label) != changes["num_labels"]:
            changes["id2label"] = None
        values = self.flat_fields()
        if changes.get("backbone", self.backbone) != self.backbone:
            values = {k: v for k, v in values.items()
                      if k not in backbone_field_names(type(self.backbone_config))}
        return type(self).from_fields(**{**values, **changes})

    # ---- flat fields (config.json's form) -------------------------------------------------

    def flat_fields(self) -> dict[str, Any]:
        """Every field by its plain name, the backbone config's among the shared ones."""
        shared = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                  if f.name != "backbone_config"}
        return {**shared, **self.backbone_fields()}

    def backbone_fields(self, *, changed_only: bool = False) -> dict[str, Any]:
        """The backbone config's fields by name; with changed_only, those not at default."""
        values = dataclasses.asdict(self.backbone_config)
        if not changed_only:
            return values
        defaults = dataclasses.asdict(type(self.backbone_config)())
        return {k: v for k, v in values.items() if v != defaults[k]}

    @classmethod
    def from_fields(cls, **fields: Any) -> ModelConfig:
        """A config from flat fields: the shared ones, and the backbone's by their plain names
        (as config.json holds them). A field that only another backbone reads is ignored at
        that backbone's default (files of the previous release wrote them all) and refused
        otherwise; any other unknown name is a TypeError, as for the constructor."""
        backbone = fields.get("backbone", DEFAULT_BACKBONE)
        config_class = backbone_config_class(backbone)
        own = set(backbone_field_names(config_class))
        mine = {k: fields.pop(k) for k in list(fields) if k in own}
        for name, value in list(fields.items()):
            other = _other_backbone_default(name, config_class)
            if other is None:
                continue
            if value != other[1]:
                raise ConfigError(f"{name}={value!r} is a setting of the {other[0]!r} "
                                  f"backbone, not of {backbone!r}")
            del fields[name]
        if "backbone_config" in fields:
            raise TypeError("from_fields takes the backbone's fields by name, not "
                            "backbone_config")
        try:
            backbone_config = config_class(**mine)
        except TypeError as err:
            raise ConfigError(f"{config_class.__name__}: {err}") from None
        return cls(**fields, backbone_config=backbone_config)

    # ---- presets ---------------------------------------------------------------------------

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> ModelConfig:
        """A named preset (PRESETS) with `overrides`, flat names as in from_fields."""
        if name not in PRESETS:
            raise ConfigError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
        return cls.from_fields(**{**PRESETS[name], **overrides})

    # ---- files -----------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "<dict>") -> ModelConfig:
        """Read any family's config.json content (transformers ALBERT, BERT, ELECTRA, ours)
        or Google's albert_config.json; the family is chosen by its `model_type`."""
        return read_layout(data, source)[0]

    @classmethod
    def from_json_file(cls, path: str | Path) -> ModelConfig:
        return cls.from_dict(read_json_object(path), source=str(path))

    def to_dict(self) -> dict[str, Any]:
        """The config.json content, in the layout this config is saved in (its family's, or
        ALBERT's / ours where the family cannot hold it: see `choose_layout`)."""
        return choose_layout(self)[0].config_to_dict(self)

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / "config.json"
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")
        return path


AlbertConfig = ModelConfig  # the previous release's name
DEFAULT_BACKBONE = "albert"


def is_whole(value: Any) -> bool:
    """An int that is not a bool (JSON's true would pass isinstance(value, int))."""
    return isinstance(value, int) and not isinstance(value, bool)


def _other_backbone_default(name: str, mine: type[BackboneConfig]) -> tuple[str, Any] | None:
    """(backbone, default) when `name` is a field of another registered backbone's config."""
    for backbone, config_class in registered_backbone_configs().items():
        if config_class is mine:
            continue
        for f in dataclasses.fields(config_class):
            if f.name == name:
                return backbone, f.default
    return None


def read_json_object(path: str | Path) -> dict[str, Any]:
    """A config file's JSON object; ConfigError naming the file (and line) otherwise."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}, line {err.lineno}: invalid JSON ({err.msg})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


# ---- config.json layouts, by model_type (the specs' adapters) -------------------------------

# Google's albert_config.json names no model_type.
DEFAULT_MODEL_TYPE = "albert"


def layout_names() -> tuple[str, ...]:
    """The model_types litebert reads and writes: every spec with an adapter."""
    return tuple(spec.name for spec in all_specs() if spec.adapter_module is not None)


def layout_named(model_type: str) -> ConfigLayout:
    """The adapter of `model_type`; ConfigError listing the known ones otherwise."""
    spec = find_spec(model_type)
    if spec is None or spec.adapter_module is None:
        raise ConfigError(f"unknown model_type {model_type!r}; litebert reads "
                          f"{', '.join(map(repr, layout_names()))}")
    adapter: ConfigLayout = spec.adapter
    return adapter


def read_layout(data: Mapping[str, Any], source: str = "<dict>") -> tuple[ModelConfig,
                                                                          ConfigLayout]:
    """A config.json's content -> (config, the adapter of the layout its weights are in)."""
    try:
        adapter = layout_named(data.get("model_type", DEFAULT_MODEL_TYPE))
    except ConfigError as err:
        raise ConfigError(f"{source}: {err}") from None
    return adapter.config_from_dict(data, source), adapter


def choose_layout(config: ModelConfig,
                  class_name: str | None = None) -> tuple[ConfigLayout, str | None]:
    """The adapter a model (of class `class_name`) with `config` is saved with, and why that
    is not its own family's (None when it is): ALBERT's when that holds it, else ours. When
    both fail, `why` gives both reasons."""
    own = layout_named(config.model_type)
    why = own.cannot_hold(config, class_name)
    if why is None:
        return own, None
    albert = layout_named(DEFAULT_MODEL_TYPE)
    also = None if own is albert else albert.cannot_hold(config, class_name)
    if also is None and own is not albert:
        return albert, why
    reason = why if also is None or also == why else f"{why}; ALBERT's layout: {also}"
    return layout_named(OWN_LAYOUT), reason


# Every package's presets by name (litebert/models/<name>/presets.py), read on first use.
PRESETS: Mapping[str, Mapping[str, Any]] = PresetTable()
