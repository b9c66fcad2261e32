"""Every head against transformers on randomly initialised models, in both directions.

litebert -> save_pretrained -> transformers.from_pretrained, and transformers ->
save_pretrained -> litebert.from_pretrained; outputs must agree within 1e-5 (fp32).
"""

from __future__ import annotations

import pytest
import torch
import transformers

import litebert
from litebert.families import FAMILIES
from tests.helpers.models import VOCAB, make_inputs, randomize, small_config
from tests.helpers.parity import ATOL, assert_same_gradients, assert_same_outputs, labels_for

ALBERT_CONFIGS = {
    "E!=H gelu_new": dict(embedding_size=16),
    "groups+inner gelu": dict(num_hidden_groups=2, inner_group_num=2, hidden_act="gelu"),
    "E==H not-shared": dict(embedding_size=32, num_hidden_layers=3, sharing="none"),
}
# Our class -> transformers' ALBERT class.
HEADS = {"AlbertModel": "AlbertModel"} | {
    f"EncoderFor{task}": f"AlbertFor{task}" for task in (
        "PreTraining", "MaskedLM", "SequenceClassification", "TokenClassification",
        "QuestionAnswering", "MultipleChoice")}


def hf_albert_config(ours: litebert.ModelConfig, num_labels: int):
    d = ours.replace(num_labels=num_labels).to_dict()
    d.pop("architectures", None)
    return transformers.AlbertConfig(**d)


@pytest.mark.parametrize("head", list(HEADS))
@pytest.mark.parametrize("variant", list(ALBERT_CONFIGS))
def test_litebert_to_transformers(tmp_path, head, variant):
    their_head = HEADS[head]
    num_labels = labels_for(their_head)
    config = small_config(num_labels=num_labels, **ALBERT_CONFIGS[variant])
    ours = randomize(getattr(litebert, head)(config))
    ours.save_pretrained(tmp_path)
    theirs = getattr(transformers, their_head).from_pretrained(tmp_path,
                                                               attn_implementation="sdpa")
    assert_same_outputs(ours, theirs, their_head, num_labels)


@pytest.mark.parametrize("head", list(HEADS))
@pytest.mark.parametrize("variant", list(ALBERT_CONFIGS))
def test_transformers_to_litebert(tmp_path, head, variant):
    their_head = HEADS[head]
    num_labels = labels_for(their_head)
    config = small_config(num_labels=num_labels, **ALBERT_CONFIGS[variant])
    theirs = randomize(getattr(transformers, their_head)(hf_albert_config(config, num_labels)))
    theirs.save_pretrained(tmp_path)
    ours = getattr(litebert, head).from_pretrained(tmp_path)
    assert_same_outputs(ours, theirs, their_head, num_labels)


def test_regression_head_matches(tmp_path):
    config = small_config(num_labels=1)
    ours = randomize(litebert.EncoderForSequenceClassification(config)).eval()
    ours.save_pretrained(tmp_path)
    theirs = transformers.AlbertForSequenceClassification.from_pretrained(tmp_path).eval()
    x = make_inputs()
    target = torch.tensor([0.5, -1.0, 2.0])
    with torch.no_grad():
        torch.testing.assert_close(ours(**x, labels=target).loss, theirs(**x, labels=target).loss)


BERT_HEADS = {"AlbertModel": "BertModel", "EncoderForPreTraining": "BertForPreTraining",
              "EncoderForMaskedLM": "BertForMaskedLM",
              "EncoderForSequenceClassification": "BertForSequenceClassification",
              "EncoderForTokenClassification": "BertForTokenClassification",
              "EncoderForQuestionAnswering": "BertForQuestionAnswering",
              "EncoderForMultipleChoice": "BertForMultipleChoice"}


def bert_config(num_labels: int = 3) -> transformers.BertConfig:
    return transformers.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=3,
                                   num_attention_heads=4, intermediate_size=37,
                                   max_position_embeddings=64, num_labels=num_labels)


@pytest.mark.parametrize("ours_name", list(BERT_HEADS))
def test_bert_directories_both_ways(tmp_path, ours_name):
    their_cls = getattr(transformers, BERT_HEADS[ours_name])
    num_labels = labels_for(ours_name)
    theirs = randomize(their_cls(bert_config(num_labels)))
    theirs.save_pretrained(tmp_path / "hf")
    ours = getattr(litebert, ours_name).from_pretrained(tmp_path / "hf")
    assert ours.config.model_type == "bert" and ours.config.sharing == "none"
    assert ours.base_model.encoder.embedding_hidden_mapping_in is None
    assert_same_outputs(ours, theirs, BERT_HEADS[ours_name], num_labels)
    # And back: our BERT directory loads in transformers' Bert class.
    randomize(ours, seed=9).save_pretrained(tmp_path / "ours")
    again = their_cls.from_pretrained(tmp_path / "ours")
    assert_same_outputs(ours, again, BERT_HEADS[ours_name], num_labels)


def test_gradients_match_transformers(tmp_path):
    """Training parity: same loss gradient for every parameter (E != H, groups, inner)."""
    config = small_config(num_hidden_groups=2, inner_group_num=2)
    ours = randomize(litebert.EncoderForPreTraining(config))
    ours.save_pretrained(tmp_path)
    theirs = transformers.AlbertForPreTraining.from_pretrained(tmp_path)
    assert_same_gradients(ours, theirs, "AlbertForPreTraining", 2, FAMILIES["albert"])


@pytest.mark.parametrize("name", list(ALBERT_CONFIGS))
def test_hidden_states_match_transformers(name, tmp_path):
    """Every layer's input and output (Figure 2 of the paper measures between them)."""
    ours = randomize(litebert.AlbertModel(small_config(**ALBERT_CONFIGS[name]))).eval()
    ours.save_pretrained(tmp_path)
    theirs = transformers.AlbertModel.from_pretrained(tmp_path).eval()
    x = make_inputs()
    with torch.no_grad():
        a = ours(**x, output_hidden_states=True).hidden_states
        b = theirs(**x, output_hidden_states=True).hidden_states
    assert len(a) == len(b) == ours.config.num_layer_positions + 1
    for mine, ref in zip(a, b, strict=True):
        torch.testing.assert_close(mine, ref, atol=ATOL, rtol=0)
