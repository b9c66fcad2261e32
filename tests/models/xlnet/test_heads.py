"""Every XLNet task head against transformers' class, whole models (backbone + head), randomly
initialised, dropout 0, left-padded batches in XLNet's layout, both directions (transformers
saves and we load, we save and transformers loads): outputs, loss and the gradient of every
parameter within 1e-5 (fp32). The beam head's outputs differ by design (model/beam_qa.py):
ours are log-probabilities and start-major, converted here before comparing."""

from __future__ import annotations

import pytest
import torch
import transformers

import litebert
from litebert.families import FAMILIES
from litebert.model import EncoderForBeamQuestionAnswering
from tests.helpers.family_configs import hf_xlnet_config
from tests.helpers.models import randomize
from tests.helpers.xlnet import CASES, B, inputs

ATOL = 1e-5
XLNET = FAMILIES["xlnet"]
CLASSES = {**{name: getattr(litebert, name) for name in (
    "EncoderForSequenceClassification", "EncoderForTokenClassification",
    "EncoderForMultipleChoice", "EncoderForQuestionAnswering")},
    "EncoderForBeamQuestionAnswering": EncoderForBeamQuestionAnswering}


def batch(head: str) -> dict[str, torch.Tensor]:
    """Inputs and labels for `head` (B = 4 rows): left padding (rows 1 and 2), types 0 / 1 /
    2, pad 3."""
    x = inputs(CASES["left padding"])
    T = x["input_ids"].shape[1]
    if head == "EncoderForSequenceClassification":
        x["labels"] = torch.tensor([0, 2, 1, 1])
    elif head == "EncoderForTokenClassification":
        labels = torch.randint(0, 3, (B, T), generator=torch.Generator().manual_seed(3))
        x["labels"] = labels.masked_fill(x["attention_mask"] == 0, -100)
    elif head == "EncoderForMultipleChoice":
        other = inputs(CASES["left padding"], seed=1)
        x = {k: torch.stack([x[k], other[k]], dim=1) for k in x}  # (B, C, T)
        x["labels"] = torch.tensor([1, 0, 1, 0])
    elif head == "EncoderForQuestionAnswering":
        x.update(start_positions=torch.tensor([4, 6, T - 1, 2]),
                 end_positions=torch.tensor([7, 6, T - 1, 5]))
    else:  # the beam head: row 2 impossible (start = end = <cls>, the last token)
        p_mask = (x["attention_mask"] == 0).float()  # >= 5 open tokens per row: no ties
        p_mask[3, 0] = 1
        x.update(start_positions=torch.tensor([4, 6, T - 1, 2]),
                 end_positions=torch.tensor([7, 6, T - 1, 5]),
                 is_impossible=torch.tensor([0.0, 0.0, 1.0, 0.0]),
                 cls_index=torch.full((B,), T - 1), p_mask=p_mask)
    return x


HEADS = {  # ours -> (transformers' class, num_labels, the output compared)
    "EncoderForSequenceClassification": ("XLNetForSequenceClassification", 3, "logits"),
    "EncoderForTokenClassification": ("XLNetForTokenClassification", 3, "logits"),
    "EncoderForMultipleChoice": ("XLNetForMultipleChoice", 1, "logits"),
    "EncoderForQuestionAnswering": ("XLNetForQuestionAnsweringSimple", 2, "start_logits"),
    "EncoderForBeamQuestionAnswering": ("XLNetForQuestionAnswering", 2, None),
}


def pair(head: str, direction: str, tmp_path):
    """(ours, theirs) with the same weights: one randomised and saved, the other loading."""
    hf_name, labels, _ = HEADS[head]
    if direction == "theirs -> ours":
        theirs = randomize(getattr(transformers, hf_name)(hf_xlnet_config(labels)))
        theirs.save_pretrained(tmp_path)
        ours = CLASSES[head].from_pretrained(tmp_path, strict=True)
    else:
        config = litebert.ModelConfig.from_dict(hf_xlnet_config(labels).to_dict())
        ours = randomize(CLASSES[head](config))
        ours.save_pretrained(tmp_path)
        theirs = getattr(transformers, hf_name).from_pretrained(tmp_path)
    return ours.train(), theirs.train()  # dropout is 0: train mode is deterministic


