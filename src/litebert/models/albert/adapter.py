"""transformers' ALBERT layout (and Google's albert_config.json).

Layers live in groups: `albert.encoder.albert_layer_groups.{g}.albert_layers.{j}.attention.*`
for the attention half and `...albert_layers.{j}.{ffn,ffn_output,full_layer_layer_norm}.*` for
the FFN half; our module n is group g's layer j, n = g * inner_group_num + j. Heads keep our
names (ours are ALBERT's), and the backbone's other keys go from our `backbone.` to `albert.`.
This layout also carries what only litebert builds (a model without
a pooler, ELECTRA-style heads, an all-shared ELECTRA): the structure fields that differ from
ALBERT's are written to config.json, and the family the config came from as
`litebert_model_type`, so litebert reads it back exactly while transformers reads the backbone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import torch

from litebert.config import ConfigError, ModelConfig
from litebert.families.base import (
    BACKBONE_CLASS,
    PREFIX,
    FamilyAdapter,
    build_config,
    check_encoder,
    common_dict,
    finish_dict,
    numbering,
    structure_dict,
)

# transformers' defaults for keys a config.json may leave out.
_DEFAULTS: dict[str, Any] = dict(
    vocab_size=30000, embedding_size=128, hidden_size=4096, num_hidden_layers=12,
    num_hidden_groups=1, num_attention_heads=64, intermediate_size=16384, inner_group_num=1,
    hidden_act="gelu_new", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    max_position_embeddings=512, type_vocab_size=2, initializer_range=0.02,
    layer_norm_eps=1e-12, classifier_dropout_prob=0.1, pad_token_id=0, bos_token_id=2,
    eos_token_id=3,
)
# Google's albert_config.json has keys for structures the released models never used.
_GOOGLE_ONLY_KEYS = frozenset({"net_structure_type", "layers_to_keep", "gap_size",
                               "num_memory_blocks", "down_scale_factor"})
# Which family a config written in this layout came from, when not ALBERT (see the docstring).
FAMILY_KEY = "litebert_model_type"
ALL_CLASSES = (BACKBONE_CLASS, "EncoderForPreTraining", "EncoderForMaskedLM",
               "EncoderForSequenceClassification", "EncoderForTokenClassification",
               "EncoderForMultipleChoice", "EncoderForQuestionAnswering",
               "EncoderForReplacedTokenDetection", "EncoderForBeamQuestionAnswering")
# Every head of ours, named as in its files (ours are ALBERT's names), and the pooler.
OUR_HEADS = ("predictions.", "sop_classifier.", "classifier.", "qa_outputs.", "albert.pooler.",
             "discriminator_predictions.", "sequence_summary.", "start_logits.",
             "end_logits.", "answer_class.", "head.")

_OURS = re.compile(r"backbone\.encoder\.(attentions|ffns)\.(\d+)\.(\w+)\.(\w+)$")
_THEIRS = re.compile(r"albert\.encoder\.albert_layer_groups\.(\d+)\.albert_layers\.(\d+)\."
                     r"(attention\.)?(\w+)\.(\w+)$")
_PROJECTION = "albert.encoder.embedding_hidden_mapping_in."


def albert_config_from_dict(data: Mapping[str, Any], source: str) -> ModelConfig:
    """ALBERT-layout config.json (transformers', Google's, or ours) -> ModelConfig."""
    check_encoder(data, source)
    _check_google_albert(data, source)
    values = {**_DEFAULTS, **data}
    values["model_type"] = values.pop(FAMILY_KEY, "albert")
    return build_config(values, source, consumed=_GOOGLE_ONLY_KEYS)


def albert_config_to_dict(config: ModelConfig, model_type: str) -> dict[str, Any]:
    out = common_dict(config)
    groups = config.num_hidden_layers if config.sharing == "none" else config.num_hidden_groups
    out.update(
        model_type=model_type, embedding_size=config.embedding_size, num_hidden_groups=groups,
        inner_group_num=config.inner_group_num,
        classifier_dropout_prob=config.classifier_dropout_prob,
        bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id,
        position_embedding_type="absolute", sharing=config.sharing, **structure_dict(config))
    if config.model_type != "albert":  # even "litebert": reads back as it was
        out[FAMILY_KEY] = config.model_type
    return finish_dict(out, config)


def _check_google_albert(data: Mapping[str, Any], source: str) -> None:
    if data.get("net_structure_type", 0) != 0:
        raise ConfigError(f"{source}: net_structure_type={data['net_structure_type']} is not "
                          "supported (only the standard ALBERT structure, 0, is)")
    if data.get("layers_to_keep"):
        raise ConfigError(f"{source}: layers_to_keep={data['layers_to_keep']} is not supported")
    if data.get("down_scale_factor", 1) != 1:
        raise ConfigError(f"{source}: down_scale_factor must be 1")


class AlbertAdapter(FamilyAdapter):
    model_type = "albert"
    title = "ALBERT"
    prefix = "albert."
    # transformers' names: ALBERT's for our generic classes ("EncoderForMaskedLM" is
    # AlbertForMaskedLM), and the same pattern for the two it has not (replaced-token
    # detection and the beam-search span head), which only litebert reads.
    class_names = {name: "Albert" + name.removeprefix("Encoder") for name in ALL_CLASSES}
    other_heads = OUR_HEADS
    tied_copies = ("predictions.decoder.weight", "predictions.decoder.bias")

    def config_from_dict(self, data: Mapping[str, Any], source: str) -> ModelConfig:
        return albert_config_from_dict(data, source)

    def config_to_dict(self, config: ModelConfig) -> dict[str, Any]:
        return albert_config_to_dict(config, "albert")

    def external_key(self, key: str, config: ModelConfig) -> str:
        match = _OURS.match(key)
        if not match:
            return self.prefix_to_file(key)
        part, n, module, tensor = match.groups()
        g, j = divmod(int(n), config.inner_group_num)
        half = "attention." if part == "attentions" else ""
        return f"albert.encoder.albert_layer_groups.{g}.albert_layers.{j}.{half}{module}.{tensor}"

    def internal_key(self, key: str, config: ModelConfig) -> str | None:
        match = _THEIRS.match(key)
        if not match:
            return self.prefix_from_file(key)
        g, j, attention, module, tensor = match.groups()
        if int(j) >= config.inner_group_num:  # would alias the next group's layer
            return None
        part = "attentions" if attention else "ffns"
        n = int(g) * config.inner_group_num + int(j)
        return f"{PREFIX}encoder.{part}.{n}.{module}.{tensor}"

    def unsupported(self, config: ModelConfig, class_name: str | None = None) -> str | None:
        if not config.hf_compatible:
            return f"sharing={config.sharing!r} has no transformers equivalent"
        if numbering(config) != "from_zero":
            return ("transformers' ALBERT numbers positions from zero (position_numbering "
                    f"'from_zero'), this model with {numbering(config)!r}")
        return super().unsupported(config, class_name)

    def to_file(self, state: Mapping[str, torch.Tensor],
                config: ModelConfig) -> dict[str, torch.Tensor]:
        """transformers' ALBERT always has the E->H projection: a model without one (E == H)
        gets an identity there, which changes no output."""
        out = super().to_file(state, config)
        if not config.has_projection:
            like = state[f"{PREFIX}embeddings.LayerNorm.weight"]
            H = config.hidden_size
            out[_PROJECTION + "weight"] = torch.eye(H, dtype=like.dtype)
            out[_PROJECTION + "bias"] = torch.zeros(H, dtype=like.dtype)
        return out

    def from_file(self, state: dict[str, torch.Tensor],
                  config: ModelConfig) -> dict[str, torch.Tensor]:
        """Drop the identity that `to_file` wrote for a model without a projection; any other
        projection stays and is reported as not matching config.json."""
        weight, bias = (state.get(_PROJECTION + n) for n in ("weight", "bias"))
        if config.has_projection or weight is None or bias is None:
            return state
        identity = torch.eye(config.hidden_size, dtype=weight.dtype)
        if weight.shape != identity.shape or not (torch.equal(weight, identity)
                                                  and not bias.any()):
            return state
        return {k: v for k, v in state.items() if not k.startswith(_PROJECTION)}


ADAPTER = AlbertAdapter()  # what the package's ModelSpec names (adapter_module)
