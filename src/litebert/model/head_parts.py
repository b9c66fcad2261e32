"""The parts every task head is made of, as data (frozen specs) and the modules they build.

A classifier reads the backbone's output one way (`Pooling`), may pass it through a dense
layer, an activation and a LayerNorm (`TransformSpec`), drops out before the transform and/or
before its output layer, and ends in that output layer. `ClassifierSpec` holds those choices
and the names the parts carry, which are transformers' for each structure so that a family
adapter renames only the backbone:

    family      sequence classifier                                   parts' names
    ALBERT/BERT pooler -> dropout -> classifier                       dropout, classifier
    ELECTRA     summary -> dropout, dense, act, dropout, out_proj     classifier.{dense,out_proj}
    RoBERTa     the same with tanh                                    classifier.{dense,out_proj}
    XLNet       summary -> dense, act -> dropout -> classifier        sequence_summary.summary,
                                                                      classifier (logits_proj)
    ModernBERT  cls or mean -> dense, act, norm -> drop -> classifier head.{dense,norm},
                                                                      classifier

A spec's parts sit either side by side on the model (`group` None: the flat layout of
BERT's, XLNet's and ModernBERT's classes) or in one module at `group` (ELECTRA's
ClassificationHead at `classifier`, the SOP head at `sop_classifier`): `add_classifier` puts
them there and `classify` runs them, in the one order every family uses:

    [dropout] -> [transform] -> [dropout] -> output

The MLM head (`MLMHeadSpec`) is a transform from H to E followed by the decoder tied to the
word embeddings, with or without its own bias.

Which spec a head gets from its config is decided in one place, `classifier_spec` and
`mlm_spec`, from the config's structure fields (classifier_head, classifier_pooling,
classifier_act, mlm_act, use_pooler, head_dense_bias, head_norm_bias, decoder_bias).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from litebert.config import ModelConfig
from litebert.model.layers import activation
from litebert.model.outputs import BaseModelOutput

# What a classifier reads of the backbone's output:
#   "pooler"          pooler_output (B, H): the backbone's tanh(dense(summary token))
#   "summary"         the backbone's summary token (B, H): h[:, summary_position], [CLS]
#                     first for BERT-style templates, <cls> last for XLNet's
#   "first_unpadded"  the first token with attention_mask 1 (B, H): ModernBERT's multiple
#                     choice, whose <cls> follows any left padding
#   "mean"            the mean of the tokens with attention_mask 1 (B, H)
#   "tokens"          every token (B, T, H): token classification, spans, replaced tokens
Pooling = Literal["pooler", "summary", "first_unpadded", "mean", "tokens"]
POOLINGS: tuple[Pooling, ...] = ("pooler", "summary", "first_unpadded", "mean", "tokens")
TransformKind = Literal["none", "dense-act", "dense-act-norm"]
TRANSFORM_KINDS: tuple[TransformKind, ...] = ("none", "dense-act", "dense-act-norm")
Task = Literal["sequence", "choice", "tokens", "spans", "pair", "replaced"]


@dataclass(frozen=True)
class TransformSpec:
    """dense -> activation (-> LayerNorm), between what a head reads and its output."""

    kind: TransformKind = "none"
    activation: str = "gelu"
    dense_bias: bool = True
    norm_bias: bool = True
    norm_eps: float = 1e-12
    dense_name: str = "dense"  # XLNet's sequence summary calls it "summary"
    norm_name: str = "norm"  # BERT's MLM head calls it "LayerNorm"

    def __post_init__(self) -> None:
        if self.kind not in TRANSFORM_KINDS:
            raise ValueError(f"TransformSpec.kind={self.kind!r}: choose from {TRANSFORM_KINDS}")


@dataclass(frozen=True)
class ClassifierSpec:
    """What a classifier reads, how it transforms it, where it drops out, what its parts are
    called (see the module docstring)."""

    pooling: Pooling
    transform: TransformSpec = TransformSpec()
    dropout: float = 0.0
    dropout_before_transform: bool = False
    dropout_before_output: bool = False
    group: str | None = None  # the one module holding every part; None: side by side
    transform_name: str = "head"  # the transform's module when side by side
    dropout_name: str = "dropout"
    output_name: str = "classifier"

    def __post_init__(self) -> None:
        if self.pooling not in POOLINGS:
            raise ValueError(f"ClassifierSpec.pooling={self.pooling!r}: choose from {POOLINGS}")

    @property
    def drops_out(self) -> bool:
        return self.dropout_before_transform or self.dropout_before_output


@dataclass(frozen=True)
class MLMHeadSpec:
    """The MLM head: a transform H -> E, then the decoder tied to the word embeddings."""

    transform: TransformSpec
    decoder_bias: bool = True


# ---- modules -----------------------------------------------------------------------------------

class Transform(nn.Module):
    """dense in -> out, activation, LayerNorm(out), per `spec.kind`; the identity for "none".

    The activation is a plain function at `act` (no parameters, no state-dict key); the dense
    layer and the norm sit at the spec's names, so a subclass that adds an output layer keeps
    transformers' flat names (ELECTRA's `classifier.dense` beside `classifier.out_proj`)."""

    def __init__(self, spec: TransformSpec, in_features: int, out_features: int):
        super().__init__()
        self.transform_spec = spec
        if spec.kind == "none":
            return
        self.add_module(spec.dense_name, nn.Linear(in_features, out_features,
                                                   bias=spec.dense_bias))
        self.act = activation(spec.activation)
        if spec.kind == "dense-act-norm":
            self.add_module(spec.norm_name, nn.LayerNorm(out_features, eps=spec.norm_eps,
                                                         bias=spec.norm_bias))

    def forward(self, x):  # (..., in) -> (..., out)
        spec = self.transform_spec
        if spec.kind == "none":
            return x
        x = self.act(getattr(self, spec.dense_name)(x))
        if spec.kind == "dense-act-norm":
            x = getattr(self, spec.norm_name)(x)
        return x


def _run(spec: ClassifierSpec, x, transform, dropout, output):
    """[dropout] -> [transform] -> [dropout] -> output: the order of every family's head."""
    if spec.dropout_before_transform:
        x = dropout(x)
    x = transform(x)
    if spec.dropout_before_output:
        x = dropout(x)
    return output(x)


