"""Tests for litebert.tasks.metrics: GLUE, SQuAD (official rules) and RACE."""

from __future__ import annotations

import logging
import math
import warnings
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litebert.tasks.metrics import (
    exact_match,
    f1_score,
    glue_metrics,
    normalize_answer,
    primary_metric,
    race_accuracy,
    squad_evaluate,
    squad_v2_official,
)

# ---------------------------------------------------------------------------------------
# GLUE


def test_cola_mcc_by_hand():
    # TP=1 (i0), FP=1 (i1), TN=2, FN=0: (1*2 - 1*0) / sqrt(2 * 1 * 3 * 2) = 2 / sqrt(12)
    out = glue_metrics("cola", [1, 1, 0, 0], [1, 0, 0, 0])
    assert out == {"mcc": pytest.approx(2 / math.sqrt(12))}


def test_ax_reports_mcc():
    assert glue_metrics("ax", [0, 1, 2], [0, 1, 2]) == {"mcc": pytest.approx(1.0)}


def test_mrpc_accuracy_f1_by_hand():
    # Right at i0, i2, i3 -> accuracy 3/5. TP=2 (i0, i3), FP=1 (i1), FN=1 (i4):
    # F1 = 2*2 / (2*2 + 1 + 1) = 2/3; acc_and_f1 = (0.6 + 2/3) / 2.
    out = glue_metrics("mrpc", [1, 1, 0, 1, 0], np.array([1, 0, 0, 1, 1]))
    assert out == pytest.approx({"accuracy": 0.6, "f1": 2 / 3, "acc_and_f1": (0.6 + 2 / 3) / 2})
    assert set(glue_metrics("qqp", [1], [1])) == {"accuracy", "f1", "acc_and_f1"}


def test_stsb_correlations_by_hand():
    # Ranks agree -> Spearman 1. Pearson: prediction deviations (-10, -7, 17)/3, label
    # deviations (-1, 0, 1); cov sum = 27/3 = 9, norms sqrt(438/9) and sqrt(2):
    # r = 9 / sqrt(876/9) = 27 / sqrt(876).
    out = glue_metrics("stsb", [1.0, 2.0, 10.0], [1.0, 2.0, 3.0])
    pearson = 27 / math.sqrt(876)
    assert out == pytest.approx({"pearson": pearson, "spearman": 1.0,
                                 "corr": (pearson + 1.0) / 2})
    # A one-output regression head gives (n, 1) scores.
    assert glue_metrics("regression", [[1.0], [2.0]], [3.0, 5.0])["corr"] == pytest.approx(1.0)


@pytest.mark.parametrize("task", ["sst2", "mnli", "mnli_matched", "mnli_mismatched", "qnli",
                                  "rte", "wnli", "classification"])
def test_accuracy_tasks(task):
    assert glue_metrics(task, [0, 2, 1, 1], [0, 1, 1, 1]) == {"accuracy": 0.75}


def test_logits_are_argmaxed_and_task_spellings():
    logits = np.array([[0.1, 0.9], [2.0, -1.0], [0.0, 3.0]])  # -> 1, 0, 1
    assert glue_metrics("SST-2", logits, [1, 0, 0]) == {"accuracy": pytest.approx(2 / 3)}
    assert primary_metric("STS-B") == "corr"


def test_degenerate_inputs_give_zero_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert glue_metrics("cola", [1, 1, 1], [0, 1, 0]) == {"mcc": 0.0}
        assert glue_metrics("cola", [1, 1], [1, 1]) == {"mcc": 0.0}
        assert glue_metrics("stsb", [2.0, 2.0, 2.0], [1.0, 2.0, 3.0]) == {
            "pearson": 0.0, "spearman": 0.0, "corr": 0.0}
        assert glue_metrics("stsb", [1.5], [3.0])["corr"] == 0.0
        # No positive class anywhere: F1 0.0, accuracy still counts.
        assert glue_metrics("mrpc", [0, 0], [0, 0]) == {
            "accuracy": 1.0, "f1": 0.0, "acc_and_f1": 0.5}


