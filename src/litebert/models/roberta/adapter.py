"""transformers' RoBERTa layout (Liu et al., 2019).

The encoder is BERT's under `roberta.` (`roberta.encoder.layer.{i}...`), the pooler
`roberta.pooler.dense`. Differences from BERT, all expressed by ModelConfig's structure
fields (STRUCTURE below):
- position ids after the pad id (position_numbering "after_pad"): real tokens are numbered
  pad_token_id + 1, + 2, ..., pads get pad_token_id, a padding row of the position table;
  max_position_embeddings 514 holds 512 tokens,
- sequence classification is `classifier.{dense,out_proj}` on the first token with tanh (no
  pooler); token classification, multiple choice and span heads are BERT's (`classifier`,
  `qa_outputs`), multiple choice reading the pooler, which RobertaModel keeps for it,
- the LM head `lm_head.{dense,layer_norm,bias}` uses exact GELU whatever hidden_act says;
  its decoder (`lm_head.decoder.weight`, `.bias`) repeats the word embeddings and
  `lm_head.bias`: never loaded, never written.
One token type and eps 1e-5 are plain fields (type_vocab_size, layer_norm_eps).

transformers has no RoBERTa pre-training class with a sentence-pair head: an
EncoderForPreTraining (or a replaced-token detector) with a roberta config is saved in the
layout that holds it (see litebert.families.layout_for), its MLM part as EncoderForMaskedLM
is a RobertaForMaskedLM directory. One difference litebert does not reproduce: transformers'
RobertaForMultipleChoice drops out the pooled output with hidden_dropout_prob, litebert with
classifier_dropout_prob (`classifier_dropout`); they agree unless a config sets
classifier_dropout, and at inference always.
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
    heads_mismatch,
    numbering,
)
from litebert.models.bert.adapter import BertAdapter, classifier_dropout

# transformers' RobertaConfig defaults for keys a config.json may leave out (the class keeps
# BERT's 512 positions, 2 types and eps 1e-12; roberta-base's file says 514, 1 and 1e-5).
_DEFAULTS: dict[str, Any] = dict(
    vocab_size=50265, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
    intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
    initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=1, bos_token_id=0,
    eos_token_id=2,
)
# What RoBERTa's classes build, as ModelConfig fields.
STRUCTURE = dict(embedding_projection="never", use_pooler=True, classifier_head="first_token",
                 classifier_act="tanh", mlm_act="gelu", position_numbering="after_pad",
                 **BIASED_HEADS)


def _check_roberta(values: Mapping[str, Any], source: str) -> None:
    if values.get("tie_word_embeddings") is False:
        raise ConfigError(f"{source}: tie_word_embeddings=false is not supported: litebert's "
                          "MLM decoder is always the word embeddings")
    if not isinstance(values.get("pad_token_id"), int):
        raise ConfigError(f"{source}: pad_token_id={values.get('pad_token_id')!r}: RoBERTa "
                          "numbers positions after the pad id, so it must be an integer")


class RobertaAdapter(BertAdapter):
    model_type = "roberta"
    title = "RoBERTa"
    prefix = "roberta."
    class_names = {"EncoderModel": "RobertaModel", "EncoderForMaskedLM": "RobertaForMaskedLM",
                   "EncoderForSequenceClassification": "RobertaForSequenceClassification",
                   "EncoderForTokenClassification": "RobertaForTokenClassification",
                   "EncoderForMultipleChoice": "RobertaForMultipleChoice",
                   "EncoderForQuestionAnswering": "RobertaForQuestionAnswering"}
    other_heads = ("lm_head.", "classifier.", "qa_outputs.", "roberta.pooler.")
    tied_copies = ("lm_head.decoder.weight", "lm_head.decoder.bias")
    # The classifier and span heads have transformers' names already.
    heads = (
        ("predictions.dense.", "lm_head.dense."),
        ("predictions.LayerNorm.", "lm_head.layer_norm."),
        ("predictions.bias", "lm_head.bias"),
        ("backbone.pooler.", "roberta.pooler.dense."),
    )

    def config_from_dict(self, data: Mapping[str, Any], source: str) -> ModelConfig:
        check_encoder(data, source)
        values = {**_DEFAULTS, **data}
        _check_roberta(values, source)
        values.update(model_type="roberta", embedding_size=values["hidden_size"],
                      sharing="none", num_hidden_groups=values["num_hidden_layers"],
                      inner_group_num=1, classifier_dropout_prob=classifier_dropout(values),
                      **STRUCTURE)
        consumed = {"classifier_dropout", "tie_word_embeddings"}
        return build_config(values, source, consumed=consumed)

    def config_to_dict(self, config: ModelConfig) -> dict[str, Any]:
        out = common_dict(config)
        out.update(model_type="roberta", classifier_dropout=config.classifier_dropout_prob,
                   bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id)
        return finish_dict(out, config)

    def unsupported(self, config: ModelConfig, class_name: str | None = None) -> str | None:
        if class_name == "EncoderForPreTraining":
            return ("transformers has no RoBERTa model with a sentence-pair head (its MLM "
                    "part, saved as EncoderForMaskedLM, is a RobertaForMaskedLM directory)")
        return super().unsupported(config, class_name)

    def structure_mismatch(self, config: ModelConfig) -> str | None:
        if config.has_projection:
            return "has no E->H projection (embedding_projection 'never', E == H)"
        if numbering(config) != "after_pad":
            return ("numbers positions after the pad id (position_numbering 'after_pad'), "
                    f"not {numbering(config)!r}")
        if not config.use_pooler:
            return "has a pooler, read by multiple choice (use_pooler true)"
        if (config.classifier_head, config.classifier_act) != ("first_token", "tanh"):
            return ("classifies sequences with dense + tanh + out_proj on the first token "
                    "(classifier_head 'first_token', classifier_act 'tanh'), not "
                    f"{config.classifier_head!r} with {config.classifier_act!r}")
        if config.mlm_activation != "gelu":
            return (f"uses exact GELU in the LM head (mlm_act 'gelu'), not "
                    f"{config.mlm_activation!r}")
        return heads_mismatch(config)


ADAPTER = RobertaAdapter()  # what the package's ModelSpec names (adapter_module)
