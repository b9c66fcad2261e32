"""model/head_parts.py: each spec builds transformers' module names and computes what it says
(pooling, transform, dropout placement), the config fields map to the families' heads, and
ModernBERT's heads (transformers' ModernBertFor* classes with their backbone replaced by a
stub that returns given hidden states) give the same outputs as ours on the same states."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
import transformers
from torch import nn

import litebert
from litebert.config import ConfigError
from litebert.model.head_parts import (
    ClassificationHead,
    ClassifierSpec,
    MLMHead,
    MLMHeadSpec,
    Transform,
    TransformSpec,
    add_classifier,
    classifier_spec,
    classify,
    mlm_spec,
    pool,
)
from litebert.model.outputs import BaseModelOutput
from tests.helpers.models import randomize, small_config

ATOL = 1e-5
B, T, H, V = 3, 7, 32, 99
ELECTRA = dict(use_pooler=False, classifier_head="first_token")
XLNET = dict(use_pooler=False, classifier_head="summary")
MODERNBERT = dict(use_pooler=False, classifier_head="pooled_norm", head_dense_bias=False,
                  head_norm_bias=False, layer_norm_eps=1e-5, mlm_act="gelu")


def head_keys(config, task: str, out_features: int = 3) -> set[str]:
    owner = nn.Module()
    add_classifier(owner, classifier_spec(config, task), H, out_features)
    return set(owner.state_dict())


def pair(name: str) -> set[str]:
    return {f"{name}.weight", f"{name}.bias"}


# ---- names -----------------------------------------------------------------------------------

@pytest.mark.parametrize("structure, task, keys", [
    ({}, "sequence", pair("classifier")),
    ({}, "choice", pair("classifier")),  # the pooler
    ({}, "tokens", pair("classifier")),
    ({}, "spans", pair("qa_outputs")),
    (ELECTRA, "sequence", pair("classifier.dense") | pair("classifier.out_proj")),
    (ELECTRA, "choice", pair("sequence_summary.summary") | pair("classifier")),
    (dict(ELECTRA, use_pooler=True), "choice", pair("classifier")),  # RoBERTa's
    (XLNET, "sequence", pair("sequence_summary.summary") | pair("classifier")),
    (MODERNBERT, "sequence", {"head.dense.weight", "head.norm.weight"} | pair("classifier")),
    (MODERNBERT, "choice", {"head.dense.weight", "head.norm.weight"} | pair("classifier")),
    (MODERNBERT, "tokens", {"head.dense.weight", "head.norm.weight"} | pair("classifier")),
    (MODERNBERT, "spans", {"head.dense.weight", "head.norm.weight"} | pair("classifier")),
    (dict(MODERNBERT, head_dense_bias=True, head_norm_bias=True), "sequence",
     pair("head.dense") | pair("head.norm") | pair("classifier")),
])
def test_each_structure_builds_transformers_names(structure, task, keys):
    assert head_keys(small_config(**structure), task) == keys


def test_the_pretraining_heads_keep_their_names():
    config = small_config(**MODERNBERT)
    mlm = MLMHead(mlm_spec(config), H, 16, V)
    assert set(mlm.state_dict()) == {"dense.weight", "LayerNorm.weight", "bias"}
    no_bias = MLMHead(mlm_spec(config.replace(decoder_bias=False)), H, 16, V)
    assert no_bias.bias is None and "bias" not in no_bias.state_dict()
    sop = ClassificationHead(classifier_spec(small_config(), "pair"), H, 2)
    assert set(sop.state_dict()) == pair("classifier")
    rtd = ClassificationHead(classifier_spec(small_config(), "replaced"), H, 1)
    assert set(rtd.state_dict()) == pair("dense") | pair("dense_prediction")


# ---- what the parts compute ------------------------------------------------------------------

def test_transform_kinds_compute_dense_act_norm():
    x = torch.randn(B, T, H)
    assert Transform(TransformSpec("none"), H, H)(x) is x
    spec = TransformSpec("dense-act-norm", "tanh", dense_bias=False, norm_eps=1e-5)
    full = randomize(Transform(spec, H, 16))
    expected = F.layer_norm(torch.tanh(x @ full.dense.weight.T), (16,), full.norm.weight,
                            full.norm.bias, 1e-5)
    torch.testing.assert_close(full(x), expected)
    half = Transform(TransformSpec("dense-act", "relu"), H, H)
    assert not hasattr(half, "norm")
    torch.testing.assert_close(half(x), F.relu(half.dense(x)))


# Each family's order of dropout, transform and output, written out (x: the pooled token).
ORDERS = {
    "electra": lambda m, x: m.classifier.out_proj(m.classifier.dropout(
        m.classifier.act(m.classifier.dense(m.classifier.dropout(x))))),
    "xlnet": lambda m, x: m.classifier(m.dropout(m.sequence_summary(x))),
    "modernbert": lambda m, x: m.classifier(m.drop(m.head(x))),
    "albert": lambda m, x: m.classifier(m.dropout(x)),
}
STRUCTURES = {"electra": ELECTRA, "xlnet": XLNET, "modernbert": MODERNBERT, "albert": {}}


@pytest.mark.parametrize("family", list(ORDERS))
def test_dropout_sits_where_the_family_puts_it(family):
    """In training, the same seed gives the same dropout masks: equal logits only if the
    dropouts are where (and as many as) the family's order says."""
    config = small_config(**STRUCTURES[family], classifier_dropout_prob=0.5)
    spec = classifier_spec(config, "sequence")
    owner = nn.Module()
    add_classifier(owner, spec, H, 3)
    randomize(owner).train()
    x = torch.randn(B, H)
    torch.manual_seed(3)
    ours = classify(owner, spec, x)
    torch.manual_seed(3)
    torch.testing.assert_close(ours, ORDERS[family](owner, x))
    torch.manual_seed(3)
    assert not torch.allclose(ours, ORDERS[family](owner.eval(), x))  # dropout did act


