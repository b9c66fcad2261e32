"""Every ModernBERT head against transformers' class, both ways through the family adapter:
ModernBertForMaskedLM, ForSequenceClassification (cls and mean pooling), ForTokenClassification,
ForQuestionAnswering and ForMultipleChoice. Random weights (every tensor, heads included),
fp32, SDPA, windows shorter than the rows, padded rows; logits at the real tokens, the loss,
and the gradient of every weight within 1e-5 (relative to the largest value)."""

from __future__ import annotations

import pytest
import torch
import transformers

import litebert
from litebert.families import FAMILIES
from tests.helpers.models import randomize
from tests.helpers.modernbert import ATOL, B, T, hf_modern_config, inputs

ADAPTER = FAMILIES["modernbert"]
HEADS = ["EncoderForMaskedLM", "EncoderForSequenceClassification", "EncoderForTokenClassification",
         "EncoderForQuestionAnswering", "EncoderForMultipleChoice"]


def labels_for(head: str, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    if head == "EncoderForMaskedLM":
        labels = torch.randint(3, 99, (B, T), generator=g).masked_fill(mask == 0, -100)
        labels[:, ::3] = -100  # some tokens unmasked
        return {"labels": labels}
    if head == "EncoderForTokenClassification":
        return {"labels": torch.randint(0, 3, (B, T), generator=g).masked_fill(mask == 0, -100)}
    if head == "EncoderForQuestionAnswering":
        return {"start_positions": torch.tensor([1, 4, 2]),
                "end_positions": torch.tensor([3, 9, 5])}
    if head == "EncoderForMultipleChoice":
        return {"labels": torch.tensor([1])}
    return {"labels": torch.tensor([0, 2, 1])}


def batch_for(head: str) -> dict[str, torch.Tensor]:
    """(B, T) rows; multiple choice: one question with B choices (1, B, T)."""
    data = inputs()
    if head == "EncoderForQuestionAnswering":  # full rows: the span softmax reads every
        # position, and a padding query's window may hold no real key (each library fills
        # it differently), so padding would change the loss, not the model
        data["attention_mask"] = torch.ones_like(data["attention_mask"])
    if head == "EncoderForMultipleChoice":
        data = {k: v[None] for k, v in data.items()}
    return {**data, **labels_for(head, inputs()["attention_mask"])}


def pair(tmp_path, head: str, direction: str, pooling: str):
    hf_config = hf_modern_config(every=2, window=6, impl="sdpa")
    hf_config.num_labels = 2 if head == "EncoderForQuestionAnswering" else 3  # start, end
    hf_config.classifier_pooling = pooling
    their_class = getattr(transformers, ADAPTER.transformers_class(head))
    if direction == "transformers -> litebert":
        theirs = randomize(their_class(hf_config))
        theirs.save_pretrained(tmp_path)
        ours = getattr(litebert, head).from_pretrained(tmp_path, strict=True)
    else:
        theirs = their_class(hf_config)
        theirs.save_pretrained(tmp_path / "shape")  # our config from theirs, then our weights
        config = litebert.ModelConfig.from_json_file(tmp_path / "shape" / "config.json")
        ours = randomize(getattr(litebert, head)(config))
        ours.save_pretrained(tmp_path / "ours")
        theirs = their_class.from_pretrained(tmp_path / "ours", attn_implementation="sdpa")
    return ours.eval(), theirs.eval()


def compare(ours, theirs, head: str) -> None:
    data = batch_for(head)
    mine, other = ours(**data), theirs(**data)
    names = ("start_logits", "end_logits") if head == "EncoderForQuestionAnswering" \
        else ("logits",)
    mask = data["attention_mask"].bool()
    for name in names:
        a, b = getattr(mine, name), getattr(other, name)
        if head in ("EncoderForTokenClassification", "EncoderForQuestionAnswering"):
            a, b = a[mask], b[mask]  # a padding query's window may hold no real key
        elif head == "EncoderForMaskedLM":
            a, b = a, b[data["labels"] != -100]  # ours: logits at the masked tokens only
        torch.testing.assert_close(a, b, atol=ATOL * max(1.0, float(b.abs().max())), rtol=0)
    torch.testing.assert_close(mine.loss, other.loss, atol=ATOL, rtol=ATOL)
    mine.loss.backward()
    other.loss.backward()
    theirs_grads = {k: p.grad for k, p in theirs.named_parameters()}
    for key, p in ours.named_parameters():
        if p.grad is None:
            continue
        reference = theirs_grads[ADAPTER.external_key(key, ours.config)]
        assert reference is not None, key
        scale = max(1.0, float(reference.abs().max()))
        torch.testing.assert_close(p.grad, reference, atol=ATOL * scale, rtol=0, msg=key)


@pytest.mark.parametrize("direction", ["transformers -> litebert", "litebert -> transformers"])
@pytest.mark.parametrize("head", HEADS)
def test_heads_match_transformers(tmp_path, head, direction):
    ours, theirs = pair(tmp_path, head, direction, "cls")
    compare(ours, theirs, head)


@pytest.mark.parametrize("head", ["EncoderForSequenceClassification", "EncoderForMultipleChoice"])
def test_mean_pooling_matches_transformers(tmp_path, head):
    ours, theirs = pair(tmp_path, head, "transformers -> litebert", "mean")
    assert ours.config.classifier_pooling == "mean"
    compare(ours, theirs, head)


def test_a_classifier_from_a_masked_lm_takes_its_head_as_transformers_does(tmp_path):
    hf_config = hf_modern_config(every=2, window=6, impl="sdpa")
    randomize(transformers.ModernBertForMaskedLM(hf_config)).save_pretrained(tmp_path)
    theirs = transformers.ModernBertForSequenceClassification.from_pretrained(tmp_path)
    ours = litebert.EncoderForSequenceClassification.from_pretrained(tmp_path)
    for name in ("head.dense.weight", "head.norm.weight"):
        torch.testing.assert_close(ours.state_dict()[name], theirs.state_dict()[name])
