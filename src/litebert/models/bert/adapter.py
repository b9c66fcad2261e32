"""transformers' BERT layout: one set of weights per layer, no E->H projection.

`bert.encoder.layer.{i}.attention.self.{query,key,value}`, `...attention.output.{dense,
LayerNorm}`, `...intermediate.dense`, `...output.{dense,LayerNorm}`: the same post-LN layer as
our attention + FFN halves, under other names. The pooler is `bert.pooler.dense`, the MLM head
`cls.predictions.{transform.dense, transform.LayerNorm, bias}` and the NSP head
`cls.seq_relationship`. ELECTRA and RoBERTa share the encoder names: they subclass this.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from litebert.config import ModelConfig
from litebert.families.base import (
    BIASED_HEADS,
    FamilyAdapter,
    Pairs,
    build_config,
    check_encoder,
    common_dict,
    finish_dict,
    heads_mismatch,
    numbering,
    rename,
)

_DEFAULTS: dict[str, Any] = dict(
    vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
    intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
    initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0,
)
# Our module in a layer half -> its name in a BERT-style layer.
_ATTENTION = {"query": "attention.self.query", "key": "attention.self.key",
              "value": "attention.self.value", "dense": "attention.output.dense",
              "LayerNorm": "attention.output.LayerNorm"}
_FFN = {"ffn": "intermediate.dense", "ffn_output": "output.dense",
        "full_layer_layer_norm": "output.LayerNorm"}
_BACK = {theirs: ("attentions", ours) for ours, theirs in _ATTENTION.items()} | {
    theirs: ("ffns", ours) for ours, theirs in _FFN.items()}
_OURS = re.compile(r"backbone\.encoder\.(attentions|ffns)\.(\d+)\.(\w+)\.(\w+)$")


def classifier_dropout(values: Mapping[str, Any]) -> float:
    """transformers' rule: classifier_dropout, or hidden_dropout_prob when it is null."""
    value = values.get("classifier_dropout")
    return values["hidden_dropout_prob"] if value is None else value


class BertAdapter(FamilyAdapter):
    model_type = "bert"
    title = "BERT"
    prefix = "bert."
    class_names = {"EncoderModel": "BertModel", "EncoderForPreTraining": "BertForPreTraining",
                   "EncoderForMaskedLM": "BertForMaskedLM",
                   "EncoderForSequenceClassification": "BertForSequenceClassification",
                   "EncoderForTokenClassification": "BertForTokenClassification",
                   "EncoderForMultipleChoice": "BertForMultipleChoice",
                   "EncoderForQuestionAnswering": "BertForQuestionAnswering"}
    other_heads: ClassVar[tuple[str, ...]] = ("cls.", "classifier.", "qa_outputs.",
                                              "bert.pooler.")
    tied_copies: ClassVar[tuple[str, ...]] = ("cls.predictions.decoder.weight",
                                              "cls.predictions.decoder.bias")
    # Outside the encoder layers: our prefix -> theirs (the backbone's own prefix comes last).
    heads: ClassVar[Pairs] = (
        ("predictions.dense.", "cls.predictions.transform.dense."),
        ("predictions.LayerNorm.", "cls.predictions.transform.LayerNorm."),
        ("predictions.bias", "cls.predictions.bias"),
        ("sop_classifier.classifier.", "cls.seq_relationship."),
        ("backbone.pooler.", "bert.pooler.dense."),
    )

    # ---- config.json -----------------------------------------------------------------------

    def config_from_dict(self, data: Mapping[str, Any], source: str) -> ModelConfig:
        check_encoder(data, source)
        values = {**_DEFAULTS, **data}
        values.update(model_type="bert", embedding_size=values["hidden_size"], sharing="none",
                      num_hidden_groups=values["num_hidden_layers"], inner_group_num=1,
                      classifier_dropout_prob=classifier_dropout(values),
                      embedding_projection="never", use_pooler=True, classifier_head="pooler",
                      mlm_act=None, position_numbering="from_zero", **BIASED_HEADS)
        return build_config(values, source, consumed={"classifier_dropout"})

    def config_to_dict(self, config: ModelConfig) -> dict[str, Any]:
        out = common_dict(config)
        out.update(model_type="bert", classifier_dropout=config.classifier_dropout_prob,
                   position_embedding_type="absolute")
        return finish_dict(out, config)

    # ---- keys ------------------------------------------------------------------------------

    def _pairs(self) -> Pairs:
        return self.heads + (("backbone.", self.prefix),)

    def external_key(self, key: str, config: ModelConfig) -> str:
        match = _OURS.match(key)
        if match:
            part, n, module, tensor = match.groups()
            table = _ATTENTION if part == "attentions" else _FFN
            return f"{self.prefix}encoder.layer.{n}.{table[module]}.{tensor}"
        return rename(key, self._pairs()) or key

    def internal_key(self, key: str, config: ModelConfig) -> str | None:
        layer = f"{self.prefix}encoder.layer."
        if key.startswith(layer):
            n, _, rest = key[len(layer):].partition(".")
            module, _, tensor = rest.rpartition(".")
            if module not in _BACK or not n.isdigit():
                return None
            part, ours = _BACK[module]
            return f"backbone.encoder.{part}.{n}.{ours}.{tensor}"
        return rename(key, self._pairs(), reverse=True) or key

    # ---- what the layout holds -------------------------------------------------------------

    def structure_mismatch(self, config: ModelConfig) -> str | None:
        """The first structure field this family's transformers classes do not build."""
        if config.has_projection:
            return "has no E->H projection (embedding_projection 'never', E == H)"
        if not config.use_pooler or config.classifier_head != "pooler":
            return "has a pooler and classifies from it (use_pooler, classifier_head 'pooler')"
        if config.mlm_activation != config.hidden_act:
            return "uses hidden_act in the MLM head (mlm_act null)"
        if numbering(config) != "from_zero":
            return "numbers positions from zero (position_numbering 'from_zero')"
        return heads_mismatch(config)

    def unsupported(self, config: ModelConfig, class_name: str | None = None) -> str | None:
        name = self.title
        if config.sharing != "none" or config.inner_group_num != 1:
            return (f"{name} has one set of weights per layer, but sharing={config.sharing!r}, "
                    f"inner_group_num={config.inner_group_num}")
        mismatch = self.structure_mismatch(config)
        if mismatch:
            return f"{name} {mismatch}"
        return super().unsupported(config, class_name)


ADAPTER = BertAdapter()  # what the package's ModelSpec names (adapter_module)
