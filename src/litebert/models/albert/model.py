"""The ALBERT backbone, top to bottom in one file.

    input ids (B, T)
      -> word + position + token-type embeddings in E-space, LayerNorm(E), dropout
      -> E->H projection (`embedding_hidden_mapping_in`; see config.embedding_projection)
      -> L x inner_group_num post-LN transformer layers, weights shared across depth
      -> last_hidden_state (B, T, H), pooler_output = tanh(dense(h[:, 0])) (B, H) if any

Cross-layer sharing. The encoder keeps two flat lists, `attentions` and `ffns`, and two index
tables saying which entry each layer position uses. With sharing "all" both tables follow
transformers' groups (layer i uses group int(i * G / L), each group holds inner_group_num
layers); "attention" / "ffn" share only that half and give the other half one module per
position; "none" gives every position its own modules. The state dict therefore names
`encoder.attentions.{n}` / `encoder.ffns.{n}`; the family adapters (litebert.families) map it to
and from transformers' layouts, e.g. ALBERT's `albert_layer_groups.{g}.albert_layers.{j}`
(n = g * inner_group_num + j) or BERT's and ELECTRA's `encoder.layer.{n}` (sharing "none").

Structure comes from config fields, not from the family: `embedding_projection` decides the
E->H projection, `use_pooler` the pooler, and this backbone's own config (`AlbertBackboneConfig`,
below) `position_numbering` the position ids (from zero, or RoBERTa's after the pad id).

AlbertModel is the "albert" entry of the backbone registry (model/backbone.py) and the
reference for its protocol: after the forward pass come what heads read (summary position,
word embeddings) and what layer-wise lr decay, FSDP, FLOP counts and unrolling ask of a
backbone.
"""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from litebert.config import DEFAULT_BACKBONE, BackboneConfig, ModelConfig
from litebert.data.attention_choice import ATTENTIONS
from litebert.model.attention import (
    Layout,
    attend,
    positions_in_documents,
)
from litebert.model.backbone import BackboneCapabilities, register_backbone
from litebert.model.base import PreTrainedModel
from litebert.model.checkpointing import LayerCheckpointing
from litebert.model.layers import (
    AutocastLayerNorm,
    activation,
    autocast_half_dtype,
    batch_layout,
    encoder_depths,
    positions_after_pad,
    sharing_tables,
    unrolled_source,
)
from litebert.model.outputs import BaseModelOutput
from litebert.models.albert.config import AlbertBackboneConfig


class AlbertEmbeddings(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        E = config.embedding_size
        self.word_embeddings = nn.Embedding(config.vocab_size, E, padding_idx=config.pad_token_id)
        # With "after_pad" numbering the pad id is the pad tokens' position: a padding row.
        numbering = AlbertBackboneConfig.of(config).position_numbering
        self.pad_position = config.pad_token_id if numbering == "after_pad" else None
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, E,
                                                padding_idx=self.pad_position)
        self.max_length = config.max_sequence_length
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, E)
        self.LayerNorm = AutocastLayerNorm(E, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None, position_ids=None):
        T = input_ids.shape[1]
        if self.pad_position is None and T > self.max_length:
            raise ValueError(f"sequence length {T} exceeds max_position_embeddings="
                             f"{self.max_length}: truncate the input")
        if position_ids is None:
            position_ids = self.default_positions(input_ids)
        x = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)  # (B, T, E)
        if token_type_ids is None:
            x = x + self.token_type_embeddings.weight[0]
        else:
            x = x + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(x))

    def default_positions(self, input_ids):
        """(T,) 0..T-1, broadcast over the batch; (B, T) with "after_pad" numbering."""
        T = input_ids.shape[1]
        if self.pad_position is None:
            return torch.arange(T, device=input_ids.device)
        # Only real tokens take positions: a padded batch may be longer than the table holds
        # (counting them costs a device sync, so only when it might be).
        if T > self.max_length:
            longest = int(input_ids.ne(self.pad_position).sum(dim=1).max())
            if longest > self.max_length:
                table = self.position_embeddings.num_embeddings
                raise ValueError(
                    f"sequence length {longest} exceeds the {self.max_length} positions of "
                    f"max_position_embeddings={table} (position ids start after "
                    f"pad_token_id={self.pad_position}): truncate the input")
        return positions_after_pad(input_ids, self.pad_position)

    def document_positions(self, document_ids):
        """(B, T) positions that restart at each document (padding at -1), numbered as
        default_positions numbers a sequence alone."""
        offsets = positions_in_documents(document_ids)  # (B, T)
        if self.pad_position is None:
            return offsets
        return torch.where(document_ids < 0, self.pad_position, offsets + self.pad_position + 1)


