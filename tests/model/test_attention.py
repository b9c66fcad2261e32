"""Document attention for packed rows and unpadded attention for padded batches
(model/attention.py): each is the same function as running the pieces alone / padded."""

from __future__ import annotations

import pytest
import torch

import litebert
import litebert.model.attention as attention
from litebert.data.attention_layout import with_unpadded_rows
from litebert.model.attention import (
    Varlen,
    document_block_mask,
    document_layout,
    positions_in_documents,
    same_document,
)
from tests.conftest import VOCAB, make_inputs, mlm_labels, randomize, small_config

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

    monkeypatch.setattr(attention, "compiled_flex_attention", lambda: flex_attention)
    model = backbone()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 40, 16, generator=g)  # (B, T, E)
    documents = torch.tensor([[0] * 13 + [1] * 20 + [2] * 7, [0] * 30 + [-1] * 10])
    with torch.no_grad(), pytest.warns(UserWarning, match="without torch.compile"):
        flex = model.encoder(x, document_block_mask(documents))
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


@pytest.mark.parametrize("numbering", list(NUMBERINGS))
def test_unpadded_encoder_equals_the_padded_path(numbering):
    """The encoder on the real tokens only ((N,) document_ids from the collator) gives the
    padded path's hidden states at every real token, in every layer, and its pooler."""
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
    for w, h in zip(want.hidden_states, got.hidden_states, strict=True):
        torch.testing.assert_close(h[real], w[real], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.pooler_output, want.pooler_output, atol=1e-5, rtol=1e-5)


def test_unpadded_pretraining_losses_and_gradients_equal_the_padded_path():
    config = small_config()
    inputs = padded_batch()
    labels = mlm_labels(inputs)
    order = torch.tensor([0, 1, 1, 0])
    losses, grads = [], []
    for batch in (dict(inputs), with_unpadded_rows(dict(inputs))):
        torch.manual_seed(0)
        model = randomize(litebert.AlbertForPreTraining(config))
        out = model(**batch, labels=labels, sentence_order_label=order)
        out.loss.backward()
        losses.append(out.loss.detach())
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    torch.testing.assert_close(losses[1], losses[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(grads[1], grads[0], atol=1e-5, rtol=1e-4)


def test_unpadded_layout_for_varlen_and_its_fp32_fallback():
    """What the CUDA path hands FlashAttention's varlen kernel (offsets of each row, then of
    the filler), and that fp32, which it has no kernel for, falls back to the explicit mask
    with the same output."""
    inputs = padded_batch()
    ids = with_unpadded_rows(dict(inputs))["document_ids"]
    lengths = inputs["attention_mask"].sum(1)
    layout = document_layout(inputs["attention_mask"], ids, fused=True)
    assert isinstance(layout.mask, Varlen)
    offsets = [0, *lengths.cumsum(0).tolist(), len(ids)]
    assert layout.mask.cu_seqlens.tolist() == offsets
    assert layout.mask.cu_seqlens.dtype == torch.int32
    assert layout.mask.max_seqlen >= max(int(lengths.max()), len(ids) - int(lengths.sum()))
    model = backbone()
    reference = document_layout(inputs["attention_mask"], ids, fused=False)
    x = torch.randn(*inputs["input_ids"].shape, 16)
    with torch.no_grad():
        fused = model.encoder(layout.unpad(x), layout.mask)
        plain = model.encoder(reference.unpad(x), reference.mask)
    torch.testing.assert_close(fused, plain)


def test_unpadded_ids_need_the_attention_mask():
    with pytest.raises(ValueError, match="need the batch's attention_mask"):
        backbone()(torch.ones(2, 8, dtype=torch.long), document_ids=torch.zeros(12).long())
