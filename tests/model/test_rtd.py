"""Replaced-token detection (ELECTRA's discriminator): shapes, the loss over real tokens,
and the head on any backbone."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import litebert
from litebert.model.rtd import detection_loss
from tests.helpers.family_configs import electra_config
from tests.helpers.models import make_inputs, randomize, small_config


def _labels(x, seed: int = 4) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 2, x["input_ids"].shape, generator=g)


def test_one_logit_per_token_and_no_pooler():
    model = randomize(litebert.EncoderForReplacedTokenDetection(electra_config())).eval()
    x = make_inputs()
    out = model(**x)
    assert out.logits.shape == x["input_ids"].shape and out.loss is None
    assert model.backbone.pooler is None
    assert sorted(n for n, _ in model.discriminator_predictions.named_parameters()) == [
        "dense.bias", "dense.weight", "dense_prediction.bias", "dense_prediction.weight"]


def test_loss_is_mean_bce_over_real_tokens_only():
    model = randomize(litebert.EncoderForReplacedTokenDetection(electra_config())).eval()
    x = make_inputs()
    labels = _labels(x)
    with torch.no_grad():
        out = model(**x, labels=labels)
        real = x["attention_mask"] == 1
        expected = F.binary_cross_entropy_with_logits(out.logits[real], labels[real].float())
        torch.testing.assert_close(out.loss, expected)
        # Labels at padding say nothing: flipping them changes nothing.
        flipped = torch.where(real, labels, 1 - labels)
        torch.testing.assert_close(model(**x, labels=flipped).loss, out.loss)
        # Flipping a real token's label does change it.
        changed = labels.clone()
        changed[0, 0] = 1 - changed[0, 0]
        assert not torch.allclose(model(**x, labels=changed).loss, out.loss)


def test_loss_without_a_mask_covers_every_token():
    logits = torch.tensor([[2.0, -1.0, 0.5]])
    labels = torch.tensor([[1, 0, 0]])
    by_hand = -(torch.log(torch.sigmoid(logits[0, 0])) + torch.log(1 - torch.sigmoid(
        logits[0, 1])) + torch.log(1 - torch.sigmoid(logits[0, 2]))) / 3
    torch.testing.assert_close(detection_loss(logits, labels), by_hand)
    mask = torch.tensor([[1, 1, 0]])
    torch.testing.assert_close(detection_loss(logits, labels, mask),
                               F.binary_cross_entropy_with_logits(logits[0, :2],
                                                                  labels[0, :2].float()))


def test_gradient_reaches_every_parameter():
    model = randomize(litebert.EncoderForReplacedTokenDetection(electra_config()))
    x = make_inputs()
    model(**x, labels=_labels(x)).loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


@pytest.mark.parametrize("config", [small_config(), small_config(sharing="attention")],
                         ids=["albert", "litebert"])
def test_on_an_albert_backbone_round_trips(tmp_path, config):
    model = randomize(litebert.EncoderForReplacedTokenDetection(config)).eval()
    model.save_pretrained(tmp_path)
    again = litebert.EncoderForReplacedTokenDetection.from_pretrained(tmp_path, strict=True)
    x = make_inputs()
    with torch.no_grad():
        torch.testing.assert_close(again.eval()(**x).logits, model(**x).logits)
