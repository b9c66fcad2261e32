"""Replaced-token detection: ELECTRA's discriminator head (Clark et al., 2020).

Every token gets one logit, > 0 meaning "this token was replaced by the generator". The head is
transformers' ElectraDiscriminatorPredictions, `discriminator_predictions.dense` (H->H),
hidden_act, `discriminator_predictions.dense_prediction` (H->1), so the ELECTRA adapter maps
only the backbone's names (ours: EncoderForReplacedTokenDetection; theirs:
ElectraForPreTraining). The loss is transformers': mean binary cross-entropy with logits over
the tokens where attention_mask == 1 (over all tokens without a mask); labels 1 = replaced.
There is no pooler: the discriminator reads every position.
"""

from __future__ import annotations

import torch.nn.functional as F

from litebert.config import ModelConfig
from litebert.model.backbone import build_backbone
from litebert.model.base import PreTrainedModel
from litebert.model.head_parts import ClassificationHead, classifier_spec
from litebert.model.heads import documents
from litebert.model.outputs import ReplacedTokenDetectionOutput


class DiscriminatorPredictions(ClassificationHead):
    """dense H->H, hidden_act, dense_prediction H->1: one logit per token
    (head_parts.classifier_spec's "replaced")."""

    def __init__(self, config: ModelConfig):
        super().__init__(classifier_spec(config, "replaced"), config.hidden_size, 1)

    def forward(self, h):  # (B, T, H) -> (B, T)
        return super().forward(h).squeeze(-1)


def detection_loss(logits, labels, attention_mask=None):
    """Mean BCE-with-logits over real tokens (attention_mask == 1); labels 1 = replaced."""
    target = labels.to(logits.dtype)  # (B, T)
    if attention_mask is None:
        return F.binary_cross_entropy_with_logits(logits, target)
    real = attention_mask == 1  # (B, T); padding says nothing about replacement
    return F.binary_cross_entropy_with_logits(logits[real], target[real])


class EncoderForReplacedTokenDetection(PreTrainedModel):
    """The ELECTRA discriminator: backbone (no pooler) + one logit per token."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.backbone = build_backbone(config, add_pooling_layer=False)
        self.discriminator_predictions = DiscriminatorPredictions(config)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                labels=None, document_ids=None) -> ReplacedTokenDetectionOutput:
        """input_ids (B, T); labels (B, T) of 0 (original) / 1 (replaced), padding ignored
        through attention_mask; document_ids as AlbertModel reads them. Returns loss (mean),
        logits (B, T), last_hidden_state."""
        out = self.backbone(input_ids, attention_mask, token_type_ids, position_ids,
                          **documents(document_ids))
        logits = self.discriminator_predictions(out.last_hidden_state)  # (B, T)
        loss = None if labels is None else detection_loss(logits, labels, attention_mask)
        return ReplacedTokenDetectionOutput(loss=loss, logits=logits,
                                            last_hidden_state=out.last_hidden_state)


__all__ = ["EncoderForReplacedTokenDetection", "DiscriminatorPredictions", "detection_loss"]
