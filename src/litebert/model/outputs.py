"""Output records with transformers' field names; fields read as attributes or as keys."""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch


class _Output:
    def __getitem__(self, key: str):
        return getattr(self, key)

    def keys(self) -> list[str]:
        names = [f.name for f in fields(self)]  # type: ignore[arg-type]  # subclasses are dataclasses
        return [n for n in names if getattr(self, n) is not None]

    def to_dict(self) -> dict[str, torch.Tensor]:
        return {k: getattr(self, k) for k in self.keys()}


@dataclass
class BaseModelOutput(_Output):
    last_hidden_state: torch.Tensor
    pooler_output: torch.Tensor | None = None
    # With output_hidden_states: the input of every layer position, then the last output
    # (L + 1 tensors (B, T, H); transformers' layout: [0] is after the E->H projection).
    hidden_states: tuple[torch.Tensor, ...] | None = None
    # The memories for the next segment (one tensor per layer) from a backbone that keeps
    # them (model/backbone.py); None for one that keeps none, as ALBERT.
    mems: tuple[torch.Tensor, ...] | None = None


@dataclass
class PreTrainingOutput(_Output):
    loss: torch.Tensor | None = None
    mlm_loss: torch.Tensor | None = None
    sop_loss: torch.Tensor | None = None
    # (B, T, V) without labels; with labels only the N masked positions: (N, V); with the
    # prediction slots (masked_positions) (B, P, V).
    prediction_logits: torch.Tensor | None = None
    sop_logits: torch.Tensor | None = None  # (B, 2)
    last_hidden_state: torch.Tensor | None = None


@dataclass
class MaskedLMOutput(_Output):
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None  # (B, T, V), (N, V) at the masked positions, or
    # (B, P, V) at the prediction slots
    last_hidden_state: torch.Tensor | None = None


@dataclass
class ClassifierOutput(_Output):
    """Sequence, token and multiple-choice heads."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    last_hidden_state: torch.Tensor | None = None


@dataclass
class QuestionAnsweringOutput(_Output):
    loss: torch.Tensor | None = None
    start_logits: torch.Tensor | None = None  # (B, T)
    end_logits: torch.Tensor | None = None  # (B, T)
    last_hidden_state: torch.Tensor | None = None


@dataclass
class BeamQuestionAnsweringOutput(_Output):
    """XLNet's span head (model/beam_qa.py). With start and end positions: the loss only.
    Without: a beam of S starts x E ends per row, as the official XLNet code gives it."""

    loss: torch.Tensor | None = None
    start_top_log_probs: torch.Tensor | None = None  # (B, S) log p(start), best first
    start_top_index: torch.Tensor | None = None  # (B, S)
    # (B, S * E): entry i * E + j is the j-th best end given the i-th best start.
    end_top_log_probs: torch.Tensor | None = None
    end_top_index: torch.Tensor | None = None  # (B, S * E)
    cls_logits: torch.Tensor | None = None  # (B,) answer class: > 0 leans to "no answer"
    last_hidden_state: torch.Tensor | None = None


@dataclass
class PermutationLMOutput(_Output):
    """XLNet's permutation LM (model/permutation_lm.py): logits at the P targets (B, P, V)
    when targets are given, else at every position (B, T, V)."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    sop_logits: torch.Tensor | None = None  # (B, 2): the pair head's, when it has one
    # The memories for the next segment (one (M, B, H) tensor per layer), or None.
    mems: tuple[torch.Tensor, ...] | None = None
    last_hidden_state: torch.Tensor | None = None


@dataclass
class ReplacedTokenDetectionOutput(_Output):
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None  # (B, T): > 0 means "replaced"
    last_hidden_state: torch.Tensor | None = None
