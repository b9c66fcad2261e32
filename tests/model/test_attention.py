"""Document attention for packed rows and unpadded attention for padded batches
(model/attention.py): each is the same function as running the pieces alone / padded. The
unpadded rows' varlen path runs here through a reference op (tests/helpers/varlen_reference.py);
without varlen they take the padded layout, and no mask over the whole batch."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest
import torch
from torch.nn.attention import SDPBackend
from torch.overrides import TorchFunctionMode

import litebert
import litebert.model.attention as attention
from litebert.data.attention_layout import with_unpadded_rows
from litebert.model.attention import (
    SDPA_PRIORITY,
    Varlen,
    document_block_mask,
    key_padding_mask,
    positions_in_documents,
    same_document,
    unpadded_layout,
    varlen_blocker,
)
from litebert.models.albert.model import AlbertEncoder
from tests.helpers.models import VOCAB, make_inputs, mlm_labels, randomize, small_config
from tests.helpers.modernbert import inputs as modern_inputs
from tests.helpers.modernbert import modern_config
from tests.helpers.varlen_reference import CALLS, use_reference_varlen

NUMBERINGS = {"from_zero": {}, "after_pad": dict(position_numbering="after_pad",
                                                 pad_token_id=1, max_position_embeddings=66)}


def backbone(**overrides) -> litebert.AlbertModel:
    return randomize(litebert.AlbertModel(small_config(**overrides))).eval()


def two_documents(first: int = 9, second: int = 6, seed: int = 3):
    """A packed row cls d1 sep d2 sep: ids (1, T), document ids (1, T), and each document's
    ids alone (d1 with the row's cls, d2 with its sep)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, VOCAB, (1, first + second + 3), generator=g)
    ids[0, 0], ids[0, first + 1], ids[0, -1] = 2, 3, 3  # cls, separators
    documents = torch.tensor([[0] * (first + 2) + [1] * (second + 1)])
    return ids, documents, (ids[:, :first + 2], ids[:, first + 2:])


@pytest.mark.parametrize("numbering", list(NUMBERINGS))
def test_a_packed_document_is_encoded_as_if_alone(numbering):
    """Block-diagonal attention with positions restarting per document: each document's
    hidden states equal those of the document run by itself (the model's own positions)."""
    model = backbone(**NUMBERINGS[numbering])
    ids, documents, alone = two_documents()
    with torch.no_grad():
        packed = model(ids, document_ids=documents).last_hidden_state  # (1, T, H)
        separate = torch.cat([model(piece).last_hidden_state for piece in alone], dim=1)
        crossing = model(ids).last_hidden_state
    torch.testing.assert_close(packed, separate, atol=1e-5, rtol=1e-5)
    assert (crossing[0, 11:] - separate[0, 11:]).abs().max() > 1e-3  # full attention differs


def test_padding_in_a_document_batch_is_its_own_document():
    """Rows of different length: padding (document_ids filled from attention_mask) changes
    nothing at the real tokens."""
    model = backbone()
    ids, documents, _ = two_documents()
    padded = torch.cat([ids, torch.zeros(1, 5, dtype=torch.long)], dim=1)
    mask = (torch.arange(padded.shape[1]) < ids.shape[1]).long()[None]
    with torch.no_grad():
        want = model(ids, document_ids=documents).last_hidden_state
        got = model(padded, mask, document_ids=torch.cat(
            [documents, torch.zeros(1, 5, dtype=torch.long)], dim=1)).last_hidden_state
    torch.testing.assert_close(got[:, :ids.shape[1]], want, atol=1e-5, rtol=1e-5)


def test_flex_block_mask_equals_the_explicit_mask(monkeypatch):
    """The CUDA path (FlexAttention's BlockMask; here flex run eagerly on the CPU) and the
    CPU reference (an explicit boolean mask through SDPA) give the same encoder output."""
    from torch.nn.attention.flex_attention import flex_attention

    calls = []

    def counted(*args, **kwargs):  # flex run eagerly, counted: the BlockMask path ran
        calls.append(kwargs["block_mask"])
        return flex_attention(*args, **kwargs)

    monkeypatch.setattr(attention, "compiled_flex_attention", lambda: counted)
    model = backbone()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 40, 16, generator=g)  # (B, T, E)
    documents = torch.tensor([[0] * 13 + [1] * 20 + [2] * 7, [0] * 30 + [-1] * 10])
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # flex's "without torch.compile" (once per process)
        flex = model.encoder(x, document_block_mask(documents))
    assert calls  # every layer position went through FlexAttention
    with torch.no_grad():
        reference = model.encoder(x, same_document(documents))
    torch.testing.assert_close(flex, reference, atol=1e-5, rtol=1e-5)


