"""Layers and helpers that more than one backbone uses.

Generic pieces, shared by the ALBERT and XLNet backbones (and any other):

    activation          a hidden_act name -> the function
    AutocastLayerNorm   nn.LayerNorm that keeps autocast's half dtype (a bf16 residual stream;
                        ALBERT's and XLNet's post-LN layers)
    positions_after_pad RoBERTa's position ids
    sharing_tables      ALBERT's cross-layer sharing: which module each layer position uses
    encoder_depths      layer-wise lr decay depths of an encoder with those tables
    unrolled_source     unrolling: the shared module a layer position reads

ModernBERT's building blocks (Warner et al., 2024), each a plain module of sizes, not a config:

    layer_norm          LayerNorm without a bias
    GeGLU               Wi (H -> 2I) = [input | gate], act(input) * gate, Wo (I -> H)
    RotaryAttention     one Wqkv GEMM, RoPE on q and k (model/rope.py), attend(), Wo; and
                        `two_streams`: XLNet's query stream beside it (model/two_stream.py)
    PreNormAttention    x + attention(attn_norm(x)); the first layer's attn_norm is the identity
    PreNormMLP          x + GeGLU(mlp_norm(x))
    PreNormLayer        PreNormAttention then PreNormMLP: one ModernBERT encoder layer

Attention and MLP are separate residual blocks so that ALBERT's sharing tables can share one
half without the other (an encoder's `attentions` / `ffns` lists). Whether a layer attends
globally or through a sliding window is the position's business, not the module's: the encoder
hands each call its mask (model/attention.py's `windowed`) and its rotary table (that layer
type's theta), so one shared module can serve positions of both types. No linear layer or norm
here has a bias, as in ModernBERT (transformers' defaults attention_bias, mlp_bias and
norm_bias are all False).
"""

from __future__ import annotations

import re
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from litebert.config import ModelConfig
from litebert.model.attention import (
    Layout,
    attend,
    document_layout,
    key_padding_mask,
    unpadded_layout,
    varlen_runs,
)
from litebert.model.rope import apply_rope
from litebert.model.two_stream import QueryRows


def activation(name: str):
    """GELU "gelu_new" is the tanh approximation of the official code; "gelu" is exact erf."""
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return lambda x: F.gelu(x, approximate="tanh")  # one fused kernel, fused backward
    return {"gelu": F.gelu, "relu": F.relu, "silu": F.silu, "swish": F.silu,
            "tanh": torch.tanh}[name]


HALF_DTYPES = (torch.bfloat16, torch.float16)


def autocast_half_dtype(device_type: str) -> torch.dtype | None:
    """The half dtype autocast computes in on `device_type` now (bf16 or fp16), else None
    (autocast off, or on with another dtype)."""
    if not torch.is_autocast_enabled(device_type):
        return None
    dtype = torch.get_autocast_dtype(device_type)
    return dtype if dtype in HALF_DTYPES else None


class AutocastLayerNorm(nn.LayerNorm):
    """nn.LayerNorm (same parameters and state-dict keys) whose output keeps autocast's half
    dtype. CUDA autocast runs layer_norm in fp32, so a post-LN residual stream (ALBERT's)
    would be fp32 between all its sublayers: twice the bytes moved for every residual add
    and norm. Here, under autocast with a half dtype, input, weight and bias are cast to it
    and the norm runs with autocast off: the CUDA and CPU kernels accumulate the mean and
    variance of half inputs in fp32, so only the output is rounded to half. Outside autocast
    this is nn.LayerNorm exactly."""

    def forward(self, x):  # (..., H)
        dtype = autocast_half_dtype(x.device.type)
        if dtype is None:
            return super().forward(x)
        with torch.autocast(x.device.type, enabled=False):
            weight = None if self.weight is None else self.weight.to(dtype)
            bias = None if self.bias is None else self.bias.to(dtype)
            return F.layer_norm(x.to(dtype), self.normalized_shape, weight, bias, self.eps)


def positions_after_pad(input_ids, pad_token_id: int):
    """RoBERTa's (fairseq's) position ids: real tokens are numbered pad + 1, pad + 2, ... by
    their count so far (so left padding shifts nothing), pad tokens get pad itself."""
    real = input_ids.ne(pad_token_id).long()  # (B, T)
    return torch.cumsum(real, dim=1) * real + pad_token_id  # (B, T)


# ---- cross-layer sharing -----------------------------------------------------------------------

def drops_attention(encoder: Any) -> bool:
    """Whether `encoder` drops attention probabilities now (training, p > 0)."""
    return encoder.training and encoder.attention_dropout > 0


def fused_documents(encoder: Any, x: torch.Tensor) -> bool:
    """Documents through FlexAttention: on CUDA, unless `encoder` drops attention (it has no
    dropout); else the explicit per-row mask."""
    return x.is_cuda and not drops_attention(encoder)