def padded(left: bool = True) -> torch.Tensor:
    """(B, T) masks: row 0 full, row 1 padded on the right, row 2 on the left (if `left`)."""
    mask = torch.ones(B, T, dtype=torch.long)
    mask[1, 5:] = 0
    if left:
        mask[2, :3] = 0
    return mask


def test_poolings_read_what_they_say():
    hidden, pooled = torch.randn(B, T, H), torch.randn(B, H)
    out = BaseModelOutput(last_hidden_state=hidden, pooler_output=pooled)
    mask = padded()
    assert pool("pooler", out, mask, 0) is pooled
    assert pool("tokens", out, mask, 0) is hidden
    torch.testing.assert_close(pool("summary", out, mask, -1), hidden[:, -1])
    first = pool("first_unpadded", out, mask, 0)
    torch.testing.assert_close(first, torch.stack([hidden[0, 0], hidden[1, 0], hidden[2, 3]]))
    mean = pool("mean", out, mask, 0)
    torch.testing.assert_close(mean[1], hidden[1, :5].mean(0))
    torch.testing.assert_close(mean[2], hidden[2, 3:].mean(0))
    other_pads = hidden.masked_fill(mask[..., None] == 0, 1e3)  # what pads hold: not read
    torch.testing.assert_close(pool("mean", BaseModelOutput(other_pads), mask, 0), mean)
    torch.testing.assert_close(pool("mean", out, None, 0), hidden.mean(1))


@pytest.mark.parametrize("structure, task, pooling", [
    ({}, "sequence", "pooler"),
    (ELECTRA, "sequence", "summary"),
    (dict(ELECTRA, classifier_pooling="mean"), "sequence", "mean"),
    (dict(ELECTRA, classifier_pooling="mean"), "choice", "mean"),
    (dict(ELECTRA, use_pooler=True), "choice", "pooler"),
    (XLNET, "choice", "summary"),
    (MODERNBERT, "sequence", "summary"),
    (MODERNBERT, "choice", "first_unpadded"),
    (dict(MODERNBERT, use_pooler=True), "choice", "first_unpadded"),
    (dict(MODERNBERT, classifier_pooling="mean"), "choice", "mean"),
    (MODERNBERT, "tokens", "tokens"),
])
def test_the_config_says_what_a_head_reads(structure, task, pooling):
    assert classifier_spec(small_config(**structure), task).pooling == pooling


@pytest.mark.parametrize("changes, field, words", [
    (dict(classifier_pooling="first"), "classifier_pooling", "unknown"),
    (dict(classifier_pooling="mean"), "classifier_pooling", "'pooler' reads the pooled"),
    (dict(head_dense_bias="no"), "head_dense_bias", "true or false"),
    (dict(classifier_head="pooled", use_pooler=False), "classifier_head", "unknown"),
])
def test_invalid_head_fields_name_the_field(changes, field, words):
    with pytest.raises(ConfigError, match=rf"ModelConfig\.{field}=.*{words}"):
        small_config(**changes)


def test_specs_refuse_unknown_kinds():
    with pytest.raises(ValueError, match="pooling='cls'"):
        ClassifierSpec("cls")
    with pytest.raises(ValueError, match="kind='dense-norm'"):
        MLMHeadSpec(TransformSpec("dense-norm"))


# ---- ModernBERT's heads against transformers' -------------------------------------------------

class TheirStub(nn.Module):
    """Stands for ModernBertModel: returns `hidden` whatever the inputs."""

    def __init__(self, hidden):
        super().__init__()
        self.hidden = hidden

    def forward(self, *args, **kwargs):
        return transformers.modeling_outputs.BaseModelOutput(last_hidden_state=self.hidden)


class OurStub(nn.Module):
    """Stands for our backbone: returns `hidden`; the summary token is the first."""

    summary_position = 0

    def __init__(self, hidden, words=None):
        super().__init__()
        self.hidden = hidden
        self.input_embeddings = words

    def forward(self, *args, **kwargs):
        return BaseModelOutput(last_hidden_state=self.hidden)