def test_positions_restart_at_each_document():
    documents = torch.tensor([[0, 0, 0, 1, 1, 2, -1, -1], [0, 0, 0, 0, 0, 0, 0, 1]])
    assert positions_in_documents(documents).tolist() == [[0, 1, 2, 0, 1, 0, 0, 1],
                                                          [0, 1, 2, 3, 4, 5, 6, 0]]


def padded_batch(batch: int = 4, seq: int = 24):
    """make_inputs' padding, and rows of very different lengths."""
    inputs = make_inputs(batch=batch, seq=seq)
    inputs["attention_mask"][3, 5:] = 0
    inputs["input_ids"][inputs["attention_mask"] == 0] = 0
    return inputs


@pytest.fixture
def reference_varlen(monkeypatch) -> list:
    """Unpadded rows take varlen on this CPU, through the reference op; its calls."""
    use_reference_varlen(monkeypatch)
    CALLS.clear()
    return CALLS


@pytest.mark.parametrize("numbering", list(NUMBERINGS))
def test_unpadded_encoder_equals_the_padded_path(numbering, reference_varlen):
    """The encoder on the real tokens only ((N,) document_ids from the collator, varlen's
    segments) gives the padded path's hidden states at every real token, in every layer,
    and its pooler."""
    model = litebert.AlbertModel(small_config(**NUMBERINGS[numbering]), add_pooling_layer=True)
    model = randomize(model).eval()
    inputs = padded_batch()
    if numbering == "after_pad":
        inputs["input_ids"][inputs["attention_mask"] == 0] = 1
    unpadded = with_unpadded_rows(dict(inputs))
    real = inputs["attention_mask"].bool()
    assert unpadded["document_ids"].shape[0] < real.numel()  # fewer tokens than B x T
    with torch.no_grad():
        want = model(**inputs, output_hidden_states=True)
        got = model(**unpadded, output_hidden_states=True)
    assert len(reference_varlen) == model.config.num_hidden_layers  # one varlen per layer
    for w, h in zip(want.hidden_states, got.hidden_states, strict=True):
        torch.testing.assert_close(h[real], w[real], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.pooler_output, want.pooler_output, atol=1e-5, rtol=1e-5)


