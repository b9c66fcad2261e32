"""XLNet's heads on the same hidden states as transformers' (no XLNet backbone needed): the
beam-search span head with its answer classifier, the "summary" sequence classifier and
multiple choice without a pooler. transformers' own forward runs with its backbone replaced
by a stub that returns the given hidden states; ours the same way (or head_outputs)."""

from __future__ import annotations

import math

import pytest
import torch
import transformers
from torch import nn
from transformers.models.xlnet.modeling_xlnet import XLNetModelOutput

import litebert
from litebert.config import ConfigError
from litebert.model import AutoModelForBeamQuestionAnswering, EncoderForBeamQuestionAnswering
from litebert.model.outputs import BaseModelOutput
from tests.helpers.models import make_inputs, randomize, small_config

ATOL = 1e-5
B, T, H = 3, 11, 32
S, E = 3, 4  # beam sizes unlike the defaults and unlike each other
HEAD_PREFIXES = ("start_logits.", "end_logits.", "answer_class.")  # the same in both


def xlnet_config(**overrides) -> transformers.XLNetConfig:
    return transformers.XLNetConfig(**{**dict(
        vocab_size=99, d_model=H, n_layer=1, n_head=4, d_inner=37, start_n_top=S,
        end_n_top=E, layer_norm_eps=1e-12, dropout=0.1), **overrides})


def our_config(**overrides) -> litebert.ModelConfig:
    return small_config(**{**dict(layer_norm_eps=1e-12, use_pooler=False,
                                  classifier_head="summary", classifier_act="tanh",
                                  extra=dict(start_n_top=S, end_n_top=E)), **overrides})


class TheirStub(nn.Module):
    """Stands for XLNetModel: returns `hidden` whatever the inputs."""

    def __init__(self, hidden):
        super().__init__()
        self.hidden = hidden

    def forward(self, *args, **kwargs):
        return XLNetModelOutput(last_hidden_state=self.hidden)


class OurStub(nn.Module):
    """Stands for our backbone: returns `hidden`; the summary token is the last, as XLNet's."""

    summary_position = -1

    def __init__(self, hidden):
        super().__init__()
        self.hidden = hidden

    def forward(self, *args, **kwargs):
        return BaseModelOutput(last_hidden_state=self.hidden)


def copy_heads(theirs: nn.Module, ours: nn.Module, pairs: dict[str, str]) -> None:
    """theirs' head tensors into ours: pairs maps our key prefix -> their key prefix."""
    their_state = theirs.state_dict()
    with torch.no_grad():
        for key, param in ours.named_parameters():
            for mine, their in pairs.items():
                if key.startswith(mine):
                    param.copy_(their_state[their + key[len(mine):]])
                    break


def head_grads(model: nn.Module, pairs: dict[str, str]) -> dict[str, torch.Tensor]:
    """Gradients of the head parameters, keyed by our names."""
    return {k: p.grad for k, p in model.named_parameters() if k.startswith(tuple(pairs))}


def assert_grads_match(ours, theirs, pairs, hidden_ours, hidden_theirs) -> float:
    their_params = dict(theirs.named_parameters())
    worst = 0.0
    for key, grad in head_grads(ours, pairs).items():
        mine = next(m for m in pairs if key.startswith(m))
        expected = their_params[pairs[mine] + key[len(mine):]].grad
        torch.testing.assert_close(grad, expected, atol=ATOL, rtol=0, msg=key)
        worst = max(worst, (grad - expected).abs().max().item())
    torch.testing.assert_close(hidden_ours.grad, hidden_theirs.grad, atol=ATOL, rtol=0)
    return max(worst, (hidden_ours.grad - hidden_theirs.grad).abs().max().item())


def hidden_pair(seed: int = 0, shape=(B, T, H)) -> tuple[torch.Tensor, torch.Tensor]:
    h = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
    return h.clone().requires_grad_(), h.clone().requires_grad_()


def p_mask() -> torch.Tensor:
    """1 = cannot be in an answer: a question at the front, padding, and the cls token last."""
    mask = torch.zeros(B, T)
    mask[:, :3] = 1
    mask[1, T - 4:] = 1
    mask[:, -1] = 1
    return mask


def beam_pair():
    theirs = randomize(transformers.XLNetForQuestionAnswering(xlnet_config()), seed=3).eval()
    ours = EncoderForBeamQuestionAnswering(our_config()).eval()
    copy_heads(theirs, ours, {p: p for p in HEAD_PREFIXES})
    return ours, theirs


LABELS = dict(start_positions=torch.tensor([4, 10, 5]), end_positions=torch.tensor([6, 10, 5]),
              is_impossible=torch.tensor([0.0, 1.0, 0.0]), cls_index=torch.tensor([10, 10, 9]))


