"""XLNet's span head for SQuAD 2.0: a start, an end that depends on the start, and an answer
classifier; at inference a beam of starts x ends per window.

EncoderForBeamQuestionAnswering is transformers' XLNetForQuestionAnswering on any backbone
(held at `backbone`, as every head: model/backbone.py), with transformers' module names, so
the family adapters rename only the backbone:

    start_logits   dense H->1 on every token
    end_logits     dense_0 2H->H on [token; start token], tanh, LayerNorm, dense_1 H->1: the
                   end's score depends on where the span starts
    answer_class   dense_0 2H->H on [start state; cls token], tanh, dense_1 H->1 without bias:
                   one logit per window, > 0 leans to "no answer" (trained on is_impossible)

p_mask (B, T), 1 = this token cannot be in an answer, pushes its start and end logits to
-1e30 (-65500 in fp16). The cls token is cls_index (B,) when given, else the backbone's
summary_position (XLNet: <cls>, last).

Training (start_positions and end_positions given): the end is scored from the gold start,
loss = (CE(start) + CE(end)) / 2 + 0.5 * BCE(cls_logits, is_impossible), the answer class
reading the gold start's state, as transformers computes it. transformers adds the BCE term
only when cls_index is also given; here it defaults to the summary position.

Inference: the S best starts by log-probability, the E best ends for each, and the answer
class reading the expected start state (the states weighted by p(start)); S and E are the
config's start_n_top and end_n_top (config.json's keys, XLNet's defaults 5 and 5). Two
deliberate differences from transformers' outputs, both the official XLNet code's, whose
run_squad.py ranks spans by start + end log-probability:
- the *_log_probs are log-probabilities (transformers returns the probabilities under these
  names);
- end_top_* are start-major: entry i * E + j is the j-th end of the i-th start (transformers'
  are end-major, j * S + i, while its SQuAD post-processing reads them start-major).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from litebert.config import ConfigError, ModelConfig
from litebert.model.backbone import build_backbone
from litebert.model.base import PreTrainedModel
from litebert.model.outputs import BeamQuestionAnsweringOutput

DEFAULT_BEAM = 5  # XLNet's start_n_top and end_n_top


def beam_sizes(config: ModelConfig) -> tuple[int, int]:
    """(start_n_top, end_n_top): config fields if it has them, else config.json's keys (kept in
    config.extra), else 5 and 5."""
    sizes = []
    for name in ("start_n_top", "end_n_top"):
        value = getattr(config, name, config.extra.get(name, DEFAULT_BEAM))
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"config.json's {name}={value!r}: the beam size must be a whole "
                              f"number >= 1 (XLNet's is {DEFAULT_BEAM})")
        sizes.append(value)
    return sizes[0], sizes[1]


def mask_logits(logits: torch.Tensor, p_mask: torch.Tensor | None) -> torch.Tensor:
    """logits where p_mask is 0, -1e30 (-65500 in fp16) where it is 1 (transformers' formula,
    so that masked logits match it exactly)."""
    if p_mask is None:
        return logits
    p = p_mask.to(logits.dtype)
    big = 65500.0 if logits.dtype == torch.float16 else 1e30
    return logits * (1 - p) - big * p


class StartLogits(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, 1)

    def forward(self, hidden, p_mask=None):  # (B, T, H) -> (B, T)
        return mask_logits(self.dense(hidden).squeeze(-1), p_mask)


class EndLogits(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        H = config.hidden_size
        self.dense_0 = nn.Linear(2 * H, H)
        self.LayerNorm = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.dense_1 = nn.Linear(H, 1)

    def forward(self, hidden, start_states, p_mask=None):
        """hidden (B, T, H), start_states (B, S, H): the start token of S spans -> (B, S, T)."""
        H = hidden.size(-1)
        # dense_0 on [token; start] as two halves: the (B, S, T, 2H) concatenation is never
        # built and the token half is computed once for all S starts.
        w_token, w_start = self.dense_0.weight.split(H, dim=1)  # (H, H) each
        token = F.linear(hidden, w_token)  # (B, T, H)
        start = F.linear(start_states, w_start, self.dense_0.bias)  # (B, S, H)
        x = torch.tanh(token[:, None] + start[:, :, None])  # (B, S, T, H)
        logits = self.dense_1(self.LayerNorm(x)).squeeze(-1)  # (B, S, T)
        return mask_logits(logits, None if p_mask is None else p_mask[:, None])


class AnswerClass(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        H = config.hidden_size
        self.dense_0 = nn.Linear(2 * H, H)
        self.dense_1 = nn.Linear(H, 1, bias=False)

    def forward(self, start_state, cls_state):  # (B, H), (B, H) -> (B,)
        x = torch.tanh(self.dense_0(torch.cat([start_state, cls_state], dim=-1)))  # (B, H)
        return self.dense_1(x).squeeze(-1)


def _rows(hidden: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """hidden[b, index[b]] for every row b: (B, T, H), (B,) -> (B, H)."""
    return hidden[torch.arange(hidden.size(0), device=hidden.device), index.reshape(-1)]


class EncoderForBeamQuestionAnswering(PreTrainedModel):
    """Start, start-conditioned end and answer class (XLNetForQuestionAnswering); see the
    module docstring for the outputs."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.start_n_top, self.end_n_top = beam_sizes(config)
        self.backbone = build_backbone(config, add_pooling_layer=False)
        self.start_logits = StartLogits(config)
        self.end_logits = EndLogits(config)
        self.answer_class = AnswerClass(config)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                start_positions=None, end_positions=None, is_impossible=None, cls_index=None,
                p_mask=None) -> BeamQuestionAnsweringOutput:
        out = self.backbone(input_ids, attention_mask, token_type_ids, position_ids, use_mems=False)
        result = self.head_outputs(out.last_hidden_state, start_positions=start_positions,
                                   end_positions=end_positions, is_impossible=is_impossible,
                                   cls_index=cls_index, p_mask=p_mask)
        result.last_hidden_state = out.last_hidden_state
        return result

    def head_outputs(self, hidden, start_positions=None, end_positions=None,
                     is_impossible=None, cls_index=None, p_mask=None
                     ) -> BeamQuestionAnsweringOutput:
        """The head on the backbone's last hidden states (B, T, H): the loss with start and
        end positions, else the beam."""
        if cls_index is None:
            cls_state = hidden[:, self.backbone.summary_position]  # (B, H)
        else:
            cls_state = _rows(hidden, cls_index)  # (B, H)
        start_logits = self.start_logits(hidden, p_mask)  # (B, T)
        if start_positions is not None and end_positions is not None:
            loss = self._loss(hidden, start_logits, cls_state, start_positions.reshape(-1),
                              end_positions.reshape(-1), is_impossible, p_mask)
            return BeamQuestionAnsweringOutput(loss=loss)
        return self._beam(hidden, start_logits, cls_state, p_mask)

    def _loss(self, hidden, start_logits, cls_state, start_positions, end_positions,
              is_impossible, p_mask):
        start_state = _rows(hidden, start_positions)  # (B, H): the gold start's
        end_logits = self.end_logits(hidden, start_state[:, None], p_mask).squeeze(1)  # (B, T)
        loss = (F.cross_entropy(start_logits, start_positions)
                + F.cross_entropy(end_logits, end_positions)) / 2
        if is_impossible is not None:
            cls_logits = self.answer_class(start_state, cls_state)  # (B,)
            target = is_impossible.reshape(-1).to(cls_logits.dtype)
            # XLNet's weight: the answer class's loss on the scale of the span losses.
            loss = loss + 0.5 * F.binary_cross_entropy_with_logits(cls_logits, target)
        return loss

    def _beam(self, hidden, start_logits, cls_state, p_mask) -> BeamQuestionAnsweringOutput:
        B, T, H = hidden.shape
        S, E = min(self.start_n_top, T), min(self.end_n_top, T)
        start_log_probs = start_logits.log_softmax(-1)  # (B, T)
        start_top_log_probs, start_top_index = start_log_probs.topk(S, dim=-1)  # (B, S)
        start_states = hidden.gather(1, start_top_index[..., None].expand(B, S, H))  # (B, S, H)
        end_log_probs = self.end_logits(hidden, start_states, p_mask).log_softmax(-1)  # (B,S,T)
        end_top_log_probs, end_top_index = end_log_probs.topk(E, dim=-1)  # (B, S, E)
        # One answer-class logit per window: it reads the expected start, not a beam entry.
        expected_start = torch.einsum("bth,bt->bh", hidden, start_logits.softmax(-1))  # (B, H)
        return BeamQuestionAnsweringOutput(
            start_top_log_probs=start_top_log_probs, start_top_index=start_top_index,
            end_top_log_probs=end_top_log_probs.reshape(B, S * E),
            end_top_index=end_top_index.reshape(B, S * E),
            cls_logits=self.answer_class(expected_start, cls_state))