def test_unpadded_pretraining_losses_and_gradients_equal_the_padded_path(reference_varlen):
    config = small_config()
    inputs = padded_batch()
    labels = mlm_labels(inputs)
    order = torch.tensor([0, 1, 1, 0])
    losses, grads = [], []
    for batch in (dict(inputs), with_unpadded_rows(dict(inputs))):
        torch.manual_seed(0)
        model = randomize(litebert.EncoderForPreTraining(config))
        out = model(**batch, labels=labels, sentence_order_label=order)
        out.loss.backward()
        losses.append(out.loss.detach())
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert len(reference_varlen) == 2 * config.num_hidden_layers  # forward and backward
    torch.testing.assert_close(losses[1], losses[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(grads[1], grads[0], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize(("rows", "width"), [(4, 24), (8, 64), (32, 128), (256, 128),
                                             (64, 512)])
def test_varlen_segments_are_one_to_t_tokens_a_fixed_count(rows, width):
    """For many batches of one (B, T): cu_seqlens int32 of B + 2 offsets from 0 to N, the
    rows' lengths then one filler segment of 1 to T tokens; max_seqlen T."""
    rng = np.random.default_rng(rows * width)
    for _ in range(50):
        lengths = rng.integers(1, width + 1, rows)
        lengths[rng.integers(rows)] = rng.integers(1, width)  # a padding position at least
        mask = (torch.arange(width)[None] < torch.as_tensor(lengths)[:, None]).long()
        ids = with_unpadded_rows({"input_ids": mask, "attention_mask": mask})["document_ids"]
        layout = unpadded_layout(mask, len(ids))
        assert isinstance(layout.mask, Varlen) and layout.mask.max_seqlen == width
        cu = layout.mask.cu_seqlens
        assert cu.dtype == torch.int32 and cu.shape == (rows + 2,)
        sizes = cu.diff()
        assert cu[0] == 0 and cu[-1] == len(ids)
        assert sizes[:rows].tolist() == lengths.tolist()
        assert ((sizes >= 1) & (sizes <= width)).all(), sizes[rows:]


def test_unpadded_rows_without_varlen_take_the_padded_layout(caplog):
    """On this CPU (no varlen): the key-padding (B, 1, 1, T) mask and no unpadding, so nothing
    of (N, N); the padded path's output exactly; the reason logged once."""
    attention.log_padded_fallback.cache_clear()
    model = backbone()
    inputs = padded_batch()
    unpadded = with_unpadded_rows(dict(inputs))
    B, T = inputs["input_ids"].shape
    with torch.no_grad(), caplog.at_level(logging.INFO, logger="litebert"):
        x, layout = model.encode_with(model.encoder, **unpadded)
        model.encode_with(model.encoder, **unpadded)
        want = model(**inputs).last_hidden_state
    assert layout.unpadding is None and layout.documents is None
    assert layout.mask.shape == (B, 1, 1, T) and layout.mask.dtype == torch.bool
    assert torch.equal(x, want)
    said = [r.getMessage() for r in caplog.records if "instead of varlen" in r.getMessage()]
    assert len(said) == 1 and "varlen runs on CUDA only" in said[0], said


def test_varlen_runs_on_cuda_in_half_precision_without_attention_dropout(monkeypatch):
    bf16, fp32 = torch.bfloat16, torch.float32
    assert varlen_blocker("cuda", False, bf16) is None
    assert varlen_blocker("cuda", False, torch.float16) is None
    assert "CUDA only" in varlen_blocker("cpu", False, bf16)
    assert "attention dropout" in varlen_blocker("cuda", True, bf16)
    assert "no torch.float32 kernel" in varlen_blocker("cuda", False, fp32)
    # fp32 weights under CUDA autocast in bf16 (its matmuls give varlen bf16 q, k, v)
    monkeypatch.setattr(torch, "is_autocast_enabled", lambda device: device == "cuda")
    monkeypatch.setattr(torch, "get_autocast_dtype", lambda device: bf16)
    assert varlen_blocker("cuda", False, fp32) is None
    monkeypatch.setattr(attention, "varlen_attn", None)
    assert "has no torch.nn.attention.varlen" in varlen_blocker("cuda", False, bf16)


def test_each_encoder_decides_by_its_own_attention_dropout(reference_varlen):
    """ELECTRA runs its generator's encoder through the discriminator's encode_with: an
    encoder with attention dropout takes the padded layout in training, the other varlen."""
    model = backbone().train()
    dropping = AlbertEncoder(small_config(attention_probs_dropout_prob=0.1)).train()
    batch = with_unpadded_rows(padded_batch())
    _, own = model.encode_with(model.encoder, **batch)
    _, other = model.encode_with(dropping, **batch)
    assert isinstance(own.mask, Varlen) and own.unpadding is not None
    assert other.unpadding is None and other.mask.shape == (4, 1, 1, 24)
    dropping.eval()
    assert isinstance(model.encode_with(dropping, **batch)[1].mask, Varlen)  # no dropout now


def test_unpadded_ids_need_the_attention_mask():
    with pytest.raises(ValueError, match="need the batch's attention_mask"):
        backbone()(torch.ones(2, 8, dtype=torch.long), document_ids=torch.zeros(12).long())


# ---- the padded path's mask and kernels ------------------------------------------------------

class SdpaCalls(TorchFunctionMode):
    """Records each scaled_dot_product_attention call: its attn_mask, and SDPA's kernel
    order at that moment (torch's, or SDPA_PRIORITY's under attend's sdpa_kernel)."""

    def __init__(self):
        super().__init__()
        self.masks: list = []
        self.orders: list[list[int]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.functional.scaled_dot_product_attention:
            self.masks.append(kwargs.get("attn_mask", args[3] if len(args) > 3 else None))
            self.orders.append(torch._C._get_sdp_priority_order())
        return func(*args, **kwargs)


def sdpa_masks_of_graph(model, inputs) -> list:
    """The attn_mask of every SDPA call in the FX graph dynamo traces of model(**inputs)
    (fullgraph: the sdpa_kernel context included), as example tensors or None."""
    masks = []

    def capture(gm, example_inputs):
        for node in gm.graph.nodes:
            if node.target is torch.nn.functional.scaled_dot_product_attention:
                mask = node.kwargs.get("attn_mask")
                masks.append(None if mask is None else mask.meta["example_value"])
        return gm.forward

    torch._dynamo.reset()
    torch.compile(model, backend=capture, fullgraph=True)(**inputs)
    return masks


def padded_models():
    albert = backbone(attention_probs_dropout_prob=0.0)
    modern = litebert.ModernBertModel(modern_config(attention_probs_dropout_prob=0.0))
    modern = randomize(modern).eval()
    return {"albert": (albert, padded_batch()), "modernbert": (modern, modern_inputs())}


@pytest.mark.parametrize("family", ["albert", "modernbert"])
def test_no_float_mask_reaches_attention_on_a_padded_batch(family):
    """With attention dropout 0, a padded batch gives SDPA a bool mask (the key-padding
    (B, 1, 1, T), or ModernBERT's window over it), never an additive float one that rules
    fused kernels out: eagerly and in the graph torch.compile traces."""
    model, inputs = padded_models()[family]
    calls = SdpaCalls()
    with torch.no_grad(), calls:
        model(**inputs)
    with torch.no_grad():
        traced = sdpa_masks_of_graph(model, inputs)
    for masks in (calls.masks, traced):
        assert len(masks) == model.config.num_hidden_layers
        assert all(mask is not None and mask.dtype == torch.bool for mask in masks), \
            [None if mask is None else mask.dtype for mask in masks]
    B, T = inputs["input_ids"].shape
    assert calls.masks[0].shape in ((B, 1, 1, T), (B, 1, T, T))


def test_sdpa_runs_under_the_kernel_order_switches_respected():
    """attend() puts cuDNN, then FlashAttention, the memory-efficient kernel and math first
    (this torch takes an order), and leaves out a kernel switched off; torch's own order
    comes back after the call."""
    assert attention.ORDERS_KERNELS  # torch 2.13 here: sdpa_kernel and dynamo take the order
    model, inputs = padded_models()["albert"]
    before = torch._C._get_sdp_priority_order()
    calls = SdpaCalls()
    with torch.no_grad(), calls:
        model(**inputs)
    order = [int(kernel.value) for kernel in attention.sdpa_kernel_order()]
    assert order[:4] == [int(getattr(SDPBackend, name).value) for name, _ in SDPA_PRIORITY]
    assert all(seen[:4] == order for seen in calls.orders) and before[:4] != order
    assert torch._C._get_sdp_priority_order() == before
    torch.backends.cuda.enable_cudnn_sdp(False)
    try:
        assert SDPBackend.CUDNN_ATTENTION not in attention.sdpa_kernel_order()
    finally:
        torch.backends.cuda.enable_cudnn_sdp(True)


def test_key_padding_mask_keeps_real_keys_and_every_key_of_an_empty_row():
    mask = torch.tensor([[1, 1, 0], [0, 0, 0], [1, 1, 1]])
    keep = key_padding_mask(mask)
    assert keep.dtype == torch.bool and keep.shape == (3, 1, 1, 3)
    assert keep[:, 0, 0].tolist() == [[True, True, False], [True] * 3, [True] * 3]
    assert key_padding_mask(None) is None
    q = torch.randn(3, 2, 3, 8)
    out = torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=keep)
    assert torch.isfinite(out).all()
