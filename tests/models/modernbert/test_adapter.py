"""The ModernBERT family (models/modernbert/adapter.py): config.json both ways (transformers 5's
layer_types and rope_parameters, the earlier flat keys), what it refuses, the key maps, the
Auto classes on transformers' directories, and what its layout cannot hold going to
litebert's. Parity of outputs and gradients is tests/models/modernbert/test_model.py."""

from __future__ import annotations

import json
import logging

import pytest
import torch
import transformers
from safetensors.torch import load_file

import litebert
from litebert.config import ConfigError
from litebert.families import FAMILIES, layout_for
from litebert.model.hub import canonical_state
from litebert.models.modernbert.model import ModernBertModel
from tests.helpers.models import randomize
from tests.helpers.modernbert import hf_modern_config, inputs, modern_config

ADAPTER = FAMILIES["modernbert"]
OWN_KEYS = ("global_attn_every_n_layers", "local_attention", "global_rope_theta",
            "local_rope_theta", "embedding_dropout", "mlp_dropout", "initializer_cutoff_factor")


def test_reads_transformers_defaults_and_writes_them_back():
    hf = transformers.ModernBertConfig()
    config = litebert.ModelConfig.from_dict(hf.to_dict())
    assert (config.hidden_size, config.embedding_size, config.num_hidden_layers,
            config.num_attention_heads, config.intermediate_size, config.vocab_size,
            config.max_position_embeddings) == (768, 768, 22, 12, 1152, 50368, 8192)
    assert (config.backbone, config.model_type, config.sharing, config.use_pooler,
            config.hidden_act, config.layer_norm_eps, config.pad_token_id) == (
        "modernbert", "modernbert", "none", False, "gelu", 1e-5, 50283)
    mb = config.backbone_config
    assert (mb.global_attn_every_n_layers, mb.local_attention, mb.global_rope_theta,
            mb.local_rope_theta) == (3, 128, 160_000.0, 10_000.0)
    # The heads' fields: ModernBERT's pooling, bias-free dense and norm, a decoder bias.
    assert (config.classifier_head, config.classifier_pooling, config.head_dense_bias,
            config.head_norm_bias, config.decoder_bias) == ("pooled_norm", "cls", False,
                                                            False, True)
    assert litebert.ModelConfig.from_dict(config.to_dict()) == config
    assert config == litebert.ModelConfig.from_preset("modernbert-base").replace(
        extra=config.extra, id2label=config.id2label)


def test_writes_a_config_transformers_reads():
    ours = modern_config(global_attn_every_n_layers=2, local_attention=6,
                         global_rope_theta=1000.0, local_rope_theta=50.0,
                         attention_probs_dropout_prob=0.1, embedding_dropout=0.2,
                         mlp_dropout=0.3, classifier_dropout_prob=0.4, hidden_act="silu",
                         layer_norm_eps=1e-6, id2label={0: "a", 1: "b", 2: "c"})
    saved = ours.to_dict()
    theirs = transformers.ModernBertConfig(**saved)
    assert theirs.layer_types == ["full_attention", "sliding_attention"] * 2
    assert theirs.rope_parameters["full_attention"]["rope_theta"] == 1000.0
    assert theirs.rope_parameters["sliding_attention"]["rope_theta"] == 50.0
    assert (theirs.local_attention, theirs.sliding_window, theirs.attention_dropout,
            theirs.embedding_dropout, theirs.mlp_dropout, theirs.classifier_dropout) == (
        6, 3, 0.1, 0.2, 0.3, 0.4)
    assert (theirs.hidden_activation, theirs.norm_eps, theirs.num_labels) == ("silu", 1e-6, 3)
    assert not (theirs.norm_bias or theirs.attention_bias or theirs.mlp_bias)
    assert litebert.ModelConfig.from_dict(saved) == ours
    # and back from transformers' own writing of it
    assert litebert.ModelConfig.from_dict(theirs.to_dict()).backbone_config == \
        ours.backbone_config


