"""The ModernBERT backbone (Warner et al., 2024), top to bottom in one file.

    input ids (B, T)
      -> tok_embeddings (V, E), bias-free LayerNorm(E), dropout   no position or type embeddings
      -> E->H projection when E != H (ALBERT's factorised embeddings; embedding_projection)
      -> L x inner_group_num pre-norm layers, weights shared across depth as in ../albert/model.py:
           x + attention(attn_norm(x)), rotary positions on q and k  (ModernBertAttention)
           x + GeGLU(mlp_norm(x))                                         (PreNormMLP)
      -> final_norm (the encoder's last step) -> last_hidden_state (B, T, H); no pooler

    two streams (perm_mask, targets; model/two_stream.py), the "full" layout only:
      content stream h: the layers above, each token seeing what perm_mask lets it, and itself
      query stream g:   mask_emb (1, 1, H) at each of the P targets, dropout
                        -> the same layer positions, same weights: queries from g rotated by
                           the target's position, keys and values from h's normed input
                        -> final_norm -> last_hidden_state (B, P, H)

Global and local layers. Layer POSITION k attends to every key when k % global_attn_every_n_layers
== 0, else through a sliding window of |i - j| <= local_attention // 2 (model/attention.py's
`windowed`); global positions rotate q and k with global_rope_theta, local ones with
local_rope_theta. The type belongs to the position, not to the module: the encoder builds one
mask and one rotary table per type per forward pass and hands each position its type's, so a
module shared across depth (ALBERT's sharing) may serve positions of both types.

Cross-layer sharing is ALBERT's: `encoder.attentions` / `encoder.ffns` hold the modules, and
model/layers.py's `sharing_tables` say which one each position uses (sharing "all",
"attention", "ffn" or "none", num_hidden_groups, inner_group_num). transformers' layer i is
our attentions.{i} (attn_norm, attn.Wqkv, attn.Wo) and ffns.{i} (mlp_norm, mlp.Wi, mlp.Wo);
models/modernbert/adapter.py renames them to `model.layers.{i}.*`.

The first layer's norm. ModernBERT's layer 0 has no attn_norm (an identity): its input, the
embeddings' output, is normed already. Here position 0 never norms its input, whatever module
it uses. The module that position 0 alone uses has no attn_norm at all (nn.Identity, as
transformers' layer 0); an attention module shared with later positions keeps its attn_norm,
applied at those positions and skipped at position 0. So unrolling a shared model gives one
whose layer 0 has the identity too: the same function, in transformers' layout.

Attention layouts are albert.py's: padding (SDPA's key-padding bool mask, and its windowed
(B, 1, T, T) form for local positions), documents ((B, T) document_ids: FlexAttention on
CUDA, an explicit mask on the CPU, the window within each document, positions restarting at
each document) and unpadded rows ((N,) document_ids: varlen on CUDA in half precision, with
the window as FlashAttention's window_size; elsewhere the padded layout). The rotary tables
come from each token's position: 0..T-1, the caller's position_ids, the offsets within
documents, or the padded positions gathered for the unpadded rows.

Two streams (XLNet's permutation LM on this backbone; no paper or transformers class defines
it, so its tests check properties, tests/models/modernbert/test_two_stream.py). The query
stream's first layer position skips the norm, as the content stream's does: its input,
mask_emb, is one learned vector shared by every target, so a norm of it would only
re-parametrise it (its mean and scale are the parameter's own), and position 0's module may
have no attn_norm at all. mask_emb exists with the config's query_stream only (the PLM
objective sets it): without it the backbone is transformers' exactly. The last layer
position's content update feeds nothing once only the query stream is returned, so it is
skipped (its keys and values are computed).

Initialisation is ModernBERT's (`init_weights`): truncated normal cut at +-2 std
(initializer_cutoff_factor), std initializer_range for the embeddings, Wqkv and Wi (and the
E->H projection and mask_emb), initializer_range / sqrt(2 x layer positions) for both Wo, norms
at one. The backbone and its encoder are InitialisesItself (model/base.py): a head's init_weights
leaves them to their own, and ELECTRA's generator encoder, built without the backbone, gets
the encoder's.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import torch
from torch import nn

from litebert.config import BackboneConfig, ConfigError, ModelConfig
from litebert.data.attention_choice import ATTENTIONS
from litebert.model.attention import (
    Layout,
    positions_in_documents,
    windowed,
)
from litebert.model.backbone import BackboneCapabilities, register_backbone
from litebert.model.base import InitialisesItself, PreTrainedModel
from litebert.model.checkpointing import LayerCheckpointing
from litebert.model.layers import (
    GeGLU,
    PreNormAttention,
    PreNormMLP,
    RotaryAttention,
    batch_layout,
    encoder_depths,
    layer_norm,
    sharing_tables,
    unrolled_source,
)
from litebert.model.outputs import BaseModelOutput
from litebert.model.rope import rope_tables
from litebert.model.two_stream import (
    QueryRows,
    at_targets,
    content_mask,
    near_targets,
    query_keep,
    query_rows,
    target_rows,
)
from litebert.models.albert.model import AlbertModel
from litebert.models.modernbert.config import ModernBertBackboneConfig, modernbert_of

Rope = tuple[torch.Tensor, torch.Tensor]  # (cos, sin), (T, hd) or (B, T, hd) each




class ModernBertEmbeddings(nn.Module):
    """Token embeddings -> bias-free LayerNorm -> dropout (transformers' names)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        E = config.embedding_size
        self.tok_embeddings = nn.Embedding(config.vocab_size, E, padding_idx=config.pad_token_id)
        self.norm = layer_norm(E, config.layer_norm_eps)
        self.drop = nn.Dropout(modernbert_of(config).embedding_dropout)

    def forward(self, input_ids):  # (B, T) -> (B, T, E)
        return self.drop(self.norm(self.tok_embeddings(input_ids)))


class ModernBertAttention(PreNormAttention):
    """PreNormAttention (same names, same state dict) that position 0 calls with its input
    `normed` already: the norm is skipped there, in this module's own forward, so that FSDP
    (which gathers a unit's weights in its forward hook) sees every call. The query stream
    goes through the same forward, for the same reason."""

    def forward(self, x, mask, rope, normed: bool = False, g=None,
                query: QueryRows | None = None, content: bool = True):
        """x (B, T, H) -> (B, T, H). With the query stream g (B, P, H) and its rows `query`:
        (x, g) after attention, both normed as x is; content False: x comes back as it
        came (only its keys and values are read)."""
        if g is None or query is None:
            return x + self.attn(x if normed else self.attn_norm(x), mask, rope)
        h, q = (x, g) if normed else (self.attn_norm(x), self.attn_norm(g))
        y, y_g = self.attn.two_streams(h, q, mask, rope, query, content)
        return (x if y is None else x + y), g + y_g


def truncated_normal(weight: torch.Tensor, std: float, cutoff: float) -> None:
    """ModernBERT's draw: normal(0, std) cut at +- cutoff x std."""
    nn.init.trunc_normal_(weight, std=std, a=-cutoff * std, b=cutoff * std)


class ModernBertEncoder(InitialisesItself, LayerCheckpointing):
    """The E->H projection and the pre-norm attention / MLP modules, shared across depth by
    `sharing_tables` (AlbertEncoder's keys and tables), with each position's attention type."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        E, H = config.embedding_size, config.hidden_size
        mb = modernbert_of(config)
        # Bias-free like every linear layer of ModernBERT.
        self.embedding_hidden_mapping_in = (nn.Linear(E, H, bias=False)
                                            if config.has_projection else None)
        self.attention_index, self.ffn_index = sharing_tables(config)
        self.is_global = [k % mb.global_attn_every_n_layers == 0
                          for k in range(config.num_layer_positions)]
        self.attention_dropout = config.attention_probs_dropout_prob  # every layer's
        heads, eps = config.num_attention_heads, config.layer_norm_eps
        first_alone = self.attention_index.count(0) == 1  # module 0 serves position 0 only
        self.attentions = nn.ModuleList(
            ModernBertAttention(H, heads, config.attention_probs_dropout_prob, eps,
                                first=n == 0 and first_alone)
            for n in range(max(self.attention_index) + 1))
        self.ffns = nn.ModuleList(
            PreNormMLP(H, config.intermediate_size, config.hidden_act, mb.mlp_dropout, eps)
            for _ in range(max(self.ffn_index) + 1))
        self.final_norm = layer_norm(H, eps)
        # What the attention types need: the window and one rotary base per type.
        self.window = mb.local_attention
        self.thetas = (mb.global_rope_theta, mb.local_rope_theta)
        self.head_size = H // heads
        # What init_weights draws with: the inputs' std, the output projections' (smaller
        # with depth), the cut-off in stds.
        self.init_stds = (config.initializer_range,
                          config.initializer_range / math.sqrt(2.0 * config.num_layer_positions))
        self.init_cutoff = mb.initializer_cutoff_factor

    def init_weights(self) -> None:
        """ModernBERT's init of every encoder module (the module docstring): the E->H
        projection, Wqkv and Wi at the inputs' std, both Wo at the outputs', norms at one.
        Its own, so ELECTRA's generator encoder on these embeddings gets it too."""
        std, out_std = self.init_stds
        weights = []
        if self.embedding_hidden_mapping_in is not None:
            weights.append((self.embedding_hidden_mapping_in.weight, std))
        for module in self.modules():
            if isinstance(module, RotaryAttention):
                weights += [(module.Wqkv.weight, std), (module.Wo.weight, out_std)]
            elif isinstance(module, GeGLU):
                weights += [(module.Wi.weight, std), (module.Wo.weight, out_std)]
        with torch.no_grad():
            for weight, s in weights:
                truncated_normal(weight, s, self.init_cutoff)
            for module in self.modules():
                if isinstance(module, nn.LayerNorm):
                    nn.init.ones_(module.weight)

    def forward(self, x, mask, positions: torch.Tensor, length: int, keep: list | None = None):
        """x (B, T, E), or (1, N, E) unpadded; `mask` the layout's (model/attention.py) for
        rows of `length` T; positions (T,), (B, T) or (1, N), each token's. The final norm of
        the last layer's output (B, T, H); with `keep`, every layer position's input is
        appended."""
        masks = self.attention_masks(mask, length, x.device)  # (global, local)
        ropes = self.rotary_tables(positions)  # (global, local)
        if self.embedding_hidden_mapping_in is not None:
            x = self.embedding_hidden_mapping_in(x)  # (B, T, H)
        for k, (a, f) in enumerate(zip(self.attention_index, self.ffn_index, strict=True)):
            if keep is not None:
                keep.append(x)
            kind = 0 if self.is_global[k] else 1
            x = self.run_position(self.position, k, a, f, x, masks[kind], ropes[kind])
        return self.final_norm(x)

    def position(self, k: int, a: int, f: int, x, mask, rope):  # (B, T, H) -> (B, T, H)
        """Layer position k: attention module `a` under its type's mask and rotary table,
        then MLP module `f`."""
        # Position 0's input is the embeddings' output, normed already (the docstring).
        return self.ffns[f](self.attentions[a](x, mask, rope, normed=k == 0))

    def two_streams(self, x, g, mask, queries: tuple[QueryRows, QueryRows],
                    positions: torch.Tensor, keep: list | None = None):
        """The content stream x (B, T, E) (the embeddings) under `mask` (two_stream.py's
        content_mask) and the query stream g (B, P, H) at its rows (global, local), each
        position's weights serving both. -> (content (B, T, H), None when not needed;
        query (B, P, H)), final norm included; with `keep`, as forward."""
        T = x.shape[1]
        masks = self.attention_masks(mask, T, x.device)  # (global, local)
        ropes = self.rotary_tables(positions)
        if self.embedding_hidden_mapping_in is not None:
            x = self.embedding_hidden_mapping_in(x)  # (B, T, H)
        # Only the query stream is returned: the last position's content update would feed
        # nothing (its keys and values still do), unless every layer's input is kept.
        last = len(self.attention_index) - 1 if keep is None else -1
        for k, (a, f) in enumerate(zip(self.attention_index, self.ffn_index, strict=True)):
            if keep is not None:
                keep.append(x)
            kind = 0 if self.is_global[k] else 1
            x, g = self.run_position(self.two_stream_position, k, a, f, x, g, masks[kind],
                                     ropes[kind], queries[kind], k != last)
        return (None if last >= 0 else self.final_norm(x)), self.final_norm(g)

    def two_stream_position(self, k: int, a: int, f: int, x, g, mask, rope, query: QueryRows,
                            content: bool):
        """Layer position k on both streams: (content (B, T, H), query (B, P, H)); without
        `content`, the content stream's update is skipped (its keys and values still feed
        the query stream)."""
        T = x.shape[1]
        x, g = self.attentions[a](x, mask, rope, normed=k == 0, g=g, query=query,
                                  content=content)
        if not content:
            return x, self.ffns[f](g)
        # One call (one GEMM, one FSDP gather) for both streams' rows.
        return self.ffns[f](torch.cat((x, g), dim=1)).split((T, g.shape[1]), dim=1)

    def query_rows(self, attention_mask, perm_mask, targets, weight, positions: torch.Tensor,
                   T: int, dtype: torch.dtype) -> tuple[QueryRows, QueryRows]:
        """(global, local) rows of the query stream at `targets` (B, P) in rows of T tokens,
        weighted by `weight` (B, P, 1) or None: perm_mask's target rows, padding, and at
        local positions the window around each target's position."""
        keep = query_keep(attention_mask, perm_mask, targets, T)  # (B, P, T)
        ropes = self.rotary_tables(at_targets(positions, targets))  # (B, P, hd) tables
        local = keep & near_targets(targets, self.window, T) if self.has_window(T) else keep
        return (query_rows(keep, ropes[0], weight, dtype),
                query_rows(local, ropes[1], weight, dtype))

    def has_window(self, T: int) -> bool:
        """Whether a local position sees fewer keys than a global one at rows of T: rows no
        longer than half the window see every key from every query."""
        return not all(self.is_global) and T - 1 > self.window // 2

    def attention_masks(self, mask, T: int, device: torch.device) -> tuple[Any, Any]:
        """(global, local): the layout's mask, and it limited to the sliding window."""
        if not self.has_window(T):
            return mask, mask
        return mask, windowed(mask, self.window, T, device)

    def rotary_tables(self, positions: torch.Tensor) -> tuple[Rope, Rope]:
        """(global, local) (cos, sin) tables for `positions`, one per theta."""
        full = rope_tables(positions, self.head_size, self.thetas[0])
        if self.thetas[1] == self.thetas[0]:
            return full, full
        return full, rope_tables(positions, self.head_size, self.thetas[1])

    def fsdp_units(self) -> list[tuple[nn.Module, bool]]:
        """As AlbertEncoder's: a module used at several depths stays gathered (False)."""
        shared_attention = len(self.attentions) < len(self.attention_index)
        shared_ffn = len(self.ffns) < len(self.ffn_index)
        return ([(m, not shared_attention) for m in self.attentions]
                + [(m, not shared_ffn) for m in self.ffns])


@register_backbone("modernbert")
class ModernBertModel(InitialisesItself, PreTrainedModel):
    """The backbone: embeddings -> projection -> global / sliding-window layers -> final_norm.

    No pooler: `add_pooling_layer` True is refused (heads classify from the first token, or a
    mean over the tokens); None and False build none."""

    config_class: ClassVar[type[BackboneConfig]] = ModernBertBackboneConfig
    capabilities: ClassVar[BackboneCapabilities] = BackboneCapabilities(
        attentions=ATTENTIONS, two_stream=True, pooler=False, embed_encode=True)
    # embed_encode: ELECTRA's generator runs a ModernBertEncoder (final norm included) on
    # these embeddings. two_stream: the "full" layout only (forward refuses document_ids
    # with it), and the query stream needs mask_emb (config query_stream).
    embeddings_name: ClassVar[str] = "embeddings"
    encoder_name: ClassVar[str] = "encoder"
    summary_position: ClassVar[int] = 0  # [CLS] A [SEP] B [SEP]: the first token
    embeds_token_types: ClassVar[bool] = False  # no token-type embeddings: ids are ignored

    def __init__(self, config: ModelConfig, add_pooling_layer: bool | None = None):
        super().__init__()
        if add_pooling_layer:
            raise ConfigError("add_pooling_layer=True: ModernBERT has no pooler; use a head "
                              "that pools the first token or the mean of the tokens")
        self.config = config
        self.embeddings = ModernBertEmbeddings(config)
        self.encoder = ModernBertEncoder(config)
        self.pooler = None  # what heads and hub.py look for; ModernBERT has none
        # The query stream's input at every target (XLNet's name), with query_stream only.
        self.mask_emb = (nn.Parameter(torch.empty(1, 1, config.hidden_size))
                         if modernbert_of(config).query_stream else None)
        self.init_weights()

    def init_weights(self) -> None:
        """ModernBERT's init (see the module docstring) of the embeddings and mask_emb, then
        the encoder's own; a padding row of zeros, as every litebert embedding (it takes no
        gradient, so it stays what it starts as)."""
        config = self.config
        weights = [self.embeddings.tok_embeddings.weight]
        if self.mask_emb is not None:
            weights.append(self.mask_emb)
        with torch.no_grad():
            for weight in weights:
                truncated_normal(weight, config.initializer_range,
                                 modernbert_of(config).initializer_cutoff_factor)
            self.embeddings.tok_embeddings.weight[config.pad_token_id].zero_()
            nn.init.ones_(self.embeddings.norm.weight)
        self.encoder.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                output_hidden_states: bool = False, mems=None, use_mems=None,
                document_ids=None, *, perm_mask=None, target_mapping=None,
                target_positions=None):
        """See model/backbone.py. token_type_ids are ignored (no type embeddings); use_mems
        is accepted as every backbone does (none kept). document_ids: (B, T) attend within
        documents, (N,) run on the real tokens only (litebert.data.attention_layout).
        perm_mask (B, T, T), 1 = i may not see j, and target_mapping (B, P, T) or
        target_positions (B, P): two streams (`two_streams`); hidden_states then hold the
        content stream, as XLNet's do."""
        if mems is not None:
            raise ValueError("the ModernBERT backbone keeps no memories: pass mems=None")
        states: list | None = [] if output_hidden_states else None
        if perm_mask is not None or target_mapping is not None or target_positions is not None:
            targets, weight = target_rows(target_mapping, target_positions)
            h, g = self.two_streams(input_ids, attention_mask, position_ids, document_ids,
                                    perm_mask, targets, weight, states)
            hidden = None if states is None else tuple(states) + (h,)
            return BaseModelOutput(last_hidden_state=h if g is None else g,
                                   pooler_output=None, hidden_states=hidden)
        x, layout = self.encode_with(self.encoder, input_ids, attention_mask, token_type_ids,
                                     position_ids, document_ids, states)  # (B, T, H)
        hidden = None
        if states is not None:  # every layer's input, then the output (transformers' [-1])
            hidden = tuple(layout.pad(s) for s in states) + (x,)
        return BaseModelOutput(last_hidden_state=x, pooler_output=None, hidden_states=hidden)

    def encode_with(self, encoder: ModernBertEncoder, input_ids, attention_mask=None,
                    token_type_ids=None, position_ids=None, document_ids=None,
                    states: list | None = None) -> tuple[torch.Tensor, Layout]:
        """These embeddings, then `encoder` (this model's, or ELECTRA's generator, which reads
        the discriminator's embeddings) laid out for the batch. The last hidden state
        (B, T, H), final norm included, and the layout."""
        layout, positions = self.layout(encoder, input_ids, attention_mask, position_ids,
                                        document_ids)
        x = layout.unpad(self.embeddings(input_ids))  # (B, T, E), or (1, N, E) unpadded
        x = encoder(x, layout.mask, positions, input_ids.shape[1], states)
        return layout.pad(x), layout

    def two_streams(self, input_ids, attention_mask, position_ids, document_ids, perm_mask,
                    targets, weight, states: list | None):
        """Content stream (B, T, H) (None when only the query stream is returned) and query
        stream (B, P, H) at `targets` (None without targets: the content stream alone, under
        perm_mask). The "full" layout only: padding at most."""
        if document_ids is not None:
            raise ValueError("document_ids: two-stream attention (perm_mask, targets) reads "
                             "the 'full' layout only; pass document_ids=None (padding goes in "
                             "attention_mask)")
        mask_emb = self.mask_emb
        if targets is not None and mask_emb is None:
            raise ValueError("target_mapping / target_positions: this ModernBERT backbone "
                             "has no query stream (mask_emb); build it with query_stream "
                             "true, as objective plm does")
        B, T = input_ids.shape
        positions = position_ids if position_ids is not None \
            else torch.arange(T, device=input_ids.device)  # (T,) or (B, T)
        mask = content_mask(attention_mask, perm_mask, T, input_ids.device)  # (B, 1, T, T)
        x = self.embeddings(input_ids)  # (B, T, E)
        if targets is None or mask_emb is None:  # the content stream alone, under perm_mask
            return self.encoder(x, mask, positions, T, states), None
        dtype = self.embeddings.tok_embeddings.weight.dtype
        queries = self.encoder.query_rows(attention_mask, perm_mask, targets, weight,
                                          positions, T, dtype)
        g = self.embeddings.drop(mask_emb.expand(B, targets.shape[1], -1))  # (B, P, H)
        return self.encoder.two_streams(x, g, mask, queries, positions, states)

    @classmethod
    def build_encoder(cls, config: ModelConfig) -> ModernBertEncoder:
        return ModernBertEncoder(config)

    # ---- attention and positions, once per forward -------------------------------------------

    def layout(self, encoder: ModernBertEncoder, input_ids, attention_mask, position_ids,
               document_ids) -> tuple[Layout, torch.Tensor]:
        """The batch's Layout (padding at most, documents, or unpadded rows: albert.py's
        choice) and each token's position: (T,) or (B, T), (1, N) for unpadded rows."""
        B, T = input_ids.shape
        dtype = self.embeddings.tok_embeddings.weight.dtype
        layout = batch_layout(encoder, input_ids, attention_mask, document_ids, dtype)
        if position_ids is None and layout.documents is not None:  # restart per document
            position_ids = positions_in_documents(layout.documents)  # (B, T)
        if position_ids is None:
            position_ids = torch.arange(T, device=input_ids.device)  # (T,)
        if layout.unpadding is not None:  # the padded positions of the N real tokens
            position_ids = layout.unpad(position_ids.expand(B, T)[..., None])[..., 0]  # (1, N)
        return layout, position_ids

    # ---- what heads read ---------------------------------------------------------------------

    @property
    def input_embeddings(self) -> torch.Tensor:
        return self.embeddings.tok_embeddings.weight  # (V, E)

    # ---- what layer-wise lr decay, FSDP, counts and unrolling ask (model/backbone.py) --------

    def layer_depths(self) -> tuple[list[tuple[nn.Module | nn.Parameter, int]], int]:
        """Embeddings, mask_emb and the E->H projection at depth 0, layer position k at k + 1
        (a shared module at its highest use), final_norm with the top layer (L); no pooler."""
        inputs: list[nn.Module | nn.Parameter] = [self.embeddings]
        if self.mask_emb is not None:
            inputs.append(self.mask_emb)
        parts, L = encoder_depths(self.encoder, inputs, None)
        return parts + [(self.encoder.final_norm, L)], L

    def fsdp_units(self) -> list[tuple[nn.Module, bool]]:
        return self.encoder.fsdp_units()

    @classmethod
    def flops_per_token(cls, config: ModelConfig, seq_len: int) -> float:
        """Forward + backward = 3 x forward, 2 FLOPs a multiply-add: the E->H projection,
        then per layer position Wqkv and Wo (4 H^2), GeGLU's Wi (2 H I) and Wo (H I), and
        the attention products over its keys (2 keys H): T at global positions,
        min(T, local_attention + 1) at local ones. Norms, softmax and RoPE are left out."""
        H, E = config.hidden_size, config.embedding_size
        per_layer = 4 * H * H + 3 * H * config.intermediate_size
        total = sum(per_layer + 2 * keys * H for keys in layer_keys(config, seq_len))
        projection = E * H if config.has_projection else 0
        return 6.0 * (projection + total)

    @classmethod
    def query_stream_flops_per_target(cls, config: ModelConfig, seq_len: int) -> float:
        """Training FLOPs of the query stream per target, counted as flops_per_token counts:
        per layer position Wqkv's q rows and Wo (2 H^2), GeGLU (3 H I) and the attention
        products over its keys (2 keys H). Keys and values are the content stream's,
        counted there."""
        H = config.hidden_size
        per_layer = 2 * H * H + 3 * H * config.intermediate_size
        return 6.0 * sum(per_layer + 2 * keys * H for keys in layer_keys(config, seq_len))

    @classmethod
    def unrolled_config(cls, config: ModelConfig) -> ModelConfig:
        return AlbertModel.unrolled_config(config)  # ALBERT's sharing rules; positions kept

    def unrolled_source(self, key: str) -> str:
        """Position k of the unrolled encoder copies the module position k used here."""
        return unrolled_source(self.encoder, key)


def layer_keys(config: ModelConfig, seq_len: int) -> list[int]:
    """The keys a query reads at each layer position, at rows of seq_len T: T at global
    positions, min(T, local_attention + 1) at local ones."""
    mb = modernbert_of(config)
    local = min(seq_len, mb.local_attention + 1)
    return [seq_len if k % mb.global_attn_every_n_layers == 0 else local
            for k in range(config.num_layer_positions)]
