"""Permutation language modelling: XLNet's pre-training head (transformers' XLNetLMHeadModel).

The backbone's query stream at the P targets (models/xlnet/model.py) -> `lm_loss`: logits over the
vocabulary from the word embeddings (tied) and a bias of its own. Given targets, logits are
computed at the P targets only; without, at every position (the content stream). With E < H
(ALBERT-XLNet, saved in litebert's layout) a dense H->E comes first, so the decoder stays the
(V, E) embedding matrix. Loss: mean cross-entropy over the labels that are not -100, as
transformers' (0, not NaN, when there are none).

With config.use_pooler the model also has a sentence-pair head: the backbone's pooler
(tanh(dense) of the last layer's content state at <cls>, the last token) and a 2-way
classifier, trained on the data's next_sentence_label. It is the "+NSP" row of the XLNet
paper's ablation (Table 6); XLNet itself trains without it, and transformers' XLNetLMHeadModel
cannot hold it (objectives/plm.py keeps it beside an export).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from litebert.config import ModelConfig
from litebert.model.backbone import build_backbone, require_capability
from litebert.model.base import PreTrainedModel
from litebert.model.heads import SentencePairHead
from litebert.model.outputs import PermutationLMOutput

IGNORE = -100


class PermutationLMHead(nn.Module):
    """[dense H->E when E != H] -> decoder tied to the word embeddings, own bias."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        E, H = config.embedding_size, config.hidden_size
        self.dense = nn.Linear(H, E) if E != H else None
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, h, word_embeddings):  # h (..., H); word_embeddings (V, E) -> (..., V)
        if self.dense is not None:
            h = self.dense(h)  # (..., E)
        return F.linear(h, word_embeddings, self.bias)


class EncoderForPermutationLM(PreTrainedModel):
    """A two-stream backbone (config.backbone "xlnet") + the permutation LM head."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        require_capability(config, "two_stream",
                           "EncoderForPermutationLM predicts from a query stream")
        self.config = config
        self.backbone = build_backbone(config, add_pooling_layer=config.use_pooler)
        self.lm_loss = PermutationLMHead(config)
        # The "+NSP" ablation's pair head: the content stream's <cls> state, pooled.
        self.sop_classifier = SentencePairHead(config) if config.use_pooler else None
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                perm_mask=None, target_mapping=None, mems=None, use_mems=None, labels=None,
                target_positions=None, next_sentence_label=None) -> PermutationLMOutput:
        """Inputs as the backbone's (models/xlnet/model.py); labels (B, P) with targets, else
        (B, T), -100 ignored; next_sentence_label (B,) for the pair head. Returns loss (the
        mean over targets, plus the pair head's mean over sequences when labelled), logits
        (B, P, V) or (B, T, V), sop_logits (B, 2) with a pair head, mems and the backbone's
        last_hidden_state."""
        out = self.backbone(input_ids, attention_mask, token_type_ids, position_ids, mems=mems,
                          perm_mask=perm_mask, target_mapping=target_mapping,
                          use_mems=use_mems, target_positions=target_positions)
        logits = self.lm_loss(out.last_hidden_state, self.backbone.input_embeddings)
        loss = None
        if labels is not None:
            flat = labels.reshape(-1)
            losses = F.cross_entropy(logits.view(-1, logits.shape[-1]), flat,
                                     ignore_index=IGNORE, reduction="sum")
            loss = losses / (flat != IGNORE).sum().clamp(min=1)
        pair_logits = None
        if self.sop_classifier is not None:
            pair_logits = self.sop_classifier(out.pooler_output)  # (B, 2)
            if next_sentence_label is not None:
                pair_loss = F.cross_entropy(pair_logits, next_sentence_label.view(-1))
                loss = pair_loss if loss is None else loss + pair_loss
        return PermutationLMOutput(loss=loss, logits=logits, sop_logits=pair_logits,
                                   mems=out.mems, last_hidden_state=out.last_hidden_state)


__all__ = ["EncoderForPermutationLM", "PermutationLMHead"]