def test_beam_head_loss_and_gradients_match_transformers():
    ours, theirs = beam_pair()
    mine, their = hidden_pair()
    theirs.transformer = TheirStub(their)
    loss = ours.head_outputs(mine, p_mask=p_mask(), **LABELS).loss
    expected = theirs(input_ids=torch.zeros(B, T, dtype=torch.long), p_mask=p_mask(),
                      **{k: v.clone() for k, v in LABELS.items()}).loss
    torch.testing.assert_close(loss, expected, atol=ATOL, rtol=0)
    loss.backward()
    expected.backward()
    worst = assert_grads_match(ours, theirs, {p: p for p in HEAD_PREFIXES}, mine, their)
    assert worst < ATOL
    # The answer class was trained: its gradient is not zero.
    assert ours.answer_class.dense_1.weight.grad.abs().sum() > 0


def test_beam_head_inference_matches_transformers():
    ours, theirs = beam_pair()
    mine, their = hidden_pair(seed=1)
    theirs.transformer = TheirStub(their)
    with torch.no_grad():
        a = ours.head_outputs(mine, p_mask=p_mask(), cls_index=LABELS["cls_index"])
        b = theirs(input_ids=torch.zeros(B, T, dtype=torch.long), p_mask=p_mask(),
                   cls_index=LABELS["cls_index"])
    torch.testing.assert_close(a.start_top_index, b.start_top_index)
    # Ours are log-probabilities, transformers' the probabilities under the same name.
    torch.testing.assert_close(a.start_top_log_probs.exp(), b.start_top_log_probs,
                               atol=ATOL, rtol=0)
    # Ours start-major (B, S, E), transformers' end-major (B, E, S).
    end_index = b.end_top_index.view(B, E, S).transpose(1, 2)
    end_probs = b.end_top_log_probs.view(B, E, S).transpose(1, 2)
    torch.testing.assert_close(a.end_top_index.view(B, S, E), end_index)
    torch.testing.assert_close(a.end_top_log_probs.view(B, S, E).exp(), end_probs,
                               atol=ATOL, rtol=0)
    torch.testing.assert_close(a.cls_logits, b.cls_logits, atol=ATOL, rtol=0)
    # Without cls_index both read the last token: XLNet's <cls>, the backbone's summary
    # position.
    ours.backbone = OurStub(mine)
    with torch.no_grad():
        default = ours.head_outputs(mine, p_mask=p_mask()).cls_logits
        expected = theirs(input_ids=torch.zeros(B, T, dtype=torch.long), p_mask=p_mask())
    torch.testing.assert_close(default, expected.cls_logits, atol=ATOL, rtol=0)
    assert not torch.allclose(default, a.cls_logits)  # row 2 read token 9 above
    # No masked token starts or ends a span in the beam (enough tokens are unmasked).
    masked = p_mask().bool()
    assert not masked.gather(1, a.start_top_index).any()
    assert not masked.gather(1, a.end_top_index).any()