QKV = tuple[torch.Tensor, torch.Tensor]  # q, k and v's weights (3H, H) and biases (3H,) as one


class AlbertAttention(nn.Module):
    """Multi-head self-attention + output projection + residual + post-LayerNorm.

    q, k and v stay three parameters (LAMB's trust ratio is per tensor, as in the official
    ALBERT; the state dict keeps transformers' names) and run as one GEMM on their
    concatenation, which the encoder makes once per forward (`fused_qkv`) for all the layer
    positions that share this module."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        H = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.query = nn.Linear(H, H)
        self.key = nn.Linear(H, H)
        self.value = nn.Linear(H, H)
        self.dense = nn.Linear(H, H)
        self.LayerNorm = AutocastLayerNorm(H, eps=config.layer_norm_eps)
        self.attention_dropout = config.attention_probs_dropout_prob
        self.output_dropout = nn.Dropout(config.hidden_dropout_prob)

    def fused_qkv(self) -> QKV:
        """The q, k and v weights (3H, H) and biases (3H,) concatenated, in autocast's half
        dtype when it is on (the cast F.linear would make at every use, made here once)."""
        w = torch.cat((self.query.weight, self.key.weight, self.value.weight))  # (3H, H)
        b = torch.cat((self.query.bias, self.key.bias, self.value.bias))  # (3H,)
        dtype = autocast_half_dtype(w.device.type)
        return (w, b) if dtype is None else (w.to(dtype), b.to(dtype))

    def forward(self, x, mask=None, qkv: QKV | None = None):
        """x (B, T, H); mask: model/attention.py's, or None; qkv: fused_qkv()'s, made by
        the caller once for all uses, or None to make it here."""
        B, T, H = x.shape
        w, b = self.fused_qkv() if qkv is None else qkv  # (3H, H), (3H,)
        qkv_out = F.linear(x, w, b).view(B, T, 3, self.num_heads, H // self.num_heads)
        q, k, v = qkv_out.permute(2, 0, 3, 1, 4).unbind(0)  # each (B, nh, T, hd)
        p = self.attention_dropout if self.training else 0.0
        y = attend(q, k, v, mask, p)  # (B, nh, T, hd)
        y = y.transpose(1, 2).reshape(B, T, H)  # (B, T, H)
        return self.LayerNorm(x + self.output_dropout(self.dense(y)))


class AlbertFFN(nn.Module):
    """Position-wise feed-forward + residual + post-LayerNorm (transformers' names)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.ffn = nn.Linear(config.hidden_size, config.intermediate_size)
        self.ffn_output = nn.Linear(config.intermediate_size, config.hidden_size)
        self.full_layer_layer_norm = AutocastLayerNorm(config.hidden_size,
                                                       eps=config.layer_norm_eps)
        self.act = activation(config.hidden_act)
        # The official code drops out the FFN output; transformers' ALBERT does not (no
        # difference at inference, or with the v2 configs' dropout of 0).
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x):  # (B, T, H)
        h = self.ffn_output(self.act(self.ffn(x)))  # (B, T, I) -> (B, T, H)
        return self.full_layer_layer_norm(x + self.dropout(h))


