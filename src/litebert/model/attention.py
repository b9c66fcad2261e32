"""Which keys each query may attend to, and the kernel that computes it.

A backbone builds one `Layout` per forward pass from the batch (litebert.data.attention_layout
says what the collator adds) and hands `layout.mask` to every attention layer, whose
`attend(q, k, v, mask, p)` picks the kernel from the mask's type:

    None                 every key (no padding): SDPA's unmasked fast path
    (B, 1, 1, T) bool    padding: the keys each row keeps (True = attend), SDPA (the default
                         path; models/albert/model.py)
    (B, 1, T, T) bool    documents on a CPU: an explicit mask, SDPA. The reference path:
                         flex_attention without torch.compile materialises the scores
                         anyway (and warns), so an explicit mask is as fast here
    BlockMask            documents on CUDA: FlexAttention skips the blocks where no query
                         and key share a document, padding included
    Varlen               unpadded rows: torch.nn.attention.varlen (FlashAttention's
                         variable-length kernel), no mask at all

With document_ids the positions restart at each document, so a document in a packed row is
numbered, and attended, exactly as it would be alone: the encoder's output for it equals the
output for that document run by itself (tests/model/test_attention.py). Unpadded rows keep
the padded path's positions (each row is a document that starts at position 0 anyway).

SDPA runs under SDPA_PRIORITY where that torch can take an order (torch.nn.attention's
sdpa_kernel with set_priority, eager and traced): cuDNN, FlashAttention, the memory-efficient
kernel, then the math path, each where torch's global switches leave it on. FlashAttention
takes no mask at all, so it runs the batches without padding; a padded batch's boolean mask
goes to cuDNN or the memory-efficient kernel, fused kernels that, unlike FlashAttention, read
a mask (on a CPU torch picks its own kernel). No mask here is a float: the one
additive mask left is XLNet's (models/xlnet/model.py), whose relative attention adds position and
segment scores by hand before its softmax and masks those sums.

FlexAttention and varlen have no attention dropout: when it is on in training, documents take
the explicit (B, 1, T, T) mask on CUDA too (same results, per-row quadratic memory).

Unpadded rows run on varlen or not at all: where it cannot run (not CUDA, attention dropout
in training, fp32 hidden states without half-precision autocast, a torch without
torch.nn.attention.varlen) the batch takes the padded layout, the key-padding (B, 1, 1, T)
mask of a batch without document_ids, and the reason is logged once. A mask over all the
unpadded tokens would be (N, N): at 32 x 512 that is 16k x 16k scores per head.

Sliding windows (ModernBERT's local layers): `windowed(mask, window, T, device)` turns any
of the masks above into the same kind limited to keys within window // 2 positions of the
query, on either side, bounds included (transformers' rule: local_attention 128 sees
|i - j| <= 64, 129 keys). None becomes the (T, T) band; the padding mask and a document mask
are and-ed with it into (B, 1, T, T), each query keeping itself (a padding query far from
every real token would otherwise have no key left: NaN on older torch), a BlockMask is
rebuilt with the window's mask_mod, and Varlen carries the kernel's window_size (64, 64),
which FlashAttention reads as inclusive bounds too. In packed rows the window runs within
each document: positions there are offsets into it.
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch
import torch.nn.functional as F
from torch.backends import cuda as cuda_backends
from torch.nn.attention import SDPBackend, sdpa_kernel

# Absent from older torch (the package takes torch >= 2.4): unpadded rows then take the
# padded layout (varlen_blocker says so).
try:
    from torch.nn.attention.varlen import varlen_attn
except ImportError:
    varlen_attn = None  # type: ignore[assignment]
# FlexAttention came with torch 2.5: on 2.4, --attention document is refused before any mask
# is made, and no mask is ever a BlockMask.
try:
    from torch.nn.attention.flex_attention import (
        BlockMask,
        and_masks,
        create_block_mask,
        flex_attention,
    )
except ImportError:
    class BlockMask:  # type: ignore[no-redef]
        """Stands in on a torch without FlexAttention: nothing is one."""

# dynamo's form of sdpa_kernel (private, so guarded): whether it traces the order is
# sdpa_orders_kernels' question.
try:
    from torch._dynamo.variables.ctx_manager import SDPAKernelVariable
except ImportError:
    SDPAKernelVariable = None  # type: ignore[assignment,misc]

log = logging.getLogger("litebert")

# SDPA's kernels, fastest first on the GPUs people train on (torch's own order tries cuDNN
# last), each with the global switch that turns it off (which the order respects).
SDPA_PRIORITY = (("CUDNN_ATTENTION", "cudnn_sdp_enabled"),
                 ("FLASH_ATTENTION", "flash_sdp_enabled"),
                 ("EFFICIENT_ATTENTION", "mem_efficient_sdp_enabled"),
                 ("MATH", "math_sdp_enabled"))


def sdpa_orders_kernels() -> bool:
    """Whether this torch takes SDPA_PRIORITY as an order, eagerly and inside a compiled
    graph (dynamo's sdpa_kernel): the order arrived after torch 2.4; without it, torch's."""
    if "set_priority" not in inspect.signature(sdpa_kernel).parameters:
        return False
    return SDPAKernelVariable is not None and \
        "set_priority" in inspect.signature(SDPAKernelVariable.create).parameters


ORDERS_KERNELS = sdpa_orders_kernels()


@torch.compiler.assume_constant_result  # read once per trace: the switches of that moment
def sdpa_kernel_order() -> list:
    """SDPA_PRIORITY's kernels that this torch has and its switches leave on."""
    return [getattr(SDPBackend, kernel) for kernel, switch in SDPA_PRIORITY
            if hasattr(SDPBackend, kernel) and getattr(cuda_backends, switch, bool)()]


def key_padding_mask(attention_mask: torch.Tensor | None) -> torch.Tensor | None:
    """(B, T) 1 = token, 0 = pad -> (B, 1, 1, T) bool, True = attend: a mask SDPA's fused
    kernels read, where an additive float one keeps some out.

    None stays None (SDPA's unmasked fast path). Whether a batch is padded is the collator's
    decision, made on the host (it leaves the mask out when nothing is): testing the mask
    here would read it back from the device, a host sync in every forward. A row without a
    real token keeps every key, as no kernel agrees on a row with none (NaN or 0).
    """
    if attention_mask is None:
        return None
    keep = attention_mask != 0  # (B, T)
    keep = keep | ~keep.any(dim=1, keepdim=True)  # (B, T)
    return keep[:, None, None, :]

HALF = (torch.float16, torch.bfloat16)  # FlashAttention's dtypes


def positions_in_documents(document_ids: torch.Tensor) -> torch.Tensor:
    """(B, T) -> (B, T): each position's offset from the start of its document (a document
    is a run of equal ids), with no device sync."""
    B, T = document_ids.shape
    t = torch.arange(T, device=document_ids.device).expand(B, T)
    starts = torch.ones_like(document_ids, dtype=torch.bool)  # (B, T): a document starts here
    starts[:, 1:] = document_ids[:, 1:] != document_ids[:, :-1]
    first = torch.where(starts, t, 0).cummax(dim=1).values  # (B, T): its document's start
    return t - first


def same_document(document_ids: torch.Tensor) -> torch.Tensor:
    """(B, T) -> (B, 1, T, T) bool: query i may attend to key j (the reference mask)."""
    return (document_ids[:, None, :, None] == document_ids[:, None, None, :])


@dataclass(frozen=True)
class Varlen:
    """Unpadded rows for FlashAttention's varlen kernel: cu_seqlens (B + F + 1,) int32 offsets
    of the sequences of the unpadded row (the B original rows, then F filler segments), each
    1 to max_seqlen = T tokens long."""

    cu_seqlens: torch.Tensor  # (B + F + 1,)
    max_seqlen: int
    window: int | None = None  # keys seen on each side of a query (bounds included), or all


@dataclass(frozen=True)
class Unpadding:
    """Where the N tokens of the unpadded row come from: `index` (N,) into the flattened
    (B x T) batch, the real tokens in row-major order, then as many distinct padding
    positions as there are filler slots (so `pad` puts every slot back somewhere of its own)."""

    index: torch.Tensor  # (N,)
    rows: int
    width: int

    def unpad(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, C) -> (1, N, C)
        return x.flatten(0, 1)[self.index][None]

    def pad(self, x: torch.Tensor) -> torch.Tensor:  # (1, N, C) -> (B, T, C)
        out = x.new_zeros(self.rows * self.width, x.shape[-1])
        return out.index_copy(0, self.index, x[0]).view(self.rows, self.width, -1)


@dataclass(frozen=True)
class Layout:
    """One forward pass's attention: `mask` for attend(), `documents` (B, T) when positions
    restart per document (padding at -1), `unpadding` when the encoder runs on the real
    tokens only."""

    mask: Any = None
    documents: torch.Tensor | None = None
    unpadding: Unpadding | None = None

    def unpad(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.unpadding is None else self.unpadding.unpad(x)

    def pad(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.unpadding is None else self.unpadding.pad(x)


def document_layout(attention_mask: torch.Tensor | None, document_ids: torch.Tensor,
                    fused: bool) -> Layout:
    """The Layout of a batch with documents, (B, T) ids; `fused` allows FlexAttention (CUDA,
    no attention dropout), else an explicit mask. (A batch without document_ids has padding
    at most: key_padding_mask; unpadded rows: unpadded_layout.)"""
    if attention_mask is not None:  # padding is a document of its own
        document_ids = document_ids.masked_fill(attention_mask == 0, -1)
    mask = document_block_mask(document_ids) if fused else same_document(document_ids)
    return Layout(mask=mask, documents=document_ids)


def unpadded_layout(attention_mask: torch.Tensor, tokens: int) -> Layout:
    """Unpadded rows for varlen: N = `tokens` (the (N,) document_ids' length, the collator's
    count) gathered without a device sync, real ones first (a stable sort of the padding
    flags). Nothing here depends on N's value, so a compiled graph takes N as a symbol."""
    B, T = attention_mask.shape
    padding = (attention_mask.flatten() == 0).to(torch.uint8)  # (B*T,)
    index = torch.argsort(padding, stable=True)[:tokens]  # (N,): real tokens, then padding
    unpadding = Unpadding(index=index, rows=B, width=T)
    lengths = attention_mask.sum(dim=1, dtype=torch.int32)  # (B,)
    ends = lengths.cumsum(0, dtype=torch.int32)  # (B,)
    # the filler, 1 to T slots (the collator's rule), is one segment: it ends at N
    cu_seqlens = torch.cat([ends.new_zeros(1), ends, ends.new_full((1,), tokens)])  # (B + 2,)
    return Layout(mask=Varlen(cu_seqlens, T), unpadding=unpadding)


def varlen_blocker(device_type: str, attention_dropout: bool, dtype: torch.dtype) -> str | None:
    """Why unpadded rows cannot run on varlen here, or None when they can: CUDA, no attention
    dropout in training, half precision (the hidden states' dtype, or CUDA autocast's)."""
    if varlen_attn is None:
        return f"torch {torch.__version__} has no torch.nn.attention.varlen"
    if device_type != "cuda":
        return f"varlen runs on CUDA only, the model is on {device_type}"
    if attention_dropout:
        return "attention dropout is on in training and varlen has none"
    autocast = torch.is_autocast_enabled("cuda") and torch.get_autocast_dtype("cuda") in HALF
    if dtype not in HALF and not autocast:
        return f"FlashAttention has no {dtype} kernel (train in bf16 or fp16)"
    return None


@torch.compiler.assume_constant_result  # dynamo runs it while tracing: a constant, logged once
def varlen_runs(device_type: str, attention_dropout: bool, dtype: torch.dtype) -> bool:
    """Whether unpadded rows take varlen; when not, the padded layout, and the reason logged
    once per reason."""
    reason = varlen_blocker(device_type, attention_dropout, dtype)
    if reason is not None:
        log_padded_fallback(reason)
    return reason is None


@cache
def log_padded_fallback(reason: str) -> None:
    log.info("attention unpadded: the padded layout (a per-row mask) instead of varlen, as "
             "%s", reason)


def document_block_mask(document_ids: torch.Tensor):
    """FlexAttention's BlockMask: query and key in the same document (B, T)."""

    def same(b, h, q, k):
        return document_ids[b, q] == document_ids[b, k]

    B, T = document_ids.shape
    return create_block_mask(same, B, None, T, T, device=document_ids.device)


def window_band(length: int, window: int, device: torch.device | None = None) -> torch.Tensor:
    """(T, T) bool: query i may attend to key j, |i - j| <= window // 2 (the sliding window
    of `window` keys of ModernBERT's local_attention, half on each side, plus the query)."""
    t = torch.arange(length, device=device)
    return (t[:, None] - t[None, :]).abs() <= window // 2


def window_mask_mod(window: int):
    """FlexAttention's mask_mod of window_band; and-ed with a document mask_mod, the window
    runs within documents."""
    reach = window // 2

    def near(b, h, q, k):
        return (q - k).abs() <= reach

    return near


def windowed(mask: Any, window: int, length: int, device: torch.device) -> Any:
    """`mask` (any attend() takes, for rows of `length` T on `device`) limited to the
    sliding window."""
    if isinstance(mask, Varlen):  # FlashAttention's (left, right) bounds are inclusive
        return Varlen(mask.cu_seqlens, mask.max_seqlen, window // 2)
    if isinstance(mask, BlockMask):
        B, _, T, _ = mask.shape
        near = and_masks(mask.mask_mod, window_mask_mod(window))
        return create_block_mask(near, B, None, T, T, device=mask.kv_num_blocks.device)
    band = window_band(length, window, device)  # (T, T)
    if mask is None:
        return band
    # padding (B, 1, 1, T) or documents (B, 1, T, T) -> (B, 1, T, T), with the query itself
    # (a document query sees itself already), so that a padding query far from every real
    # token keeps one key (an empty row is NaN on older torch)
    return (mask & band) | torch.eye(length, dtype=torch.bool, device=device)


@cache
def compiled_flex_attention():
    """flex_attention compiled once: only compiled does it run as a fused kernel (inside a
    compiled model the outer graph inlines it)."""
    return torch.compile(flex_attention, dynamic=False)


def attend(q, k, v, mask, dropout_p: float) -> torch.Tensor:
    """Attention of q, k, v (B, nh, T, hd) under `mask` (see the module docstring)."""
    if isinstance(mask, Varlen):
        return varlen(q, k, v, mask)
    if not isinstance(mask, torch.Tensor | None):  # a BlockMask
        return compiled_flex_attention()(q, k, v, block_mask=mask)
    if not ORDERS_KERNELS:  # torch's own order
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
    with sdpa_kernel(sdpa_kernel_order(), set_priority=True):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)


def varlen(q, k, v, mask: Varlen) -> torch.Tensor:
    """q, k, v (1, nh, N, hd) -> (1, nh, N, hd) through torch's varlen FlashAttention."""
    assert varlen_attn is not None  # varlen_runs said so before the layout was made
    q, k, v = (t[0].transpose(0, 1) for t in (q, k, v))  # (N, nh, hd)
    if mask.window is None:  # no window_size argument: torch's first varlen_attn has none
        out = varlen_attn(q, k, v, mask.cu_seqlens, mask.cu_seqlens, mask.max_seqlen,
                          mask.max_seqlen)
    else:
        out = varlen_attn(q, k, v, mask.cu_seqlens, mask.cu_seqlens, mask.max_seqlen,
                          mask.max_seqlen, window_size=(mask.window, mask.window))
    assert isinstance(out, torch.Tensor)
    return out.transpose(0, 1)[None]