def test_beam_end_entries_belong_to_their_start():
    """Entry i * E + j of the end beam is an end scored from the i-th start: recomputing the
    end log-probabilities from that start gives the same numbers."""
    ours, _ = beam_pair()
    hidden = torch.randn(B, T, H, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        out = ours.head_outputs(hidden)
        for i in range(S):
            start = hidden.gather(1, out.start_top_index[:, i, None, None].expand(B, 1, H))
            log_probs = ours.end_logits(hidden, start).squeeze(1).log_softmax(-1)  # (B, T)
            index = out.end_top_index[:, i * E:(i + 1) * E]
            torch.testing.assert_close(log_probs.gather(1, index),
                                       out.end_top_log_probs[:, i * E:(i + 1) * E])
            # and the start's own log-probability is the log-softmax of the start logits
            start_lp = ours.start_logits(hidden).log_softmax(-1).gather(
                1, out.start_top_index[:, i, None]).squeeze(1)
            torch.testing.assert_close(start_lp, out.start_top_log_probs[:, i])


# ---- the summary classifier and multiple choice ----------------------------------------------

SUMMARY_PAIRS = {"sequence_summary.summary.": "sequence_summary.summary.",
                 "classifier.": "logits_proj."}


def stub_backbones(ours, theirs, mine, their) -> None:
    ours.backbone = OurStub(mine)
    theirs.transformer = TheirStub(their)


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_summary_classifier_matches_xlnet_for_sequence_classification(train):
    """classifier_head "summary" = XLNet's sequence summary + logits_proj, in eval mode and
    in training (the same dropout mask from the same seed: one dropout in both)."""
    theirs = randomize(transformers.XLNetForSequenceClassification(
        xlnet_config(num_labels=3)), seed=4).train(train)
    ours = litebert.EncoderForSequenceClassification(our_config(num_labels=3)).train(train)
    assert set(k for k, _ in ours.named_parameters() if not k.startswith("backbone.")) == {
        "sequence_summary.summary.weight", "sequence_summary.summary.bias",
        "classifier.weight", "classifier.bias"}
    copy_heads(theirs, ours, SUMMARY_PAIRS)
    mine, their = hidden_pair(seed=5)
    stub_backbones(ours, theirs, mine, their)
    labels, ids = torch.tensor([0, 2, 1]), torch.zeros(B, T, dtype=torch.long)
    torch.manual_seed(7)
    a = ours(input_ids=ids, labels=labels)
    torch.manual_seed(7)
    b = theirs(input_ids=ids, labels=labels)
    torch.testing.assert_close(a.logits, b.logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(a.loss, b.loss, atol=ATOL, rtol=0)
    a.loss.backward()
    b.loss.backward()
    assert assert_grads_match(ours, theirs, SUMMARY_PAIRS, mine, their) < ATOL
    if not train:  # the last token is the one read: another last token, other logits
        assert not torch.allclose(
            a.logits, ours.classifier(ours.sequence_summary(mine[:, 0]).detach()))


def test_multiple_choice_without_a_pooler_matches_xlnet_for_multiple_choice():
    C = 2
    theirs = randomize(transformers.XLNetForMultipleChoice(xlnet_config()), seed=6).eval()
    ours = litebert.EncoderForMultipleChoice(our_config()).eval()
    copy_heads(theirs, ours, SUMMARY_PAIRS)
    mine, their = hidden_pair(seed=8, shape=(B * C, T, H))
    stub_backbones(ours, theirs, mine, their)
    labels, ids = torch.tensor([1, 0, 1]), torch.zeros(B, C, T, dtype=torch.long)
    a, b = ours(input_ids=ids, labels=labels), theirs(input_ids=ids, labels=labels)
    torch.testing.assert_close(a.logits, b.logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(a.loss, b.loss, atol=ATOL, rtol=0)
    a.loss.backward()
    b.loss.backward()
    assert assert_grads_match(ours, theirs, SUMMARY_PAIRS, mine, their) < ATOL


# ---- on the ALBERT backbone --------------------------------------------------------------

def test_beam_head_trains_and_predicts_on_the_albert_backbone(tmp_path):
    config = small_config(extra=dict(start_n_top=S, end_n_top=E))
    model = randomize(EncoderForBeamQuestionAnswering(config))
    x = make_inputs()
    loss = model(**x, **LABELS).loss
    assert math.isfinite(loss.item())
    loss.backward()
    assert model.backbone.embeddings.word_embeddings.weight.grad.abs().sum() > 0
    model.eval()
    with torch.no_grad():
        out = model(**x)
    assert out.start_top_index.shape == (B, S) and out.end_top_index.shape == (B, S * E)
    assert out.cls_logits.shape == (B,)
    # Without cls_index the answer class reads the backbone's summary token ([CLS], first).
    with torch.no_grad():
        first = model(**x, cls_index=torch.zeros(B, dtype=torch.long)).cls_logits
    torch.testing.assert_close(out.cls_logits, first)
    model.save_pretrained(tmp_path)
    again = AutoModelForBeamQuestionAnswering.from_pretrained(tmp_path, strict=True).eval()
    assert type(again) is EncoderForBeamQuestionAnswering
    assert (again.start_n_top, again.end_n_top) == (S, E)
    with torch.no_grad():
        torch.testing.assert_close(again(**x).cls_logits, out.cls_logits)


def test_beam_defaults_to_five_by_five_and_is_cut_to_the_sequence():
    model = EncoderForBeamQuestionAnswering(small_config()).eval()
    assert (model.start_n_top, model.end_n_top) == (5, 5)
    x = {k: v[:, :4] for k, v in make_inputs().items()}  # 4 tokens: a beam of 4 x 4
    with torch.no_grad():
        out = model(**x)
    assert out.start_top_index.shape == (B, 4) and out.end_top_index.shape == (B, 16)


@pytest.mark.parametrize("value", [0, -1, 2.5, "5", True])
def test_a_bad_beam_size_is_a_config_error(value):
    with pytest.raises(ConfigError, match="start_n_top.*whole number >= 1"):
        EncoderForBeamQuestionAnswering(small_config(extra=dict(start_n_top=value)))
