"""RoBERTa against transformers' Roberta classes, every head, both directions.

Randomly initialised small models (H = E = 32, 3 layers, 4 heads, vocabulary 99, 64 positions
after the pad id), a batch padded on the right or on the left (the position ids count real
tokens only, so left padding moves them), eval mode, fp32: outputs, losses and the gradient
of every parameter agree within 1e-5. Then config.json both ways, what RoBERTa's layout
cannot hold, and where such models go instead.
"""

from __future__ import annotations

import json
import logging
import re

import pytest
import torch
import torch.nn.functional as F
import transformers
from safetensors.torch import load_file

import litebert
from litebert.config import ConfigError
from litebert.families import FAMILIES, layout_for
from litebert.model.layers import positions_after_pad
from tests.helpers.family_configs import PAD, hf_roberta_config, roberta_config, roberta_inputs
from tests.helpers.models import randomize
from tests.helpers.parity import assert_same_gradients, assert_same_outputs, labels_for

HEADS = {"AlbertModel": "RobertaModel",
         "EncoderForMaskedLM": "RobertaForMaskedLM",
         "EncoderForSequenceClassification": "RobertaForSequenceClassification",
         "EncoderForTokenClassification": "RobertaForTokenClassification",
         "EncoderForQuestionAnswering": "RobertaForQuestionAnswering",
         "EncoderForMultipleChoice": "RobertaForMultipleChoice"}
AUTO = {"AlbertModel": "AutoModel", "EncoderForMaskedLM": "AutoModelForMaskedLM",
        "EncoderForSequenceClassification": "AutoModelForSequenceClassification",
        "EncoderForTokenClassification": "AutoModelForTokenClassification",
        "EncoderForQuestionAnswering": "AutoModelForQuestionAnswering",
        "EncoderForMultipleChoice": "AutoModelForMultipleChoice"}
# Left padding with hidden_act gelu_new: the LM head must still use exact GELU, the
# classifier tanh.
VARIANTS = {"right gelu": (False, {}), "left gelu_new": (True, dict(hidden_act="gelu_new"))}
ROBERTA = FAMILIES["roberta"]


def _ours(head: str, variant: str):
    config = roberta_config(num_labels=labels_for(HEADS[head]), **VARIANTS[variant][1])
    return randomize(getattr(litebert, head)(config))


def _theirs(head: str, variant: str):
    config = hf_roberta_config(labels_for(HEADS[head]), **VARIANTS[variant][1])
    return randomize(getattr(transformers, HEADS[head])(config))


def _fields(config: litebert.ModelConfig, leave_out: tuple[str, ...]) -> dict:
    return {k: v for k, v in vars(config).items() if k not in leave_out}


def _inputs(variant: str) -> dict[str, torch.Tensor]:
    return roberta_inputs(left=VARIANTS[variant][0])


