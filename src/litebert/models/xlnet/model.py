"""The XLNet backbone (Yang et al., 2019), top to bottom in one file.

    input ids (B, T)
      -> word embeddings (V, E) [-> E->H projection, ALBERT-XLNet], dropout   content stream h
      -> mask_emb (1, 1, H) at each of the P targets, dropout                   query stream g
      -> L x inner_group_num post-LN layers, weights shared across depth as in ../albert/model.py:
           relative attention over [memories; h] (both streams, the same weights), then FFN
      -> last_hidden_state (B, T, H) = h, or (B, P, H) = g when targets are given

Attention score of query i and key j (transformers' and the official code's, per head):

    [ (q_i + r_w_bias) . k_j                       content
    + (q_i + r_r_bias) . (R W_r)[T - i + j]        relative position, R row T - i + j holds
                                                   the distance M + i - j (M memories)
    + (q_i + r_s_bias) . seg_embed[seg_i != seg_j] same segment or not (memories: segment 0)
    ] / sqrt(d_head), masked entries -1e30 (-65500 in fp16)

R is the sinusoid table of the distances K, K-1, ..., -T+1 ("bi") or K, ..., 0 ("uni"), K = M + T,
clamped to +-clamp_len; with bi_data the second half of the batch reads them negated. The
position term, the segment term and the mask are summed into one tensor, which the content
term's GEMM adds to (baddbmm), then softmax. The segment term adds only (e_diff - e_same) where
the segments differ: e_same is the same for every key of a query row, and the softmax does not
see a constant added to a row. The content stream's position rows are a strided view of the
(L, R) products (row i starts at column T - i), not a copy. Not scaled_dot_product_attention:
its kernels take no bias that needs a gradient, so SDPA falls back to its math path, which
costs extra passes over the (L, K) scores on CPU (benchmarks/bench_xlnet.py, docs/speed.md);
FlexAttention with a score_mod is the GPU route.

Masks, as transformers' XLNetModel builds them: a key is hidden from a query when it is
padding (attention_mask 0), when perm_mask says so (1 = i cannot see j), or ("uni") when it
lies after the query (with same_length, also when it lies more than T before it); memories are
always visible. The content stream always sees its own token; the query stream does not
unless the masks allow it.

The query stream runs on the P target rows only: target p at position t_p reads the score row
of query t_p, gathered (its position row T - t_p + j, its mask and segment rows); nothing is
scattered to all T rows. Targets come as `target_mapping` (B, P, T) one-hot rows (a row of
zeros is a padding slot, whose attention output is zero, as in transformers) or as
`target_positions` (B, P) indices.

Memories (transformers' `cache_mem`): each layer's input h, its first `reuse_len` tokens when
set, appended to that layer's memory, the last `mem_len` kept (all when mem_len is None or 0),
detached; time-first (M, B, H) tensors, one per layer position, as transformers returns them.

Parameters: q, k, v, o, r are (H, H) matrices in nn.Linear's (out, in) layout, so q, k and v
are one GEMM; transformers' einsum tensors [H, n_head, d_head] are reshaped at the file
boundary (models/xlnet/adapter.py). They, the r_*_bias, seg_embed and mask_emb are initialised
normal(0, initializer_range) as transformers does; Linear, Embedding and LayerNorm as every
litebert model (base.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from litebert.config import BackboneConfig, ModelConfig
from litebert.model.backbone import BackboneCapabilities, register_backbone
from litebert.model.base import PreTrainedModel
from litebert.model.checkpointing import LayerCheckpointing
from litebert.model.layers import (
    AutocastLayerNorm,
    activation,
    encoder_depths,
    sharing_tables,
    unrolled_source,
)
from litebert.model.outputs import BaseModelOutput
from litebert.model.two_stream import target_rows
from litebert.models.albert.model import AlbertModel
from litebert.models.xlnet.config import XLNetBackboneConfig, xlnet_of


def mask_value(dtype: torch.dtype) -> float:
    """What a hidden key adds to its score: transformers' -1e30, -65500 where fp16 ends."""
    return -65500.0 if dtype == torch.float16 else -1e30