def test_reads_an_earlier_config_json():
    """transformers 4's keys (answerdotai/ModernBERT-base's file has these): the pattern and
    the rotary bases flat, layer_norm_eps beside norm_eps; a null local base is the global."""
    earlier = {
        "architectures": ["ModernBertForMaskedLM"], "model_type": "modernbert",
        "vocab_size": 50368, "hidden_size": 768, "intermediate_size": 1152,
        "num_hidden_layers": 22, "num_attention_heads": 12, "hidden_activation": "gelu",
        "norm_eps": 1e-5, "layer_norm_eps": 1e-5, "norm_bias": False,
        "global_attn_every_n_layers": 3, "local_attention": 128,
        "global_rope_theta": 160000.0, "local_rope_theta": 10000.0,
        "classifier_pooling": "mean", "position_embedding_type": "absolute",
        "torch_dtype": "float32", "transformers_version": "4.48.0"}
    config = litebert.ModelConfig.from_dict(earlier)
    assert config.backbone_config.local_rope_theta == 10_000.0
    assert config.classifier_pooling == "mean" and "classifier_pooling" not in config.extra
    assert litebert.ModelConfig.from_dict(config.to_dict()) == config
    same = litebert.ModelConfig.from_dict({**earlier, "local_rope_theta": None,
                                            "global_rope_theta": 5000.0})
    assert same.backbone_config.local_rope_theta == 5000.0


def test_layer_types_give_the_pattern_or_are_refused():
    base = hf_modern_config().to_dict()
    del base["global_attn_every_n_layers"]
    every_two = ["full_attention", "sliding_attention"] * 2
    config = litebert.ModelConfig.from_dict({**base, "layer_types": every_two})
    assert config.backbone_config.global_attn_every_n_layers == 2
    with pytest.raises(ConfigError, match=r"^my/config.json: layer_types=.*is not ModernBERT's "
                                          r"pattern: litebert builds a global layer every n"):
        litebert.ModelConfig.from_dict({**base, "layer_types": every_two[::-1]},
                                        source="my/config.json")
    with pytest.raises(ConfigError, match=r"pattern with global_attn_every_n_layers=3"):
        litebert.ModelConfig.from_dict({**base, "layer_types": every_two,
                                         "global_attn_every_n_layers": 3})


@pytest.mark.parametrize("changes, words", [
    (dict(norm_bias=True), "norm_bias=True is not supported: litebert's ModernBERT has no"),
    (dict(attention_bias=True), "attention_bias=True is not supported"),
    (dict(mlp_bias=True), "mlp_bias=True is not supported"),
    (dict(decoder_bias=False), "decoder_bias=False is not supported: litebert's ModernBERT has "
                               "this bias"),
    (dict(tie_word_embeddings=False), "tie_word_embeddings=false is not supported"),
    (dict(rope_parameters={"full_attention": {"rope_type": "linear", "factor": 2.0}}),
     r"rope_parameters\['full_attention'\].rope_type='linear' is not supported"),
    (dict(rope_scaling={"rope_type": "linear", "factor": 2.0}), "rope_scaling=.* not supported"),
    (dict(classifier_pooling="max"), "classifier_pooling='max' is unknown"),
    (dict(local_attention=1), r"ModernBertBackboneConfig\.local_attention=1"),
])
def test_unsupported_modernbert_configs_name_the_file(changes, words):
    data = {**hf_modern_config().to_dict(), **changes}
    with pytest.raises(ConfigError, match=rf"^my/config.json: .*{words}"):
        litebert.ModelConfig.from_dict(data, source="my/config.json")


def test_keys_map_both_ways():
    """Every key of a masked LM on this backbone has a transformers name and comes back;
    layer halves are one transformers layer."""
    model = litebert.EncoderForMaskedLM(modern_config())
    config = model.config
    state = canonical_state(model)
    file = {ADAPTER.external_key(key, config): value for key, value in state.items()}
    assert "decoder.bias" in file and "head.dense.weight" in file
    back = ADAPTER.from_file(file, config)  # a file with a decoder: its head.* is the MLM's
    assert set(state) <= {ADAPTER.internal_key(k, config) for k in back}
    # ... and stays head.* too, for a classifier loaded from the MLM (as transformers does)
    assert "head.dense.weight" in back and "predictions.dense.weight" in back
    # A classifier's head.* stays head.*: only an MLM file renames it.
    classifier = {"head.dense.weight": state["predictions.dense.weight"]}
    assert ADAPTER.from_file(classifier, config) == classifier
    assert ADAPTER.external_key("backbone.encoder.attentions.2.attn.Wqkv.weight", config) == \
        "model.layers.2.attn.Wqkv.weight"
    assert ADAPTER.external_key("backbone.encoder.ffns.2.mlp_norm.weight", config) == \
        "model.layers.2.mlp_norm.weight"
    assert ADAPTER.external_key("predictions.LayerNorm.weight", config) == "head.norm.weight"
    assert ADAPTER.external_key("predictions.bias", config) == "decoder.bias"
    assert ADAPTER.internal_key("model.layers.1.attn_out.weight", config) is None


