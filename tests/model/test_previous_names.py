"""The previous release's names: its Albert* classes are today's Encoder* ones, in code and in
the `architectures` of directories written in litebert's layout."""

import json

import pytest
import torch

import litebert
from litebert.model.previous_names import PREVIOUS_NAMES
from tests.families.configs import albert_xlnet_config
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