def compute_dtype(device: torch.device, dtype: torch.dtype) -> torch.dtype:
    """The dtype the forward computes in: autocast's on `device` when enabled, else `dtype`
    (the weights'). Masks and score terms built in it stay in it, with no cast per use."""
    if torch.is_autocast_enabled(device.type):
        return torch.get_autocast_dtype(device.type)
    return dtype


def relative_positions(config: ModelConfig, qlen: int, klen: int,
                       device: torch.device) -> torch.Tensor:
    """(G, R, H) sinusoid embeddings of the relative distances klen, klen-1, ... (R = klen +
    qlen for "bi", klen + 1 for "uni"), G = 2 with bi_data (second: the distances negated)."""
    xl = xlnet_of(config)
    end = -qlen if xl.attn_type == "bi" else -1
    distances = torch.arange(klen, end, -1, device=device).float()  # (R,)
    if xl.clamp_len > 0:
        distances = distances.clamp(-xl.clamp_len, xl.clamp_len)
    if xl.bi_data:
        distances = torch.stack((distances, -distances))  # (2, R)
    else:
        distances = distances[None]  # (1, R)
    H = config.hidden_size
    inv_freq = 1 / torch.pow(10000, torch.arange(0, H, 2, device=device).float() / H)  # (H/2,)
    angles = distances[..., None] * inv_freq  # (G, R, H/2)
    return torch.cat((angles.sin(), angles.cos()), dim=-1)  # (G, R, H)


@dataclass
class AttentionFrame:
    """What every layer's attention reads, built once per forward pass (see `frame`).

    Score rows: the content stream's T queries, the query stream's P targets. Each holds,
    per query row, the R column that key j reads (`*_index`), the additive mask and whether
    key j is in another segment; None where nothing is masked or there are no segments."""

    pos: torch.Tensor  # (G | B, R, H): G = 1, or 2 halves with bi_data; B with dropout
    content_index: torch.Tensor | None  # (1, 1, T, K) long; None ("bi"): a strided view
    content_mask: torch.Tensor | None  # (B, 1, T, K) float: 0 or mask_value
    content_segments: torch.Tensor | None  # (B, 1, T, K) float: 1 = another segment
    query_index: torch.Tensor | None = None  # (B, 1, P, K) long
    query_mask: torch.Tensor | None = None  # (B, 1, P, K)
    query_segments: torch.Tensor | None = None  # (B, 1, P, K)
    query_weight: torch.Tensor | None = None  # (B, P, 1): 0 for a padding target slot
    dtype: torch.dtype = torch.float32  # the compute dtype: autocast's, else the weights'


