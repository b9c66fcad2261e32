"""The XLNet family: transformers' XLNet directories both ways (config.json, key names,
einsum-shaped tensors), the Auto classes on them, ALBERT-XLNet in litebert's own layout with the
reason (its fine-tuning defaults: tests/tasks/test_family_defaults.py). Parity of outputs and
gradients is tests/models/xlnet/test_model.py."""

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
from litebert.model import EncoderForPermutationLM
from litebert.models.xlnet.model import XLNetModel
from tests.helpers.family_configs import (
    albert_xlnet_config,
    electra_config,
    hf_xlnet_config,
    roberta_config,
    xlnet_config,
)
from tests.helpers.models import randomize, small_config
from tests.helpers.xlnet import CASES, inputs

XLNET = FAMILIES["xlnet"]
XLNET_KEYS = ("mem_len", "reuse_len", "attn_type", "clamp_len", "same_length", "bi_data")


def test_reads_transformers_defaults_and_writes_them_back():
    hf = transformers.XLNetConfig()
    config = litebert.ModelConfig.from_dict(hf.to_dict())
    assert (config.hidden_size, config.embedding_size, config.num_hidden_layers,
            config.num_attention_heads, config.intermediate_size, config.vocab_size) == (
        1024, 1024, 24, 16, 4096, 32000)
    assert (config.backbone, config.model_type, config.sharing, config.use_pooler,
            config.classifier_head, config.classifier_act, config.hidden_act) == (
        "xlnet", "xlnet", "none", False, "summary", "tanh", "gelu")
    xl = config.backbone_config
    assert (xl.mem_len, xl.attn_type, config.hidden_dropout_prob,
            config.attention_probs_dropout_prob, config.pad_token_id) == (512, "bi", 0.1, 0.1, 5)
    assert not config.has_projection
    assert litebert.ModelConfig.from_dict(config.to_dict()) == config


def test_writes_a_config_transformers_reads():
    ours = xlnet_config(mem_len=None, reuse_len=3, attn_type="uni", clamp_len=7,
                        same_length=True, bi_data=True, hidden_act="relu",
                        classifier_dropout_prob=0.3, id2label={0: "a", 1: "b", 2: "c"})
    saved = ours.to_dict()
    assert saved["mem_len"] is None and "mem_len" in saved  # null, not transformers' 512
    assert saved["untie_r"] is True and "max_position_embeddings" not in saved
    theirs = transformers.XLNetConfig(**saved)
    assert (theirs.d_model, theirs.n_layer, theirs.n_head, theirs.d_inner, theirs.d_head) == (
        32, 2, 4, 37, 8)
    assert (theirs.mem_len, theirs.reuse_len, theirs.attn_type, theirs.clamp_len,
            theirs.same_length, theirs.bi_data) == (None, 3, "uni", 7, True, True)
    assert (theirs.ff_activation, theirs.summary_last_dropout, theirs.num_labels) == (
        "relu", 0.3, 3)
    assert (theirs.start_n_top, theirs.end_n_top) == (5, 5)
    assert litebert.ModelConfig.from_dict(saved) == ours
    kept = litebert.ModelConfig.from_dict({**saved, "start_n_top": 4})
    assert kept.extra["start_n_top"] == 4 and kept.to_dict()["start_n_top"] == 4


@pytest.mark.parametrize("changes, words", [
    (dict(summary_type="first"), "summary_type='first'"),
    (dict(summary_activation=None), "has an activation"),
    (dict(tie_word_embeddings=False), "tie_word_embeddings=false"),
    (dict(d_head=4), "d_head=4 with n_head=4 must give d_model=32"),
    (dict(attn_type="tri"), "attn_type='tri': unknown"),
])
def test_unsupported_xlnet_configs_name_the_file(changes, words):
    data = {**hf_xlnet_config().to_dict(), **changes}
    with pytest.raises(ConfigError, match=rf"^my/config.json: .*{words}"):
        litebert.ModelConfig.from_dict(data, source="my/config.json")