class ClassificationHead(Transform):
    """Every part of a classifier in one module: the transform's layers, the dropout and the
    output layer at the spec's names (ELECTRA's and RoBERTa's ClassificationHead with
    output_name "out_proj"; the SOP head; the ELECTRA discriminator's predictions)."""

    def __init__(self, spec: ClassifierSpec, hidden: int, out_features: int):
        super().__init__(spec.transform, hidden, hidden)
        self.spec = spec
        if spec.drops_out:
            self.add_module(spec.dropout_name, nn.Dropout(spec.dropout))
        self.add_module(spec.output_name, nn.Linear(hidden, out_features))

    def forward(self, x):  # (..., H) -> (..., out_features)
        spec = self.spec
        dropout = getattr(self, spec.dropout_name, None)
        return _run(spec, x, super().forward, dropout, getattr(self, spec.output_name))


class MLMHead(Transform):
    """The transform H -> E, then logits against the word embeddings (V, E) plus the
    decoder's own bias (`bias`, None without one)."""

    def __init__(self, spec: MLMHeadSpec, hidden: int, embedding: int, vocab: int):
        super().__init__(spec.transform, hidden, embedding)
        self.bias = nn.Parameter(torch.zeros(vocab)) if spec.decoder_bias else None

    def forward(self, h, word_embeddings):  # h (..., H); word_embeddings (V, E)
        return F.linear(super().forward(h), word_embeddings, self.bias)  # (..., V)


