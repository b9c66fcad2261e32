"""The task code and pre-training evaluation take an ELECTRA directory like any other."""

from __future__ import annotations

import json

import pytest
import torch
import transformers

import litebert
from litebert.model.hub import CheckpointError
from litebert.objectives.mlm_eval import load_for_evaluation
from litebert.tasks.base import finetune_config
from litebert.tasks.finetune import evaluate_model, finetune
from tests.helpers.family_configs import hf_electra_config
from tests.helpers.finetune import fast, sst2_dir


@pytest.fixture(scope="module")
def electra_model(base_model, tmp_path_factory):
    """A micro ELECTRA discriminator written by transformers, with the base model's
    SentencePiece tokenizer."""
    root = tmp_path_factory.mktemp("electra")
    tok = litebert.Tokenizer.from_pretrained(base_model)
    torch.manual_seed(0)
    config = hf_electra_config(vocab_size=len(tok), num_hidden_layers=2,
                               max_position_embeddings=128, pad_token_id=tok.pad_token_id)
    transformers.ElectraForPreTraining(config).save_pretrained(root)
    tok.save_pretrained(root)
    return root


def test_finetune_and_evaluate_take_an_electra_directory(electra_model, tmp_path):
    data = sst2_dir(tmp_path / "SST-2", n_train=64, n_dev=16)
    out = tmp_path / "out"
    result = finetune(finetune_config(task="sst2", data=str(data), model=str(electra_model),
                                     out=str(out), **fast(max_steps=20, eval_every=20)))
    config = json.loads((out / "model" / "config.json").read_text())
    assert config["model_type"] == "electra"
    assert config["architectures"] == ["ElectraForSequenceClassification"]
    transformers.ElectraForSequenceClassification.from_pretrained(out / "model")
    again = evaluate_model(finetune_config(task="sst2", data=str(data), model=str(out / "model"),
                                          out=str(tmp_path / "eval")))
    assert again["dev"]["accuracy"] == result["dev"]["accuracy"]


def test_pretraining_evaluation_loads_a_generator_not_a_discriminator(tmp_path):
    transformers.ElectraForMaskedLM(hf_electra_config()).save_pretrained(tmp_path / "g")
    model, has_pair_head = load_for_evaluation(tmp_path / "g")
    assert isinstance(model, litebert.EncoderForPreTraining) and not has_pair_head
    transformers.ElectraForPreTraining(hf_electra_config()).save_pretrained(tmp_path / "d")
    with pytest.raises(CheckpointError, match="no MLM head.*generator_predictions"):
        load_for_evaluation(tmp_path / "d")
