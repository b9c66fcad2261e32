"""transformers' ELECTRA layout (Clark et al., 2020).

The encoder is BERT's under `electra.` (our not-shared backbone is exactly it: post-LN layers,
same shapes). Differences from BERT, all expressed by ModelConfig's structure fields:
- `electra.embeddings_project` (E->H) exists iff embedding_size != hidden_size,
- no pooler; sequence classification is `classifier.{dense,out_proj}` on the first token with
  exact GELU; multiple choice is `sequence_summary.summary` (dense H->H on the first token,
  GELU, dropout) then `classifier` (H->1),
- the generator's MLM head `generator_predictions.{dense,LayerNorm}` uses exact GELU whatever
  hidden_act says, and its decoder `generator_lm_head` is tied to the word embeddings with its
  own bias,
- the discriminator `discriminator_predictions.{dense,dense_prediction}` (our
  EncoderForReplacedTokenDetection; transformers' ElectraForPreTraining).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litebert.config import ConfigError, ModelConfig
from litebert.families.base import (
    BIASED_HEADS,
    build_config,
    check_encoder,
    common_dict,
    finish_dict,
)
from litebert.models.bert.adapter import BertAdapter, classifier_dropout

# transformers' ElectraConfig defaults (electra-small's discriminator).
_DEFAULTS: dict[str, Any] = dict(
    vocab_size=30522, embedding_size=128, hidden_size=256, num_hidden_layers=12,
    num_attention_heads=4, intermediate_size=1024, hidden_act="gelu", hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
    initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0, bos_token_id=None,
    eos_token_id=None,
)
# The one multiple-choice summary litebert builds (transformers' ElectraSequenceSummary).
_SUMMARY = {"summary_type": "first", "summary_use_proj": True, "summary_activation": "gelu"}
# What ELECTRA's heads are, as ModelConfig fields.
STRUCTURE = dict(embedding_projection="when_sizes_differ", use_pooler=False,
                 classifier_head="first_token", classifier_act="gelu", mlm_act="gelu",
                 position_numbering="from_zero", **BIASED_HEADS)


def _check_electra(values: Mapping[str, Any], source: str) -> None:
    for key, wanted in _SUMMARY.items():
        if values.get(key, wanted) != wanted:
            raise ConfigError(f"{source}: {key}={values[key]!r} is not supported; ELECTRA's "
                              f"multiple-choice summary is read with {_SUMMARY}")
    if values.get("summary_proj_to_labels"):
        raise ConfigError(f"{source}: summary_proj_to_labels=true is not supported")
    if values.get("tie_word_embeddings") is False:
        raise ConfigError(f"{source}: tie_word_embeddings=false is not supported: litebert's "
                          "MLM decoder is always the word embeddings")


class ElectraAdapter(BertAdapter):
    model_type = "electra"
    title = "ELECTRA"
    prefix = "electra."
    backbone_roots = ("embeddings", "embeddings_project", "encoder")
    class_names = {
        "EncoderModel": "ElectraModel", "EncoderForReplacedTokenDetection": "ElectraForPreTraining",
        "EncoderForMaskedLM": "ElectraForMaskedLM",
        "EncoderForSequenceClassification": "ElectraForSequenceClassification",
        "EncoderForTokenClassification": "ElectraForTokenClassification",
        "EncoderForMultipleChoice": "ElectraForMultipleChoice",
        "EncoderForQuestionAnswering": "ElectraForQuestionAnswering"}
    other_heads = ("discriminator_predictions.", "generator_predictions.", "generator_lm_head.",
                   "classifier.", "sequence_summary.", "qa_outputs.")
    tied_copies = ("generator_lm_head.weight",)
    # The discriminator, classifier and summary heads have transformers' names already.
    heads = (
        ("backbone.encoder.embedding_hidden_mapping_in.", "electra.embeddings_project."),
        ("predictions.dense.", "generator_predictions.dense."),
        ("predictions.LayerNorm.", "generator_predictions.LayerNorm."),
        ("predictions.bias", "generator_lm_head.bias"),
    )

    def config_from_dict(self, data: Mapping[str, Any], source: str) -> ModelConfig:
        check_encoder(data, source)
        values = {**_DEFAULTS, **data}
        _check_electra(values, source)
        values.update(model_type="electra", sharing="none", inner_group_num=1,
                      num_hidden_groups=values["num_hidden_layers"],
                      classifier_dropout_prob=classifier_dropout(values), **STRUCTURE)
        config = build_config(values, source, consumed={"classifier_dropout", *_SUMMARY})
        if config.extra.get("summary_last_dropout") == config.classifier_dropout_prob:
            del config.extra["summary_last_dropout"]  # what config_to_dict writes anyway
        return config

    def config_to_dict(self, config: ModelConfig) -> dict[str, Any]:
        out = common_dict(config)
        out.update(model_type="electra", embedding_size=config.embedding_size,
                   classifier_dropout=config.classifier_dropout_prob,
                   position_embedding_type="absolute", bos_token_id=config.bos_token_id,
                   eos_token_id=config.eos_token_id, **_SUMMARY)
        # The multiple-choice summary's dropout: litebert uses classifier_dropout_prob there;
        # a file's own value is kept for transformers.
        out.setdefault("summary_last_dropout", config.classifier_dropout_prob)
        return finish_dict(out, config)

    def structure_mismatch(self, config: ModelConfig) -> str | None:
        if config.has_projection != (config.embedding_size != config.hidden_size):
            return ("projects E->H exactly when embedding_size != hidden_size "
                    "(embedding_projection 'when_sizes_differ')")
        wanted = {k: v for k, v in STRUCTURE.items() if k != "embedding_projection"}
        held = config.flat_fields()
        for key, value in wanted.items():
            if key == "mlm_act":
                if config.mlm_activation != value:
                    return f"uses {value!r} in the generator's MLM head (mlm_act {value!r})"
            elif held[key] != value:
                return f"has {key}={value!r}, not {held[key]!r}"
        return None


ADAPTER = ElectraAdapter()  # what the package's ModelSpec names (adapter_module)
