"""Helpers for parity tests against transformers: inputs with each head's labels, and
assertions that outputs, losses and gradients agree (fp32, eval mode, padded batches)."""

from __future__ import annotations

import torch

from litebert.families import FamilyAdapter
from litebert.model.hub import canonical_state
from tests.helpers.models import make_inputs, mlm_labels

ATOL = 1e-5
OUTPUT_PAIRS = {  # litebert field -> transformers field
    "last_hidden_state": "last_hidden_state", "pooler_output": "pooler_output",
    "prediction_logits": "prediction_logits", "sop_logits": "sop_logits",
    "logits": "logits", "start_logits": "start_logits", "end_logits": "end_logits",
}
_DETECTION = ("AlbertForReplacedTokenDetection", "ElectraForPreTraining")


def labels_for(head: str) -> int:
    """transformers sizes its SOP and span heads by num_labels: they need 2."""
    return 2 if head.endswith(("PreTraining", "QuestionAnswering")) else 3


Inputs = dict[str, torch.Tensor]


def labelled_inputs(head: str, num_labels: int, inputs: Inputs | None = None) -> Inputs:
    """Inputs (with padding; `make_inputs()` unless given) plus the labels each head's loss
    takes."""
    x = make_inputs() if inputs is None else {k: v.clone() for k, v in inputs.items()}
    g = torch.Generator().manual_seed(5)
    B, T = x["input_ids"].shape
    if head in _DETECTION:
        x.update(labels=torch.randint(0, 2, (B, T), generator=g))
    elif head in ("AlbertForPreTraining", "BertForPreTraining"):
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


def _plain(x: Inputs) -> Inputs:
    return {k: v for k, v in x.items() if k in ("input_ids", "attention_mask", "token_type_ids")}


def assert_same_outputs(ours, theirs, head: str, num_labels: int,
                        inputs: Inputs | None = None) -> None:
    """Every output both models give, then the loss (when the head has one)."""
    ours.eval()
    theirs.eval()
    x = labelled_inputs(head, num_labels, inputs)
    with torch.no_grad():
        a, b = ours(**_plain(x)), theirs(**_plain(x))
        compared = 0
        for mine, their in OUTPUT_PAIRS.items():
            their = "seq_relationship_logits" if mine == "sop_logits" and "Bert" in \
                type(theirs).__name__ else their
            if getattr(a, mine, None) is None or getattr(b, their, None) is None:
                continue
            torch.testing.assert_close(a[mine], b[their], atol=ATOL, rtol=0, msg=mine)
            compared += 1
        assert compared >= 1
        if not head.endswith("Model"):
            la, lb_ = ours(**x).loss, theirs(**x).loss
            torch.testing.assert_close(la, lb_, atol=ATOL, rtol=1e-6)


def _training_loss(model, x: Inputs, head: str) -> torch.Tensor:
    """The head's loss; for a bare backbone a fixed random projection of its outputs (the
    pooled one too, where there is one)."""
    if not head.endswith("Model"):
        return model(**x).loss
    out = model(**_plain(x))
    g = torch.Generator().manual_seed(3)
    pooled = getattr(out, "pooler_output", None)  # ELECTRA's output has no such field
    outputs = [out.last_hidden_state] + ([pooled] if pooled is not None else [])
    return sum((y * torch.randn(y.shape, generator=g)).sum() for y in outputs)


def assert_same_gradients(ours, theirs, head: str, num_labels: int,
                          family: FamilyAdapter, inputs: Inputs | None = None) -> None:
    """The loss gradient of every parameter of ours equals transformers' for the same
    tensor (found through the family's key mapping); eval mode, so no dropout."""
    ours.eval()
    theirs.eval()
    x = labelled_inputs(head, num_labels, inputs)
    _training_loss(ours, x, head).backward()
    _training_loss(theirs, x, head).backward()
    their_grads = {n: p.grad for n, p in theirs.named_parameters()}
    ours_params = dict(ours.named_parameters())
    bare = not hasattr(ours, "backbone")
    for name in canonical_state(ours):
        their_name = family.external_key(name, ours.config)
        if bare:
            their_name = their_name.removeprefix(family.prefix)
        mine = ours_params[name.removeprefix("backbone.") if bare else name].grad
        ref = their_grads[their_name]
        assert mine is not None, f"no gradient for {name}"
        # Multiple choice adds one bias to every choice's score: a softmax over the choices
        # is blind to it, so its gradient is 0 up to rounding (zero or not, by chance).
        if not (head.endswith("MultipleChoice") and name == "classifier.bias"):
            assert bool(mine.abs().sum() > 0), f"zero gradient for {name}"
        # 1e-5 of the tensor's largest gradient (at least 1e-5): fp32 sums of many terms
        # differ in the last bits, so a fixed bound would test the size of the loss.
        scale = max(1.0, float(ref.abs().max()))
        torch.testing.assert_close(mine, ref, atol=ATOL * scale, rtol=0, msg=name)
