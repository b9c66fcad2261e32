"""SQuAD 2.0 answers from XLNet's beam head (model/beam_qa.py), as the official XLNet
run_squad.py writes them.

Per window the head gives the S best starts and, for each, the E best ends (log-probabilities)
and one answer-class logit. A question's candidates are every (start, end) pair of every
window, scored start + end log-probability, kept when both tokens are in the context, the
start is in the window where it has the most context, start <= end and the span is at most
max_answer_length tokens. The best distinct texts form the n-best list; the question's best
span is its first (""  when no pair is valid). Its null odds are the lowest answer-class
logit over its windows: unlike BERT's post-processing (tasks/squad.py), the span scores do
not enter them, since the answer class was trained to say "no answer" on its own.

The result has postprocess's shape, so tasks/qa.py's flow applies unchanged: fit the
threshold on dev (fit_null_threshold), answer "" where null odds exceed it
(apply_null_threshold), score with squad_v2_official.

One difference from the official code: it also drops spans that start or end on a window's
last context token (it tests index >= paragraph_len - 1); here every context token may.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from litebert.tasks.squad import (
    SquadError,
    SquadExample,
    SquadFeature,
    features_by_example,
)

__all__ = ["FeatureBeam", "beam_p_mask", "beam_postprocess", "feature_beams"]

NO_SPAN_LOG_PROB = -1e6  # the official score of the stand-in "" when no span is valid


@dataclass
class FeatureBeam:
    """One window's beam, token indices counted in the feature's own input_ids (without
    batch padding: shift them back by the padding on the left)."""

    start_log_probs: np.ndarray  # (S,)
    start_index: np.ndarray  # (S,)
    end_log_probs: np.ndarray  # (S * E,): entry i * E + j is the j-th end of the i-th start
    end_index: np.ndarray  # (S * E,)
    cls_logit: float


def feature_beams(start_log_probs, start_index, end_log_probs, end_index, cls_logits,
                  left_padding: Sequence[int]) -> list[FeatureBeam]:
    """One FeatureBeam per row of a batch's beam outputs (arrays or CPU tensors, (B, S),
    (B, S), (B, S * E), (B, S * E), (B,)), token indices shifted back by each row's padding
    on the left, so they count in the feature's own input_ids."""
    rows = [np.asarray(x) for x in (start_log_probs, start_index, end_log_probs, end_index)]
    cls = np.asarray(cls_logits, dtype=np.float64).reshape(-1)
    return [FeatureBeam(start_log_probs=rows[0][b], start_index=rows[1][b] - pad,
                        end_log_probs=rows[2][b], end_index=rows[3][b] - pad,
                        cls_logit=float(cls[b]))
            for b, pad in enumerate(left_padding)]


def beam_p_mask(feature: SquadFeature, cls_index: int) -> list[int]:
    """XLNet's p_mask for a window: 0 on context tokens and on the cls token (where an
    impossible question's start and end point in training), 1 elsewhere."""
    return [0 if offset is not None or i == cls_index else 1
            for i, offset in enumerate(feature.offsets)]


def beam_postprocess(examples: Sequence[SquadExample], features: Sequence[SquadFeature],
                     beams: Sequence[FeatureBeam], *, n_best_size: int = 20,
                     max_answer_length: int = 30
                     ) -> tuple[dict[str, str], dict[str, float], dict[str, list[dict]]]:
    """(best spans, null odds, n-best lists) per question id; see the module docstring."""
    if len(beams) != len(features):
        raise SquadError(f"{len(features)} features but {len(beams)} beams")
    groups = features_by_example(examples, features, n_best_size, max_answer_length)
    spans: dict[str, str] = {}
    null_odds: dict[str, float] = {}
    nbest: dict[str, list[dict]] = {}
    for example, group in zip(examples, groups, strict=True):
        found = np.concatenate([np.zeros((0, 5)), *(
            _candidates(features[i], beams[i], i, max_answer_length) for i in group)])
        entries = _nbest(example.context, features, found, n_best_size)
        spans[example.qid] = entries[0]["text"]
        null_odds[example.qid] = min((float(beams[i].cls_logit) for i in group),
                                     default=float("inf"))
        nbest[example.qid] = entries
    return spans, null_odds, nbest


def _candidates(feature: SquadFeature, beam: FeatureBeam, f: int,
                max_length: int) -> np.ndarray:
    """The valid (feature, start, end, start log-prob, end log-prob) rows of one beam, in
    beam order (start rank, then end rank)."""
    starts = np.asarray(beam.start_index, dtype=np.int64)
    ends = np.asarray(beam.end_index, dtype=np.int64)
    if ends.size % max(starts.size, 1):
        raise SquadError(f"feature {f}: {ends.size} beam ends do not divide among "
                         f"{starts.size} starts")
    per_start = ends.size // max(starts.size, 1)
    starts = np.repeat(starts, per_start)  # (S * E,), aligned with the ends
    start_lp = np.repeat(np.asarray(beam.start_log_probs, dtype=np.float64), per_start)
    end_lp = np.asarray(beam.end_log_probs, dtype=np.float64)
    in_context = np.array([o is not None for o in feature.offsets] + [False])  # last: outside
    best_window = np.array(list(feature.max_context) + [False], dtype=bool)
    n = len(feature.offsets)
    # Indices outside the window (e.g. padding) point at the trailing False.
    s = np.where((starts >= 0) & (starts < n), starts, n)
    e = np.where((ends >= 0) & (ends < n), ends, n)
    length = e - s + 1
    ok = in_context[s] & in_context[e] & best_window[s] & (length >= 1) & (length <= max_length)
    return np.stack([np.full(ok.sum(), f), s[ok], e[ok], start_lp[ok], end_lp[ok]], axis=1)


def _nbest(context: str, features: Sequence[SquadFeature], found: np.ndarray,
           n_best: int) -> list[dict]:
    """The n_best distinct texts by start + end log-probability (ties in beam order), with
    their probabilities; a stand-in "" when no span is valid."""
    kept: list[tuple[str, float, float]] = []
    seen: set[str] = set()
    for k in np.argsort(-(found[:, 3] + found[:, 4]), kind="stable").tolist():
        if len(kept) >= n_best:
            break
        f, start, end, s, e = found[k].tolist()
        first, last = features[int(f)].offsets[int(start)], features[int(f)].offsets[int(end)]
        assert first is not None and last is not None  # _candidates kept context tokens only
        text = context[first[0]:last[1]].strip()
        if text and text not in seen:  # a span of whitespace only is no answer
            seen.add(text)
            kept.append((text, s, e))
    if not kept:
        kept.append(("", NO_SPAN_LOG_PROB, NO_SPAN_LOG_PROB))
    totals = np.array([s + e for _, s, e in kept])
    weights = np.exp(totals - totals.max())
    return [{"text": t, "probability": p, "start_log_prob": s, "end_log_prob": e}
            for (t, s, e), p in zip(kept, (weights / weights.sum()).tolist(), strict=True)]