def add_classifier(owner: nn.Module, spec: ClassifierSpec, hidden: int,
                   out_features: int) -> None:
    """Registers the spec's parts on `owner` (a model): one ClassificationHead at
    `spec.group`, or the dropout, the output layer and the transform side by side, in that
    order: the order the heads had before they were built from specs, so that a seed
    initialises the same weights."""
    if spec.group is not None:
        owner.add_module(spec.group, ClassificationHead(spec, hidden, out_features))
        return
    if spec.drops_out:
        owner.add_module(spec.dropout_name, nn.Dropout(spec.dropout))
    owner.add_module(spec.output_name, nn.Linear(hidden, out_features))
    if spec.transform.kind != "none":
        owner.add_module(spec.transform_name, Transform(spec.transform, hidden, hidden))


def _identity(x):
    return x


def classify(owner: nn.Module, spec: ClassifierSpec, pooled):
    """The logits of what `pool` read, through the parts `add_classifier` put on `owner`."""
    if spec.group is not None:
        return getattr(owner, spec.group)(pooled)
    has_transform = spec.transform.kind != "none"
    transform = getattr(owner, spec.transform_name) if has_transform else _identity
    return _run(spec, pooled, transform, getattr(owner, spec.dropout_name, None),
                getattr(owner, spec.output_name))


def _first_unpadded(hidden, attention_mask):  # (B, T, H), (B, T) -> (B, H)
    if attention_mask is None:
        return hidden[:, 0]
    first = attention_mask.argmax(dim=-1)  # (B,): the first 1 of each row
    return hidden[torch.arange(hidden.size(0), device=hidden.device), first]


def _mean(hidden, attention_mask):  # (B, T, H), (B, T) -> (B, H)
    if attention_mask is None:
        return hidden.mean(dim=1)
    mask = attention_mask[..., None].to(hidden.dtype)  # (B, T, 1)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1)


def pool(pooling: Pooling, out: BaseModelOutput, attention_mask, summary_position: int):
    """What a classifier reads of the backbone's output (see Pooling); attention_mask (B, T),
    1 = token, None = no padding."""
    hidden = out.last_hidden_state  # (B, T, H)
    if pooling == "pooler":
        return out.pooler_output  # (B, H)
    if pooling == "summary":
        return hidden[:, summary_position]  # (B, H)
    if pooling == "first_unpadded":
        return _first_unpadded(hidden, attention_mask)
    if pooling == "mean":
        return _mean(hidden, attention_mask)
    return hidden  # "tokens": (B, T, H)


# ---- the specs a config gives ------------------------------------------------------------------

Shape = Callable[[ModelConfig, Pooling], ClassifierSpec]


def _dense_act(config: ModelConfig, dense_name: str = "dense") -> TransformSpec:
    return TransformSpec("dense-act", config.classifier_act, config.head_dense_bias,
                         dense_name=dense_name)


def _linear(config: ModelConfig, pooling: Pooling) -> ClassifierSpec:
    """dropout -> classifier (ALBERT's and BERT's heads, whatever reads the pooler)."""
    return ClassifierSpec(pooling, dropout=config.classifier_dropout_prob,
                          dropout_before_output=True)


def _spans(config: ModelConfig, pooling: Pooling) -> ClassifierSpec:
    """qa_outputs on every token, no dropout (BERT's span head)."""
    return ClassifierSpec(pooling, output_name="qa_outputs")


def _grouped(config: ModelConfig, pooling: Pooling) -> ClassifierSpec:
    """ELECTRA's and RoBERTa's ClassificationHead at `classifier`: dropout -> dense -> act ->
    dropout -> out_proj."""
    return ClassifierSpec(pooling, _dense_act(config), config.classifier_dropout_prob,
                          dropout_before_transform=True, dropout_before_output=True,
                          group="classifier", output_name="out_proj")