class RelativeAttention(nn.Module):
    """Two-stream relative multi-head attention + output projection + residual + post-LN.

    Every score term carries 1/sqrt(d_head), so it is folded into the query weight (and the
    r_*_bias added to the queries) once, not applied to each (B, n, L, K) score tensor."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        H, n = config.hidden_size, config.num_attention_heads
        self.num_heads, self.head_size = n, H // n
        self.scale = self.head_size ** -0.5
        # (out, in), as nn.Linear's weight: queries, keys, values, output, positions
        self.q, self.k, self.v, self.o, self.r = (nn.Parameter(torch.empty(H, H))
                                                  for _ in range(5))
        self.r_w_bias = nn.Parameter(torch.empty(n, H // n))  # content
        self.r_r_bias = nn.Parameter(torch.empty(n, H // n))  # position
        self.r_s_bias = nn.Parameter(torch.empty(n, H // n))  # segment
        self.seg_embed = nn.Parameter(torch.empty(2, n, H // n))  # [same, different] segment
        self.layer_norm = AutocastLayerNorm(H, eps=config.layer_norm_eps)
        self.attention_dropout = config.attention_probs_dropout_prob
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, h, g, mem, frame: AttentionFrame, content: bool = True):
        """h (B, T, H) content stream, g (B, P, H) query stream or None, mem (B, M, H) or
        None -> the two streams after attention. content=False: the content stream's own
        update is not needed (its keys and values are): h comes back unchanged."""
        H = h.shape[-1]
        # q (scaled), k and v as one (3H, H) weight, in the compute dtype once: autocast
        # then casts it once per layer, not at each of the up to three GEMMs that read it.
        w = torch.cat((self.q * self.scale, self.k, self.v)).to(frame.dtype)  # (3H, H)
        w_q, w_kv = w[:H], w[H:]  # (H, H), (2H, H)
        if content:  # one GEMM for q, k and v of the window
            q, kv = F.linear(h, w).split((H, 2 * H), dim=-1)
        else:
            kv = F.linear(h, w_kv)  # (B, T, 2H)
        if mem is not None:  # keys and values over [memories; h]; memories take no gradient
            kv = torch.cat((F.linear(mem, w_kv), kv), dim=1)  # (B, K, 2H)
        k, v = (self.heads(x).contiguous() for x in kv.chunk(2, dim=-1))  # (B, n, K, d)
        k_r = F.linear(frame.pos, self.r)  # (G | B, R, H)
        # The content, position and segment biases, scaled, stacked and cast once per layer.
        biases = torch.stack((self.r_w_bias, self.r_r_bias, self.r_s_bias)) * self.scale
        biases = biases.to(k.dtype)[:, None, None]  # (3, 1, 1, n, d)
        if content:
            h = self.stream(h, q, k, v, k_r, biases, frame.content_index, frame.content_mask,
                            frame.content_segments)
        if g is not None:
            g = self.stream(g, F.linear(g, w_q), k, v, k_r, biases, frame.query_index,
                            frame.query_mask, frame.query_segments, frame.query_weight)
        return h, g

    def heads(self, x):  # (B, L, H) -> (B, n, L, d)
        B, L, _ = x.shape
        return x.view(B, L, self.num_heads, self.head_size).transpose(1, 2)

    def stream(self, x, q, k, v, k_r, biases, index, mask, segments, weight=None):
        """One stream's attention: scaled queries q (B, L, H) over keys and values k, v
        (B, n, K, d), biases (3, 1, 1, n, d) for content, position and segment; the score
        terms summed into one (B * n, L, K) tensor."""
        B, L, _ = q.shape
        n, d, K = self.num_heads, self.head_size, k.shape[2]
        # One add gives the three biased queries (each (B, L, n, d), contiguous).
        q_w, q_r, q_s = (q.view(B, L, n, d)[None] + biases).unbind(0)
        bias = self.position_scores(q_r, k_r, index)
        if segments is not None:
            bias = self.add_segment_scores(bias, q_s, segments)
        if mask is not None:
            bias = bias + mask
        q_w = q_w.transpose(1, 2).reshape(B * n, L, d)
        scores = torch.baddbmm(bias.reshape(B * n, L, K), q_w,
                               k.view(B * n, K, d).transpose(1, 2))  # (B * n, L, K)
        probs = F.dropout(scores.softmax(dim=-1), self.attention_dropout, self.training)
        y = torch.bmm(probs, v.view(B * n, K, d))  # (B * n, L, d)
        y = y.view(B, n, L, d).transpose(1, 2).reshape(B, L, n * d)  # (B, L, H)
        if weight is not None:  # padding target slots contribute nothing
            y = y * weight
        return self.layer_norm(x + self.dropout(F.linear(y, self.o)))

    def position_scores(self, q_r, k_r, index):
        """q_r (B, L, n, d) . k_r at R row T - i + j for query row i, key j: (B, n, L, K).
        index None: the content stream's rows i = 0 .. T - 1, read as a strided view of the
        (B, n, L, R) products (row i starts at column T - i; no copy); else the rows named by
        `index` (B | 1, 1, L, K), gathered."""
        B, L, n, d = q_r.shape
        G, R, _ = k_r.shape
        k_r = k_r.view(G, R, n, d)
        if G == 1:  # one table for the batch: one GEMM per head over all B * L query rows
            raw = torch.bmm(q_r.reshape(B * L, n, d).transpose(0, 1), k_r[0].permute(1, 2, 0))
            raw = raw.view(n, B, L, R).transpose(0, 1)  # (B, n, L, R)
        else:  # bi_data's two halves, or one table per row (position dropout)
            k_r = k_r.repeat_interleave(B // G, dim=0)  # (B, R, n, d)
            raw = q_r.transpose(1, 2) @ k_r.permute(0, 2, 3, 1)  # (B, n, L, R)
        K = R - L  # "bi": R = K + T, and L = T
        if index is None and torch.compiler.is_compiling():
            # torch.compile cannot trace storage_offset(): the same entries, gathered (row i
            # reads columns L - i + j), which the compiler fuses into the consumer.
            rows, cols = torch.arange(L, device=raw.device), torch.arange(K, device=raw.device)
            index = (L - rows[:, None] + cols[None, :])[None, None]  # (1, 1, L, K)
        if index is not None:
            return raw.gather(-1, index.expand(B, n, L, index.shape[-1]))
        sb, sn, sl, sr = raw.stride()
        return raw.as_strided((B, n, L, K), (sb, sn, sl - sr, sr),
                              raw.storage_offset() + L * sr)

    def add_segment_scores(self, bias, q_s, different):
        """bias + q_s . seg_embed[same or different] (B, n, L, K), q_s = q + r_s_bias (B, L,
        n, d), written as e_same + (e_diff - e_same) * different: e_same is the same for
        every key of a query row, which the softmax ignores, so only the difference is added
        (one dot product with seg_embed[1] - seg_embed[0])."""
        delta = (self.seg_embed[1] - self.seg_embed[0]).to(q_s.dtype)  # (n, d)
        e = (q_s * delta).sum(-1).transpose(1, 2)[..., None]  # (B, n, L, 1)
        return torch.addcmul(bias, different, e)


class FeedForward(nn.Module):
    """layer_1 -> act -> dropout -> layer_2 -> dropout, residual, post-LN (transformers'
    names)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.layer_1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.layer_2 = nn.Linear(config.intermediate_size, config.hidden_size)
        self.layer_norm = AutocastLayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.act = activation(config.hidden_act)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x):  # (B, L, H)
        y = self.layer_2(self.dropout(self.act(self.layer_1(x))))  # (B, L, I) -> (B, L, H)
        return self.layer_norm(x + self.dropout(y))


