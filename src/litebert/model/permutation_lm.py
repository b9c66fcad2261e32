"""Permutation language modelling: XLNet's pre-training head (transformers' XLNetLMHeadModel).

The backbone's query stream at the P targets (model/xlnet.py) -> `lm_loss`: logits over the
vocabulary from the word embeddings (tied) and a bias of its own. Given targets, logits are
computed at the P targets only; without, at every position (the content stream). With E < H
(ALBERT-XLNet, saved in litebert's layout) a dense H->E comes first, so the decoder stays the
(V, E) embedding matrix. Loss: mean cross-entropy over the labels that are not -100, as
transformers' (0, not NaN, when there are none).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from litebert.config import AlbertConfig, ConfigError
from litebert.model.backbone import backbone_class, build_backbone
from litebert.model.base import AlbertPreTrainedModel
from litebert.model.outputs import PermutationLMOutput

IGNORE = -100


class PermutationLMHead(nn.Module):
    """[dense H->E when E != H] -> decoder tied to the word embeddings, own bias."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        E, H = config.embedding_size, config.hidden_size
        self.dense = nn.Linear(H, E) if E != H else None
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, h, word_embeddings):  # h (..., H); word_embeddings (V, E) -> (..., V)
        if self.dense is not None:
            h = self.dense(h)  # (..., E)
        return F.linear(h, word_embeddings, self.bias)


class AlbertForPermutationLM(AlbertPreTrainedModel):
    """A two-stream backbone (config.backbone "xlnet") + the permutation LM head."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        if not getattr(backbone_class(config), "two_stream", False):
            raise ConfigError(f"AlbertForPermutationLM predicts from a query stream, which "
                              f"backbone {config.backbone!r} has not: use backbone 'xlnet'")
        self.config = config
        self.albert = build_backbone(config, add_pooling_layer=False)
        self.lm_loss = PermutationLMHead(config)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                perm_mask=None, target_mapping=None, mems=None, use_mems=None, labels=None,
                target_positions=None) -> PermutationLMOutput:
        """Inputs as the backbone's (model/xlnet.py); labels (B, P) with targets, else
        (B, T), -100 ignored. Returns loss, logits (B, P, V) or (B, T, V), mems and the
        backbone's last_hidden_state."""
        out = self.albert(input_ids, attention_mask, token_type_ids, position_ids, mems=mems,
                          perm_mask=perm_mask, target_mapping=target_mapping,
                          use_mems=use_mems, target_positions=target_positions)
        logits = self.lm_loss(out.last_hidden_state, self.albert.input_embeddings)
        loss = None
        if labels is not None:
            flat = labels.reshape(-1)
            losses = F.cross_entropy(logits.view(-1, logits.shape[-1]), flat,
                                     ignore_index=IGNORE, reduction="sum")
            loss = losses / (flat != IGNORE).sum().clamp(min=1)
        return PermutationLMOutput(loss=loss, logits=logits, mems=out.mems,
                                   last_hidden_state=out.last_hidden_state)


__all__ = ["AlbertForPermutationLM", "PermutationLMHead"]
