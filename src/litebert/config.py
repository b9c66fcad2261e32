"""AlbertConfig: the one typed description every model is built from.

Field names follow transformers' AlbertConfig so a `config.json` reads and writes without
translation. The fields that are ours:
- `sharing`: which parts of a layer are shared across depth (the paper's ablation, Table 4).
  "all" is transformers' grouping; "attention" / "ffn" share only that part and have no
  transformers equivalent; "none" gives every layer its own weights.
- `model_type`: the checkpoint family whose layout a model directory is written in (see
  litebert.families). It decides file names only: the structure is in the fields below.
- `backbone`: which registered backbone the heads are built on (litebert.model.backbone):
  "albert" under the albert, bert, electra and roberta families, "xlnet" under the xlnet
  family; litebert's own layout holds any. Checked against the registry when a model is
  built, since this module sits below the models.
- structure: `embedding_projection`, `use_pooler`, `classifier_head`, `classifier_act`,
  `mlm_act`, `position_numbering` (documented on the dataclass). A family's adapter sets
  them when it reads that family's config.json; their defaults are ALBERT's.
- the task heads' parts (model/head_parts.py builds the heads from them): `classifier_pooling`,
  `head_dense_bias`, `head_norm_bias`, `decoder_bias`; defaults are every family's but
  ModernBERT's, and layouts write them only when they differ.
- the XLNet backbone's fields (transformers' XLNetConfig names): `mem_len`, `reuse_len`,
  `attn_type`, `clamp_len`, `same_length`, `bi_data`. Other backbones ignore them; layouts
  write them only when they differ from their defaults, so ALBERT, BERT, ELECTRA and
  RoBERTa files do not change.

Reading and writing config.json goes through the family adapters (litebert.families), which
import this module; they install themselves here with `install_formats` when imported, which
`import litebert` does.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu", "swish", "tanh")
SHARING = ("all", "attention", "ffn", "none")
EMBEDDING_PROJECTIONS = ("always", "when_sizes_differ", "never")
# Sequence classifiers (AlbertConfig.classifier_head): ALBERT/BERT's, ELECTRA/RoBERTa's, XLNet's,
# ModernBERT's.
CLASSIFIER_HEADS = ("pooler", "first_token", "summary", "pooled_norm")
ATTENTION_TYPES = ("bi", "uni")
POSITION_NUMBERINGS = ("from_zero", "after_pad")
# The task heads' parts (model/head_parts.py): AlbertConfig.classifier_pooling, the biases.
CLASSIFIER_POOLINGS = ("cls", "mean")
HEAD_FIELDS = ("classifier_pooling", "head_dense_bias", "head_norm_bias", "decoder_bias")
# The structure fields and their defaults (ALBERT's); family adapters read and write them.
STRUCTURE_FIELDS = ("backbone", "embedding_projection", "use_pooler", "classifier_head",
                    "classifier_act", "mlm_act", "position_numbering", "mem_len", "reuse_len",
                    "attn_type", "clamp_len", "same_length", "bi_data") + HEAD_FIELDS


class ConfigError(ValueError):
    """An invalid configuration; the message names the field and the fix."""


class ConfigFormats(Protocol):
    """What this module needs of litebert.families: config.json by model_type."""

    def model_types(self) -> tuple[str, ...]: ...

    def config_from_dict(self, data: Mapping[str, Any], source: str) -> AlbertConfig: ...

    def config_to_dict(self, config: AlbertConfig) -> dict[str, Any]: ...


_FORMATS: list[ConfigFormats] = []


def install_formats(formats: ConfigFormats) -> None:
    """Called by litebert.families on import (it imports this module, not the reverse)."""
    _FORMATS[:] = [formats]


def _formats() -> ConfigFormats:
    if not _FORMATS:
        raise RuntimeError("no config.json formats installed: import litebert.families")
    return _FORMATS[0]


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
    # ---- structure (ours; defaults are ALBERT's) ----
    # The backbone under the heads, a name in litebert.model.backbone.BACKBONES. Two have
    # transformers layouts: "albert" (the embeddings -> shared layers -> pooler of
    # model/albert.py, which also builds BERT, ELECTRA and RoBERTa: those four families) and
    # "xlnet" (model/xlnet.py: the xlnet family). One that no family lists in its `backbones`
    # is saved in litebert's own layout.
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
    # Position ids when the caller passes none. "from_zero": token t has position t, padding
    # or not (ALBERT, BERT, ELECTRA). "after_pad": RoBERTa's (fairseq's) numbering: real
    # tokens (id != pad_token_id) are numbered pad_token_id + 1, + 2, ... by their count so
    # far, pad tokens get pad_token_id, whose row of the position table is a padding row (zero
    # at init, never trained). The first pad_token_id + 1 rows are thus no position: roberta's
    # max_position_embeddings 514 with pad 1 holds 512 tokens (see max_sequence_length).
    position_numbering: str = "from_zero"
    # ---- the XLNet backbone (model/xlnet.py; transformers' XLNetConfig names) ----
    # Memories: each layer keeps the last `mem_len` states of its input across segments
    # (None or 0: all of them when memories are asked for, transformers' rule); only the
    # first `reuse_len` tokens of a segment (None: all) become memory.
    mem_len: int | None = None
    reuse_len: int | None = None
    attn_type: str = "bi"  # "bi": every token sees every other; "uni": left to right only
    clamp_len: int = -1  # relative distances clamped to +-clamp_len; -1 (or 0): no clamping
    same_length: bool = False  # "uni": every token sees the same number of keys ("bi": none)
    bi_data: bool = False  # the second half of the batch reads relative positions reversed
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
    extra: dict[str, Any] = field(default_factory=dict, repr=False)  # unknown keys, kept on save

    def __post_init__(self) -> None:
        if self.id2label is not None:
            self.id2label = {int(k): str(v) for k, v in self.id2label.items()}
            self.num_labels = len(self.id2label)
        self._validate()

    def _need(self, ok: bool, name: str, why: str) -> None:
        if not ok:
            raise ConfigError(f"AlbertConfig.{name}={getattr(self, name)!r}: {why}")

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
        if _FORMATS:
            known = _formats().model_types()
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
        need(isinstance(self.backbone, str) and bool(self.backbone), "backbone",
             "must be the name of a registered backbone, e.g. 'albert'")
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
        need(self.position_numbering in POSITION_NUMBERINGS, "position_numbering",
             f"unknown; choose from {POSITION_NUMBERINGS}")
        if self.position_numbering == "after_pad":
            need(self.pad_token_id + 1 < self.max_position_embeddings, "max_position_embeddings",
                 f"position_numbering='after_pad' numbers the first token pad_token_id + 1 = "
                 f"{self.pad_token_id + 1}: max_position_embeddings must exceed it (RoBERTa: "
                 f"512 positions + 2 = 514)")
        self._validate_xlnet()
        self._validate_heads()

    def _validate_xlnet(self) -> None:
        need = self._need
        for name in ("mem_len", "reuse_len"):
            value = getattr(self, name)
            need(value is None or (_is_int(value) and value >= 0), name,
                 "must be a whole number >= 0, or null (XLNet's memories: see the field)")
        need(self.attn_type in ATTENTION_TYPES, "attn_type",
             "unknown; choose 'bi' (XLNet: every token sees every other) or 'uni' "
             "(Transformer-XL: left to right)")
        need(_is_int(self.clamp_len) and self.clamp_len >= -1, "clamp_len",
             "must be a whole number >= 0, or -1 for no clamping")
        for name in ("same_length", "bi_data"):
            need(isinstance(getattr(self, name), bool), name, "must be true or false")

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
        """The most tokens one input may hold: max_position_embeddings, less the
        pad_token_id + 1 rows before the first position with position_numbering 'after_pad'
        (514 -> 512 for RoBERTa)."""
        if self.position_numbering == "after_pad":
            return self.max_position_embeddings - self.pad_token_id - 1
        return self.max_position_embeddings

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
        """A copy with `changes`. A new num_labels without new labels drops the old id2label
        (which would otherwise set num_labels back), as transformers does."""
        relabelled = "num_labels" in changes and "id2label" not in changes
        if relabelled and self.id2label is not None \
                and len(self.id2label) != changes["num_labels"]:
            changes["id2label"] = None
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
        """Read any family's config.json content (transformers ALBERT, BERT, ELECTRA, ours)
        or Google's albert_config.json; the family is chosen by its `model_type`."""
        return _formats().config_from_dict(data, source)

    @classmethod
    def from_json_file(cls, path: str | Path) -> AlbertConfig:
        return cls.from_dict(read_json_object(path), source=str(path))

    def to_dict(self) -> dict[str, Any]:
        """The config.json content, in the layout this config is saved in (its family's, or
        ALBERT's / ours where the family cannot hold it: see litebert.families.layout_for)."""
        return _formats().config_to_dict(self)

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / "config.json"
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")
        return path


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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


