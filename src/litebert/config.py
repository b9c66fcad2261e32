"""AlbertConfig: the one typed description every model is built from.

Field names follow transformers' AlbertConfig so a `config.json` reads and writes without
translation. Two fields are ours:
- `sharing`: which parts of a layer are shared across depth (the paper's ablation, Table 4).
  "all" is transformers' grouping; "attention" / "ffn" share only that part and have no
  transformers equivalent; "none" gives every layer its own weights.
- `model_type`: "albert", or "bert" for BERT checkpoints (E = H, no E->H projection).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu", "swish", "tanh")
SHARING = ("all", "attention", "ffn", "none")
MODEL_TYPES = ("albert", "bert")


class ConfigError(ValueError):
    """An invalid configuration; the message names the field and the fix."""


@dataclass
class AlbertConfig:
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
    # Task heads (transformers' names).
    num_labels: int = 2
    id2label: dict[int, str] | None = None
    problem_type: str | None = None
    architectures: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)  # unknown keys, kept on save

    def __post_init__(self) -> None:
        if self.id2label is not None:
            self.id2label = {int(k): str(v) for k, v in self.id2label.items()}
            self.num_labels = len(self.id2label)
        self._validate()

    def _validate(self) -> None:
        def need(ok: bool, name: str, why: str) -> None:
            if not ok:
                raise ConfigError(f"AlbertConfig.{name}={getattr(self, name)!r}: {why}")

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
        need(self.model_type in MODEL_TYPES, "model_type", f"unknown; choose from {MODEL_TYPES}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob",
                     "classifier_dropout_prob"):
            need(0.0 <= getattr(self, name) < 1.0, name, "must be in [0, 1)")
        need(self.initializer_range > 0, "initializer_range", "must be positive")
        need(self.layer_norm_eps > 0, "layer_norm_eps", "must be positive")
        need(0 <= self.pad_token_id < self.vocab_size, "pad_token_id",
             f"must be an id below vocab_size={self.vocab_size}")
        if self.model_type == "bert":
            need(self.embedding_size == self.hidden_size, "embedding_size",
                 "a BERT model has no E->H projection: embedding_size must equal hidden_size")
            need(self.sharing == "none", "sharing", "a BERT model shares no weights: use 'none'")
            need(self.inner_group_num == 1, "inner_group_num", "must be 1 for a BERT model")

    # ---- derived ---------------------------------------------------------------------------

    @property
    def has_projection(self) -> bool:
        """BERT has no E->H projection; ALBERT always has one (even when E == H)."""
        return self.model_type == "albert"

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

    def replace(self, **changes: Any) -> AlbertConfig:
        return dataclasses.replace(self, **changes)

    # ---- presets ---------------------------------------------------------------------------

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> AlbertConfig:
        if name not in PRESETS:
            raise ConfigError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})

    # ---- files -----------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "<dict>") -> AlbertConfig:
        """Read a transformers ALBERT/BERT config or Google's albert_config.json."""
        return _config_from_dict(cls, data, source)

    @classmethod
    def from_json_file(cls, path: str | Path) -> AlbertConfig:
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such config file") from None
        except json.JSONDecodeError as err:
            raise ConfigError(f"{path}, line {err.lineno}: invalid JSON ({err.msg})") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a JSON object, got {type(data).__name__}")
        return cls.from_dict(data, source=str(path))

    def to_dict(self) -> dict[str, Any]:
        """The transformers-compatible config.json content."""
        return _config_to_dict(self)

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / "config.json"
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")
        return path


def _albert(L: int, H: int, heads: int, **kw: Any) -> dict[str, Any]:
    return dict(num_hidden_layers=L, hidden_size=H, num_attention_heads=heads,
                intermediate_size=4 * H, embedding_size=128, **kw)


def _bert(L: int, H: int, heads: int) -> dict[str, Any]:
    # The paper's BERT baselines (Table 1) use the same 30k vocabulary as ALBERT.
    return dict(num_hidden_layers=L, hidden_size=H, num_attention_heads=heads,
                intermediate_size=4 * H, embedding_size=H, model_type="bert", sharing="none",
                hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)


PRESETS: dict[str, dict[str, Any]] = {
    "tiny": _albert(4, 256, 4),
    "albert-base": _albert(12, 768, 12),
    "albert-large": _albert(24, 1024, 16),
    "albert-xlarge": _albert(24, 2048, 32),
    "albert-xxlarge": _albert(12, 4096, 64),
    "bert-base": _bert(12, 768, 12),
    "bert-large": _bert(24, 1024, 16),
    "bert-xlarge": _bert(24, 2048, 32),
}


# ---- conversion from and to other projects' config files ------------------------------------