class XLNetEncoder(LayerCheckpointing):
    """The E->H projection (ALBERT-XLNet) and the layer modules, shared across depth by
    model/layers.py's `sharing_tables` (same keys and sharing as AlbertEncoder)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        E, H = config.embedding_size, config.hidden_size
        self.embedding_hidden_mapping_in = nn.Linear(E, H) if config.has_projection else None
        self.attention_index, self.ffn_index = sharing_tables(config)
        self.attentions = nn.ModuleList(
            RelativeAttention(config) for _ in range(max(self.attention_index) + 1))
        self.ffns = nn.ModuleList(FeedForward(config) for _ in range(max(self.ffn_index) + 1))

    def position(self, a: int, f: int, h, g, mem, frame: AttentionFrame, content: bool):
        """One layer position on both streams: content h (B, T, H), query g (B, P, H) or
        None, memory (M, B, H) or None. Without `content` the content stream's update is
        skipped (h comes back as the attention returns it)."""
        h, g = self.attentions[a](h, g, None if mem is None else mem.transpose(0, 1), frame,
                                  content=content)
        h = self.ffns[f](h) if content else h
        return h, None if g is None else self.ffns[f](g)

    def fsdp_units(self) -> list[tuple[nn.Module, bool]]:
        """As AlbertEncoder's: a module used at several depths stays gathered (False)."""
        shared_attention = len(self.attentions) < len(self.attention_index)
        shared_ffn = len(self.ffns) < len(self.ffn_index)
        return ([(m, not shared_attention) for m in self.attentions]
                + [(m, not shared_ffn) for m in self.ffns])