def _summary(config: ModelConfig, pooling: Pooling) -> ClassifierSpec:
    """XLNet's (and ELECTRA's multiple-choice) sequence summary: dense -> act at
    `sequence_summary.summary`, dropout, classifier."""
    return ClassifierSpec(pooling, _dense_act(config, dense_name="summary"),
                          config.classifier_dropout_prob, dropout_before_output=True,
                          transform_name="sequence_summary")


def _normed(config: ModelConfig, pooling: Pooling) -> ClassifierSpec:
    """ModernBERT's: dense -> act -> LayerNorm at `head`, `drop`, classifier."""
    transform = TransformSpec("dense-act-norm", config.classifier_act, config.head_dense_bias,
                              config.head_norm_bias, config.layer_norm_eps)
    return ClassifierSpec(pooling, transform, config.classifier_dropout_prob,
                          dropout_before_output=True, dropout_name="drop")


@dataclass(frozen=True)
class _Structure:
    """What one classifier_head builds for each task. Multiple choice reads the pooler with
    a plain linear when the config has one and `choice_reads_pooler`; otherwise it pools the
    hidden states as sequence classification does ("cls" being `choice_cls`)."""

    sequence: Shape
    choice: Shape
    tokens: Shape = _linear
    spans: Shape = _spans
    choice_reads_pooler: bool = True
    choice_cls: Pooling = "summary"


# classifier_head -> its structure (config.py's CLASSIFIER_HEADS, in the same order).
STRUCTURES: dict[str, _Structure] = {
    # ALBERT, BERT; `choice` unused: "pooler" needs use_pooler, so multiple choice reads it.
    "pooler": _Structure(sequence=_linear, choice=_linear),
    "first_token": _Structure(sequence=_grouped, choice=_summary),  # ELECTRA, RoBERTa
    "summary": _Structure(sequence=_summary, choice=_summary),  # XLNet
    "pooled_norm": _Structure(sequence=_normed, choice=_normed, tokens=_normed,  # ModernBERT
                              spans=_normed, choice_reads_pooler=False,
                              choice_cls="first_unpadded"),
}


def _pooling(config: ModelConfig, task: Task, structure: _Structure) -> Pooling:
    """What the `task` head reads: see `_Structure` and ModelConfig.classifier_pooling."""
    if task in ("tokens", "spans", "replaced"):
        return "tokens"
    if task == "pair" or config.classifier_head == "pooler":
        return "pooler"
    if task == "choice" and config.use_pooler and structure.choice_reads_pooler:
        return "pooler"
    if config.classifier_pooling == "mean":
        return "mean"
    return structure.choice_cls if task == "choice" else "summary"


def classifier_spec(config: ModelConfig, task: Task) -> ClassifierSpec:
    """The classifier a config builds for `task`: "sequence", "choice" (multiple choice),
    "tokens", "spans" (start/end logits), "pair" (SOP/NSP on the pooler, at
    `sop_classifier`) or "replaced" (ELECTRA's discriminator at `discriminator_predictions`:
    dense -> hidden_act -> dense_prediction on every token)."""
    if task == "pair":
        return dataclasses.replace(_linear(config, "pooler"), group="sop_classifier")
    if task == "replaced":
        transform = TransformSpec("dense-act", config.hidden_act, config.head_dense_bias)
        return ClassifierSpec("tokens", transform, group="discriminator_predictions",
                              output_name="dense_prediction")
    structure = STRUCTURES[config.classifier_head]
    pooling = _pooling(config, task, structure)
    shape = _linear if pooling == "pooler" else getattr(structure, task)
    return shape(config, pooling)


def mlm_spec(config: ModelConfig) -> MLMHeadSpec:
    """dense H->E -> mlm_act -> LayerNorm(E) at BERT's names (`dense`, `LayerNorm`); the
    biases as the config says (all of them but ModernBERT's)."""
    transform = TransformSpec("dense-act-norm", config.mlm_activation, config.head_dense_bias,
                              config.head_norm_bias, config.layer_norm_eps,
                              norm_name="LayerNorm")
    return MLMHeadSpec(transform, config.decoder_bias)