# transformers' defaults for keys a config.json may leave out.
_HF_ALBERT_DEFAULTS: dict[str, Any] = dict(
    vocab_size=30000, embedding_size=128, hidden_size=4096, num_hidden_layers=12,
    num_hidden_groups=1, num_attention_heads=64, intermediate_size=16384, inner_group_num=1,
    hidden_act="gelu_new", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    max_position_embeddings=512, type_vocab_size=2, initializer_range=0.02,
    layer_norm_eps=1e-12, classifier_dropout_prob=0.1, pad_token_id=0, bos_token_id=2,
    eos_token_id=3,
)
_HF_BERT_DEFAULTS: dict[str, Any] = dict(
    vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
    intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
    initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0,
)
# Keys that only describe the file or the training run that wrote it.
_IGNORED_KEYS = {"label2id", "transformers_version", "torch_dtype", "dtype", "output_past",
                 "_name_or_path", "use_cache", "gradient_checkpointing",
                 "position_embedding_type"}
_FIELDS = {f.name for f in dataclasses.fields(AlbertConfig)} - {"extra"}


def _config_from_dict(cls: type[AlbertConfig], data: dict[str, Any], source: str) -> AlbertConfig:
    data = dict(data)
    model_type = data.get("model_type", "albert")
    if model_type == "litebert":  # our own layout for attention-/FFN-only sharing
        model_type = "albert"
    kind = data.get("position_embedding_type", "absolute")
    if kind != "absolute":
        raise ConfigError(f"{source}: position_embedding_type={kind!r} is not supported "
                          "(only 'absolute', as in BERT and ALBERT)")
    if model_type == "bert":
        _check_bert(data, source)
        values = {**_HF_BERT_DEFAULTS, **data}
        values.update(embedding_size=values["hidden_size"], sharing="none",
                      num_hidden_groups=values["num_hidden_layers"], inner_group_num=1)
        if values.get("classifier_dropout") is not None:
            values["classifier_dropout_prob"] = values["classifier_dropout"]
        else:
            values["classifier_dropout_prob"] = values["hidden_dropout_prob"]
    elif model_type == "albert":
        _check_google_albert(data, source)
        values = {**_HF_ALBERT_DEFAULTS, **data}
    else:
        raise ConfigError(f"{source}: model_type {model_type!r} is neither 'albert' nor 'bert'")
    values["model_type"] = model_type
    known = {k: v for k, v in values.items() if k in _FIELDS}
    extra = {k: v for k, v in values.items()
             if k not in _FIELDS and k not in _IGNORED_KEYS and k not in _GOOGLE_ONLY_KEYS
             and k != "classifier_dropout"}
    try:
        return cls(**known, extra=extra)
    except ConfigError as err:
        raise ConfigError(f"{source}: {err}") from None
    except TypeError as err:
        raise ConfigError(f"{source}: {err}") from None


# Google's albert_config.json has keys for structures the released models never used.
_GOOGLE_ONLY_KEYS = {"net_structure_type", "layers_to_keep", "gap_size", "num_memory_blocks",
                     "down_scale_factor"}


def _check_google_albert(data: dict[str, Any], source: str) -> None:
    if data.get("net_structure_type", 0) != 0:
        raise ConfigError(f"{source}: net_structure_type={data['net_structure_type']} is not "
                          "supported (only the standard ALBERT structure, 0, is)")
    if data.get("layers_to_keep"):
        raise ConfigError(f"{source}: layers_to_keep={data['layers_to_keep']} is not supported")
    if data.get("down_scale_factor", 1) != 1:
        raise ConfigError(f"{source}: down_scale_factor must be 1")


def _check_bert(data: dict[str, Any], source: str) -> None:
    if data.get("is_decoder") or data.get("add_cross_attention"):
        raise ConfigError(f"{source}: decoder BERT models are not supported")


def _config_to_dict(config: AlbertConfig) -> dict[str, Any]:
    out: dict[str, Any] = dict(config.extra)
    common = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
              "intermediate_size", "hidden_act", "hidden_dropout_prob",
              "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
              "initializer_range", "layer_norm_eps", "pad_token_id", "num_labels",
              "problem_type", "architectures")
    out.update({k: getattr(config, k) for k in common})
    if config.model_type == "bert":
        out.update(model_type="bert", classifier_dropout=config.classifier_dropout_prob,
                   position_embedding_type="absolute")
    else:
        groups = config.num_hidden_layers if config.sharing == "none" else config.num_hidden_groups
        out.update(
            model_type="albert" if config.hf_compatible else "litebert",
            embedding_size=config.embedding_size, num_hidden_groups=groups,
            inner_group_num=config.inner_group_num,
            classifier_dropout_prob=config.classifier_dropout_prob,
            bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id,
            position_embedding_type="absolute", sharing=config.sharing,
        )
    if config.id2label is not None:
        out["id2label"] = {str(k): v for k, v in config.id2label.items()}
        out["label2id"] = {v: k for k, v in config.id2label.items()}
    return {k: v for k, v in out.items() if v is not None}