@pytest.mark.parametrize("head", list(HEADS))
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_litebert_to_transformers(tmp_path, head, variant):
    ours = _ours(head, variant)
    ours.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "roberta" and saved["architectures"] == [HEADS[head]]
    keys = set(load_file(tmp_path / "model.safetensors"))
    assert not any(k.startswith("lm_head.decoder") for k in keys)  # tied: never written
    theirs, info = getattr(transformers, HEADS[head]).from_pretrained(
        tmp_path, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert_same_outputs(ours, theirs, HEADS[head], labels_for(HEADS[head]), _inputs(variant))


@pytest.mark.parametrize("head", list(HEADS))
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_transformers_to_litebert(tmp_path, head, variant):
    theirs = _theirs(head, variant)
    theirs.save_pretrained(tmp_path)
    ours = getattr(litebert, AUTO[head]).from_pretrained(tmp_path, strict=True)
    assert type(ours).__name__ == head
    wanted = roberta_config(architectures=[HEADS[head]], **VARIANTS[variant][1])
    labels = ("num_labels", "id2label", "extra")  # the head's, and transformers' own keys
    assert _fields(ours.config, labels) == _fields(wanted, labels)
    assert_same_outputs(ours, theirs, HEADS[head], labels_for(HEADS[head]), _inputs(variant))


@pytest.mark.parametrize("head", list(HEADS))
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_gradients_match_transformers(tmp_path, head, variant):
    theirs = _theirs(head, variant)
    theirs.save_pretrained(tmp_path)
    ours = getattr(litebert, head).from_pretrained(tmp_path, strict=True)
    assert_same_gradients(ours, theirs, HEADS[head], labels_for(HEADS[head]), ROBERTA,
                          _inputs(variant))


def test_structure_is_robertas():
    """The pooler exists in the backbone and under multiple choice only; the classifier
    reads the first token through dense + tanh; the LM head is H->H with exact GELU."""
    config = roberta_config(hidden_act="relu")
    assert litebert.AlbertModel(config).pooler is not None
    assert litebert.EncoderForMultipleChoice(config).backbone.pooler is not None
    for head in ("EncoderForMaskedLM", "EncoderForSequenceClassification",
                 "EncoderForTokenClassification", "EncoderForQuestionAnswering"):
        assert getattr(litebert, head)(config).backbone.pooler is None, head
    clf = litebert.EncoderForSequenceClassification(config)
    assert (clf.classifier.dense.out_features, clf.classifier.act) == (32, torch.tanh)
    mlm = litebert.EncoderForMaskedLM(config)
    assert mlm.predictions.dense.out_features == 32 and mlm.predictions.act is F.gelu
    assert mlm.backbone.encoder.embedding_hidden_mapping_in is None


# ---- positions -----------------------------------------------------------------------------

def test_position_ids_count_real_tokens_after_the_pad_id():
    ids = torch.tensor([[0, 7, 8, 2, PAD, PAD],  # right padding
                        [PAD, PAD, 0, 7, 8, 2],  # left padding
                        [0, 7, PAD, 8, 9, 2]])  # a pad inside does not take a position
    expected = torch.tensor([[2, 3, 4, 5, 1, 1], [1, 1, 2, 3, 4, 5], [2, 3, 1, 4, 5, 6]])
    assert torch.equal(positions_after_pad(ids, PAD), expected)
    reference = transformers.models.roberta.modeling_roberta.RobertaEmbeddings
    assert torch.equal(reference.create_position_ids_from_input_ids(ids, PAD), expected)


def test_pad_position_row_is_zero_and_gets_no_gradient():
    model = litebert.AlbertModel(roberta_config())
    table = model.embeddings.position_embeddings
    assert table.padding_idx == PAD and not table.weight[PAD].any()
    x = roberta_inputs(left=True)
    model(**x).last_hidden_state.sum().backward()
    grad = table.weight.grad
    assert not grad[PAD].any() and grad[PAD + 1].abs().sum() > 0
    assert not grad[0].any()  # below the pad id: never a position


def test_sequence_length_counts_only_real_tokens(tmp_path):
    """max_position_embeddings 66 holds 64 tokens (the ids start at pad + 1 = 2); a padded
    batch may be longer, as in transformers, as long as no row has more real tokens."""
    ours = randomize(litebert.AlbertModel(roberta_config())).eval()
    assert ours.config.max_sequence_length == 64
    ours.save_pretrained(tmp_path)
    theirs = transformers.RobertaModel.from_pretrained(tmp_path).eval()
    x = roberta_inputs(seq=65)
    x["input_ids"][:, -1] = PAD  # every row ends in a pad: at most 64 real tokens
    x["attention_mask"][:, -1] = 0
    with torch.no_grad():
        torch.testing.assert_close(ours(**x).last_hidden_state,
                                   theirs(**x).last_hidden_state, atol=1e-5, rtol=0)
        x["input_ids"][0, -1] = 9
        with pytest.raises(ValueError, match=r"sequence length 65 exceeds the 64 positions of "
                                             r"max_position_embeddings=66 .*pad_token_id=1"):
            ours(**x)


# ---- config.json ---------------------------------------------------------------------------

def test_reads_transformers_roberta_defaults():
    config = litebert.ModelConfig.from_dict(transformers.RobertaConfig().to_dict())
    assert (config.vocab_size, config.hidden_size, config.embedding_size,
            config.num_hidden_layers, config.intermediate_size) == (50265, 768, 768, 12, 3072)
    # RobertaConfig's class defaults are BERT's; roberta-base's file says 514, 1, 1e-5.
    assert (config.max_position_embeddings, config.type_vocab_size, config.layer_norm_eps) == (
        512, 2, 1e-12)
    assert (config.pad_token_id, config.bos_token_id, config.eos_token_id) == (1, 0, 2)
    assert config.model_type == "roberta" and config.sharing == "none"
    assert (config.embedding_projection, config.use_pooler, config.classifier_head,
            config.classifier_act, config.mlm_act, config.backbone_config.position_numbering) == (
        "never", True, "first_token", "tanh", "gelu", "after_pad")
    assert config.max_sequence_length == 510 and config.classifier_dropout_prob == 0.1
    assert litebert.ModelConfig.from_dict(config.to_dict()) == config


def test_preset_config_loads_in_transformers(tmp_path):
    ours = litebert.ModelConfig.from_preset("roberta-base")
    ours.replace(architectures=["RobertaForMaskedLM"]).save(tmp_path)
    theirs = transformers.AutoConfig.from_pretrained(tmp_path)
    assert isinstance(theirs, transformers.RobertaConfig)
    wanted = dict(vocab_size=50265, hidden_size=768, num_hidden_layers=12,
                  num_attention_heads=12, intermediate_size=3072, hidden_act="gelu",
                  max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5,
                  pad_token_id=1, bos_token_id=0, eos_token_id=2, hidden_dropout_prob=0.1,
                  attention_probs_dropout_prob=0.1, classifier_dropout=0.1,
                  architectures=["RobertaForMaskedLM"], tie_word_embeddings=True)
    assert {k: getattr(theirs, k) for k in wanted} == wanted
    assert litebert.ModelConfig.from_json_file(tmp_path / "config.json") == ours.replace(
        architectures=["RobertaForMaskedLM"])


def test_transformers_config_round_trips_through_litebert(tmp_path):
    hf = hf_roberta_config(num_labels=2, pad_token_id=3, bos_token_id=5, eos_token_id=6,
                           classifier_dropout=0.2, architectures=["RobertaForTokenClassification"],
                           id2label={0: "O", 1: "B"}, label2id={"O": 0, "B": 1})
    hf.save_pretrained(tmp_path / "hf")
    ours = litebert.ModelConfig.from_json_file(tmp_path / "hf" / "config.json")
    assert (ours.pad_token_id, ours.bos_token_id, ours.eos_token_id) == (3, 5, 6)
    assert ours.architectures == ["RobertaForTokenClassification"]
    assert ours.classifier_dropout_prob == 0.2 and ours.id2label == {0: "O", 1: "B"}
    (tmp_path / "ours").mkdir()
    ours.save(tmp_path / "ours")
    again = transformers.AutoConfig.from_pretrained(tmp_path / "ours")
    assert isinstance(again, transformers.RobertaConfig)
    skip = {"transformers_version", "_name_or_path"}
    assert {k: v for k, v in again.to_dict().items() if k not in skip} == {
        k: v for k, v in hf.to_dict().items() if k not in skip}


@pytest.mark.parametrize("change, words", [
    (dict(tie_word_embeddings=False), "tie_word_embeddings=false"),
    (dict(pad_token_id=None), "pad_token_id=None: RoBERTa numbers positions after the pad"),
    (dict(is_decoder=True), "decoder models are not supported"),
    (dict(position_embedding_type="relative_key"), "position_embedding_type='relative_key'"),
    (dict(max_position_embeddings=2), r"max_position_embeddings=2: .*must exceed it"),
])
def test_unsupported_roberta_configs_are_errors(change, words):
    data = {**hf_roberta_config().to_dict(), **change}
    with pytest.raises(ConfigError, match=f"roberta.json: .*{words}"):
        litebert.ModelConfig.from_dict(data, source="roberta.json")


def test_position_numbering_is_validated():
    with pytest.raises(ConfigError, match=r"position_numbering='fairseq': unknown"):
        roberta_config(position_numbering="fairseq")
    with pytest.raises(ConfigError, match=r"max_position_embeddings=5: .*pad_token_id \+ 1 = 5"):
        roberta_config(pad_token_id=4, max_position_embeddings=5)
    assert roberta_config(position_numbering="from_zero").max_sequence_length == 66


def test_presets_have_robertas_sizes():
    """roberta-base counts as transformers' RobertaModel and RobertaForMaskedLM (meta
    device: no memory); roberta-tiny takes a tokenizer's vocabulary size."""
    config = litebert.ModelConfig.from_preset("roberta-base")
    hf = transformers.RobertaConfig(max_position_embeddings=514, type_vocab_size=1)
    with torch.device("meta"):
        pairs = [(litebert.AlbertModel(config), transformers.RobertaModel(hf)),
                 (litebert.EncoderForMaskedLM(config), transformers.RobertaForMaskedLM(hf))]
    for ours, theirs in pairs:
        assert ours.num_parameters() == theirs.num_parameters(), type(theirs).__name__
    tiny = litebert.ModelConfig.from_preset("roberta-tiny", vocab_size=8000)
    assert (tiny.vocab_size, tiny.hidden_size, tiny.num_hidden_layers,
            tiny.max_sequence_length, tiny.pad_token_id) == (8000, 256, 4, 512, 1)
    assert layout_for(tiny) == (ROBERTA, None)


# ---- what RoBERTa's layout cannot hold -------------------------------------------------------

@pytest.mark.parametrize("change, cls, family_name, words", [
    (dict(sharing="all", num_hidden_groups=1), "EncoderModel", "litebert",
     "RoBERTa has one set of weights per layer, but sharing='all'"),
    (dict(embedding_size=16, embedding_projection="always"), "EncoderModel", "litebert",
     "no E->H projection"),
    (dict(position_numbering="from_zero"), "EncoderModel", "albert", "after the pad id"),
    (dict(use_pooler=False), "EncoderModel", "litebert", "has a pooler"),
    (dict(classifier_act="gelu"), "EncoderForSequenceClassification", "litebert",
     "dense \\+ tanh"),
    (dict(mlm_act=None, hidden_act="relu"), "EncoderForMaskedLM", "litebert", "exact GELU"),
    ({}, "EncoderForPreTraining", "litebert", "no RoBERTa model with a sentence-pair head"),
    ({}, "EncoderForReplacedTokenDetection", "litebert", "roberta has no equivalent"),
])
def test_what_roberta_cannot_hold_is_refused_with_the_reason(change, cls, family_name, words):
    adapter, why = layout_for(roberta_config(**change), cls)
    assert adapter is FAMILIES[family_name]
    assert why is not None
    assert re.search(words, why), why
    if family_name == "litebert":  # ALBERT's layout numbers positions from zero
        assert "ALBERT's layout: transformers' ALBERT numbers positions from zero" in why


def test_other_layouts_refuse_positions_after_the_pad_id():
    bert = roberta_config(model_type="bert", classifier_head="pooler", mlm_act=None)
    assert "numbers positions from zero" in layout_for(bert)[1]
    assert layout_for(bert)[0] is FAMILIES["litebert"]


def _same(a, b, x=None) -> None:
    a.eval()
    b.eval()
    x = roberta_inputs(left=True) if x is None else x
    with torch.no_grad():
        torch.testing.assert_close(a(**x).last_hidden_state, b(**x).last_hidden_state,
                                   atol=1e-5, rtol=0)


def test_shared_roberta_is_saved_in_own_layout(tmp_path, caplog):
    """sharing 'all' with a roberta model_type: the reason in the log, litebert's layout
    (transformers' ALBERT would number the positions from zero), an exact round trip; the
    unrolled copy is a RoBERTa directory."""
    model = randomize(litebert.EncoderForSequenceClassification(
        roberta_config(sharing="all", num_hidden_groups=1)))
    with caplog.at_level(logging.WARNING, logger="litebert"):
        model.save_pretrained(tmp_path / "shared")
    assert "RoBERTa has one set of weights per layer" in caplog.text
    assert "saved in litebert's own layout" in caplog.text and "unroll=True" in caplog.text
    saved = json.loads((tmp_path / "shared" / "config.json").read_text())
    assert (saved["model_type"], saved["litebert_model_type"]) == ("litebert", "roberta")
    again = litebert.AutoModelForSequenceClassification.from_pretrained(
        tmp_path / "shared", strict=True)
    assert again.config == model.config.replace(
        architectures=["EncoderForSequenceClassification"])
    _same(model, again)
    model.save_pretrained(tmp_path / "unrolled", unroll=True)
    theirs = transformers.RobertaForSequenceClassification.from_pretrained(tmp_path / "unrolled")
    assert_same_outputs(model, theirs, "RobertaForSequenceClassification", 2,
                        roberta_inputs(left=True))


def test_pretraining_model_goes_to_own_layout_its_mlm_to_roberta(tmp_path, caplog):
    """transformers has no RobertaForPreTraining: MLM + pair head is saved in litebert's
    layout with the reason; its MLM part, as EncoderForMaskedLM, is a RobertaForMaskedLM
    directory with equal outputs."""
    model = randomize(litebert.EncoderForPreTraining(roberta_config()))
    with caplog.at_level(logging.WARNING, logger="litebert"):
        model.save_pretrained(tmp_path / "pt")
    assert "no RoBERTa model with a sentence-pair head" in caplog.text
    assert "unroll=True" not in caplog.text  # no sharing to unroll: it would not help
    assert json.loads((tmp_path / "pt" / "config.json").read_text())["model_type"] == "litebert"
    again = litebert.AutoModelForPreTraining.from_pretrained(tmp_path / "pt", strict=True)
    assert isinstance(again, litebert.EncoderForPreTraining)
    _same(model, again)
    mlm = litebert.EncoderForMaskedLM.from_pretrained(tmp_path / "pt")
    mlm.save_pretrained(tmp_path / "mlm")
    assert json.loads((tmp_path / "mlm" / "config.json").read_text())["architectures"] == [
        "RobertaForMaskedLM"]
    theirs = transformers.RobertaForMaskedLM.from_pretrained(tmp_path / "mlm")
    assert_same_outputs(mlm, theirs, "RobertaForMaskedLM", 2, roberta_inputs(left=True))
    x = roberta_inputs()
    with torch.no_grad():
        torch.testing.assert_close(model.eval()(**x).prediction_logits, theirs(**x).logits,
                                   atol=1e-5, rtol=0)


def test_auto_pretraining_on_a_roberta_directory_is_the_masked_lm(tmp_path):
    """As transformers' AutoModelForPreTraining, which gives RobertaForMaskedLM."""
    transformers.RobertaForMaskedLM(hf_roberta_config()).save_pretrained(tmp_path)
    assert isinstance(litebert.AutoModelForPreTraining.from_pretrained(tmp_path, strict=True),
                      litebert.EncoderForMaskedLM)
    assert isinstance(litebert.AutoModelForPreTraining.from_config(roberta_config()),
                      litebert.EncoderForMaskedLM)