@pytest.mark.parametrize("changes, field, words", [
    (dict(attn_type="both"), "attn_type", "choose 'bi'"),
    (dict(mem_len=-1), "mem_len", "whole number >= 0, or null"),
    (dict(reuse_len=2.5), "reuse_len", "whole number >= 0, or null"),
    (dict(clamp_len=-2), "clamp_len", "-1 for no clamping"),
    (dict(bi_data="yes"), "bi_data", "true or false"),
])
def test_invalid_xlnet_fields_name_the_field(changes, field, words):
    with pytest.raises(ConfigError, match=rf"XLNetBackboneConfig\.{field}=.*{words}"):
        xlnet_config(**changes)


@pytest.mark.parametrize("config", [small_config(), small_config(sharing="attention"),
                                    small_config(model_type="bert", sharing="none",
                                                 embedding_size=32,
                                                 embedding_projection="never"),
                                    electra_config(), electra_config(sharing="all"),
                                    roberta_config()],
                         ids=["albert", "litebert", "bert", "electra", "albert-electra",
                              "roberta"])
def test_other_families_files_do_not_gain_the_xlnet_keys(config):
    assert not set(XLNET_KEYS) & set(config.to_dict())


def test_bare_backbone_file_is_transformers_xlnet_model(tmp_path):
    ours = randomize(XLNetModel(xlnet_config()))
    ours.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "xlnet" and saved["architectures"] == ["XLNetModel"]
    tensors = load_file(tmp_path / "model.safetensors")
    assert tensors["layer.1.rel_attn.q"].shape == (32, 4, 8)  # einsum-shaped, no prefix
    assert tensors["layer.0.rel_attn.seg_embed"].shape == (2, 4, 8)
    assert {"word_embedding.weight", "mask_emb", "layer.0.ff.layer_1.weight"} <= set(tensors)
    theirs = transformers.XLNetModel.from_pretrained(tmp_path).eval()
    x = inputs(CASES["left padding"])
    torch.testing.assert_close(ours.eval()(**x).last_hidden_state,
                               theirs(**x, use_mems=False).last_hidden_state, atol=1e-5, rtol=0)


@pytest.mark.parametrize("hf_class, auto, ours", [
    ("XLNetModel", "AutoModel", XLNetModel),
    ("XLNetLMHeadModel", "AutoModelForPreTraining", EncoderForPermutationLM),
    ("XLNetLMHeadModel", "AutoModel", XLNetModel),
])
def test_auto_classes_read_a_transformers_directory(tmp_path, hf_class, auto, ours):
    theirs = randomize(getattr(transformers, hf_class)(hf_xlnet_config())).eval()
    theirs.save_pretrained(tmp_path)
    model = getattr(litebert, auto).from_pretrained(tmp_path, strict=True).eval()
    assert type(model) is ours
    x = inputs(CASES["perm_mask + targets"])
    a, b = model(**x, use_mems=False), theirs(**x, use_mems=False)
    field = "logits" if ours is EncoderForPermutationLM else "last_hidden_state"
    if hf_class == "XLNetLMHeadModel" and ours is XLNetModel:
        b = theirs.transformer(**x, use_mems=False)
    torch.testing.assert_close(a[field], b[field], atol=1e-5, rtol=0)


def test_pretraining_directory_without_architectures_is_the_permutation_lm(tmp_path):
    randomize(transformers.XLNetLMHeadModel(hf_xlnet_config())).save_pretrained(tmp_path)
    path = tmp_path / "config.json"
    data = json.loads(path.read_text())
    del data["architectures"]
    path.write_text(json.dumps(data))
    model = litebert.AutoModelForPreTraining.from_pretrained(tmp_path)
    assert isinstance(model, EncoderForPermutationLM)


def test_permutation_lm_file_ties_its_decoder(tmp_path):
    """lm_loss.weight is the word embeddings: only the bias is written and read."""
    ours = randomize(EncoderForPermutationLM(xlnet_config()))
    ours.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    assert "lm_loss.bias" in tensors and "lm_loss.weight" not in tensors
    theirs = transformers.XLNetLMHeadModel.from_pretrained(tmp_path)
    assert torch.equal(theirs.lm_loss.weight, ours.backbone.word_embedding.weight)
    assert torch.equal(theirs.lm_loss.bias, ours.lm_loss.bias)