class AlbertEncoder(LayerCheckpointing):
    def __init__(self, config: ModelConfig):
        super().__init__()
        E, H = config.embedding_size, config.hidden_size
        self.embedding_hidden_mapping_in = nn.Linear(E, H) if config.has_projection else None
        self.attention_index, self.ffn_index = sharing_tables(config)
        self.attention_dropout = config.attention_probs_dropout_prob  # every layer's
        self.attentions = nn.ModuleList(
            AlbertAttention(config) for _ in range(max(self.attention_index) + 1))
        self.ffns = nn.ModuleList(AlbertFFN(config) for _ in range(max(self.ffn_index) + 1))

    def forward(self, x, mask=None, keep: list | None = None):  # x (B, T, E)
        """The last hidden state (B, T, H); with `keep`, every layer's input is appended to
        it, then the output (L + 1 tensors, transformers' `hidden_states`)."""
        if self.embedding_hidden_mapping_in is not None:
            x = self.embedding_hidden_mapping_in(x)  # (B, T, H)
        qkv = self.fused_qkvs()
        for a, f in zip(self.attention_index, self.ffn_index, strict=True):
            if keep is not None:
                keep.append(x)
            x = self.run_position(self.position, a, f, x, mask, qkv[a])
        if keep is not None:
            keep.append(x)
        return x

    def fused_qkvs(self) -> list[QKV | None]:
        """Each attention module's fused q/k/v, made once per forward for all its layer
        positions (one concatenation and one cast, not one per position). None for modules
        under FSDP: their parameters are shards until the module's own forward gathers them,
        so each use concatenates there."""
        modules: list[AlbertAttention] = list(self.attentions)  # type: ignore[arg-type]
        return [None if hasattr(m.query.weight, "full_tensor") else m.fused_qkv()
                for m in modules]

    def position(self, a: int, f: int, x, mask, qkv: QKV | None = None):  # (B, T, H)
        """One layer position: attention module `a` (with its fused q/k/v, if made), then
        FFN module `f`."""
        return self.ffns[f](self.attentions[a](x, mask, qkv))

    def fsdp_units(self) -> list[tuple[nn.Module, bool]]:
        """Every attention and FFN module, with reshard_after_forward. A module applied at
        several depths (cross-layer sharing) stays gathered between its uses in one step
        (False), so it is gathered once per forward, not once per layer."""
        shared_attention = len(self.attentions) < len(self.attention_index)
        shared_ffn = len(self.ffns) < len(self.ffn_index)
        return ([(m, not shared_attention) for m in self.attentions]
                + [(m, not shared_ffn) for m in self.ffns])


