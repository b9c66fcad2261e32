"""A reference for torch.nn.attention.varlen on the CPU, so tests prove the unpadded path (the
layout, the compiled graph with a dynamic N) where FlashAttention cannot run.

`varlen_attention` is a torch.library custom op, as torch's own varlen_attn is: eagerly it
runs SDPA segment by segment (reading cu_seqlens on the host, which only a test may do), and
its fake implementation returns an empty (N, nh, hd), so dynamo and AOT autograd trace it as
one opaque op of symbolic N. Its backward is a second such op (softmax attention's gradients,
segment by segment, written out). Each eager call checks what the real kernel is promised: int32
offsets from 0 to N, every segment 1 to max_seqlen tokens.

`use_reference_varlen(monkeypatch)` makes the model take varlen on the CPU with this op.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import litebert.model.attention as attention

# Every call the eager op saw: (segment lengths, max_seqlen), for tests to read.
CALLS: list[tuple[list[int], int]] = []


def check_segments(cu_seqlens: torch.Tensor, tokens: int, max_seqlen: int) -> list[int]:
    """The segment lengths of cu_seqlens, after checking the kernel's promises."""
    assert cu_seqlens.dtype == torch.int32, cu_seqlens.dtype
    offsets = cu_seqlens.tolist()
    lengths = [b - a for a, b in zip(offsets, offsets[1:], strict=False)]
    assert offsets[0] == 0 and offsets[-1] == tokens, (offsets, tokens)
    assert all(1 <= n <= max_seqlen for n in lengths), (lengths, max_seqlen)
    CALLS.append((lengths, max_seqlen))
    return lengths


def segment_attention(q, k, v, lengths: list[int]) -> torch.Tensor:
    """(N, nh, hd) -> (N, nh, hd): SDPA within each segment of `lengths`."""
    pieces = [F.scaled_dot_product_attention(*(t.transpose(0, 1)[None] for t in part))[0]
              for part in zip(*(t.split(lengths) for t in (q, k, v)), strict=True)]
    return torch.cat(pieces, dim=1).transpose(0, 1)  # (nh, N, hd) -> (N, nh, hd)


@torch.library.custom_op("litebert_tests::varlen_attention", mutates_args=())
def varlen_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     cu_seqlens: torch.Tensor, max_seqlen: int) -> torch.Tensor:
    lengths = check_segments(cu_seqlens, q.shape[0], max_seqlen)
    return segment_attention(q, k, v, lengths).contiguous()


@varlen_attention.register_fake
def _(q, k, v, cu_seqlens, max_seqlen):
    return torch.empty_like(q)


def segment_gradients(grad, q, k, v) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Softmax attention's backward for one segment, (L, nh, hd) each, written out (autograd
    does not run inside a custom op): P = softmax(q k^T s), dS = P (dP - rowsum(dP P))."""
    q, k, v, grad = (t.transpose(0, 1) for t in (q, k, v, grad))  # (nh, L, hd)
    scale = q.shape[-1] ** -0.5
    probs = torch.softmax(q @ k.transpose(1, 2) * scale, dim=-1)  # (nh, L, L)
    dprobs = grad @ v.transpose(1, 2)
    dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdim=True))
    dq, dk, dv = dscores @ k * scale, dscores.transpose(1, 2) @ q * scale, \
        probs.transpose(1, 2) @ grad
    return dq.transpose(0, 1), dk.transpose(0, 1), dv.transpose(0, 1)


@torch.library.custom_op("litebert_tests::varlen_attention_backward", mutates_args=())
def varlen_attention_backward(grad: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                              v: torch.Tensor, cu_seqlens: torch.Tensor, max_seqlen: int
                              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    lengths = check_segments(cu_seqlens, q.shape[0], max_seqlen)
    parts = [segment_gradients(*part)
             for part in zip(*(t.split(lengths) for t in (grad, q, k, v)), strict=True)]
    dq, dk, dv = (torch.cat(column).contiguous() for column in zip(*parts, strict=True))
    return dq, dk, dv


@varlen_attention_backward.register_fake
def _(grad, q, k, v, cu_seqlens, max_seqlen):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _setup(ctx, inputs, output) -> None:
    q, k, v, cu_seqlens, max_seqlen = inputs
    ctx.save_for_backward(q, k, v, cu_seqlens)
    ctx.max_seqlen = max_seqlen


def _backward(ctx, grad):
    q, k, v, cu_seqlens = ctx.saved_tensors
    dq, dk, dv = varlen_attention_backward(grad, q, k, v, cu_seqlens, ctx.max_seqlen)
    return dq, dk, dv, None, None


varlen_attention.register_autograd(_backward, setup_context=_setup)


def reference_varlen_attn(q, k, v, cu_seq_q, cu_seq_k, max_q: int, max_k: int):
    """torch.nn.attention.varlen.varlen_attn's positional signature, self-attention only."""
    assert cu_seq_q is cu_seq_k and max_q == max_k
    return varlen_attention(q, k, v, cu_seq_q, max_q)


def use_reference_varlen(monkeypatch) -> None:
    """The model takes varlen on the CPU in fp32 too, through the reference; attention
    dropout in training still refuses it, as on CUDA."""
    blocker = attention.varlen_blocker

    def on_cuda_in_bf16(device_type: str, attention_dropout: bool, dtype: torch.dtype):
        return blocker("cuda", attention_dropout, torch.bfloat16)

    monkeypatch.setattr(attention, "varlen_attn", reference_varlen_attn)
    monkeypatch.setattr(attention, "varlen_blocker", on_cuda_in_bf16)


def windowed_varlen_reference(q, k, v, cu_seq_q, cu_seq_k, max_q, max_k, *,
                              window_size=(-1, -1)):
    """varlen_attn on the CPU, forward only: SDPA per segment, keys i - left .. i + right
    (FlashAttention's inclusive bounds) when window_size is given."""
    offsets = cu_seq_q.tolist()
    pieces = []
    for a, b in zip(offsets, offsets[1:], strict=False):
        band = None
        if window_size != (-1, -1):
            i = torch.arange(b - a)
            band = ((i[None] >= i[:, None] - window_size[0])
                    & (i[None] <= i[:, None] + window_size[1]))  # (L, L)
        segment = (t[a:b].transpose(0, 1) for t in (q, k, v))  # (nh, L, hd)
        pieces.append(F.scaled_dot_product_attention(*segment, attn_mask=band))
    return torch.cat(pieces, dim=1).transpose(0, 1)  # (N, nh, hd)