def test_bare_backbone_file_is_transformers_modernbert_model(tmp_path):
    ours = randomize(ModernBertModel(modern_config()))
    ours.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "modernbert" and saved["architectures"] == ["ModernBertModel"]
    tensors = load_file(tmp_path / "model.safetensors")
    assert "layers.0.attn_norm.weight" not in tensors  # layer 0's norm is the identity
    assert tensors["layers.1.attn.Wqkv.weight"].shape == (96, 32)
    assert tensors["layers.1.mlp.Wi.weight"].shape == (48, 32)
    assert {"embeddings.tok_embeddings.weight", "embeddings.norm.weight",
            "final_norm.weight", "layers.1.attn_norm.weight"} <= set(tensors)


def test_auto_classes_read_a_transformers_masked_lm(tmp_path):
    """ModernBertForMaskedLM's directory: AutoModel is its backbone; AutoModelForPreTraining
    (ModernBERT has no pair head) and AutoModelForMaskedLM are the masked LM."""
    theirs = randomize(transformers.ModernBertForMaskedLM(hf_modern_config())).eval()
    theirs.save_pretrained(tmp_path)
    backbone = litebert.AutoModel.from_pretrained(tmp_path).eval()
    assert type(backbone) is ModernBertModel
    for auto in (litebert.AutoModelForPreTraining, litebert.AutoModelForMaskedLM):
        assert type(auto.from_pretrained(tmp_path)) is litebert.EncoderForMaskedLM
    x = inputs()
    real = x["attention_mask"].bool()
    with torch.no_grad():
        torch.testing.assert_close(backbone(**x).last_hidden_state[real],
                                   theirs.model(**x).last_hidden_state[real],
                                   atol=1e-5, rtol=0)


@pytest.mark.parametrize("changes, words", [
    (dict(embedding_size=16), "hidden_size wide, without an E->H projection"),
    (dict(sharing="all", num_hidden_groups=1), "one set of weights per layer"),
    (dict(inner_group_num=2), "one set of weights per layer"),
    (dict(mlm_act="relu"), "share classifier_activation"),
])
def test_what_modernbert_cannot_hold_goes_to_our_layout(changes, words):
    adapter, why = layout_for(modern_config(**changes), "EncoderForMaskedLM")
    assert adapter is FAMILIES["litebert"]
    assert why is not None and words in why


@pytest.mark.parametrize("model_type", ["litebert", "modernbert"])
def test_albert_modern_round_trips_in_our_layout(tmp_path, caplog, model_type):
    """The preset (model_type litebert), and the same structure called modernbert, which is
    saved in our layout with the reason."""
    config = litebert.ModelConfig.from_preset("albert-modern-tiny", vocab_size=99,
                                               pad_token_id=0, local_attention=6,
                                               global_rope_theta=1000.0, model_type=model_type)
    assert (config.embedding_size, config.hidden_size, config.sharing) == (128, 256, "all")
    model = randomize(ModernBertModel(config)).eval()
    with caplog.at_level(logging.WARNING, logger="litebert"):
        model.save_pretrained(tmp_path)
    warned = "one set of weights per layer" in caplog.text
    assert warned == (model_type == "modernbert")
    saved = json.loads((tmp_path / "config.json").read_text())
    assert (saved["model_type"], saved["backbone"], saved["local_attention"]) == (
        "litebert", "modernbert", 6)
    again = litebert.AutoModel.from_pretrained(tmp_path, strict=True).eval()
    assert isinstance(again, ModernBertModel)
    assert again.config == config.replace(architectures=["EncoderModel"])
    x = inputs()
    with torch.no_grad():
        torch.testing.assert_close(again(**x).last_hidden_state,
                                   model(**x).last_hidden_state, atol=0, rtol=0)


@pytest.mark.parametrize("name", ["tiny", "roberta-tiny", "xlnet-tiny", "electra-small"])
def test_other_families_files_do_not_gain_the_modernbert_keys(name):
    assert not set(OWN_KEYS) & set(litebert.ModelConfig.from_preset(name).to_dict())