@register_backbone(DEFAULT_BACKBONE)
class AlbertModel(PreTrainedModel):
    """The backbone: embeddings -> projection -> shared layers -> pooler.

    `add_pooling_layer`: None follows config.use_pooler; heads say True when they read the
    pooler (pre-training's SOP head) and False when they do not (MLM, tokens, spans).
    """

    config_class: ClassVar[type[BackboneConfig]] = AlbertBackboneConfig
    # [CLS] A [SEP] B [SEP]: the first token summarises the sequence
    summary_position: ClassVar[int] = 0
    embeds_token_types: ClassVar[bool] = True  # token_type_embeddings: type_vocab_size rows
    capabilities: ClassVar[BackboneCapabilities] = BackboneCapabilities(
        attentions=ATTENTIONS, pooler=True, embed_encode=True)
    # embed_encode: ELECTRA's generator runs an AlbertEncoder on these embeddings.
    embeddings_name: ClassVar[str] = "embeddings"
    encoder_name: ClassVar[str] = "encoder"

    def __init__(self, config: ModelConfig, add_pooling_layer: bool | None = None):
        super().__init__()
        self.config = config
        self.embeddings = AlbertEmbeddings(config)
        self.encoder = AlbertEncoder(config)
        H = config.hidden_size
        pooling = config.use_pooler if add_pooling_layer is None else add_pooling_layer
        self.pooler = nn.Linear(H, H) if pooling else None
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                output_hidden_states: bool = False, mems=None, use_mems=None,
                document_ids=None):
        # use_mems: accepted as every backbone does (model/backbone.py); this one keeps none.
        # document_ids: (B, T) attend within documents, (N,) run on the real tokens only
        # (litebert.data.attention_layout).
        if mems is not None:
            raise ValueError("the ALBERT backbone keeps no memories: pass mems=None")
        states: list | None = [] if output_hidden_states else None
        x, layout = self.encode_with(self.encoder, input_ids, attention_mask, token_type_ids,
                                     position_ids, document_ids, states)  # (B, T, H)
        pooled = None
        if self.pooler is not None:
            pooled = torch.tanh(self.pooler(x[:, self.summary_position]))  # (B, H)
        return BaseModelOutput(last_hidden_state=x, pooler_output=pooled, hidden_states=tuple(
            layout.pad(s) for s in states) if states is not None else None)

    def encode_with(self, encoder: AlbertEncoder, input_ids, attention_mask=None,
                    token_type_ids=None, position_ids=None, document_ids=None,
                    states: list | None = None) -> tuple[torch.Tensor, Layout]:
        """These embeddings, then `encoder` (this model's, or ELECTRA's generator, which reads
        the discriminator's embeddings) laid out for the batch: padding at most, documents
        or unpadded rows. The last hidden state (B, T, H) and the layout."""
        dtype = self.embeddings.word_embeddings.weight.dtype
        layout = batch_layout(encoder, input_ids, attention_mask, document_ids, dtype)
        if position_ids is None and layout.documents is not None:  # restart per document
            position_ids = self.embeddings.document_positions(layout.documents)
        x = self.embeddings(input_ids, token_type_ids, position_ids)  # (B, T, E)
        return layout.pad(encoder(layout.unpad(x), layout.mask, states)), layout

    @classmethod
    def build_encoder(cls, config: ModelConfig) -> AlbertEncoder:
        return AlbertEncoder(config)

    # ---- what heads read ---------------------------------------------------------------------

    @property
    def input_embeddings(self) -> torch.Tensor:
        return self.embeddings.word_embeddings.weight  # (V, E)

    # ---- what layer-wise lr decay, FSDP, counts and unrolling ask (model/backbone.py) --------

    def layer_depths(self) -> tuple[list[tuple[nn.Module | nn.Parameter, int]], int]:
        """Embeddings and the E->H projection at depth 0, layer position k at k + 1, the
        pooler level with the head (L + 2); see model/layers.py's `encoder_depths`."""
        return encoder_depths(self.encoder, [self.embeddings], self.pooler)

    def fsdp_units(self) -> list[tuple[nn.Module, bool]]:
        return self.encoder.fsdp_units()

    @classmethod
    def flops_per_token(cls, config: ModelConfig, seq_len: int) -> float:
        """Forward + backward = 3 x forward, 2 FLOPs a multiply-add: the E->H projection,
        then per layer position the Q, K, V and output projections (4 H^2), the FFN (2 H I)
        and the attention products over `seq_len` keys (2 T H). Sharing saves parameters,
        not arithmetic, so it does not enter; embedding lookups, LayerNorms and softmax are
        left out (no multiply-adds of note)."""
        H, E, T = config.hidden_size, config.embedding_size, seq_len
        per_layer = 4 * H * H + 2 * H * config.intermediate_size + 2 * T * H
        projection = E * H if config.has_projection else 0
        return 6.0 * (projection + config.num_layer_positions * per_layer)

    @classmethod
    def unrolled_config(cls, config: ModelConfig) -> ModelConfig:
        """Sharing "none", one layer per position applied (layers x inner_group_num), one
        layer per group; `config` itself when each position already has its own layer."""
        if config.sharing == "none" and config.inner_group_num == 1:
            return config
        positions = config.num_layer_positions
        return config.replace(sharing="none", num_hidden_layers=positions,
                              num_hidden_groups=positions, inner_group_num=1)

    def unrolled_source(self, key: str) -> str:
        """Position k of the unrolled encoder copies the module position k used here."""
        return unrolled_source(self.encoder, key)
