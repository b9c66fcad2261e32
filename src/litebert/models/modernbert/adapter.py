"""transformers' ModernBERT layout (Warner et al., 2024).

The backbone is `model.` (transformers' ModernBertModel files hold it without the prefix):
`embeddings.tok_embeddings` [V, H], `embeddings.norm` (no bias), per layer
`layers.{i}.attn_norm` (absent from layer 0), `layers.{i}.attn.Wqkv` [3H, H],
`layers.{i}.attn.Wo`, `layers.{i}.mlp_norm`, `layers.{i}.mlp.Wi` [2I, H], `layers.{i}.mlp.Wo`,
then `final_norm`; nothing has a bias. Ours (models/modernbert/model.py) is the same under
`backbone.`, the layer's attention half at `encoder.attentions.{i}` and its MLP half at
`encoder.ffns.{i}`.

config.json: transformers 5's ModernBertConfig writes the layer pattern as `layer_types`
("full_attention" / "sliding_attention" per layer) and the rotary bases as `rope_parameters`
{"full_attention": {"rope_theta": ...}, "sliding_attention": {...}}; earlier files have
`global_attn_every_n_layers`, `global_rope_theta` and `local_rope_theta` (a null local theta
meaning the global one). Both are read, and both are written, so either version reads our
files. litebert builds the every-n pattern only: other `layer_types` are refused, as are
biases (norm_bias, attention_bias, mlp_bias), an untied or bias-free decoder and rotary
scaling. ModernBERT's names for shared fields: hidden_activation (hidden_act), norm_eps
(layer_norm_eps), attention_dropout (attention_probs_dropout_prob), classifier_dropout
(classifier_dropout_prob) and classifier_activation (classifier_act, and mlm_act: its MLM
head's activation is the same). classifier_pooling ("cls" or "mean") and classifier_bias (the
heads' dense layers) are the heads' fields of the same meaning (classifier_pooling,
head_dense_bias); cls_token_id and sep_token_id are read as bos_token_id and eos_token_id
(what the template reads) and written as both; the other keys are kept as they are
(`extra`).

Heads, by transformers' names: the MLM head `head.dense`, `head.norm`, `decoder` (its weight is
the token embeddings; the bias is ours, `predictions.bias`); the classifiers' `head.*` and
`classifier` keep their names (model/head_parts.py builds them so for classifier_head
"pooled_norm").

Sharing across layers and factorised embeddings (E != H) have no ModernBERT layout: such a
config is saved in litebert's own, with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

import torch

from litebert.config import ConfigError, ModelConfig, is_whole
from litebert.families.base import FamilyAdapter, Pairs, build_config, finish_dict, rename

# transformers' ModernBertConfig defaults (ModernBERT-base) for keys a file leaves out.
_DEFAULTS: dict[str, Any] = dict(
    vocab_size=50368, hidden_size=768, intermediate_size=1152, num_hidden_layers=22,
    num_attention_heads=12, hidden_activation="gelu", max_position_embeddings=8192,
    initializer_range=0.02, norm_eps=1e-5, pad_token_id=50283, eos_token_id=50282,
    bos_token_id=50281, attention_dropout=0.0, classifier_dropout=0.0,
    classifier_activation="gelu")
# What ModernBERT's classes are, as ModelConfig fields.
STRUCTURE = dict(backbone="modernbert", sharing="none", inner_group_num=1,
                 embedding_projection="when_sizes_differ", use_pooler=False,
                 classifier_head="pooled_norm", head_norm_bias=False)
# Read into ModelConfig fields or checked (the rest of a file is kept in `extra`).
_CONSUMED = frozenset({"hidden_activation", "norm_eps", "norm_bias", "attention_bias",
                       "mlp_bias", "attention_dropout", "classifier_dropout",
                       "classifier_activation", "classifier_bias", "decoder_bias",
                       "tie_word_embeddings", "layer_types", "rope_parameters",
                       "rope_scaling", "cls_token_id", "sep_token_id"})
# Biases litebert's ModernBERT does not have (False) or always has (True): a file must agree.
_BIASES = {"norm_bias": False, "attention_bias": False, "mlp_bias": False, "decoder_bias": True}
GLOBAL, LOCAL = "full_attention", "sliding_attention"  # transformers' layer types
# Layer type -> (the earlier flat key of its rotary base, transformers' default).
_THETAS = {GLOBAL: ("global_rope_theta", 160_000.0), LOCAL: ("local_rope_theta", 10_000.0)}
POOLINGS = ("cls", "mean")
# Shared fields ModernBERT has no use for, at their ModelConfig defaults: written only when a
# config differs, so that litebert reads it back.
_UNUSED = {"hidden_dropout_prob": 0.0, "type_vocab_size": 2}

_OURS = re.compile(r"backbone\.encoder\.(attentions|ffns)\.(\d+)\.(.+)$")
_THEIRS = re.compile(r"model\.layers\.(\d+)\.((attn_norm|attn|mlp_norm|mlp)\..+)$")


def layer_types(every: int, layers: int) -> list[str]:
    """ModernBERT's pattern: layer i global when i % every == 0, else sliding."""
    return [GLOBAL if i % every == 0 else LOCAL for i in range(layers)]