def _albert(L: int, H: int, heads: int, **kw: Any) -> dict[str, Any]:
    return dict(num_hidden_layers=L, hidden_size=H, num_attention_heads=heads,
                intermediate_size=4 * H, embedding_size=128, **kw)


def _bert(L: int, H: int, heads: int) -> dict[str, Any]:
    # The paper's BERT baselines (Table 1) use the same 30k vocabulary as ALBERT.
    return dict(num_hidden_layers=L, hidden_size=H, num_attention_heads=heads,
                intermediate_size=4 * H, embedding_size=H, model_type="bert", sharing="none",
                embedding_projection="never", hidden_act="gelu", hidden_dropout_prob=0.1,
                attention_probs_dropout_prob=0.1)


def _electra(L: int, H: int, E: int, heads: int) -> dict[str, Any]:
    # The discriminators of the ELECTRA paper (Table 6); 30k vocabulary like the others.
    return dict(num_hidden_layers=L, hidden_size=H, embedding_size=E, num_attention_heads=heads,
                intermediate_size=4 * H, model_type="electra", sharing="none",
                num_hidden_groups=L, embedding_projection="when_sizes_differ",
                use_pooler=False, classifier_head="first_token", classifier_act="gelu",
                mlm_act="gelu", hidden_act="gelu", hidden_dropout_prob=0.1,
                attention_probs_dropout_prob=0.1)