def their_grads(ours, theirs) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(their name, our gradient in their layout, their gradient) for every parameter."""
    mine = {name: p.grad for name, p in ours.named_parameters()}
    mapped = XLNET.to_file(mine, ours.config)
    theirs_by_name = dict(theirs.named_parameters())
    assert set(mapped) == set(theirs_by_name)
    return [(name, mapped[name], theirs_by_name[name].grad) for name in sorted(mapped)]


@pytest.mark.parametrize("direction", ["theirs -> ours", "ours -> theirs"])
@pytest.mark.parametrize("head", list(HEADS))
def test_head_matches_transformers_outputs_loss_and_gradients(head, direction, tmp_path):
    ours, theirs = pair(head, direction, tmp_path)
    x = batch(head)
    a, b = ours(**x), theirs(**x, use_mems=False)
    field = HEADS[head][2]
    if field is not None:
        torch.testing.assert_close(a[field], b[field], atol=ATOL, rtol=0)
    torch.testing.assert_close(a.loss, b.loss, atol=ATOL, rtol=0)
    a.loss.backward()
    b.loss.backward()
    worst = 0.0
    unused = []
    for name, mine, their in their_grads(ours, theirs):
        assert (mine is None) == (their is None), name
        if mine is None:
            unused.append(name)
            continue
        torch.testing.assert_close(mine, their, atol=ATOL, rtol=0, msg=name)
        worst = max(worst, (mine - their).abs().max().item())
    assert worst < ATOL
    assert unused == ["transformer.mask_emb"]  # the query stream's input: no PLM here


@pytest.mark.parametrize("direction", ["theirs -> ours", "ours -> theirs"])
def test_beam_head_inference_matches_transformers(direction, tmp_path):
    """The beam on a whole model: transformers' probabilities are our exp(log-probs), its
    end entries end-major where ours are start-major."""
    ours, theirs = pair("EncoderForBeamQuestionAnswering", direction, tmp_path)
    x = {k: v for k, v in batch("beam").items()
         if k not in ("start_positions", "end_positions", "is_impossible")}
    with torch.no_grad():
        a, b = ours.eval()(**x), theirs.eval()(**x, use_mems=False)
    S, E = theirs.start_n_top, theirs.end_n_top
    torch.testing.assert_close(a.start_top_index, b.start_top_index)
    torch.testing.assert_close(a.start_top_log_probs.exp(), b.start_top_log_probs,
                               atol=ATOL, rtol=0)
    end_index = b.end_top_index.view(B, E, S).transpose(1, 2)
    end_probs = b.end_top_log_probs.view(B, E, S).transpose(1, 2)
    torch.testing.assert_close(a.end_top_index.view(B, S, E), end_index)
    torch.testing.assert_close(a.end_top_log_probs.view(B, S, E).exp(), end_probs,
                               atol=ATOL, rtol=0)
    torch.testing.assert_close(a.cls_logits, b.cls_logits, atol=ATOL, rtol=0)


@pytest.mark.parametrize("head", list(HEADS))
def test_heads_keep_no_memories_whatever_mem_len(head):
    """A pre-training config keeps mem_len; fine-tuning heads still ask the backbone for no
    memories (before, the backbone built and kept them at every step)."""
    config = litebert.ModelConfig.from_dict(hf_xlnet_config(HEADS[head][1], mem_len=8)
                                             .to_dict())
    assert config.backbone_config.mem_len == 8
    model = CLASSES[head](config)
    seen = []
    model.backbone.register_forward_hook(lambda module, args, out: seen.append(out.mems))
    x = {k: v for k, v in batch(head).items() if k != "labels"}
    with torch.no_grad():
        model.eval()(**x)
    assert seen == [None]
