"""transformers' XLNet layout (Yang et al., 2019).

The backbone is `transformer.` (transformers' XLNetModel files hold it without the prefix):
`word_embedding.weight` [V, d], `mask_emb` [1, 1, d], per layer
`layer.{n}.rel_attn.{q,k,v,o,r}` [d, n_head, d_head] (used through einsum, no bias),
`layer.{n}.rel_attn.{r_w_bias,r_r_bias,r_s_bias}` [n_head, d_head],
`layer.{n}.rel_attn.seg_embed` [2, n_head, d_head], `layer.{n}.rel_attn.layer_norm` and
`layer.{n}.ff.{layer_1,layer_2,layer_norm}`. Ours (models/xlnet/model.py) is the same under
`backbone.` with `encoder.attentions.{n}` / `encoder.ffns.{n}` for the layers and q, k, v, o, r
as (H, H) nn.Linear-style matrices: q, k, v and r are the einsum tensor flattened and
transposed, o the einsum tensor flattened; the reshaping happens here, at the file boundary.

Heads: the LM head `lm_loss` (its weight is the word embeddings: only the bias is ours),
the sequence summary `sequence_summary.summary` with `logits_proj` (our `classifier` beside a
`sequence_summary`), `classifier` (tokens), `qa_outputs` (XLNetForQuestionAnsweringSimple),
and the beam-search span head `start_logits`, `end_logits`, `answer_class`, which keep their
names.

XLNet has no factorised embeddings, no cross-layer sharing, no pooler and one dropout for
hidden states and attention: a config with any of those (ALBERT-XLNet) is saved in litebert's
own layout, with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import torch

from litebert.config import ConfigError, ModelConfig
from litebert.families.base import (
    BIASED_HEADS,
    FamilyAdapter,
    build_config,
    finish_dict,
    heads_mismatch,
)

# transformers' XLNetConfig defaults (xlnet-large-cased's shapes) for keys a file leaves out.
_DEFAULTS: dict[str, Any] = dict(
    vocab_size=32000, d_model=1024, n_layer=24, n_head=16, d_inner=4096, ff_activation="gelu",
    attn_type="bi", initializer_range=0.02, layer_norm_eps=1e-12, dropout=0.1, mem_len=512,
    reuse_len=None, bi_data=False, clamp_len=-1, same_length=False, summary_type="last",
    summary_use_proj=True, summary_activation="tanh", summary_last_dropout=0.1,
    pad_token_id=5, bos_token_id=1, eos_token_id=2)
# Read into ModelConfig fields (the rest of a file is kept in `extra`, start_n_top and
# end_n_top among it). untie_r is only read by transformers' TensorFlow converter: PyTorch
# XLNet always has per-layer biases, as ours.
_CONSUMED = frozenset({"d_model", "n_layer", "n_head", "d_inner", "d_head", "ff_activation",
                       "dropout", "summary_type", "summary_use_proj", "summary_activation",
                       "summary_last_dropout", "summary_proj_to_labels", "untie_r",
                       "tie_word_embeddings", "n_token"})
# What XLNet's classes are, as ModelConfig fields.
STRUCTURE = dict(backbone="xlnet", sharing="none", inner_group_num=1,
                 embedding_projection="when_sizes_differ", use_pooler=False,
                 classifier_head="summary", mlm_act=None, position_numbering="from_zero",
                 **BIASED_HEADS)
_BEAM = {"start_n_top": 5, "end_n_top": 5}  # the SQuAD beam, kept as the file has it

_OURS = re.compile(r"backbone\.encoder\.(attentions|ffns)\.(\d+)\.(.+)$")
_THEIRS = re.compile(r"transformer\.layer\.(\d+)\.(rel_attn|ff)\.(.+)$")
_EINSUM = ("q", "k", "v", "o", "r")  # [d, n_head, d_head] there, (H, H) here
_PART = {"attentions": "rel_attn", "ffns": "ff"}


def _check_xlnet(values: Mapping[str, Any], source: str) -> None:
    if values["summary_type"] != "last" or not values["summary_use_proj"]:
        raise ConfigError(f"{source}: summary_type={values['summary_type']!r}, "
                          f"summary_use_proj={values['summary_use_proj']!r} is not supported: "
                          "litebert's XLNet summary is the last token (<cls>) through a dense "
                          "layer (summary_type 'last', summary_use_proj true)")
    if values.get("summary_proj_to_labels") or values.get("summary_first_dropout"):
        raise ConfigError(f"{source}: summary_proj_to_labels / summary_first_dropout are not "
                          "supported (XLNet's summary has neither)")
    if not values["summary_activation"]:
        raise ConfigError(f"{source}: summary_activation={values['summary_activation']!r}: "
                          "litebert's summary has an activation (XLNet's is 'tanh')")
    if values.get("tie_word_embeddings") is False:
        raise ConfigError(f"{source}: tie_word_embeddings=false is not supported: litebert's "
                          "LM decoder is always the word embeddings")
    d_model, n_head = values["d_model"], values["n_head"]
    d_head = values.get("d_head")
    if d_head is not None and isinstance(n_head, int) and n_head > 0 and \
            d_head * n_head != d_model:
        raise ConfigError(f"{source}: d_head={d_head} with n_head={n_head} must give "
                          f"d_model={d_model} (d_head = d_model / n_head)")


class XLNetAdapter(FamilyAdapter):
    model_type = "xlnet"
    title = "XLNet"
    prefix = "transformer."
    backbone_roots = ("word_embedding", "mask_emb", "layer")
    backbones = ("xlnet",)
    class_names = {
        "EncoderModel": "XLNetModel", "EncoderForPermutationLM": "XLNetLMHeadModel",
        "EncoderForSequenceClassification": "XLNetForSequenceClassification",
        "EncoderForTokenClassification": "XLNetForTokenClassification",
        "EncoderForQuestionAnswering": "XLNetForQuestionAnsweringSimple",
        "EncoderForMultipleChoice": "XLNetForMultipleChoice",
        "EncoderForBeamQuestionAnswering": "XLNetForQuestionAnswering"}
    other_heads = ("lm_loss.", "sequence_summary.", "logits_proj.", "classifier.",
                   "qa_outputs.", "start_logits.", "end_logits.", "answer_class.")
    tied_copies = ("lm_loss.weight",)

    # ---- config.json -----------------------------------------------------------------------

    def config_from_dict(self, data: Mapping[str, Any], source: str) -> ModelConfig:
        values = {**_DEFAULTS, **data}
        _check_xlnet(values, source)
        d_model, n_layer = values["d_model"], values["n_layer"]
        values.update(
            model_type="xlnet", hidden_size=d_model, embedding_size=d_model,
            num_hidden_layers=n_layer, num_hidden_groups=n_layer,
            num_attention_heads=values["n_head"], intermediate_size=values["d_inner"],
            hidden_act=values["ff_activation"], hidden_dropout_prob=values["dropout"],
            attention_probs_dropout_prob=values["dropout"],
            classifier_dropout_prob=values["summary_last_dropout"],
            classifier_act=values["summary_activation"], **STRUCTURE)
        config = build_config(values, source, consumed=_CONSUMED)
        for key, value in _BEAM.items():  # what config_to_dict writes anyway
            if config.extra.get(key) == value:
                del config.extra[key]
        return config

    def config_to_dict(self, config: ModelConfig) -> dict[str, Any]:
        H, n = config.hidden_size, config.num_attention_heads
        out: dict[str, Any] = dict(config.extra)
        out.update(
            model_type="xlnet", vocab_size=config.vocab_size, d_model=H,
            n_layer=config.num_hidden_layers, n_head=n, d_head=H // n,
            d_inner=config.intermediate_size, ff_activation=config.hidden_act, untie_r=True,
            initializer_range=config.initializer_range,
            layer_norm_eps=config.layer_norm_eps, dropout=config.hidden_dropout_prob,
            summary_type="last", summary_use_proj=True,
            summary_activation=config.classifier_act,
            summary_last_dropout=config.classifier_dropout_prob,
            pad_token_id=config.pad_token_id, bos_token_id=config.bos_token_id,
            eos_token_id=config.eos_token_id, num_labels=config.num_labels,
            problem_type=config.problem_type, architectures=config.architectures)
        for key, value in _BEAM.items():
            out.setdefault(key, value)
        out = finish_dict(out, config)
        # The backbone's own fields are XLNetConfig's, by name; null is a value for mem_len
        # and reuse_len (no memories; transformers' default when absent is 512).
        out.update(config.backbone_fields())
        return out

    # ---- keys ------------------------------------------------------------------------------

    def external_key(self, key: str, config: ModelConfig) -> str:
        match = _OURS.match(key)
        if match:
            part, n, rest = match.groups()
            return f"transformer.layer.{n}.{_PART[part]}.{rest}"
        return self.prefix_to_file(key)

    def internal_key(self, key: str, config: ModelConfig) -> str | None:
        match = _THEIRS.match(key)
        if match:
            n, part, rest = match.groups()
            ours = "attentions" if part == "rel_attn" else "ffns"
            return f"backbone.encoder.{ours}.{n}.{rest}"
        if key.startswith(self.prefix):
            return self.prefix_from_file(key)
        if key.startswith("logits_proj."):
            return "classifier." + key[len("logits_proj."):]
        return key

    def to_file(self, state: Mapping[str, torch.Tensor],
                config: ModelConfig) -> dict[str, torch.Tensor]:
        """Our tensors under XLNet's names and shapes; a `classifier` read through a
        `sequence_summary` (sequence classification, multiple choice) is `logits_proj`."""
        summary = any(k.startswith("sequence_summary.") for k in state)
        n = config.num_attention_heads
        out = {}
        for key, value in state.items():
            theirs = self.external_key(key, config)
            if summary and theirs.startswith("classifier."):
                theirs = "logits_proj." + theirs[len("classifier."):]
            out[theirs] = _einsum_shape(theirs, value, n)
        return out

    def from_file(self, state: dict[str, torch.Tensor],
                  config: ModelConfig) -> dict[str, torch.Tensor]:
        """XLNet's einsum tensors [d, n_head, d_head] as our (H, H) matrices (same keys)."""
        return {k: _linear_shape(k, v) for k, v in state.items()}

    # ---- what the layout holds -------------------------------------------------------------

    def unsupported(self, config: ModelConfig, class_name: str | None = None) -> str | None:
        if config.sharing != "none" or config.inner_group_num != 1:
            return (f"XLNet has one set of weights per layer, but sharing={config.sharing!r}, "
                    f"inner_group_num={config.inner_group_num}")
        if config.has_projection or config.embedding_size != config.hidden_size:
            return (f"XLNet's word embeddings are d_model wide, without an E->H projection "
                    f"(embedding_size={config.embedding_size}, hidden_size="
                    f"{config.hidden_size}, embedding_projection "
                    f"{config.embedding_projection!r})")
        if config.hidden_dropout_prob != config.attention_probs_dropout_prob:
            return (f"XLNet has one dropout for hidden states and attention, but "
                    f"hidden_dropout_prob={config.hidden_dropout_prob}, "
                    f"attention_probs_dropout_prob={config.attention_probs_dropout_prob}")
        if config.use_pooler or config.classifier_head != "summary":
            return ("XLNet has no pooler and classifies sequences through its sequence "
                    "summary (use_pooler false, classifier_head 'summary'), not "
                    f"use_pooler={config.use_pooler}, {config.classifier_head!r}")
        heads = heads_mismatch(config)
        if heads:
            return f"XLNet {heads}"
        return super().unsupported(config, class_name)


def _einsum_shape(key: str, value: torch.Tensor, n_head: int) -> torch.Tensor:
    """Our (H, H) q/k/v/r (out, in) or o (H, in) -> XLNet's [d, n_head, d_head]."""
    name = key.rpartition(".")[2]
    if not (key.startswith("transformer.layer.") and ".rel_attn." in key and name in _EINSUM):
        return value
    H = value.shape[1] if name != "o" else value.shape[0]
    matrix = value if name == "o" else value.t()  # [d, n_head * d_head]
    return matrix.reshape(H, n_head, -1)


def _linear_shape(key: str, value: torch.Tensor) -> torch.Tensor:
    """XLNet's [d, n_head, d_head] -> our (H, H): o flattened, q/k/v/r flattened and
    transposed to nn.Linear's (out, in)."""
    name = key.rpartition(".")[2]
    if value.dim() != 3 or ".rel_attn." not in key or name not in _EINSUM:
        return value
    matrix = value.reshape(value.shape[0], -1)
    return matrix if name == "o" else matrix.t()


ADAPTER = XLNetAdapter()  # what the package's ModelSpec names (adapter_module)
