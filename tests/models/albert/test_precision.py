"""ALBERT under bf16 autocast: LayerNorm keeps the half dtype (a bf16 residual stream, fp32
statistics), and q/k/v are concatenated and cast once per forward, not once per layer
position. CPU autocast stands in for CUDA's: the same AutocastLayerNorm path runs on both."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

import litebert
from litebert.model.attention import key_padding_mask
from litebert.model.layers import AutocastLayerNorm
from tests.helpers.models import make_inputs, mlm_labels, randomize, small_config

BF16 = torch.bfloat16


def autocast():
    return torch.autocast("cpu", dtype=BF16)


def test_outside_autocast_it_is_nn_layer_norm_bit_for_bit():
    for bias in (True, False):
        ours, theirs = AutocastLayerNorm(32, eps=1e-12, bias=bias), torch.nn.LayerNorm(
            32, eps=1e-12, bias=bias)
        randomize(ours)
        theirs.load_state_dict(ours.state_dict())  # the same keys
        x = torch.randn(3, 5, 32)
        assert torch.equal(ours(x), theirs(x))
        with torch.autocast("cpu", dtype=torch.float32, enabled=False):
            assert torch.equal(ours(x), theirs(x))


def test_under_autocast_it_runs_in_bf16_with_fp32_statistics():
    """Rows of mean 64 and spread 4, an fp32 input: the output is bf16 (nn.LayerNorm's would
    be fp32) and equals the fp32 norm of the same bf16 input, rounded once to bf16, as the
    kernel keeps mean and variance in fp32."""
    norm = randomize(AutocastLayerNorm(64))
    x = (torch.randn(4, 64) * 4 + 64).to(BF16).float()  # bf16 values, fp32 dtype
    with autocast():
        y = norm(x)
    exact = F.layer_norm(x, (64,), norm.weight.to(BF16).float(), norm.bias.to(BF16).float(),
                         norm.eps)
    assert y.dtype == BF16
    torch.testing.assert_close(y.float(), exact, atol=1e-2, rtol=2 ** -7)  # bf16 rounding


def stream_dtypes(model, x) -> list[torch.dtype]:
    """The dtypes of the embeddings' output and of every attention and FFN output (the
    residual stream between sublayers), in one autocast forward."""
    seen: list[torch.dtype] = []
    modules = [model.embeddings, *model.encoder.attentions, *model.encoder.ffns]
    hooks = [m.register_forward_hook(lambda _m, _in, out: seen.append(out.dtype))
             for m in modules]
    with autocast():
        model(**x)
    for hook in hooks:
        hook.remove()
    return seen


def test_the_residual_stream_stays_bf16_between_layers():
    """E == H (no projection): with nn.LayerNorm, whose fp32 parameters make CPU autocast's
    norm of the fp32 embeddings fp32 (CUDA's fp32 policy makes every norm fp32), the stream
    is fp32 throughout; here every sublayer hands bf16 on."""
    config = small_config(embedding_size=32, num_hidden_layers=3,
                          embedding_projection="when_sizes_differ")
    model = litebert.AlbertModel(config).eval()
    assert model.encoder.embedding_hidden_mapping_in is None
    seen = stream_dtypes(model, make_inputs())
    assert seen == [BF16] * (1 + 2 * 3)  # embeddings, then attention and FFN at 3 positions


def fp32_layer_norm(self, x):
    """Autocast's fp32 policy for layer_norm (CUDA's): the norm and its output in fp32."""
    return F.layer_norm(x.float(), self.normalized_shape, self.weight, self.bias, self.eps)


def pretraining_losses(amp: bool, steps: int = 3) -> list[float]:
    """MLM + SOP losses of `steps` AdamW steps of a tiny model on one batch."""
    torch.manual_seed(0)
    model = litebert.EncoderForPreTraining(small_config(hidden_dropout_prob=0.0,
                                                        attention_probs_dropout_prob=0.0))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = make_inputs(batch=4, seq=16)
    labels, order = mlm_labels(x), torch.tensor([0, 1, 1, 0])
    losses = []
    for _ in range(steps):
        with torch.autocast("cpu", dtype=BF16, enabled=amp):
            loss = model(**x, labels=labels, sentence_order_label=order).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


# bf16 rounds to 8 bits; these losses (~5 nats) agree to about 1e-4 relative (printed).
LOSS_TOLERANCE = 2e-3


def test_pretraining_loss_keeps_to_the_fp32_norm_path_and_to_fp32(monkeypatch):
    bf16_stream = pretraining_losses(amp=True)
    fp32 = pretraining_losses(amp=False)
    monkeypatch.setattr(AutocastLayerNorm, "forward", fp32_layer_norm)
    fp32_norms = pretraining_losses(amp=True)
    print(f"bf16 stream {bf16_stream}\nfp32 norms  {fp32_norms}\nfp32        {fp32}")
    assert bf16_stream != fp32_norms  # the paths differ, and
    assert bf16_stream == pytest.approx(fp32_norms, rel=LOSS_TOLERANCE)  # agree within it
    assert bf16_stream == pytest.approx(fp32, rel=LOSS_TOLERANCE)
    assert bf16_stream[-1] < bf16_stream[0]  # and it trains


class CatCounter(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += func is torch.cat
        return func(*args, **(kwargs or {}))


def forward_cats(model, x, amp: bool) -> tuple[int, torch.Tensor]:
    with CatCounter() as counter, torch.autocast("cpu", dtype=BF16, enabled=amp):
        out = model(**x).last_hidden_state
    return counter.calls, out


def per_position_forward(model, x, amp: bool) -> torch.Tensor:
    """The encoder as each position concatenating its own q/k/v (qkv=None) would run it."""
    encoder = model.encoder
    with torch.autocast("cpu", dtype=BF16, enabled=amp):
        h = encoder.embedding_hidden_mapping_in(model.embeddings(x["input_ids"],
                                                                 x["token_type_ids"]))
        mask = key_padding_mask(x["attention_mask"])
        for a, f in zip(encoder.attention_index, encoder.ffn_index, strict=True):
            h = encoder.ffns[f](encoder.attentions[a](h, mask))
    return h


@pytest.mark.parametrize("amp", [False, True])
def test_qkv_is_concatenated_once_per_forward_for_every_position(amp):
    """One shared attention module at 4 positions: 2 cats (weights, biases), not 8; the
    output equals the per-position concatenation's exactly."""
    model = randomize(litebert.AlbertModel(small_config(num_hidden_layers=4))).eval()
    assert len(model.encoder.attentions) == 1 and len(model.encoder.attention_index) == 4
    x = make_inputs()
    cats, out = forward_cats(model, x, amp)
    assert cats == 2
    with torch.no_grad():
        assert torch.equal(out, per_position_forward(model, x, amp))


def test_unshared_attentions_concatenate_once_each():
    model = litebert.AlbertModel(small_config(num_hidden_layers=3, sharing="none")).eval()
    assert forward_cats(model, make_inputs(), amp=True)[0] == 2 * 3