def _roberta(L: int, H: int, heads: int) -> dict[str, Any]:
    # roberta-base's config.json: BERT's shapes, byte-level BPE ids (<s> 0, <pad> 1, </s> 2),
    # one token type, eps 1e-5, 512 positions after the pad id. A tokenizer sets vocab_size.
    return dict(num_hidden_layers=L, hidden_size=H, embedding_size=H, num_attention_heads=heads,
                intermediate_size=4 * H, model_type="roberta", sharing="none",
                num_hidden_groups=L, vocab_size=50265, max_position_embeddings=514,
                type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0,
                eos_token_id=2, hidden_act="gelu", hidden_dropout_prob=0.1,
                attention_probs_dropout_prob=0.1, embedding_projection="never",
                use_pooler=True, classifier_head="first_token", classifier_act="tanh",
                mlm_act="gelu", position_numbering="after_pad")


def _xlnet(L: int, H: int, heads: int) -> dict[str, Any]:
    # transformers' xlnet-base-cased / xlnet-large-cased config.json: BERT's shapes on the
    # "xlnet" backbone, exact GELU, dropout 0.1, XLNet's 32k SentencePiece ids.
    return dict(num_hidden_layers=L, hidden_size=H, embedding_size=H, num_attention_heads=heads,
                intermediate_size=4 * H, backbone="xlnet", model_type="xlnet", sharing="none",
                num_hidden_groups=L, embedding_projection="when_sizes_differ", use_pooler=False,
                classifier_head="summary", classifier_act="tanh", hidden_act="gelu",
                hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                layer_norm_eps=1e-12, vocab_size=32000, pad_token_id=5, bos_token_id=1,
                eos_token_id=2)


PRESETS: dict[str, dict[str, Any]] = {
    "tiny": _albert(4, 256, 4),
    "albert-base": _albert(12, 768, 12),
    "albert-large": _albert(24, 1024, 16),
    "albert-xlarge": _albert(24, 2048, 32),
    "albert-xxlarge": _albert(12, 4096, 64),
    "bert-base": _bert(12, 768, 12),
    "bert-large": _bert(24, 1024, 16),
    "bert-xlarge": _bert(24, 2048, 32),
    "electra-small": _electra(12, 256, 128, 4),
    "electra-base": _electra(12, 768, 768, 12),
    "roberta-base": _roberta(12, 768, 12),
    "roberta-tiny": _roberta(4, 256, 4),
    "xlnet-tiny": _xlnet(4, 256, 4),
    "xlnet-base": _xlnet(12, 768, 12),
    "xlnet-large": _xlnet(24, 1024, 16),
    # ALBERT's structure on XLNet (E < H, one layer shared by all): no transformers class can
    # hold it, so it is saved in litebert's own layout.
    "albert-xlnet-tiny": {**_xlnet(4, 256, 4), "embedding_size": 128, "sharing": "all",
                          "num_hidden_groups": 1, "model_type": "litebert"},
}