def _every_n(values: Mapping[str, Any], source: str) -> Any:
    """global_attn_every_n_layers from the file: as given, or the n whose pattern
    `layer_types` is (the smallest), checked against a given one."""
    given = values.get("global_attn_every_n_layers")
    types, layers = values.get("layer_types"), values["num_hidden_layers"]
    if types is None or not is_whole(layers):  # ModelConfig names a bad num_hidden_layers
        return 3 if given is None else given
    candidates = [given] if given is not None else range(1, max(layers, 1) + 1)
    for n in candidates:
        if is_whole(n) and n >= 1 and layer_types(n, layers) == list(types):
            return n
    with_n = "" if given is None else f" with global_attn_every_n_layers={given!r}"
    raise ConfigError(f"{source}: layer_types={list(types)!r} is not ModernBERT's pattern"
                      f"{with_n}: litebert builds a global layer every n layers (positions 0, "
                      f"n, 2n, ...) and sliding-window layers between them")


def _rope_thetas(values: Mapping[str, Any], source: str) -> tuple[Any, Any]:
    """(global, local) rotary bases: rope_parameters' first, else the earlier flat keys,
    else transformers' defaults; a null local base is the global one (earlier files)."""
    params = values.get("rope_parameters") or {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"{source}: rope_parameters={params!r} must be an object with "
                          f"{GLOBAL!r} and {LOCAL!r} entries")
    thetas = []
    for kind, (flat, default) in _THETAS.items():
        entry = params.get(kind) or {}
        rope_type = entry.get("rope_type", "default")
        if rope_type != "default":
            raise ConfigError(f"{source}: rope_parameters[{kind!r}].rope_type={rope_type!r} "
                              "is not supported: litebert's rotary embeddings are the "
                              "default ones (rope_type 'default', no scaling)")
        thetas.append(entry.get("rope_theta", values.get(flat, default)))
    global_theta, local_theta = thetas
    return global_theta, global_theta if local_theta is None else local_theta


def _check_modernbert(values: Mapping[str, Any], source: str) -> None:
    for key, wanted in _BIASES.items():
        if values.get(key, wanted) != wanted:
            has = "has" if wanted else "has no"
            raise ConfigError(f"{source}: {key}={values[key]!r} is not supported: litebert's "
                              f"ModernBERT {has} this bias (transformers' default, "
                              f"{str(wanted).lower()})")
    if values.get("tie_word_embeddings") is False:
        raise ConfigError(f"{source}: tie_word_embeddings=false is not supported: litebert's "
                          "MLM decoder is always the token embeddings")
    if values.get("rope_scaling"):
        raise ConfigError(f"{source}: rope_scaling={values['rope_scaling']!r} is not "
                          "supported: litebert's rotary embeddings have no scaling (null)")
    pooling = values.get("classifier_pooling", "cls")
    if pooling not in POOLINGS:
        raise ConfigError(f"{source}: classifier_pooling={pooling!r} is unknown; choose "
                          f"from {POOLINGS}")


