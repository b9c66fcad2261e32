"""The previous release's names: its Albert* classes are today's Encoder* ones, in code and in
the `architectures` of directories written in litebert's layout; its heads' backbone keys
(`albert.`) are today's `backbone.` ones in training checkpoints, and stay `albert.` in
litebert's own layout on disk."""

import json

import pytest
import torch
from safetensors.torch import load_file

import litebert
from litebert.model.previous_names import (
    PREVIOUS_NAMES,
    current_key,
    previous_key,
    rename_tree,
)
from tests.helpers.family_configs import albert_xlnet_config
from tests.helpers.models import randomize, small_config
from tests.helpers.modernbert import modern_config

TASKS = ("PreTraining", "MaskedLM", "SequenceClassification", "TokenClassification",
         "MultipleChoice", "QuestionAnswering", "ReplacedTokenDetection",
         "BeamQuestionAnswering", "PermutationLM")


@pytest.mark.parametrize("task", TASKS)
def test_each_old_name_is_the_generic_class(task):
    assert getattr(litebert.model, f"AlbertFor{task}") is getattr(litebert, f"EncoderFor{task}")
    assert PREVIOUS_NAMES[f"AlbertFor{task}"] == f"EncoderFor{task}"
    assert litebert.AlbertConfig is litebert.ModelConfig
    assert litebert.model.AlbertPreTrainedModel is litebert.model.PreTrainedModel


def _old_architectures(directory, name: str) -> None:
    """Rewrite config.json as the previous release wrote it: our class under its old name."""
    path = directory / "config.json"
    saved = json.loads(path.read_text())
    assert saved["model_type"] == "litebert"  # the layout whose names were ours
    path.write_text(json.dumps({**saved, "architectures": [name]}))


@pytest.mark.parametrize("cls, config, old_name", [
    # AutoModelForPreTraining picks among three classes by `architectures`: without the old
    # names it would build the MLM + SOP model for the detector.
    (litebert.EncoderForReplacedTokenDetection, small_config(sharing="ffn"),
     "AlbertForReplacedTokenDetection"),
    (litebert.EncoderForPermutationLM, albert_xlnet_config(), "AlbertForPermutationLM")])
def test_an_old_litebert_pretraining_directory_loads_as_its_class(tmp_path, cls, config,
                                                                  old_name):
    model = randomize(cls(config))
    model.save_pretrained(tmp_path)
    _old_architectures(tmp_path, old_name)
    again = litebert.AutoModelForPreTraining.from_pretrained(tmp_path)
    assert type(again) is cls
    ids = torch.tensor([[2, 5, 6, 7, 3]])
    with torch.no_grad():
        torch.testing.assert_close(model.eval()(input_ids=ids).logits,
                                   again.eval()(input_ids=ids).logits)


def test_an_old_bare_backbone_is_the_one_its_config_names(tmp_path):
    litebert.ModernBertModel(modern_config(sharing="all")).save_pretrained(tmp_path)
    _old_architectures(tmp_path, "AlbertModel")
    assert type(litebert.AutoModel.from_pretrained(tmp_path)) is litebert.ModernBertModel


def test_transformers_layouts_keep_their_names(tmp_path):
    litebert.EncoderForMaskedLM(small_config()).save_pretrained(tmp_path / "albert")
    litebert.EncoderForMaskedLM(small_config(sharing="attention")).save_pretrained(
        tmp_path / "ours")
    read = {name: json.loads((tmp_path / name / "config.json").read_text())["architectures"]
            for name in ("albert", "ours")}
    assert read == {"albert": ["AlbertForMaskedLM"], "ours": ["EncoderForMaskedLM"]}


def test_a_backbone_key_of_the_previous_release_reads_as_today_s_and_back():
    for old, new in [("albert.encoder.ffns.0.ffn.weight", "backbone.encoder.ffns.0.ffn.weight"),
                     ("discriminator.albert.embeddings.word_embeddings.weight",
                      "discriminator.backbone.embeddings.word_embeddings.weight")]:
        assert current_key(old) == new and previous_key(new) == old
    for same in ("predictions.dense.weight", "generator.encoder.ffns.0.ffn.weight",
                 "sop_classifier.classifier.weight"):
        assert current_key(same) == same == previous_key(same)


def test_rename_tree_renames_in_place_keys_and_named_params():
    state = {"albert.w": torch.zeros(1), "head.b": torch.ones(1)}
    tree = {"model": state, "optimizer": {"state": {"albert.w": {"step": torch.zeros(())}},
                                          "param_groups": [{"lr": 0.1,
                                                            "params": ["albert.w", "head.b"]}]}}
    rename_tree(tree, current_key)
    assert tree["model"] is state and sorted(state) == ["backbone.w", "head.b"]
    assert list(tree["optimizer"]["state"]) == ["backbone.w"]
    assert tree["optimizer"]["param_groups"] == [{"lr": 0.1, "params": ["backbone.w", "head.b"]}]


@pytest.mark.parametrize("config", [small_config(sharing="attention"), albert_xlnet_config()])
def test_our_own_layout_keeps_the_backbone_under_albert_on_disk(tmp_path, config):
    model = litebert.EncoderForMaskedLM(config)
    assert any(k.startswith("backbone.") for k in model.state_dict())
    model.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "litebert"
    keys = set(load_file(tmp_path / "model.safetensors"))
    assert {previous_key(k) for k in model.state_dict()} <= keys | {
        "predictions.decoder.weight", "predictions.decoder.bias"}
    assert not any(k.startswith("backbone.") for k in keys)
