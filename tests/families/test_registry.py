"""The family registry: choosing an adapter by model_type, key mappings that invert, and which
layout a config is saved in."""

from __future__ import annotations

import json
import logging

import pytest
import torch
from safetensors.torch import load_file, save_file

import litebert
from litebert.config import ConfigError
from litebert.families import BACKBONE_CLASS, FAMILIES, family, layout_for, read_config_dict
from litebert.model import MODEL_CLASSES, build_backbone
from litebert.model.hub import CheckpointError, canonical_state
from tests.helpers.family_configs import albert_xlnet_config, electra_config, xlnet_config
from tests.helpers.models import outputs_equal, randomize, small_config

BERT = dict(model_type="bert", sharing="none", embedding_size=32, embedding_projection="never")
CONFIGS = {
    "albert": small_config(num_hidden_groups=2, inner_group_num=2),
    "albert-none": small_config(sharing="none", num_hidden_groups=4),  # groups as read
    "bert": small_config(**BERT, num_hidden_groups=4),
    "electra": electra_config(),
    "electra E==H": electra_config(embedding_size=32),
    "litebert": small_config(sharing="ffn"),
    "xlnet": xlnet_config(),
    "litebert xlnet": albert_xlnet_config(),  # ALBERT-XLNet: only our layout holds it
    # ModernBERT's heads (model/head_parts.py) on ALBERT: ALBERT's layout writes their fields
    "albert-heads": small_config(use_pooler=False, classifier_head="pooled_norm",
                                 classifier_pooling="mean", head_dense_bias=False,
                                 head_norm_bias=False, decoder_bias=False),
}


def test_unknown_model_type_lists_the_known_ones(tmp_path):
    with pytest.raises(ConfigError, match="unknown model_type 'gpt2'.*'albert', 'bert', "
                                          "'electra', 'litebert'"):
        family("gpt2")
    small_config().save(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    with pytest.raises(ConfigError, match=r"config.json: unknown model_type 'gpt2'"):
        litebert.AlbertModel.from_pretrained(tmp_path)
    with pytest.raises(ConfigError, match=r"config.json: unknown model_type 'gpt2'"):
        litebert.AutoModel.from_pretrained(tmp_path)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_keys_map_there_and_back_for_every_class(name):
    config = CONFIGS[name]
    adapter = layout_for(config)[0]
    assert adapter.model_type == name.split()[0].split("-")[0]
    for cls_name, cls in {BACKBONE_CLASS: None, **MODEL_CLASSES}.items():
        if cls_name not in adapter.class_names:
            continue
        try:  # "EncoderModel" names the backbone in every layout: the config's
            model = build_backbone(config) if cls is None else cls(config)
        except ConfigError:  # a head this backbone cannot carry (the permutation LM: XLNet's)
            assert cls_name == "EncoderForPermutationLM" and config.backbone != "xlnet"
            continue
        keys = list(canonical_state(model))
        external = [adapter.external_key(k, config) for k in keys]
        assert len(set(external)) == len(keys), f"{cls_name}: two keys map to one"
        assert [adapter.internal_key(k, config) for k in external] == keys, cls_name
        if name != "litebert":  # our own layout keeps our names
            assert all(k.startswith(adapter.prefix) for k in external if "encoder" in k)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_config_round_trips_through_its_family(name):
    config = CONFIGS[name]
    again, adapter = read_config_dict(config.to_dict())
    assert again == config
    assert adapter is layout_for(config)[0]


def test_only_albert_layout_writes_structure_fields():
    assert "use_pooler" not in small_config().to_dict()  # ALBERT: the defaults, unwritten
    assert "embedding_projection" not in small_config(**BERT).to_dict()  # BERT implies it
    assert "use_pooler" not in electra_config().to_dict()  # ELECTRA implies it
    shared = electra_config(sharing="all").to_dict()  # ALBERT layout: says what it is
    assert shared["model_type"] == "albert" and shared["use_pooler"] is False
    assert shared["litebert_model_type"] == "electra" and shared["mlm_act"] == "gelu"


@pytest.mark.parametrize("config, cls, family_name, words", [
    (small_config(sharing="attention"), "EncoderModel", "litebert", "no transformers equivalent"),
    (electra_config(sharing="all"), "EncoderModel", "albert", "one set of weights per layer"),
    (electra_config(use_pooler=True), "EncoderModel", "albert", "use_pooler"),
    (electra_config(mlm_act=None, hidden_act="relu"), "EncoderForMaskedLM", "albert",
     "mlm_act"),
    (electra_config(embedding_size=32, embedding_projection="always"), "EncoderModel",
     "albert", "exactly when"),
    (electra_config(), "EncoderForPreTraining", "albert", "no equivalent of"),
    (small_config(**{**BERT, "embedding_projection": "when_sizes_differ"}),
     "EncoderForReplacedTokenDetection", "albert", "no equivalent of"),
    (small_config(model_type="bert", sharing="none"), "EncoderModel", "albert", "projection"),
    (small_config(**BERT, head_dense_bias=False), "EncoderForMaskedLM", "albert",
     "head_dense_bias=True"),
    (electra_config(classifier_pooling="mean"), "EncoderForSequenceClassification", "albert",
     "classifier_pooling='cls'"),
    (xlnet_config(head_norm_bias=False), "EncoderForSequenceClassification", "litebert",
     "head_norm_bias=True"),
])
def test_what_a_family_cannot_hold_goes_to_albert_or_our_layout(config, cls, family_name,
                                                                   words):
    adapter, why = layout_for(config, cls)
    assert adapter is FAMILIES[family_name]
    assert why is not None and words in why


@pytest.mark.parametrize("name", ["bert", "electra"])
def test_family_models_saved_in_albert_layout_round_trip(tmp_path, caplog, name):
    """A BERT or ELECTRA config its family cannot hold (here: sharing 'all') is written in
    ALBERT layout with a message, and reads back as the same config and the same function."""
    config = (small_config(**{**BERT, "sharing": "all"}) if name == "bert"
              else electra_config(sharing="all"))
    model = randomize(litebert.EncoderForSequenceClassification(config))
    with caplog.at_level(logging.WARNING, logger="litebert"):
        model.save_pretrained(tmp_path)
    assert "saved in ALBERT layout" in caplog.text and "unroll=True" in caplog.text
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "albert"
    again = litebert.EncoderForSequenceClassification.from_pretrained(tmp_path, strict=True)
    assert again.config == model.config.replace(architectures=["AlbertForSequenceClassification"])
    outputs_equal(model, again)


def test_a_projection_that_is_not_the_stand_in_identity_is_reported(tmp_path):
    model = litebert.AlbertModel(electra_config(embedding_size=32, sharing="all"))
    model.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    key = "encoder.embedding_hidden_mapping_in.weight"
    assert torch.equal(tensors[key], torch.eye(32))
    tensors[key] = tensors[key] * 2
    save_file(tensors, tmp_path / "model.safetensors", {"format": "pt"})
    with pytest.raises(CheckpointError, match="unexpected key albert.encoder.embedding_hidden"):
        litebert.AlbertModel.from_pretrained(tmp_path)