class ModernBertAdapter(FamilyAdapter):
    model_type = "modernbert"
    title = "ModernBERT"
    prefix = "model."
    backbone_roots = ("embeddings", "layers", "final_norm")
    backbones = ("modernbert",)
    class_names = {
        "EncoderModel": "ModernBertModel", "EncoderForMaskedLM": "ModernBertForMaskedLM",
        "EncoderForSequenceClassification": "ModernBertForSequenceClassification",
        "EncoderForTokenClassification": "ModernBertForTokenClassification",
        "EncoderForQuestionAnswering": "ModernBertForQuestionAnswering",
        "EncoderForMultipleChoice": "ModernBertForMultipleChoice"}
    other_heads = ("head.", "decoder.", "predictions.", "classifier.", "qa_outputs.")
    tied_copies = ("decoder.weight",)
    # Outside the layers: our prefix -> theirs (the backbone's own prefix last).
    renames: ClassVar[Pairs] = (
        ("backbone.encoder.final_norm.", "model.final_norm."),  # the encoder's last step here
        ("backbone.", "model."),
    )
    # The MLM head: ours is `predictions.*`, transformers' `head.*` + `decoder.bias`. Their
    # classifiers' head is `head.*` too, so a file's `head.*` is the MLM head's only in a
    # file with a decoder (from_file).
    mlm_renames: ClassVar[Pairs] = (
        ("predictions.dense.", "head.dense."),
        ("predictions.LayerNorm.", "head.norm."),
        ("predictions.bias", "decoder.bias"),
    )

    # ---- config.json -----------------------------------------------------------------------

    def config_from_dict(self, data: Mapping[str, Any], source: str) -> ModelConfig:
        values = {**_DEFAULTS, **data}
        _check_modernbert(values, source)
        global_theta, local_theta = _rope_thetas(values, source)
        H, L = values["hidden_size"], values["num_hidden_layers"]
        activation = values["classifier_activation"]
        values.update(
            # [CLS] and [SEP] are what the template reads: our bos and eos.
            bos_token_id=values.get("cls_token_id", values["bos_token_id"]),
            eos_token_id=values.get("sep_token_id", values["eos_token_id"]),
            model_type="modernbert", embedding_size=H, num_hidden_groups=L,
            hidden_act=values["hidden_activation"], layer_norm_eps=values["norm_eps"],
            attention_probs_dropout_prob=values["attention_dropout"],
            classifier_dropout_prob=values["classifier_dropout"], classifier_act=activation,
            mlm_act=activation, head_dense_bias=bool(values.get("classifier_bias", False)),
            classifier_pooling=values.get("classifier_pooling", "cls"),
            global_attn_every_n_layers=_every_n(values, source),
            global_rope_theta=global_theta, local_rope_theta=local_theta, **STRUCTURE)
        return build_config(values, source, consumed=_CONSUMED)

    def config_to_dict(self, config: ModelConfig) -> dict[str, Any]:
        own = config.backbone_fields()
        own.pop("query_stream")  # ours; false in any config this layout holds (unsupported)
        out: dict[str, Any] = dict(config.extra)
        out.update(
            model_type="modernbert", vocab_size=config.vocab_size,
            hidden_size=config.hidden_size, intermediate_size=config.intermediate_size,
            num_hidden_layers=config.num_hidden_layers,
            num_attention_heads=config.num_attention_heads,
            hidden_activation=config.hidden_act,
            max_position_embeddings=config.max_position_embeddings,
            initializer_range=config.initializer_range, norm_eps=config.layer_norm_eps,
            attention_dropout=config.attention_probs_dropout_prob,
            classifier_dropout=config.classifier_dropout_prob,
            classifier_activation=config.classifier_act, tie_word_embeddings=True,
            classifier_pooling=config.classifier_pooling,
            classifier_bias=config.head_dense_bias,
            pad_token_id=config.pad_token_id, bos_token_id=config.bos_token_id,
            eos_token_id=config.eos_token_id, num_labels=config.num_labels,
            # ModernBERT's [CLS] and [SEP] are its bos and eos (transformers' defaults
            # otherwise name ids of its own 50k vocabulary).
            cls_token_id=config.bos_token_id, sep_token_id=config.eos_token_id,
            problem_type=config.problem_type, architectures=config.architectures,
            layer_types=layer_types(own["global_attn_every_n_layers"],
                                    config.num_hidden_layers),
            rope_parameters={GLOBAL: {"rope_type": "default",
                                      "rope_theta": own["global_rope_theta"]},
                             LOCAL: {"rope_type": "default",
                                     "rope_theta": own["local_rope_theta"]}},
            **_BIASES)
        out.update({k: getattr(config, k) for k, default in _UNUSED.items()
                    if getattr(config, k) != default})
        out = finish_dict(out, config)
        # The backbone's own fields are ModernBertConfig's (the earlier flat names), so a
        # transformers 4 reads the pattern and the rotary bases too.
        out.update(own)
        return out

    # ---- keys ------------------------------------------------------------------------------

    def external_key(self, key: str, config: ModelConfig) -> str:
        match = _OURS.match(key)
        if match:
            _, n, rest = match.groups()
            return f"model.layers.{n}.{rest}"
        return rename(key, self.mlm_renames + self.renames) or key

    def internal_key(self, key: str, config: ModelConfig) -> str | None:
        match = _THEIRS.match(key)
        if match:
            n, rest, module = match.groups()
            part = "attentions" if module in ("attn_norm", "attn") else "ffns"
            return f"backbone.encoder.{part}.{n}.{rest}"
        if key.startswith("model.layers."):
            return None  # a layer part ModernBERT does not have
        return rename(key, self.renames, reverse=True) or key

    def from_file(self, state: dict[str, torch.Tensor],
                  config: ModelConfig) -> dict[str, torch.Tensor]:
        """An MLM file's head also under our MLM names (see mlm_renames): a masked LM reads
        `predictions.*`, a classifier loaded from the same file reads `head.*` as
        transformers' classifiers do (the pre-trained dense and norm); any other file as it
        is."""
        if "decoder.bias" not in state:
            return state
        ours = dict(state)
        for key, value in state.items():
            mine = rename(key, self.mlm_renames, reverse=True)
            if mine is not None:
                ours[mine] = value
        return ours

    # ---- what the layout holds -------------------------------------------------------------

    def unsupported(self, config: ModelConfig, class_name: str | None = None) -> str | None:
        if config.sharing != "none" or config.inner_group_num != 1:
            return (f"ModernBERT has one set of weights per layer, but "
                    f"sharing={config.sharing!r}, inner_group_num={config.inner_group_num}")
        if config.has_projection or config.embedding_size != config.hidden_size:
            return (f"ModernBERT's token embeddings are hidden_size wide, without an E->H "
                    f"projection (embedding_size={config.embedding_size}, hidden_size="
                    f"{config.hidden_size}, embedding_projection "
                    f"{config.embedding_projection!r})")
        if config.use_pooler or config.classifier_head != "pooled_norm" \
                or config.head_norm_bias or not config.decoder_bias:
            return ("ModernBERT has no pooler, classifies through dense -> act -> a bias-free "
                    "norm (use_pooler false, classifier_head 'pooled_norm', head_norm_bias "
                    f"false) and has a decoder bias, not use_pooler={config.use_pooler}, "
                    f"{config.classifier_head!r}, head_norm_bias={config.head_norm_bias}, "
                    f"decoder_bias={config.decoder_bias}")
        if config.backbone_fields()["query_stream"]:
            return ("ModernBERT has no query stream: query_stream=True adds mask_emb, the "
                    "input of litebert's two-stream attention (objective plm)")
        if config.mlm_activation != config.classifier_act:
            return (f"ModernBERT's MLM and classifier heads share classifier_activation, but "
                    f"mlm_act={config.mlm_act!r}, classifier_act={config.classifier_act!r}")
        return super().unsupported(config, class_name)


ADAPTER = ModernBertAdapter()  # what the package's ModelSpec names (adapter_module)