def batch_layout(encoder: Any, input_ids, attention_mask, document_ids,
                 dtype: torch.dtype) -> Layout:
    """The batch's attention for `encoder` (every backbone's rule): padding at most (a
    key-padding mask), documents ((B, T) ids: FlexAttention or an explicit mask), or unpadded
    rows ((N,) ids: varlen where it runs for this device, dropout and dtype, decided once per
    compiled graph; else the padded layout)."""
    if document_ids is not None and document_ids.dim() == 1:
        if attention_mask is None:
            raise ValueError("unpadded document_ids (N,) need the batch's attention_mask: "
                             "they list the real tokens it marks")
        if not varlen_runs(input_ids.device.type, drops_attention(encoder), dtype):
            document_ids = None  # the padded layout: per-row masks (model/attention.py)
    if document_ids is None:
        return Layout(mask=key_padding_mask(attention_mask))
    if document_ids.dim() == 1:
        return unpadded_layout(attention_mask, document_ids.shape[0])
    return document_layout(attention_mask, document_ids, fused_documents(encoder, input_ids))


def sharing_tables(config: ModelConfig) -> tuple[list[int], list[int]]:
    """For each layer position, the index of its attention module and of its FFN module."""
    inner = config.inner_group_num
    positions = range(config.num_layer_positions)
    grouped = [config.group_of_layer(k // inner) * inner + k % inner for k in positions]
    own = list(positions)
    attn = grouped if config.sharing in ("all", "attention") else own
    ffn = grouped if config.sharing in ("all", "ffn") else own
    return attn, ffn


Depths = list[tuple[nn.Module | nn.Parameter, int]]


def encoder_depths(encoder: Any, inputs: list[nn.Module | nn.Parameter],
                   pooler: nn.Module | None) -> tuple[Depths, int]:
    """layer_depths of a backbone whose encoder keeps AlbertEncoder's per-position tables
    (`attentions` / `ffns` with `attention_index` / `ffn_index`, and the E->H projection):
    `inputs` and the projection at depth 0, layer position k at k + 1, the pooler level with
    the head (L + 2). A module shared over several depths takes the depth of its highest use,
    so the largest rate of those it serves: its top use is the one nearest the head (the
    lowest would slow the whole shared stack down to the embeddings' rate)."""
    L = len(encoder.attention_index)
    parts: Depths = [(part, 0) for part in inputs]
    if encoder.embedding_hidden_mapping_in is not None:
        parts.append((encoder.embedding_hidden_mapping_in, 0))
    for modules, index in ((encoder.attentions, encoder.attention_index),
                           (encoder.ffns, encoder.ffn_index)):
        top = {n: k + 1 for k, n in enumerate(index)}  # later positions overwrite: the max
        parts.extend((modules[n], depth) for n, depth in top.items())
    if pooler is not None:
        parts.append((pooler, L + 2))
    return parts, L


# A key of the encoder's per-position modules: `encoder.attentions.3.query.weight`.
_LAYER_KEY = re.compile(r"^(encoder\.)(attentions|ffns)\.(\d+)\.(.*)$")


def unrolled_source(encoder: Any, key: str) -> str:
    """For a key of the unrolled backbone (an AlbertEncoder-like `encoder` with its
    per-position tables), the key of the module that layer position k uses here."""
    match = _LAYER_KEY.match(key)
    if not match:
        return key
    head, part, k, rest = match.groups()
    index = encoder.attention_index if part == "attentions" else encoder.ffn_index
    return f"{head}{part}.{index[int(k)]}.{rest}"


# ---- ModernBERT's blocks -----------------------------------------------------------------------

def layer_norm(size: int, eps: float = 1e-5) -> nn.LayerNorm:
    """LayerNorm with a scale and no bias (ModernBERT's every norm; its eps is 1e-5)."""
    return nn.LayerNorm(size, eps=eps, bias=False)


class GeGLU(nn.Module):
    """Gated MLP: one GEMM makes the input and the gate halves, act(input) * gate, then Wo.
    ModernBERT's act is "gelu", exact erf (transformers' ACT2FN["gelu"] is F.gelu)."""

    def __init__(self, hidden: int, intermediate: int, act: str = "gelu",
                 dropout: float = 0.0):
        super().__init__()
        self.Wi = nn.Linear(hidden, 2 * intermediate, bias=False)
        self.act = activation(act)
        self.drop = nn.Dropout(dropout)
        self.Wo = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x):  # (B, T, H)
        value, gate = self.Wi(x).chunk(2, dim=-1)  # each (B, T, I): the input half first
        return self.Wo(self.drop(self.act(value) * gate))  # (B, T, H)


class RotaryAttention(nn.Module):
    """Bias-free multi-head self-attention with rotary positions on q and k: no residual, no
    norm (PreNormAttention adds them). `dropout` drops attention probabilities in training
    and the output projection's result, as ModernBERT's attention_dropout does both."""

    def __init__(self, hidden: int, heads: int, dropout: float = 0.0):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not a multiple of {heads} heads")
        self.num_heads = heads
        self.Wqkv = nn.Linear(hidden, 3 * hidden, bias=False)  # [q | k | v], heads inside each
        self.Wo = nn.Linear(hidden, hidden, bias=False)
        self.attention_dropout = dropout
        self.out_drop = nn.Dropout(dropout)

    def forward(self, x, mask, rope):
        """x (B, T, H); mask: any of model/attention.py's; rope: (cos, sin) of this layer's
        theta, (T, hd) or (B, T, hd) each (model/rope.py)."""
        B, T, H = x.shape
        qkv = self.Wqkv(x).view(B, T, 3, self.num_heads, H // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (B, nh, T, hd)
        q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        p = self.attention_dropout if self.training else 0.0
        y = attend(q, k, v, mask, p)  # (B, nh, T, hd)
        return self.out_drop(self.Wo(y.transpose(1, 2).reshape(B, T, H)))  # (B, T, H)

    def two_streams(self, x, g, mask, rope, query: QueryRows, content: bool = True):
        """Two-stream attention (model/two_stream.py) through these weights: x (B, T, H) the
        content stream's normed input, whose keys and values both streams read, made once;
        g (B, P, H) the query stream's, which gives queries only (Wqkv's q rows). mask and
        rope as forward's; `query` the query stream's rows. Returns (x's attention (B, T, H),
        or None when not `content`: its queries would feed nothing; g's (B, P, H))."""
        H = x.shape[-1]
        weight = self.Wqkv.weight  # (3H, H): the q, k and v rows
        if content:
            q, k, v = self.split_heads(self.Wqkv(x), 3)  # each (B, nh, T, hd)
        else:
            k, v = self.split_heads(F.linear(x, weight[H:]), 2)
        k = apply_rope(k, *rope)
        p = self.attention_dropout if self.training else 0.0
        y = None
        if content:
            y = self.merge_heads(attend(apply_rope(q, *rope), k, v, mask, p))
        (q_g,) = self.split_heads(F.linear(g, weight[:H]), 1)  # (B, nh, P, hd)
        y_g = attend(apply_rope(q_g, *query.rope), k, v, query.mask, p)  # (B, nh, P, hd)
        return y, self.merge_heads(y_g * query.scale)

    def split_heads(self, x, parts: int) -> tuple[torch.Tensor, ...]:
        """(B, L, parts x H) -> `parts` tensors (B, nh, L, hd), as forward splits Wqkv's."""
        B, L, _ = x.shape
        x = x.view(B, L, parts, self.num_heads, -1)
        return x.permute(2, 0, 3, 1, 4).unbind(0)

    def merge_heads(self, y):  # (B, nh, L, hd) -> (B, L, H): Wo and its dropout
        B, nh, L, hd = y.shape
        return self.out_drop(self.Wo(y.transpose(1, 2).reshape(B, L, nh * hd)))


class PreNormAttention(nn.Module):
    """x + attention(attn_norm(x)). `first`: the encoder's first layer, whose input is the
    embeddings' output, normed already (ModernBERT's layer 0 has an identity attn_norm)."""

    def __init__(self, hidden: int, heads: int, dropout: float = 0.0, eps: float = 1e-5,
                 first: bool = False):
        super().__init__()
        self.attn_norm = nn.Identity() if first else layer_norm(hidden, eps)
        self.attn = RotaryAttention(hidden, heads, dropout)

    def forward(self, x, mask, rope):  # (B, T, H) -> (B, T, H)
        return x + self.attn(self.attn_norm(x), mask, rope)


class PreNormMLP(nn.Module):
    """x + GeGLU(mlp_norm(x))."""

    def __init__(self, hidden: int, intermediate: int, act: str = "gelu",
                 dropout: float = 0.0, eps: float = 1e-5):
        super().__init__()
        self.mlp_norm = layer_norm(hidden, eps)
        self.mlp = GeGLU(hidden, intermediate, act, dropout)

    def forward(self, x):  # (B, T, H) -> (B, T, H)
        return x + self.mlp(self.mlp_norm(x))


class PreNormLayer(nn.Module):
    """One ModernBERT encoder layer: PreNormAttention, then PreNormMLP. Its state dict is
    transformers' `layers.{i}.` keys behind `attention.` / `ffn.` (attention.attn_norm,
    attention.attn.Wqkv, attention.attn.Wo, ffn.mlp_norm, ffn.mlp.Wi, ffn.mlp.Wo)."""

    def __init__(self, hidden: int, heads: int, intermediate: int, *, act: str = "gelu",
                 attention_dropout: float = 0.0, mlp_dropout: float = 0.0,
                 eps: float = 1e-5, first: bool = False):
        super().__init__()
        self.attention = PreNormAttention(hidden, heads, attention_dropout, eps, first)
        self.ffn = PreNormMLP(hidden, intermediate, act, mlp_dropout, eps)

    def forward(self, x, mask, rope):  # (B, T, H) -> (B, T, H)
        return self.ffn(self.attention(x, mask, rope))
