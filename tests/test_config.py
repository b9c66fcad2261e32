from __future__ import annotations

import dataclasses
import json

import pytest
import transformers

from litebert import PRESETS, ConfigError, ModelConfig
from litebert.config import BackboneConfig, register_backbone_config
from litebert.families.base import config_fields
from litebert.models.albert.config import AlbertBackboneConfig
from litebert.models.xlnet.config import XLNetBackboneConfig


@pytest.mark.parametrize("name", list(PRESETS))
def test_presets_build(name):
    config = ModelConfig.from_preset(name)
    assert config.hidden_size % config.num_attention_heads == 0


def test_unknown_preset_lists_choices():
    with pytest.raises(ConfigError, match="unknown preset 'albert-huge'.*albert-base"):
        ModelConfig.from_preset("albert-huge")


@pytest.mark.parametrize("changes, field, words", [
    (dict(hidden_size=100, num_attention_heads=12), "hidden_size", "num_attention_heads=12"),
    (dict(num_hidden_layers=12, num_hidden_groups=5), "num_hidden_groups", "divide"),
    (dict(hidden_act="gelu_fast"), "hidden_act", "unknown"),
    (dict(sharing="some"), "sharing", "unknown"),
    (dict(vocab_size=0), "vocab_size", "positive"),
    (dict(hidden_dropout_prob=1.5), "hidden_dropout_prob", r"\[0, 1\)"),
    (dict(embedding_projection="never", embedding_size=128), "embedding_size",
     "no E->H projection, as in BERT"),
    (dict(embedding_projection="sometimes"), "embedding_projection", "unknown"),
    (dict(use_pooler=False), "classifier_head", "needs use_pooler=True"),
    (dict(classifier_head="cls"), "classifier_head", "unknown"),
    (dict(classifier_head="first_token", classifier_act="gelu_fast"), "classifier_act",
     "unknown"),
    (dict(mlm_act="softmax"), "mlm_act", "unknown"),
    (dict(model_type="gpt2"), "model_type", "unknown.*'albert'.*'electra'"),
    (dict(pad_token_id=40000), "pad_token_id", "vocab_size"),
])
def test_invalid_configs_name_the_field(changes, field, words):
    with pytest.raises(ConfigError, match=rf"ModelConfig\.{field}=.*{words}"):
        ModelConfig(**changes)


def test_reads_transformers_albert_defaults():
    config = ModelConfig.from_dict(transformers.AlbertConfig().to_dict())
    assert (config.hidden_size, config.num_attention_heads, config.intermediate_size) == (
        4096, 64, 16384)  # transformers' default is xxlarge
    assert config.model_type == "albert" and config.sharing == "all"


def test_reads_transformers_bert():
    hf = transformers.BertConfig(hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                                 intermediate_size=100, classifier_dropout=0.3)
    config = ModelConfig.from_dict(hf.to_dict())
    assert config.model_type == "bert" and config.sharing == "none"
    assert config.embedding_size == 64 and not config.has_projection
    assert config.num_hidden_groups == 3 and config.hidden_act == "gelu"
    assert config.classifier_dropout_prob == 0.3


def test_reads_google_albert_config(tmp_path):
    google = {  # the keys of the released albert_config.json (base, v2)
        "attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
        "embedding_size": 128, "hidden_size": 768, "initializer_range": 0.02,
        "intermediate_size": 3072, "max_position_embeddings": 512, "num_attention_heads": 12,
        "num_hidden_layers": 12, "num_hidden_groups": 1, "net_structure_type": 0,
        "gap_size": 0, "num_memory_blocks": 0, "inner_group_num": 1, "down_scale_factor": 1,
        "type_vocab_size": 2, "vocab_size": 30000}
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(google))
    config = ModelConfig.from_json_file(path)
    assert config.hidden_size == 768 and config.hidden_act == "gelu"
    assert "net_structure_type" not in config.to_dict()
    path.write_text(json.dumps({**google, "net_structure_type": 1}))
    with pytest.raises(ConfigError, match="albert_config.json: net_structure_type=1"):
        ModelConfig.from_json_file(path)


def test_writes_config_transformers_reads():
    ours = ModelConfig.from_preset("albert-large", num_hidden_groups=2, hidden_act="gelu")
    theirs = transformers.AlbertConfig(**ours.to_dict())
    for key in ("hidden_size", "num_hidden_groups", "embedding_size", "hidden_act",
                "intermediate_size", "num_attention_heads", "layer_norm_eps"):
        assert getattr(theirs, key) == getattr(ours, key), key
    assert ModelConfig.from_dict(ours.to_dict()) == ours


def test_not_shared_config_is_written_as_one_group_per_layer():
    config = ModelConfig(sharing="none", num_hidden_layers=6)
    assert config.to_dict()["num_hidden_groups"] == 6
    assert ModelConfig.from_dict(config.to_dict()).sharing == "none"


def test_partial_sharing_is_not_labelled_albert():
    assert ModelConfig(sharing="attention").to_dict()["model_type"] == "litebert"
    back = ModelConfig.from_dict(ModelConfig(sharing="ffn").to_dict())
    assert back.sharing == "ffn" and back.model_type == "albert"


def test_bad_json_names_file_and_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{\n  "hidden_size": 768,\n  oops\n}')
    with pytest.raises(ConfigError, match=r"config.json, line 3: invalid JSON"):
        ModelConfig.from_json_file(path)
    with pytest.raises(ConfigError, match="no such config file"):
        ModelConfig.from_json_file(tmp_path / "missing.json")