def test_glue_errors_name_the_problem():
    with pytest.raises(ValueError, match="3 predictions but 2 labels"):
        glue_metrics("sst2", [0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="empty"):
        glue_metrics("cola", [], [])
    with pytest.raises(ValueError, match="unknown GLUE task 'squad'"):
        glue_metrics("squad", [0], [0])
    with pytest.raises(ValueError, match="NaN"):
        glue_metrics("stsb", [float("nan"), 1.0], [1.0, 2.0])


@pytest.mark.parametrize("task, key", [("cola", "mcc"), ("ax", "mcc"), ("stsb", "corr"),
                                       ("regression", "corr"), ("mrpc", "acc_and_f1"),
                                       ("qqp", "acc_and_f1"), ("mnli", "accuracy"),
                                       ("rte", "accuracy"), ("classification", "accuracy")])
def test_primary_metric_is_a_reported_key(task, key):
    assert primary_metric(task) == key
    regression = key == "corr"
    pred, gold = ([1.0, 2.0], [1.0, 3.0]) if regression else ([0, 1], [0, 1])
    assert key in glue_metrics(task, pred, gold)


# ---------------------------------------------------------------------------------------
# SQuAD: answer normalisation, EM, F1


@pytest.mark.parametrize("raw, normal", [
    ("The  Cat!", "cat"), ("an apple", "apple"), ("theater", "theater"),
    ("A man, a plan", "man plan"), ("  Hello,\tWorld  ", "hello world"),
    ("the-end", "theend"),  # punctuation goes first, so "the-end" is one word
    ("Anne and the", "anne and"), ("", ""),
])
def test_normalize_answer(raw, normal):
    assert normalize_answer(raw) == normal


def test_exact_match_and_f1_by_hand():
    assert exact_match("The Cat.", "cat") == 1.0
    assert exact_match("cat sat", "sat cat") == 0.0
    # [cat, sat] vs [cat, sat, down]: P = 1, R = 2/3, F1 = 2PR/(P+R) = 0.8
    assert f1_score("the cat sat", "a cat sat down") == pytest.approx(0.8)
    # [cat, cat] vs [cat]: one common token, P = 1/2, R = 1, F1 = 2/3
    assert f1_score("cat cat", "cat") == pytest.approx(2 / 3)
    assert f1_score("sat cat", "cat sat") == 1.0
    assert f1_score("", "") == 1.0 and f1_score("the", "") == 1.0  # both normalise to ""
    assert f1_score("cat", "") == 0.0 and f1_score("", "cat") == 0.0
    assert f1_score("dog", "cat") == 0.0


# ---------------------------------------------------------------------------------------
# SQuAD: squad_evaluate


def _dataset(questions: list[dict]) -> dict:
    """Wrap question dicts into SQuAD's article / paragraph / qas nesting (two paragraphs)."""
    half = len(questions) // 2
    paragraphs = [{"context": "...", "qas": questions[:half]},
                  {"context": "...", "qas": questions[half:]}]
    return {"version": "test", "data": [{"title": "t", "paragraphs": paragraphs}]}


def _qa(qid: str, answers: list[str], impossible: bool | None = None) -> dict:
    qa = {"id": qid, "question": "?", "answers": [{"text": a, "answer_start": 0}
                                                   for a in answers]}
    if impossible is not None:
        qa["is_impossible"] = impossible
    return qa


V1 = _dataset([_qa("q1", ["Denver Broncos", "the Broncos"]),
               _qa("q2", ["Santa Clara, California"]),
               _qa("q3", ["1966"])])


def test_squad_v1_by_hand(caplog):
    # q1: "Broncos" equals "the Broncos" after normalisation -> EM 1, F1 1.
    # q2: [santa, clara] vs [santa, clara, california] -> EM 0, F1 2*2/(2+3) = 0.8.
    # q3: "1966" -> EM 1, F1 1. Totals: EM 2/3, F1 2.8/3.
    preds = {"q1": "Broncos", "q2": "Santa Clara", "q3": "1966"}
    out = squad_evaluate(V1, preds)
    assert out == pytest.approx({"exact": 200 / 3, "f1": 280 / 3, "total": 3})
    # A missing prediction scores 0 and stays in the total (also accepts the "data" list).
    del preds["q3"]
    with caplog.at_level(logging.WARNING, logger="litebert"):
        out = squad_evaluate(V1["data"], preds)
    assert out == pytest.approx({"exact": 100 / 3, "f1": 180 / 3, "total": 3, "missing": 1})
    assert "1 of 3 SQuAD questions have no prediction" in caplog.text


# q1 has an answer, predicted partly: EM 0, F1 2*1/(1+2) = 2/3.  na 0.1
# q2 has an answer, predicted exactly: EM 1, F1 1.              na 0.2
# q3 unanswerable, predicted "": EM 1, F1 1.                    na 0.4
# q4 has an answer, words swapped: EM 0, F1 1.                  na 0.7
# q5 unanswerable, predicted an answer: EM 0, F1 0.             na 0.9
V2 = _dataset([_qa("q1", ["Denver Broncos"], False), _qa("q2", ["Santa Clara"], False),
               _qa("q3", [], True), _qa("q4", ["cat sat"], False), _qa("q5", [], True)])
V2_PREDS = {"q1": "Broncos", "q2": "Santa Clara", "q3": "", "q4": "sat cat",
            "q5": "Levi's Stadium"}
V2_NA = {"q1": 0.1, "q2": 0.2, "q3": 0.4, "q4": 0.7, "q5": 0.9}


# The figures of V2 / V2_PREDS / V2_NA worked out by hand (see test_squad_v2_by_hand).
V2_EXPECTED = {
    "exact": 40.0, "f1": 1100 / 15, "total": 5,
    "HasAns_exact": 100 / 3, "HasAns_f1": 800 / 9, "HasAns_total": 3,
    "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2,
    "best_exact": 60.0, "best_exact_thresh": 0.2,
    "best_f1": 1400 / 15, "best_f1_thresh": 0.7,
}


def test_squad_v2_by_hand():
    out = squad_evaluate(V2, V2_PREDS, na_probs=V2_NA)
    # Default threshold 1.0: every question answered as predicted.
    # EM 0+1+1+0+0 = 2 -> 40; F1 2/3+1+1+1+0 = 11/3 -> 73.3.
    # HasAns (q1, q2, q4): EM 1/3, F1 (2/3+1+1)/3 = 8/9. NoAns (q3, q5): 1/2 and 1/2.
    # Best threshold: abstain on all first (the 2 unanswerable right: score 2), then answer
    # in na order, adding raw score (answerable) or raw - 1 (unanswerable):
    #   F1: q1 +2/3 -> 8/3, q2 +1 -> 11/3, q3 +0 -> 11/3, q4 +1 -> 14/3 (best), q5 -1.
    #   EM: q1 +0 -> 2, q2 +1 -> 3 (best), q3 +0, q4 +0, q5 -1.
    assert out == pytest.approx(V2_EXPECTED)
    # Threshold 0.5: q4 and q5 are declared unanswerable -> q4 scores 0, q5 scores 1.
    out = squad_evaluate(V2, V2_PREDS, na_probs=V2_NA, na_prob_thresh=0.5)
    assert out["exact"] == pytest.approx(60.0) and out["f1"] == pytest.approx(1100 / 15)
    # Applying the best thresholds reproduces the best scores.
    assert squad_evaluate(V2, V2_PREDS, na_probs=V2_NA, na_prob_thresh=0.7)["f1"] == \
        pytest.approx(1400 / 15)
    assert squad_evaluate(V2, V2_PREDS, na_probs=V2_NA, na_prob_thresh=0.2)["exact"] == \
        pytest.approx(60.0)


def test_squad_version_detection_and_sides():
    out = squad_evaluate(V2, V2_PREDS)  # "is_impossible" keys -> v2, no na_probs
    assert "HasAns_total" in out and "best_f1" not in out
    only_answerable = _dataset([_qa("a", ["x"], False), _qa("b", ["y"], False)])
    out = squad_evaluate(only_answerable, {"a": "x", "b": "z"})
    assert out["HasAns_exact"] == 50.0 and "NoAns_total" not in out
    assert squad_evaluate(V1, {}, version_2=True)["HasAns_total"] == 3
    with pytest.raises(ValueError, match="na_probs only apply to SQuAD v2.0"):
        squad_evaluate(V1, {}, na_probs={"q1": 0.5})


def test_squad_answer_nothing_threshold():
    data = _dataset([_qa("u1", [], True), _qa("u2", [], True)])
    out = squad_evaluate(data, {"u1": "x", "u2": "y"}, na_probs={"u1": 0.5, "u2": 0.25})
    assert out["best_exact"] == 100.0 and out["best_exact_thresh"] == 0.0  # as official
    # With a na_prob <= 0, 0.0 would answer u1: the threshold goes below the smallest.
    out = squad_evaluate(data, {"u1": "x", "u2": "y"}, na_probs={"u1": -2.0, "u2": 3.0})
    assert out["best_f1"] == 100.0 and out["best_f1_thresh"] < -2.0


def test_squad_equal_na_probs_are_one_step():
    # Answering "a" gains 1 and answering "u" loses 1, both at na 0.5: no threshold answers
    # only one of them, so the best is abstaining on both (1 of 2), not 2 of 2.
    data = _dataset([_qa("a", ["x"], False), _qa("u", [], True)])
    out = squad_evaluate(data, {"a": "x", "u": "y"}, na_probs={"a": 0.5, "u": 0.5})
    assert out["best_exact"] == 50.0 and out["best_exact_thresh"] == 0.0


def test_squad_errors():
    with pytest.raises(ValueError, match="na_probs has no entry for question 'q2'"):
        squad_evaluate(V2, V2_PREDS, na_probs={"q1": 0.1})
    with pytest.raises(ValueError, match="'data' key"):
        squad_evaluate({"version": "1.1"}, {})
    with pytest.raises(ValueError, match="no questions"):
        squad_evaluate([], {})
    with pytest.raises(ValueError, match="'q1' occurs twice"):
        squad_evaluate(_dataset([_qa("q1", ["x"]), _qa("q1", ["y"])]), {})
    with pytest.raises(TypeError, match="prediction for question 'q1' is int"):
        squad_evaluate(V1, {"q1": 3})


def test_squad_v2_official_by_hand():
    out = squad_v2_official(V2, V2_PREDS, V2_NA)
    # At na_prob_thresh 1.0 the same figures as squad_evaluate (see test_squad_v2_by_hand);
    # the best search walks q1..q5 from 2: F1 +2/3, +1, +0, +1 (best 14/3 at 0.7), -1.
    assert out == pytest.approx(V2_EXPECTED)
    assert isinstance(out["total"], int)  # as the script prints it
    # Where the script differs from squad_evaluate: equal na_probs are walked one by one
    # (answering "a" alone looks best), and a non-empty prediction for an unanswerable
    # question costs 1 even when it normalises to "".
    data = _dataset([_qa("a", ["x"], False), _qa("u", [], True)])
    tied = squad_v2_official(data, {"a": "x", "u": "y"}, {"a": 0.5, "u": 0.5})
    assert (tied["best_exact"], tied["best_exact_thresh"]) == (100.0, 0.5)
    assert squad_evaluate(data, {"a": "x", "u": "y"}, na_probs={"a": 0.5, "u": 0.5})[
        "best_exact"] == 50.0
    article = squad_v2_official(data, {"a": "", "u": "the"}, {"a": 0.1, "u": 0.2})
    assert article["NoAns_exact"] == 100.0  # "the" normalises to "": right
    assert (article["best_exact"], article["best_exact_thresh"]) == (50.0, 0.0)  # charged -1
    # Above na_prob_thresh a question scores 1.0 if unanswerable, else 0.0, whatever it says.
    over = squad_v2_official(data, {"a": "x", "u": "y"}, {"a": 2.0, "u": 2.0})
    assert (over["HasAns_exact"], over["NoAns_exact"]) == (0.0, 100.0)


# An independent reference for the v2.0 best-threshold search: try every threshold.

def _ref_tokens(text: str) -> list[str]:
    # Valid for the generated texts: lower-case words, no punctuation.
    return [w for w in text.lower().split() if w not in ("a", "an", "the")]


def _ref_scores(prediction: str, golds: list[str]) -> tuple[Fraction, Fraction]:
    golds = [g for g in golds if _ref_tokens(g)] or [""]
    exact, f1 = Fraction(0), Fraction(0)
    for gold in golds:
        p, g = _ref_tokens(prediction), _ref_tokens(gold)
        exact = max(exact, Fraction(int(p == g)))
        if not p or not g:
            f1 = max(f1, Fraction(int(p == g)))
        else:
            common = sum((Counter(p) & Counter(g)).values())
            if common:
                precision, recall = Fraction(common, len(p)), Fraction(common, len(g))
                f1 = max(f1, 2 * precision * recall / (precision + recall))
    return exact, f1


def _brute_force_best(cases: list[tuple], na_probs: dict, which: int) -> tuple[float, float]:
    """Max over thresholds t in {-inf} + na_probs of the score with na > t -> abstain."""
    def score(t: float) -> Fraction:
        total = Fraction(0)
        for qid, golds, prediction in cases:
            if prediction is None:
                continue  # missing: 0 at every threshold
            if na_probs[qid] > t:
                total += not golds
            else:
                total += _ref_scores(prediction, golds)[which]
        return total
    candidates = [-math.inf] + sorted(set(na_probs.values()))
    scores = [score(t) for t in candidates]
    best = max(scores)
    return float(100 * best / len(cases)), candidates[scores.index(best)]


WORDS = st.sampled_from(["cat", "dog", "sat", "the", "a", "red", "ran"])
TEXT = st.lists(WORDS, max_size=3).map(" ".join)
CASE = st.tuples(st.lists(TEXT, max_size=2),  # gold answers; [] = unanswerable
                 st.one_of(st.none(), TEXT),  # prediction; None = missing
                 st.sampled_from([-1.0, 0.0, 0.25, 0.5, 0.75, 1.0]))  # na_prob, with ties


@settings(max_examples=150, deadline=None)
@given(st.lists(CASE, min_size=1, max_size=10), st.sampled_from([-0.5, 0.5, 1.0]))
def test_best_threshold_matches_brute_force(cases, na_prob_thresh):
    qas = [_qa(f"q{i}", golds, not golds) for i, (golds, _, _) in enumerate(cases)]
    preds = {f"q{i}": p for i, (_, p, _) in enumerate(cases) if p is not None}
    na_probs = {f"q{i}": na for i, (_, _, na) in enumerate(cases)}
    flat = [(f"q{i}", golds, p) for i, (golds, p, _) in enumerate(cases)]
    logging.getLogger("litebert").disabled = True  # missing-prediction warnings
    try:
        out = squad_evaluate(_dataset(qas), preds, na_probs=na_probs,
                             na_prob_thresh=na_prob_thresh)
    finally:
        logging.getLogger("litebert").disabled = False
    for metric, which in (("exact", 0), ("f1", 1)):
        best, thresh = _brute_force_best(flat, na_probs, which)
        assert out[f"best_{metric}"] == best
        got = out[f"best_{metric}_thresh"]
        if thresh == -math.inf:  # "answer nothing": any threshold below every na_prob
            assert all(na_probs[q] > got for q, _, p in flat if p is not None)
        else:
            assert got == thresh
        # The best is at least the score at the threshold actually applied.
        assert out[f"best_{metric}"] >= out[metric] - 1e-9


# ---------------------------------------------------------------------------------------
# RACE


def test_race_accuracy_by_hand():
    # middle: i0, i1 right -> 1.0; high: i3 right of i2..i4 -> 1/3; all: 3/5.
    out = race_accuracy([0, 1, 2, 3, 0], [0, 1, 0, 3, 1],
                        ["middle", "middle", "high", "high", "high"])
    assert out == pytest.approx({"middle": 1.0, "high": 1 / 3, "all": 0.6})
    logits = np.array([[0.0, 1.0, 0.0, 0.0], [3.0, 0.0, 0.0, 0.0]])  # -> 1, 0
    assert race_accuracy(logits, [1, 2], ["high", "high"]) == {"high": 0.5, "all": 0.5}


def test_race_errors():
    with pytest.raises(ValueError, match="unknown RACE levels \\['college'\\]"):
        race_accuracy([0], [0], ["college"])
    with pytest.raises(ValueError, match="1 levels but 2 labels"):
        race_accuracy([0, 1], [0, 1], ["high"])
    with pytest.raises(ValueError, match="2 predictions but 1 labels"):
        race_accuracy([0, 1], [0], ["high"])
