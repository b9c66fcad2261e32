"""Auto classes pick the head class from config.json's model_type, as transformers' do."""

from __future__ import annotations

import pytest
import transformers

import litebert
from litebert.model.hub import CheckpointError
from tests.helpers.family_configs import electra_config, hf_electra_config
from tests.helpers.models import VOCAB, small_config

AUTO = {"AutoModel": "AlbertModel", "AutoModelForMaskedLM": "EncoderForMaskedLM",
        "AutoModelForSequenceClassification": "EncoderForSequenceClassification",
        "AutoModelForTokenClassification": "EncoderForTokenClassification",
        "AutoModelForQuestionAnswering": "EncoderForQuestionAnswering",
        "AutoModelForMultipleChoice": "EncoderForMultipleChoice",
        "AutoModelForReplacedTokenDetection": "EncoderForReplacedTokenDetection"}
PRETRAINING = {"albert": "EncoderForPreTraining", "bert": "EncoderForPreTraining",
               "electra": "EncoderForReplacedTokenDetection"}


def _directory(root, family: str):
    """A transformers-written base-model directory of the family."""
    if family == "albert":
        model = transformers.AlbertModel(transformers.AlbertConfig(
            vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=37, max_position_embeddings=64))
    elif family == "bert":
        model = transformers.BertModel(transformers.BertConfig(
            vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=37, max_position_embeddings=64))
    else:
        model = transformers.ElectraModel(hf_electra_config(num_hidden_layers=2))
    model.save_pretrained(root / family)
    return root / family


@pytest.mark.parametrize("family", list(PRETRAINING))
def test_auto_classes_dispatch_on_model_type(tmp_path, family):
    directory = _directory(tmp_path, family)
    for auto, expected in AUTO.items():
        model = getattr(litebert, auto).from_pretrained(directory)
        assert type(model).__name__ == expected, auto
        assert model.config.model_type == family
    model = litebert.AutoModelForPreTraining.from_pretrained(directory)
    assert type(model).__name__ == PRETRAINING[family]


def test_pretraining_follows_architectures_when_the_layout_is_albert(tmp_path):
    """An all-shared discriminator is written in ALBERT layout; its architectures entry
    brings it back as the discriminator, not as ALBERT's MLM + SOP model."""
    litebert.EncoderForReplacedTokenDetection(electra_config(sharing="all")).save_pretrained(
        tmp_path)
    model = litebert.AutoModelForPreTraining.from_pretrained(tmp_path)
    assert isinstance(model, litebert.EncoderForReplacedTokenDetection)
    transformers.ElectraForPreTraining(hf_electra_config()).save_pretrained(tmp_path / "hf")
    model = litebert.AutoModelForPreTraining.from_pretrained(tmp_path / "hf", strict=True)
    assert isinstance(model, litebert.EncoderForReplacedTokenDetection)


def test_from_config_and_overrides(tmp_path):
    assert isinstance(litebert.AutoModelForPreTraining.from_config(electra_config()),
                      litebert.EncoderForReplacedTokenDetection)
    assert isinstance(litebert.AutoModelForPreTraining.from_config(small_config()),
                      litebert.EncoderForPreTraining)
    directory = _directory(tmp_path, "electra")
    model = litebert.AutoModelForSequenceClassification.from_pretrained(directory, num_labels=4)
    assert model.classifier.out_proj.out_features == 4


def test_auto_errors(tmp_path):
    with pytest.raises(CheckpointError, match="not a directory"):
        litebert.AutoModel.from_pretrained(tmp_path / "nope")
    with pytest.raises(CheckpointError, match="no config.json"):
        litebert.AutoModel.from_pretrained(tmp_path)
    with pytest.raises(TypeError, match="from_pretrained"):
        litebert.AutoModel()
