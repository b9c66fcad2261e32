"""Activation checkpointing per layer position (model/checkpointing.py): with dropout on, a
checkpointed training step gives the loss and gradients of the plain one, for ALBERT (one
shared layer), a BERT-like encoder (sharing none), ModernBERT (one stream and two) and XLNet;
each position is recomputed once in the backward pass; evaluation and no-grad forwards never
recompute; a compiled (aot_eager) checkpointed model gives the eager losses.

What is asserted: the losses equal exactly and every gradient within 1e-6 absolute (the
recomputation restores the RNG state, so dropout draws the same masks, and re-runs the same
kernels on the same inputs)."""

from __future__ import annotations

import copy

import pytest
import torch

import litebert
from litebert.config import ConfigError
from litebert.model import EncoderForMaskedLM, EncoderForPermutationLM
from litebert.model.backbone import backbone_of
from litebert.model.checkpointing import set_activation_checkpointing
from litebert.train.compiling import BACKEND_ENV, compile_in_place
from tests.helpers.family_configs import xlnet_config
from tests.helpers.models import make_inputs, mlm_labels, small_config
from tests.helpers.modernbert import modern_config

DROPOUT = dict(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
GRAD_ATOL = 1e-6


def masked_lm_case(config: litebert.ModelConfig):
    inputs = make_inputs()
    model = EncoderForMaskedLM(config)
    return model, {**inputs, "labels": mlm_labels(inputs)}


def two_stream_case(config: litebert.ModelConfig):
    """A permutation LM step: perm_mask (B, T, T) and 3 targets per row, labels (B, 3)."""
    g = torch.Generator().manual_seed(5)
    B, T, P = 2, 10, 3
    ids = torch.randint(5, config.vocab_size, (B, T), generator=g)
    rank = torch.stack([torch.randperm(T, generator=g) for _ in range(B)])
    targets = torch.stack([torch.randperm(T, generator=g)[:P] for _ in range(B)])  # (B, P)
    inputs = dict(input_ids=ids, perm_mask=(rank[:, None, :] >= rank[:, :, None]).float(),
                  target_positions=targets, labels=ids.gather(1, targets))
    return EncoderForPermutationLM(config), inputs


CASES = {
    "albert, one shared layer": lambda: masked_lm_case(small_config(num_hidden_groups=1,
                                                                    **DROPOUT)),
    "bert-like, sharing none": lambda: masked_lm_case(small_config(
        sharing="none", num_hidden_groups=4, **DROPOUT)),
    "modernbert": lambda: masked_lm_case(modern_config(
        embedding_dropout=0.1, mlp_dropout=0.1, attention_probs_dropout_prob=0.1)),
    "modernbert two streams": lambda: two_stream_case(modern_config(
        query_stream=True, embedding_dropout=0.1, mlp_dropout=0.1,
        attention_probs_dropout_prob=0.1)),
    "xlnet": lambda: two_stream_case(xlnet_config(**DROPOUT)),
}


class Calls:
    """Forward calls of every attention module of a model's encoder."""

    def __init__(self, model: torch.nn.Module):
        self.count = 0
        self.positions = len(backbone_of(model).encoder.attention_index)
        for module in backbone_of(model).encoder.attentions:
            module.register_forward_hook(self.seen)

    def seen(self, *_) -> None:
        self.count += 1


def step(model: torch.nn.Module, inputs: dict, seed: int = 7):
    """One training forward and backward from RNG seed `seed`: (loss, {name: grad})."""
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    loss = model(**inputs).loss
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters()
                           if p.grad is not None}


@pytest.mark.parametrize("case", sorted(CASES))
def test_checkpointed_step_gives_the_plain_loss_and_gradients(case):
    plain, inputs = CASES[case]()
    plain.train()
    checkpointed = copy.deepcopy(plain)
    assert set_activation_checkpointing(checkpointed) == 1
    calls = Calls(checkpointed)
    loss, grads = step(plain, inputs)
    loss_ckpt, grads_ckpt = step(checkpointed, inputs)
    assert calls.count == 2 * calls.positions  # each position recomputed once
    assert torch.equal(loss_ckpt, loss)
    assert grads_ckpt.keys() == grads.keys() and len(grads) > 10
    for name, grad in grads.items():
        torch.testing.assert_close(grads_ckpt[name], grad, atol=GRAD_ATOL, rtol=0.0,
                                   msg=lambda m, n=name: f"{n}: {m}")
    assert plain.state_dict().keys() == checkpointed.state_dict().keys()  # nothing saved


def test_evaluation_and_no_grad_never_recompute():
    model, inputs = CASES["albert, one shared layer"]()
    set_activation_checkpointing(model)
    calls = Calls(model)
    model.eval()
    step(model, inputs)  # gradients, but eval mode
    assert calls.count == calls.positions
    model.train()
    with torch.no_grad():
        model(**inputs)
    assert calls.count == 2 * calls.positions
    set_activation_checkpointing(model, False)
    step(model, inputs)  # off again
    assert calls.count == 3 * calls.positions


def test_electras_generator_encoder_is_set_too():
    """A module holding several encoders (ELECTRA's pre-training module: the generator runs
    an encoder of its own on the discriminator's embeddings) has each of them set."""
    holder = torch.nn.ModuleDict({
        "discriminator": litebert.AlbertModel(small_config()),
        "generator": litebert.AlbertModel.build_encoder(small_config(hidden_size=16))})
    assert set_activation_checkpointing(holder) == 2
    assert all(m.checkpoint_positions for m in (holder["discriminator"].encoder,
                                                holder["generator"]))


def test_a_model_without_a_checkpointing_encoder_is_a_clear_error():
    with pytest.raises(ConfigError, match="LayerCheckpointing"):
        set_activation_checkpointing(torch.nn.Linear(2, 2))
    assert set_activation_checkpointing(torch.nn.Linear(2, 2), False) == 0  # off: nothing


COMPILED_CASES = {
    "albert, one shared layer": lambda: masked_lm_case(small_config(num_hidden_groups=1)),
    "modernbert two streams": lambda: two_stream_case(modern_config(query_stream=True)),
    "xlnet": lambda: two_stream_case(xlnet_config()),
}


@pytest.mark.parametrize("case", sorted(COMPILED_CASES))
def test_a_compiled_checkpointed_model_gives_the_eager_losses(case, monkeypatch):
    """Three SGD steps each: compiled (aot_eager, one full graph) with checkpointing against
    eager without, from the same weights; the losses within 1e-5 relative. Without dropout:
    a compiled graph may draw its dropout masks in another order than eager ops do, which
    is compiling's business, not checkpointing's (the eager tests above cover dropout)."""
    monkeypatch.setenv(BACKEND_ENV, "aot_eager")
    torch._dynamo.reset()
    eager, inputs = COMPILED_CASES[case]()
    compiled = copy.deepcopy(eager)
    set_activation_checkpointing(compiled)
    compile_in_place(compiled)
    losses = {}
    for name, model in (("eager", eager), ("compiled", compiled)):
        model.train()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        losses[name] = []
        for k in range(3):
            loss, _ = step(model, inputs, seed=k)
            optimizer.step()
            losses[name].append(float(loss))
    torch._dynamo.reset()
    assert losses["compiled"] == pytest.approx(losses["eager"], rel=1e-5)
    assert losses["eager"][2] != losses["eager"][0]  # the steps changed the weights