@pytest.mark.parametrize("changes, words", [
    (dict(embedding_size=16), "d_model wide, without an E->H projection"),
    (dict(sharing="all", num_hidden_groups=1), "one set of weights per layer"),
    (dict(attention_probs_dropout_prob=0.2), "one dropout for hidden states and attention"),
    (dict(use_pooler=True), "no pooler"),
])
def test_what_xlnet_cannot_hold_goes_to_our_layout(changes, words):
    adapter, why = layout_for(xlnet_config(**changes), "EncoderForPermutationLM")
    assert adapter is FAMILIES["litebert"]
    assert why is not None and words in why


def test_albert_xlnet_round_trips_in_our_layout_with_the_reason(tmp_path, caplog):
    config = albert_xlnet_config(model_type="xlnet", mem_len=6, reuse_len=4, bi_data=True)
    model = randomize(EncoderForPermutationLM(config)).eval()
    with caplog.at_level(logging.WARNING, logger="litebert"):
        model.save_pretrained(tmp_path)
    assert "one set of weights per layer" in caplog.text
    assert "saved in litebert's own layout" in caplog.text
    saved = json.loads((tmp_path / "config.json").read_text())
    assert (saved["model_type"], saved["litebert_model_type"], saved["backbone"]) == (
        "litebert", "xlnet", "xlnet")
    assert (saved["mem_len"], saved["reuse_len"], saved["bi_data"]) == (6, 4, True)
    again = litebert.AutoModelForPreTraining.from_pretrained(tmp_path, strict=True).eval()
    assert isinstance(again, EncoderForPermutationLM)
    assert again.config == config.replace(architectures=["EncoderForPermutationLM"])
    x = inputs(CASES["bi_data clamp_len"])
    torch.testing.assert_close(again(**x).logits, model(**x).logits, atol=0, rtol=0)
    with pytest.raises(Exception, match="(?i)xlnet|key|size|shape"):
        transformers.XLNetLMHeadModel.from_pretrained(tmp_path)


def test_albert_xlnet_preset_is_saved_in_our_layout(tmp_path):
    config = litebert.ModelConfig.from_preset("albert-xlnet-tiny", vocab_size=60)
    assert (config.embedding_size, config.hidden_size, config.sharing) == (128, 256, "all")
    XLNetModel(config).save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "litebert" and saved["backbone"] == "xlnet"
    again = litebert.AutoModel.from_pretrained(tmp_path)
    assert isinstance(again, XLNetModel)
    assert again.config == config.replace(architectures=["EncoderModel"])


@pytest.mark.parametrize("head, hf_head", [
    ("EncoderForTokenClassification", "XLNetForTokenClassification"),
    ("EncoderForQuestionAnswering", "XLNetForQuestionAnsweringSimple")])
def test_token_and_span_heads_read_transformers_files(tmp_path, head, hf_head):
    """The heads that keep transformers' names on XLNet (classifier, qa_outputs): same
    outputs after a round trip through a transformers directory."""
    labels = 2 if head.endswith("Answering") else 3
    theirs = randomize(getattr(transformers, hf_head)(hf_xlnet_config(labels))).eval()
    theirs.save_pretrained(tmp_path)
    ours = getattr(litebert, head).from_pretrained(tmp_path, strict=True).eval()
    x = inputs(CASES["left padding"])
    a, b = ours(**x), theirs(**x, use_mems=False)
    field = "start_logits" if head.endswith("Answering") else "logits"
    torch.testing.assert_close(a[field], b[field], atol=1e-5, rtol=0)
    ours.save_pretrained(tmp_path / "back")
    assert set(load_file(tmp_path / "back" / "model.safetensors")) == set(
        load_file(tmp_path / "model.safetensors"))


def test_a_summary_classifier_is_logits_proj():
    """Beside a sequence_summary (sequence classification, multiple choice) our `classifier`
    is XLNet's `logits_proj`; alone (token classification) it keeps its name."""
    config = xlnet_config()
    w = torch.zeros(3, 32)
    with_summary = XLNET.to_file({"sequence_summary.summary.weight": torch.zeros(32, 32),
                                  "classifier.weight": w}, config)
    assert set(with_summary) == {"sequence_summary.summary.weight", "logits_proj.weight"}
    assert set(XLNET.to_file({"classifier.weight": w}, config)) == {"classifier.weight"}
    assert XLNET.internal_key("logits_proj.bias", config) == "classifier.bias"
