"""Every head against transformers on randomly initialised models, in both directions.

litebert -> save_pretrained -> transformers.from_pretrained, and transformers ->
save_pretrained -> litebert.from_pretrained; outputs must agree within 1e-5 (fp32).
"""

from __future__ import annotations

import pytest
import torch
import transformers

import litebert
from litebert.model.hub import _canonical_state, external_key
from tests.conftest import VOCAB, make_inputs, mlm_labels, randomize, small_config

ATOL = 1e-5

ALBERT_CONFIGS = {
    "E!=H gelu_new": dict(embedding_size=16),
    "groups+inner gelu": dict(num_hidden_groups=2, inner_group_num=2, hidden_act="gelu"),
    "E==H not-shared": dict(embedding_size=32, num_hidden_layers=3, sharing="none"),
}
HEADS = ["AlbertModel", "AlbertForPreTraining", "AlbertForMaskedLM",
         "AlbertForSequenceClassification", "AlbertForTokenClassification",
         "AlbertForQuestionAnswering", "AlbertForMultipleChoice"]


def labels_for(head: str) -> int:
    """transformers sizes its SOP and span heads by num_labels: they need 2."""
    return 2 if head.endswith(("PreTraining", "QuestionAnswering")) else 3


def labelled_inputs(head: str, num_labels: int) -> dict[str, torch.Tensor]:
    """Inputs plus the labels each head's loss takes."""
    x = make_inputs()
    g = torch.Generator().manual_seed(5)
    B, T = x["input_ids"].shape
    if head in ("AlbertForPreTraining", "BertForPreTraining"):
        order = torch.tensor([0, 1, 1])
        key = "sentence_order_label" if head.startswith("Albert") else "next_sentence_label"
        x.update(labels=mlm_labels(x), **{key: order})
    elif head.endswith("MaskedLM"):
        x.update(labels=mlm_labels(x))
    elif head.endswith("SequenceClassification"):
        x.update(labels=torch.randint(0, num_labels, (B,), generator=g))
    elif head.endswith("TokenClassification"):
        labels = torch.randint(0, num_labels, (B, T), generator=g)
        x.update(labels=labels.masked_fill(x["attention_mask"] == 0, -100))
    elif head.endswith("QuestionAnswering"):
        x.update(start_positions=torch.tensor([1, 0, 30]), end_positions=torch.tensor([3, 0, 2]))
    elif head.endswith("MultipleChoice"):
        x = {k: v.unsqueeze(1).expand(B, 2, T).contiguous() for k, v in x.items()}
        x["input_ids"] = x["input_ids"].clone()
        x["input_ids"][:, 1, 2] = 7  # the two choices differ
        x["labels"] = torch.tensor([1, 0, 1])
    return x


OUTPUT_PAIRS = {  # litebert field -> transformers field
    "last_hidden_state": "last_hidden_state", "pooler_output": "pooler_output",
    "prediction_logits": "prediction_logits", "sop_logits": "sop_logits",
    "logits": "logits", "start_logits": "start_logits", "end_logits": "end_logits",
}


def assert_same_outputs(ours, theirs, head: str, num_labels: int) -> None:
    ours.eval()
    theirs.eval()
    x = labelled_inputs(head, num_labels)
    plain = {k: v for k, v in x.items() if k in ("input_ids", "attention_mask",
                                                 "token_type_ids")}
    with torch.no_grad():
        a, b = ours(**plain), theirs(**plain)
        compared = 0
        for mine, their in OUTPUT_PAIRS.items():
            their = "seq_relationship_logits" if mine == "sop_logits" and "Bert" in \
                type(theirs).__name__ else their
            if getattr(a, mine, None) is None or getattr(b, their, None) is None:
                continue
            torch.testing.assert_close(a[mine], b[their], atol=ATOL, rtol=0, msg=mine)
            compared += 1
        assert compared >= 1
        if head != "AlbertModel" and head != "BertModel":
            la, lb_ = ours(**x).loss, theirs(**x).loss
            torch.testing.assert_close(la, lb_, atol=ATOL, rtol=1e-6)


def hf_albert_config(ours: litebert.AlbertConfig, num_labels: int):
    d = ours.replace(num_labels=num_labels).to_dict()
    d.pop("architectures", None)
    return transformers.AlbertConfig(**d)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("variant", list(ALBERT_CONFIGS))
def test_litebert_to_transformers(tmp_path, head, variant):
    num_labels = labels_for(head)
    config = small_config(num_labels=num_labels, **ALBERT_CONFIGS[variant])
    ours = randomize(getattr(litebert, head)(config))
    ours.save_pretrained(tmp_path)
    theirs = getattr(transformers, head).from_pretrained(tmp_path, attn_implementation="sdpa")
    assert_same_outputs(ours, theirs, head, num_labels)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("variant", list(ALBERT_CONFIGS))
def test_transformers_to_litebert(tmp_path, head, variant):
    num_labels = labels_for(head)
    config = small_config(num_labels=num_labels, **ALBERT_CONFIGS[variant])
    theirs = randomize(getattr(transformers, head)(hf_albert_config(config, num_labels)))
    theirs.save_pretrained(tmp_path)
    ours = getattr(litebert, head).from_pretrained(tmp_path)
    assert_same_outputs(ours, theirs, head, num_labels)


def test_regression_head_matches(tmp_path):
    config = small_config(num_labels=1)
    ours = randomize(litebert.AlbertForSequenceClassification(config)).eval()
    ours.save_pretrained(tmp_path)
    theirs = transformers.AlbertForSequenceClassification.from_pretrained(tmp_path).eval()
    x = make_inputs()
    target = torch.tensor([0.5, -1.0, 2.0])
    with torch.no_grad():
        torch.testing.assert_close(ours(**x, labels=target).loss, theirs(**x, labels=target).loss)


BERT_HEADS = {"AlbertModel": "BertModel", "AlbertForPreTraining": "BertForPreTraining",
              "AlbertForMaskedLM": "BertForMaskedLM",
              "AlbertForSequenceClassification": "BertForSequenceClassification",
              "AlbertForTokenClassification": "BertForTokenClassification",
              "AlbertForQuestionAnswering": "BertForQuestionAnswering",
              "AlbertForMultipleChoice": "BertForMultipleChoice"}


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
    ours = randomize(litebert.AlbertForPreTraining(config))
    ours.save_pretrained(tmp_path)
    theirs = transformers.AlbertForPreTraining.from_pretrained(tmp_path)
    ours.eval(), theirs.eval()  # no dropout: the same function on both sides
    x = labelled_inputs("AlbertForPreTraining", 2)
    ours(**x).loss.backward()
    theirs(**x).loss.backward()
    their_grads = {n: p.grad for n, p in theirs.named_parameters()}

    ours_params = dict(ours.named_parameters())
    for name in _canonical_state(ours):
        theirs_name = external_key(name, config)
        torch.testing.assert_close(ours_params[name].grad, their_grads[theirs_name],
                                   atol=1e-5, rtol=1e-4, msg=name)


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