def test_invalid_value_in_file_names_file_and_field(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "albert", "hidden_size": 100,
                                "num_attention_heads": 12}))
    with pytest.raises(ConfigError, match=r"config.json: ModelConfig.hidden_size=100"):
        ModelConfig.from_json_file(path)


def test_labels_round_trip():
    config = ModelConfig(id2label={0: "neg", 1: "neu", 2: "pos"})
    assert config.num_labels == 3
    again = ModelConfig.from_dict(config.to_dict())
    assert again.id2label == {0: "neg", 1: "neu", 2: "pos"}


def test_structure_fields_decide_the_projection():
    assert ModelConfig(embedding_size=128, hidden_size=768).has_projection  # "always"
    assert ModelConfig(embedding_size=768, embedding_projection="always").has_projection
    same = ModelConfig(embedding_size=768, embedding_projection="when_sizes_differ")
    assert not same.has_projection
    assert ModelConfig(embedding_size=128, embedding_projection="when_sizes_differ"
                        ).has_projection
    assert not ModelConfig(embedding_size=768, embedding_projection="never").has_projection


def test_mlm_activation_defaults_to_hidden_act():
    assert ModelConfig(hidden_act="gelu_new").mlm_activation == "gelu_new"
    assert ModelConfig(hidden_act="gelu_new", mlm_act="gelu").mlm_activation == "gelu"


def test_presets_keep_their_structure():
    albert, bert = ModelConfig.from_preset("albert-base"), ModelConfig.from_preset("bert-base")
    assert albert.has_projection and albert.use_pooler and albert.classifier_head == "pooler"
    assert not bert.has_projection and bert.use_pooler and bert.model_type == "bert"
    electra = ModelConfig.from_preset("electra-small")
    assert electra.has_projection and not electra.use_pooler
    assert (electra.model_type, electra.classifier_head, electra.mlm_activation) == (
        "electra", "first_token", "gelu")
    assert not ModelConfig.from_preset("electra-base").has_projection  # E == H == 768


def test_new_num_labels_drops_the_old_labels():
    config = ModelConfig(id2label={0: "neg", 1: "pos"})
    assert config.replace(num_labels=5).num_labels == 5
    assert config.replace(num_labels=5).id2label is None
    assert config.replace(num_labels=2).id2label == {0: "neg", 1: "pos"}


# ---- each backbone's own config ----------------------------------------------------------------

def test_backbone_fields_are_routed_to_the_backbones_config():
    config = ModelConfig.from_preset("xlnet-tiny", mem_len=8, attn_type="uni")
    assert isinstance(config.backbone_config, XLNetBackboneConfig)
    assert (config.backbone_config.mem_len, config.backbone_config.attn_type) == (8, "uni")
    assert config.flat_fields()["mem_len"] == 8
    assert config.backbone_fields(changed_only=True) == {"mem_len": 8, "attn_type": "uni"}
    albert = ModelConfig.from_preset("roberta-tiny")
    assert isinstance(albert.backbone_config, AlbertBackboneConfig)
    assert albert.backbone_config.position_numbering == "after_pad"
    assert albert.max_sequence_length == albert.max_position_embeddings - 2


def test_another_backbones_field_is_ignored_at_its_default_and_refused_otherwise():
    # Files of the previous release wrote XLNet's fields at their defaults for every model.
    config = ModelConfig.from_fields(hidden_size=64, num_attention_heads=4, mem_len=None,
                                      bi_data=False, position_numbering="from_zero")
    assert config.backbone == "albert" and "mem_len" not in config.flat_fields()
    with pytest.raises(ConfigError, match=r"mem_len=16 is a setting of the 'xlnet' backbone, "
                                          r"not of 'albert'"):
        ModelConfig.from_fields(mem_len=16)
    with pytest.raises(ConfigError, match=r"position_numbering='after_pad' is a setting of "
                                          r"the 'albert' backbone, not of 'xlnet'"):
        ModelConfig.from_preset("xlnet-tiny", position_numbering="after_pad")


def test_replace_keeps_or_resets_the_backbones_fields():
    config = ModelConfig.from_preset("xlnet-tiny", mem_len=8)
    assert config.replace(reuse_len=4).backbone_config == XLNetBackboneConfig(mem_len=8,
                                                                              reuse_len=4)
    moved = config.replace(backbone="albert", model_type="litebert")
    assert moved.backbone_config == AlbertBackboneConfig()


def test_a_backbone_config_of_the_wrong_class_is_refused():
    with pytest.raises(ConfigError, match=r"backbone_config=.*backbone 'albert' reads a "
                                          r"AlbertBackboneConfig"):
        ModelConfig(backbone_config=XLNetBackboneConfig())
    with pytest.raises(ConfigError, match=r"backbone 'nope' is not registered; litebert knows "
                                          r"'albert', 'modernbert', 'xlnet'"):
        ModelConfig(backbone="nope")


def test_a_backbone_name_takes_one_config_class():
    @dataclasses.dataclass
    class Other(BackboneConfig):
        width: int = 3

    with pytest.raises(ValueError, match="backbone 'xlnet' already has the config "
                                         "XLNetBackboneConfig"):
        register_backbone_config("xlnet", Other)
    assert "width" not in config_fields("xlnet")


def test_the_flat_config_json_of_every_backbone_reads_back():
    for name in ("tiny", "roberta-tiny", "xlnet-tiny", "albert-xlnet-tiny"):
        config = ModelConfig.from_preset(name, mem_len=4) if "xlnet" in name \
            else ModelConfig.from_preset(name)
        assert ModelConfig.from_dict(config.to_dict()) == config, name