def modernbert_pair(cls_name: str, pooling: str = "cls", dropout: float = 0.0,
                    num_labels: int = 3):
    """transformers' ModernBertX and our model of the same task with ModernBERT's head fields,
    the same head weights (same names), backbones not yet stubbed."""
    theirs = getattr(transformers, cls_name)(transformers.ModernBertConfig(
        vocab_size=V, hidden_size=H, intermediate_size=48, num_hidden_layers=1,
        num_attention_heads=4, pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1,
        sep_token_id=2, classifier_pooling=pooling, classifier_dropout=dropout,
        num_labels=num_labels))
    randomize(theirs, seed=4)
    ours_name = cls_name.replace("ModernBert", "Albert")
    config = small_config(**MODERNBERT, classifier_pooling=pooling, num_labels=num_labels,
                          classifier_dropout_prob=dropout)
    ours = getattr(litebert, ours_name)(config)
    their_state = theirs.state_dict()
    head = {k: v for k, v in ours.state_dict().items() if not k.startswith("backbone.")}
    assert set(head) == {k for k in their_state if not k.startswith("model.")}
    ours.load_state_dict({k: their_state[k] for k in head}, strict=False)
    return ours, theirs


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_sequence_classification_matches_modernbert(pooling, train):
    ours, theirs = modernbert_pair("ModernBertForSequenceClassification", pooling, 0.3)
    hidden, mask = torch.randn(B, T, H), padded(left=False)
    ours.backbone, theirs.model = OurStub(hidden), TheirStub(hidden)
    ours.train(train), theirs.train(train)
    ids, labels = torch.zeros(B, T, dtype=torch.long), torch.tensor([0, 2, 1])
    torch.manual_seed(7)
    a = ours(input_ids=ids, attention_mask=mask, labels=labels)
    torch.manual_seed(7)
    b = theirs(input_ids=ids, attention_mask=mask, labels=labels)
    torch.testing.assert_close(a.logits, b.logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(a.loss, b.loss, atol=ATOL, rtol=0)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_multiple_choice_matches_modernbert_with_left_padding(pooling):
    """"cls" in multiple choice is the first unpadded token: row 2 is padded on the left."""
    C = 2
    ours, theirs = modernbert_pair("ModernBertForMultipleChoice", pooling)
    hidden = torch.randn(B * C, T, H)
    mask = torch.cat([padded(), padded().flip(0)]).view(B, C, T)
    ours.backbone, theirs.model = OurStub(hidden), TheirStub(hidden)
    ids, labels = torch.zeros(B, C, T, dtype=torch.long), torch.tensor([1, 0, 1])
    a = ours.eval()(input_ids=ids, attention_mask=mask, labels=labels)
    b = theirs.eval()(input_ids=ids, attention_mask=mask, labels=labels)
    torch.testing.assert_close(a.logits, b.logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(a.loss, b.loss, atol=ATOL, rtol=0)


@pytest.mark.parametrize("cls_name", ["ModernBertForTokenClassification",
                                      "ModernBertForQuestionAnswering"])
def test_token_and_span_heads_match_modernbert(cls_name):
    ours, theirs = modernbert_pair(cls_name, num_labels=2)
    hidden, mask = torch.randn(B, T, H), padded()
    ours.backbone, theirs.model = OurStub(hidden), TheirStub(hidden)
    ids = torch.zeros(B, T, dtype=torch.long)
    a, b = ours.eval()(input_ids=ids, attention_mask=mask), theirs.eval()(input_ids=ids,
                                                                          attention_mask=mask)
    for name in ("logits",) if "Token" in cls_name else ("start_logits", "end_logits"):
        torch.testing.assert_close(a[name], b[name], atol=ATOL, rtol=0)


def test_mlm_head_matches_modernbert():
    """ModernBERT's head.dense, head.norm (no biases) and decoder.bias are our
    predictions.dense, predictions.LayerNorm and predictions.bias; the decoder is the word
    embeddings in both."""
    theirs = transformers.ModernBertForMaskedLM(transformers.ModernBertConfig(
        vocab_size=V, hidden_size=H, intermediate_size=48, num_hidden_layers=1,
        num_attention_heads=4, pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1,
        sep_token_id=2))
    randomize(theirs, seed=5)
    ours = litebert.EncoderForMaskedLM(small_config(**MODERNBERT, embedding_size=H))
    names = {"predictions.dense.weight": "head.dense.weight",
             "predictions.LayerNorm.weight": "head.norm.weight",
             "predictions.bias": "decoder.bias"}
    assert {k for k in ours.state_dict() if not k.startswith("backbone.")} == set(names)
    their_state = theirs.state_dict()
    ours.load_state_dict({k: their_state[v] for k, v in names.items()}, strict=False)
    hidden = torch.randn(B, T, H)
    ours.backbone = OurStub(hidden, words=theirs.decoder.weight)
    theirs.model = TheirStub(hidden)
    ids = torch.zeros(B, T, dtype=torch.long)
    a, b = ours.eval()(input_ids=ids), theirs.eval()(input_ids=ids)
    torch.testing.assert_close(a.logits, b.logits, atol=ATOL, rtol=0)