@register_backbone("xlnet")
class XLNetModel(PreTrainedModel):
    """The backbone: word embeddings -> two-stream relative layers with memories.

    `add_pooling_layer`: None follows config.use_pooler (XLNet's: none); True adds a
    tanh(dense(h[:, -1])) pooler on the content stream's <cls>, for heads that read one.
    """

    config_class: ClassVar[type[BackboneConfig]] = XLNetBackboneConfig
    summary_position: ClassVar[int] = -1  # A <sep> B <sep> <cls>, padded on the left: <cls> is last
    embeds_token_types: ClassVar[bool] = False  # types are only compared: same segment or not
    # No document attention (relative positions over whole windows); no embed_encode: the
    # layers run inside forward on a frame of masks and positions, not as a separate encoder.
    capabilities: ClassVar[BackboneCapabilities] = BackboneCapabilities(
        two_stream=True, memories=True, pooler=True)

    def __init__(self, config: ModelConfig, add_pooling_layer: bool | None = None):
        super().__init__()
        self.config = config
        H = config.hidden_size
        self.word_embedding = nn.Embedding(config.vocab_size, config.embedding_size)
        self.mask_emb = nn.Parameter(torch.empty(1, 1, H))  # the query stream's input
        self.encoder = XLNetEncoder(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        pooling = config.use_pooler if add_pooling_layer is None else add_pooling_layer
        self.pooler = nn.Linear(H, H) if pooling else None
        self.init_weights()
        self.init_xlnet_weights()

    def init_xlnet_weights(self) -> None:
        """transformers' XLNet init for what is not an nn.Linear / Embedding / LayerNorm (so
        a head's init_weights, which re-initialises those, leaves these alone)."""
        std = self.config.initializer_range
        with torch.no_grad():
            for attention in self.encoder.attentions:
                for name in ("q", "k", "v", "o", "r", "r_w_bias", "r_r_bias", "r_s_bias",
                             "seg_embed"):
                    nn.init.normal_(getattr(attention, name), std=std)
            nn.init.normal_(self.mask_emb, std=std)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                output_hidden_states: bool = False, mems=None, perm_mask=None,
                target_mapping=None, use_mems=None, target_positions=None):
        """See model/backbone.py; position_ids are ignored (positions are relative). mems:
        one (M, B, H) tensor per layer position; perm_mask (B, T, T), 1 = i cannot see j;
        target_mapping (B, P, T) or target_positions (B, P): the query stream's targets,
        whose states (B, P, H) are then last_hidden_state. use_mems None: the config's mem_len >
        0. hidden_states hold the content stream."""
        B, T = input_ids.shape
        if use_mems is None:
            use_mems = (xlnet_of(self.config).mem_len or 0) > 0
        mems = self.check_mems(mems, B)
        M = 0 if mems is None else mems[0].shape[0]
        targets, weight = target_rows(target_mapping, target_positions)
        x = self.word_embedding(input_ids)  # (B, T, E)
        if self.encoder.embedding_hidden_mapping_in is not None:
            x = self.encoder.embedding_hidden_mapping_in(x)  # (B, T, H)
        h = self.dropout(x)
        g = None
        if targets is not None:
            g = self.dropout(self.mask_emb.expand(B, targets.shape[1], -1))  # (B, P, H)
        frame = self.frame(input_ids, attention_mask, token_type_ids, perm_mask, targets, M)
        frame.query_weight = None if weight is None else weight.to(frame.dtype)
        states: list | None = [] if output_hidden_states else None
        new_mems: list | None = [] if use_mems else None
        encoder = self.encoder
        # With targets, only the query stream is returned: the last layer's content stream
        # update would feed nothing (memories hold each layer's input), so it is skipped.
        last = len(encoder.attention_index) - 1
        if g is None or states is not None or self.pooler is not None:
            last = -1
        for k, (a, f) in enumerate(zip(encoder.attention_index, encoder.ffn_index, strict=True)):
            mem = None if mems is None else mems[k]
            if new_mems is not None:
                new_mems.append(self.cache(h, mem))
            if states is not None:
                states.append(h)
            h, g = encoder.run_position(encoder.position, a, f, h, g, mem, frame, k != last)
        if states is not None:
            states.append(h)
        h = self.dropout(h)
        pooled = None if self.pooler is None else torch.tanh(self.pooler(h[:, -1]))  # (B, H)
        return BaseModelOutput(
            last_hidden_state=h if g is None else self.dropout(g), pooler_output=pooled,
            hidden_states=None if states is None else tuple(states),
            mems=None if new_mems is None else tuple(new_mems))

    def check_mems(self, mems, batch: int):
        """The memories as given (one (M, B, H) tensor per layer position), or None."""
        if mems is None or len(mems) == 0 or mems[0] is None:
            return None
        L, H = len(self.encoder.attention_index), self.config.hidden_size
        if len(mems) != L or any(m.dim() != 3 or m.shape[1:] != (batch, H) for m in mems):
            shapes = [tuple(m.shape) for m in mems]
            raise ValueError(f"mems: expected {L} tensors (M, {batch}, {H}), one per layer "
                             f"position, as a previous forward returned them; got {shapes}")
        return mems

    def cache(self, h, mem):
        """transformers' cache_mem: this layer's next memory (M', B, H), detached."""
        new = h.transpose(0, 1)  # (T, B, H), time-first as memories are kept
        xl = xlnet_of(self.config)
        if xl.reuse_len:
            new = new[:xl.reuse_len]
        if mem is not None:
            new = torch.cat((mem, new), dim=0)
        if xl.mem_len:
            new = new[-xl.mem_len:]
        return new.detach()

    # ---- masks, segments and positions, once per forward -------------------------------------

    def frame(self, input_ids, attention_mask, token_type_ids, perm_mask, targets,
              M: int) -> AttentionFrame:
        B, T = input_ids.shape
        K, device = M + T, input_ids.device
        dtype = compute_dtype(device, self.word_embedding.weight.dtype)
        hidden = self.hidden_keys(B, T, M, attention_mask, perm_mask, device)  # (B, T, K)
        own = torch.arange(T, device=device)[:, None] + M == torch.arange(K, device=device)
        content_index = None  # "bi": position_scores reads the rows as a strided view
        if xlnet_of(self.config).attn_type != "bi":
            content_index = self.position_index(torch.arange(T, device=device), T, K)[None, None]
        frame = AttentionFrame(
            pos=self.positions(B, T, K, device, dtype), content_index=content_index,
            content_mask=None if hidden is None else self.additive(hidden & ~own, dtype),
            content_segments=None, dtype=dtype)
        segments = None
        if token_type_ids is not None:  # memories count as segment 0, as in transformers
            segments = torch.cat((token_type_ids.new_zeros(B, M), token_type_ids), dim=1)
            different = token_type_ids[:, :, None] != segments[:, None]  # (B, T, K)
            frame.content_segments = different[:, None].to(dtype)
        if targets is not None:
            rows = targets[:, :, None].expand(-1, -1, K)  # (B, P, K)
            frame.query_index = self.position_index(targets, T, K)[:, None]
            frame.query_mask = None if hidden is None else \
                self.additive(hidden.gather(1, rows), dtype)
            if segments is not None:
                own_segment = token_type_ids.gather(1, targets)  # (B, P)
                different = own_segment[:, :, None] != segments[:, None]  # (B, P, K)
                frame.query_segments = different[:, None].to(dtype)
        return frame

    def hidden_keys(self, B, T, M, attention_mask, perm_mask, device):
        """(B, T, K) bool, True = query i may not see key j (the content stream's own token
        excepted, see `frame`); None when every query sees every key."""
        config = self.config
        hidden = None
        if xlnet_of(config).attn_type == "uni":
            i = torch.arange(T, device=device)[:, None]
            j = torch.arange(M + T, device=device)[None]
            hidden = j > M + i  # later keys
            if xlnet_of(config).same_length:
                hidden = hidden | (j < i)  # keys more than T - 1 before the query
            hidden = hidden[None].expand(B, -1, -1)
        data = None
        if attention_mask is not None:
            data = (attention_mask == 0)[:, None, :].expand(B, T, T)  # padding keys
        if perm_mask is not None:
            data = perm_mask > 0 if data is None else data | (perm_mask > 0)
        if data is not None:  # memories are always visible
            data = torch.cat((data.new_zeros(B, T, M), data), dim=2)
            hidden = data if hidden is None else hidden | data
        return hidden

    @staticmethod
    def additive(hidden, dtype):  # (B, L, K) bool -> (B, 1, L, K): 0 or mask_value
        zeros = torch.zeros(hidden.shape, dtype=dtype, device=hidden.device)
        return zeros.masked_fill(hidden, mask_value(dtype))[:, None]

    def position_index(self, rows, T: int, K: int):
        """(..., L, K) long: query at position t reads R row T - t + j for key j. ("uni"
        reads past the table only where keys are hidden: clamped, any value does.)"""
        index = T - rows[..., None] + torch.arange(K, device=rows.device)
        R = K + T if xlnet_of(self.config).attn_type == "bi" else K + 1
        return index.clamp(max=R - 1)

    def positions(self, B: int, T: int, K: int, device, dtype):
        """(G, R, H) relative position embeddings after dropout; per row of the batch (B, R,
        H) when dropout is on, as the official code draws it."""
        if xlnet_of(self.config).bi_data and B % 2:
            raise ValueError(f"bi_data reads the second half of the batch with reversed "
                             f"positions: the batch size must be even, not {B}")
        pos = relative_positions(self.config, T, K, device).to(dtype)
        if self.training and self.dropout.p > 0:
            pos = self.dropout(pos.repeat_interleave(B // pos.shape[0], dim=0))
        return pos

    # ---- what heads read ---------------------------------------------------------------------

    @property
    def input_embeddings(self) -> torch.Tensor:
        return self.word_embedding.weight  # (V, E)

    # ---- what layer-wise lr decay, FSDP, counts and unrolling ask (model/backbone.py) --------

    def layer_depths(self) -> tuple[list[tuple[nn.Module | nn.Parameter, int]], int]:
        """Word embeddings, mask_emb and the E->H projection at depth 0, layer position k at
        k + 1, the pooler at L + 2 (model/layers.py's encoder_depths)."""
        return encoder_depths(self.encoder, [self.word_embedding, self.mask_emb], self.pooler)

    def fsdp_units(self) -> list[tuple[nn.Module, bool]]:
        return self.encoder.fsdp_units()

    @classmethod
    def flops_per_token(cls, config: ModelConfig, seq_len: int) -> float:
        """The content stream's training FLOPs per token (3 x forward, 2 a multiply-add) at
        sequences of T = seq_len with M = the config's mem_len memories (K = M + T keys, R = K + T
        relative positions, or K + 1 for "uni"): per layer position q and o (2 H^2), k and v
        over the K keys (2 H^2 K / T), the position projection of the R rows (H^2 R / T, per
        sequence), the scores and the weighted sum (2 K H + R H), the FFN (2 H I); plus the
        E->H projection. The query stream's work is `query_stream_flops_per_target`."""
        H, T = config.hidden_size, seq_len
        K = (xlnet_of(config).mem_len or 0) + T
        R = K + T if xlnet_of(config).attn_type == "bi" else K + 1
        per_layer = (2 * H * H + 2 * H * H * K / T + H * H * R / T + (2 * K + R) * H
                     + 2 * H * config.intermediate_size)
        projection = config.embedding_size * H if config.has_projection else 0
        return 6.0 * (projection + config.num_layer_positions * per_layer)

    @classmethod
    def query_stream_flops_per_target(cls, config: ModelConfig, seq_len: int) -> float:
        """Training FLOPs of the query stream per predicted token (pre-training runs it on
        the P targets only): q and o (2 H^2), scores and sum over K keys and R positions
        (2 K H + R H), the FFN (2 H I), per layer position. Keys, values and positions are
        the content stream's, counted there."""
        H, T = config.hidden_size, seq_len
        K = (xlnet_of(config).mem_len or 0) + T
        R = K + T if xlnet_of(config).attn_type == "bi" else K + 1
        per_layer = 2 * H * H + (2 * K + R) * H + 2 * H * config.intermediate_size
        return 6.0 * config.num_layer_positions * per_layer

    @classmethod
    def unrolled_config(cls, config: ModelConfig) -> ModelConfig:
        return AlbertModel.unrolled_config(config)  # the same sharing rules as ALBERT's

    def unrolled_source(self, key: str) -> str:
        """Position k of the unrolled encoder copies the module position k used here."""
        return unrolled_source(self.encoder, key)
