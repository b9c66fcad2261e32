"""The MLM heads' static prediction slots against their labels path (the transformers-parity
path, tests/models/albert/test_parity.py)."""

from __future__ import annotations

import pytest
import torch

import litebert
from litebert.data.loader import prediction_slots
from tests.helpers.models import VOCAB, make_inputs, mlm_labels, randomize, small_config


@pytest.mark.parametrize("head", ["EncoderForPreTraining", "EncoderForMaskedLM"])
def test_the_slot_loss_equals_the_labels_loss(head):
    model = randomize(getattr(litebert, head)(small_config())).eval()
    x = make_inputs(batch=3, seq=11)
    labels = mlm_labels(x)  # (B, T), rows with different numbers of masked tokens
    used = (labels != -100).sum(-1)  # (B,)
    assert len(set(used.tolist())) > 1
    slots = prediction_slots(labels, int(used.max()) + 3)  # every row has unused slots
    with torch.no_grad():
        old = model(**x, labels=labels)
        new = model(**x, **slots)
        both = model(**x, labels=labels, **slots)  # a pre-training batch carries both
    loss = "mlm_loss" if head == "EncoderForPreTraining" else "loss"
    logits = "prediction_logits" if head == "EncoderForPreTraining" else "logits"
    torch.testing.assert_close(new[loss], old[loss], rtol=1e-6, atol=1e-6)
    # A batch with both, in a CPU's eager step: the labels path, bit for bit.
    torch.testing.assert_close(both[loss], old[loss], rtol=0, atol=0)
    assert new[logits].shape == (3, int(used.max()) + 3, VOCAB)  # (B, P, V), never (B, T, V)
    used_slots = slots["masked_weights"].bool()  # (B, P), row-major like labels != -100
    torch.testing.assert_close(new[logits][used_slots], old[logits], rtol=1e-5, atol=1e-5)
    if head == "EncoderForPreTraining":
        assert new.loss is not None and old.loss is not None
        torch.testing.assert_close(new.loss - new.mlm_loss, old.loss - old.mlm_loss)


def test_slots_without_a_used_one_give_a_zero_loss_and_without_ids_no_loss():
    model = randomize(litebert.EncoderForMaskedLM(small_config())).eval()
    x = make_inputs()
    slots = prediction_slots(mlm_labels(x), 8)
    with torch.no_grad():
        empty = model(**x, **{**slots, "masked_weights": torch.zeros(3, 8)})
        logits_only = model(**x, masked_positions=slots["masked_positions"])
    assert empty.loss.item() == 0.0
    assert logits_only.loss is None and logits_only.logits.shape == (3, 8, VOCAB)


def test_a_compiled_step_scores_the_slots_of_a_batch_with_both():
    """Where the step must keep one shape (compiled; CUDA alike), a batch carrying labels and
    slots is scored at its slots: (B, P, V) logits, the slot path's loss."""
    model = randomize(litebert.EncoderForPreTraining(small_config())).eval()
    x = make_inputs(batch=3, seq=11)
    labels = mlm_labels(x)
    slots = prediction_slots(labels, int((labels != -100).sum(-1).max()) + 2)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    with torch.no_grad():
        got = compiled(**x, labels=labels, **slots)
        slot_path = model(**x, **slots)
    assert got.prediction_logits.shape == slot_path.prediction_logits.shape
    assert got.prediction_logits.dim() == 3  # (B, P, V): the slots, not (N, V)
    torch.testing.assert_close(got.mlm_loss, slot_path.mlm_loss, rtol=1e-6, atol=1e-6)
