"""ELECTRA against transformers' Electra classes, every head, both directions.

Randomly initialised small models (H 32, E 16 or E == H, 3 layers, 4 heads, vocabulary 99),
a padded batch, eval mode, fp32: outputs, losses and the gradient of every parameter agree
within 1e-5.
"""

from __future__ import annotations

import json

import pytest
import torch
import transformers
from safetensors.torch import load_file

import litebert
from litebert.config import ConfigError
from litebert.families import FAMILIES
from tests.helpers.family_configs import electra_config, hf_electra_config
from tests.helpers.models import randomize
from tests.helpers.parity import assert_same_gradients, assert_same_outputs, labels_for

HEADS = {"AlbertModel": "ElectraModel",
         "EncoderForReplacedTokenDetection": "ElectraForPreTraining",
         "EncoderForMaskedLM": "ElectraForMaskedLM",
         "EncoderForSequenceClassification": "ElectraForSequenceClassification",
         "EncoderForTokenClassification": "ElectraForTokenClassification",
         "EncoderForQuestionAnswering": "ElectraForQuestionAnswering",
         "EncoderForMultipleChoice": "ElectraForMultipleChoice"}
# hidden_act gelu_new: the generator and classification heads must still use exact GELU.
VARIANTS = {"E!=H gelu": dict(embedding_size=16),
            "E==H gelu_new": dict(embedding_size=32, hidden_act="gelu_new")}
ELECTRA = FAMILIES["electra"]


def _ours(head: str, variant: str):
    config = electra_config(num_labels=labels_for(HEADS[head]), **VARIANTS[variant])
    return randomize(getattr(litebert, head)(config))


def _theirs(head: str, variant: str):
    config = hf_electra_config(labels_for(HEADS[head]), **VARIANTS[variant])
    return randomize(getattr(transformers, HEADS[head])(config))


@pytest.mark.parametrize("head", list(HEADS))
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_litebert_to_transformers(tmp_path, head, variant):
    ours = _ours(head, variant)
    ours.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "electra" and saved["architectures"] == [HEADS[head]]
    theirs = getattr(transformers, HEADS[head]).from_pretrained(tmp_path)
    assert_same_outputs(ours, theirs, HEADS[head], labels_for(HEADS[head]))


@pytest.mark.parametrize("head", list(HEADS))
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_transformers_to_litebert(tmp_path, head, variant):
    theirs = _theirs(head, variant)
    theirs.save_pretrained(tmp_path)
    ours = getattr(litebert, head).from_pretrained(tmp_path, strict=True)
    assert ours.config.model_type == "electra" and ours.config.sharing == "none"
    assert_same_outputs(ours, theirs, HEADS[head], labels_for(HEADS[head]))


@pytest.mark.parametrize("head", list(HEADS))
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_gradients_match_transformers(tmp_path, head, variant):
    theirs = _theirs(head, variant)
    theirs.save_pretrained(tmp_path)
    ours = getattr(litebert, head).from_pretrained(tmp_path, strict=True)
    assert_same_gradients(ours, theirs, HEADS[head], labels_for(HEADS[head]), ELECTRA)


@pytest.mark.parametrize("E, projected", [(16, True), (32, False)])
def test_embeddings_project_exists_iff_sizes_differ(tmp_path, E, projected):
    model = litebert.AlbertModel(electra_config(embedding_size=E))
    assert (model.encoder.embedding_hidden_mapping_in is not None) == projected
    assert model.pooler is None  # ELECTRA has no pooler
    model.save_pretrained(tmp_path)
    keys = set(load_file(tmp_path / "model.safetensors"))
    assert ("embeddings_project.weight" in keys) == projected
    assert "encoder.layer.2.attention.self.query.weight" in keys
    assert not any(k.startswith(("pooler", "encoder.albert")) for k in keys)


def test_backbone_is_our_not_shared_encoder(tmp_path):
    """ELECTRA's encoder is our sharing-"none" ALBERT backbone: same modules, same shapes."""
    hf = transformers.ElectraModel(hf_electra_config())
    ours = litebert.AlbertModel(electra_config())
    theirs_shapes = {k: tuple(v.shape) for k, v in hf.state_dict().items()
                     if not k.endswith(("position_ids", "token_type_ids"))}
    ours_shapes = {ELECTRA.external_key("backbone." + k, ours.config).removeprefix("electra."):
                   tuple(v.shape) for k, v in ours.state_dict().items()}
    assert ours_shapes == theirs_shapes
    assert len(ours.encoder.attentions) == len(ours.encoder.ffns) == 3


def test_reads_transformers_electra_defaults():
    config = litebert.ModelConfig.from_dict(transformers.ElectraConfig().to_dict())
    assert (config.embedding_size, config.hidden_size, config.num_attention_heads,
            config.intermediate_size, config.vocab_size) == (128, 256, 4, 1024, 30522)
    assert config.model_type == "electra" and config.sharing == "none"
    assert (config.embedding_projection, config.use_pooler, config.classifier_head,
            config.classifier_act, config.mlm_act) == (
        "when_sizes_differ", False, "first_token", "gelu", "gelu")
    assert config.has_projection and config.classifier_dropout_prob == 0.1
    assert litebert.ModelConfig.from_dict(config.to_dict()) == config


def test_writes_config_transformers_reads():
    ours = electra_config(embedding_size=32, classifier_dropout_prob=0.3, id2label={0: "a"})
    theirs = transformers.ElectraConfig(**ours.to_dict())
    for key in ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                "intermediate_size", "hidden_act", "layer_norm_eps", "num_labels"):
        assert getattr(theirs, key) == getattr(ours, key), key
    assert theirs.classifier_dropout == 0.3 and theirs.summary_last_dropout == 0.3
    assert (theirs.summary_type, theirs.summary_use_proj, theirs.summary_activation) == (
        "first", True, "gelu")


@pytest.mark.parametrize("change, words", [
    (dict(summary_type="mean"), "summary_type='mean' is not supported"),
    (dict(summary_activation="tanh"), "summary_activation='tanh'"),
    (dict(tie_word_embeddings=False), "tie_word_embeddings=false"),
    (dict(is_decoder=True), "decoder models are not supported"),
])
def test_unsupported_electra_configs_are_errors(change, words):
    data = {**hf_electra_config().to_dict(), **change}
    with pytest.raises(ConfigError, match=f"electra.json: {words}"):
        litebert.ModelConfig.from_dict(data, source="electra.json")


def test_discriminator_directory_fine_tunes_as_a_classifier(tmp_path, caplog):
    """A pre-trained ELECTRA directory loads under any head: the backbone is the same, the
    new head is initialised (what `litebert finetune` does with it)."""
    theirs = randomize(transformers.ElectraForPreTraining(hf_electra_config()))
    theirs.save_pretrained(tmp_path)
    with caplog.at_level("WARNING", logger="litebert"):
        clf = litebert.EncoderForSequenceClassification.from_pretrained(tmp_path, num_labels=5)
    clf.eval()
    assert "newly initialised" in caplog.text and "classifier.out_proj.weight" in caplog.text
    assert clf.classifier.out_proj.out_features == 5
    x = {"input_ids": torch.tensor([[5, 6, 7, 8]])}
    with torch.no_grad():
        torch.testing.assert_close(clf.backbone(**x).last_hidden_state,
                                   theirs.eval().electra(**x).last_hidden_state)
