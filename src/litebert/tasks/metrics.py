"""Evaluation metrics for fine-tuning: GLUE, SQuAD v1.1 / v2.0 and RACE.

GLUE (`glue_metrics`, `primary_metric`): CoLA and AX report Matthews correlation; STS-B and
generic regression Pearson, Spearman and their mean; MRPC and QQP accuracy, F1 of class 1
and their mean; every other task accuracy. Undefined values are reported as 0.0 rather than
NaN, silently: a correlation with a constant side (a model that predicts one class or one
score, common early in fine-tuning) has no variance to correlate, and 0.0 is what "no
linear/rank/label agreement beyond chance" means; it also keeps checkpoint selection and
JSON logs free of NaN. Non-finite regression values are an error (a diverged model).

SQuAD (`squad_evaluate`) follows the rules of the official evaluation scripts: answers are
normalised (lower-case; drop `string.punctuation`; drop the whole words a/an/the; collapse
whitespace), exact match and token F1 take the max over gold answers, gold answers that
normalise to nothing are dropped, an unanswerable question's only gold answer is "", and
results are percentages. Where the scripts are inconsistent or crash, we choose:
- Token F1 uses the v2.0 rule everywhere: an empty side scores 1.0 if both are empty.
- A question without a prediction scores 0 and stays in every total, as in v1.1 (v2.0
  drops it from the scores, then fails on the HasAns split); "missing" counts them.
- The best-threshold search scores "answer this question" by the question's raw score
  throughout. (v2.0 charges an unanswerable question -1 whenever the raw prediction string
  is non-empty, even one such as "the" that normalises to "" and so scored 1.) Questions
  with equal na_prob are taken together, as any real threshold must, so the best score is
  always one that `na_prob_thresh=best_*_thresh` reproduces. When answering nothing is
  best, the threshold is 0.0 as in v2.0 if every na_prob is positive (then 0.0 does answer
  nothing), otherwise the float just below the smallest na_prob.
Scores are summed as exact fractions (F1 is 2 * common / (len_pred + len_gold)), so ties
between thresholds are real ties, not rounding noise; ties go to the lowest threshold.
These rules fit litebert's v2 no-answer threshold (tasks/qa.py) and give v1.1 scores.

SQuAD v2.0 as reported (`squad_v2_official`): the official evaluate-v2.0.py's rules and float
arithmetic as they are, without the choices above, so that the v2 figures in results.json
are exactly what the script prints for the prediction files written beside them.

RACE (`race_accuracy`): accuracy on the middle-school, high-school and all questions; other
multiple choice (`choice_accuracy`): accuracy.
"""

from __future__ import annotations

import itertools
import logging
import math
import re
import string
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import stats
from sklearn.metrics import matthews_corrcoef

log = logging.getLogger("litebert")

# ---------------------------------------------------------------------------------------
# GLUE

_PRIMARY = {
    "cola": "mcc", "ax": "mcc",
    "stsb": "corr", "regression": "corr",
    "mrpc": "acc_and_f1", "qqp": "acc_and_f1",
    **{t: "accuracy" for t in ("sst2", "mnli", "mnli_matched", "mnli_mismatched", "qnli",
                               "rte", "wnli", "classification")},
}
GLUE_TASKS = tuple(_PRIMARY)


def _task_key(task: str) -> str:
    # Accept the spellings of the GLUE paper and leaderboard too ("SST-2", "STS-B").
    key = str(task).strip().lower().replace("-", "")
    if key not in _PRIMARY:
        raise ValueError(f"unknown GLUE task {task!r}; expected one of {', '.join(GLUE_TASKS)}")
    return key


def primary_metric(task: str) -> str:
    """The key of `glue_metrics(task, ...)` to choose the best checkpoint by."""
    return _PRIMARY[_task_key(task)]


def glue_metrics(task: str, predictions: Any, labels: Any) -> dict[str, float]:
    """GLUE metrics of `predictions` against `labels` (see the module docstring).

    Classification takes class indices, or logits of shape (n, classes), which are arg-maxed;
    regression takes scores, shape (n,) or (n, 1).
    """
    key = _task_key(task)
    regression = _PRIMARY[key] == "corr"
    pred, gold = _paired_arrays(predictions, labels, regression)
    if regression:
        pearson, spearman = _correlations(pred, gold)
        return {"pearson": pearson, "spearman": spearman, "corr": (pearson + spearman) / 2}
    if _PRIMARY[key] == "mcc":
        return {"mcc": _mcc(pred, gold)}
    accuracy = float(np.mean(pred == gold))
    if _PRIMARY[key] == "acc_and_f1":
        f1 = _positive_f1(pred, gold)
        return {"accuracy": accuracy, "f1": f1, "acc_and_f1": (accuracy + f1) / 2}
    return {"accuracy": accuracy}


def _paired_arrays(predictions: Any, labels: Any, regression: bool,
                   what: str = "predictions") -> tuple[np.ndarray, np.ndarray]:
    pred, gold = np.asarray(predictions), np.asarray(labels)
    if regression and pred.ndim == 2 and pred.shape[1] == 1:
        pred = pred[:, 0]  # the (n, 1) logits of a one-output head
    elif not regression and pred.ndim == 2 and gold.ndim == 1:
        pred = pred.argmax(axis=-1)  # logits or probabilities per class
    if pred.ndim != 1 or gold.ndim != 1:
        raise ValueError(f"{what} and labels must be 1-D sequences, got shapes "
                         f"{pred.shape} and {gold.shape}")
    if len(pred) != len(gold):
        raise ValueError(f"{len(pred)} {what} but {len(gold)} labels; they must pair up")
    if len(pred) == 0:
        raise ValueError(f"no {what} to score: {what} and labels are empty")
    if regression:
        pred, gold = pred.astype(np.float64), gold.astype(np.float64)
        if not (np.isfinite(pred).all() and np.isfinite(gold).all()):
            raise ValueError("regression predictions or labels contain NaN or inf "
                             "(a diverged model?)")
    return pred, gold


def _correlations(pred: np.ndarray, gold: np.ndarray) -> tuple[float, float]:
    # A constant side has no correlation; scipy would warn and return NaN (see docstring).
    if np.ptp(pred) == 0 or np.ptp(gold) == 0:
        return 0.0, 0.0
    pearson = float(stats.pearsonr(pred, gold)[0])
    spearman = float(stats.spearmanr(pred, gold)[0])
    return _nan_to_zero(pearson), _nan_to_zero(spearman)


def _mcc(pred: np.ndarray, gold: np.ndarray) -> float:
    # sklearn already returns 0.0 for an undefined MCC but warns when only one label
    # occurs, which would repeat at every evaluation of an early, constant model.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _nan_to_zero(float(matthews_corrcoef(gold, pred)))


def _positive_f1(pred: np.ndarray, gold: np.ndarray) -> float:
    # Counted directly: F1 = 2TP / (2TP + FP + FN), 0.0 when class 1 never occurs on either
    # side (sklearn would warn, or reject a pos_label absent from the data).
    tp = int(np.sum((pred == 1) & (gold == 1)))
    wrong = int(np.sum((pred == 1) != (gold == 1)))
    return 2 * tp / (2 * tp + wrong) if tp + wrong else 0.0


def _nan_to_zero(value: float) -> float:
    return 0.0 if math.isnan(value) else value


# ---------------------------------------------------------------------------------------
# SQuAD

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(s: str) -> str:
    """Lower-case; drop punctuation, then the words a/an/the; collapse whitespace."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", s).split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 if the two answers are equal after `normalize_answer`, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str) -> float:
    """Token F1 of the normalised answers; 1.0 if both are empty, 0.0 if only one is."""
    return float(_f1_fraction(prediction, gold))


def _f1_fraction(prediction: str, gold: str) -> Fraction:
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:
        return Fraction(int(pred_tokens == gold_tokens))
    common = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    # 2PR / (P + R) with P = common / len(pred), R = common / len(gold), kept exact.
    return Fraction(2 * common, len(pred_tokens) + len(gold_tokens))


@dataclass
class _Question:
    qid: str
    golds: list[str]
    has_answer: bool


@dataclass
class _Scored:
    question: _Question
    exact: Fraction | None  # None: no prediction
    f1: Fraction | None
    na_prob: float


def _read_questions(data: list[dict] | dict) -> tuple[list[_Question], bool]:
    """The questions of a SQuAD `data` list, and whether any carries "is_impossible"."""
    if isinstance(data, Mapping):
        if "data" not in data:
            raise ValueError("SQuAD JSON must have a 'data' key (or pass its 'data' list)")
        data = data["data"]
    questions, seen, has_flag = [], set(), False
    for a, article in enumerate(data):
        for p, paragraph in enumerate(article.get("paragraphs", ())):
            for q, qa in enumerate(paragraph.get("qas", ())):
                if "id" not in qa:
                    raise ValueError(f"SQuAD question data[{a}].paragraphs[{p}].qas[{q}] "
                                     "has no 'id'")
                qid, answers = qa["id"], qa.get("answers") or []
                if qid in seen:
                    raise ValueError(f"SQuAD question id {qid!r} occurs twice")
                seen.add(qid)
                has_flag = has_flag or "is_impossible" in qa
                golds = [ans["text"] for ans in answers if normalize_answer(ans["text"])]
                questions.append(_Question(qid, golds or [""], bool(answers)))
    if not questions:
        raise ValueError("SQuAD data holds no questions")
    return questions, has_flag


def _score_questions(questions: list[_Question], predictions: Mapping[str, str],
                     na_probs: Mapping[str, float] | None) -> list[_Scored]:
    scored, missing = [], []
    for question in questions:
        prediction = predictions.get(question.qid)
        if prediction is None:
            missing.append(question.qid)
            scored.append(_Scored(question, None, None, 0.0))
            continue
        if not isinstance(prediction, str):
            raise TypeError(f"prediction for question {question.qid!r} is "
                            f"{type(prediction).__name__}, expected str")
        exact = max(Fraction(int(exact_match(prediction, g))) for g in question.golds)
        f1 = max(_f1_fraction(prediction, g) for g in question.golds)
        scored.append(_Scored(question, exact, f1, _na_prob(na_probs, question.qid)))
    if missing:
        # One line, not one per question as the official scripts print.
        log.warning("%d of %d SQuAD questions have no prediction and score 0 (first: %s)",
                    len(missing), len(questions), ", ".join(missing[:5]))
    return scored


def _na_prob(na_probs: Mapping[str, float] | None, qid: str) -> float:
    if na_probs is None:
        return 0.0  # the official default: every question "has an answer" probability 1
    if qid not in na_probs:
        raise ValueError(f"na_probs has no entry for question {qid!r}")
    value = float(na_probs[qid])
    if math.isnan(value):
        raise ValueError(f"na_probs[{qid!r}] is NaN")
    return value


def _thresholded(item: _Scored, metric: str, thresh: float) -> Fraction:
    """A question's score when those with na_prob > thresh are predicted unanswerable."""
    raw = getattr(item, metric)
    if raw is None:
        return Fraction(0)
    if item.na_prob > thresh:
        return Fraction(int(not item.question.has_answer))
    return raw


def _percent(total: Fraction, count: int) -> float:
    return float(100 * total / count)


def _split_scores(scored: list[_Scored], thresh: float, prefix: str = "") -> dict[str, float]:
    out = {}
    for metric in ("exact", "f1"):
        total = sum((_thresholded(s, metric, thresh) for s in scored), Fraction(0))
        out[prefix + metric] = _percent(total, len(scored))
    out[prefix + "total"] = float(len(scored))
    return out


def _best_threshold(scored: list[_Scored], metric: str) -> tuple[float, float]:
    """Best score (percent) over all na_prob thresholds, and the lowest threshold giving it.

    Start with every question predicted unanswerable (the unanswerable ones with a
    prediction are right), then lower the bar one distinct na_prob value at a time.
    """
    answered = sorted((s for s in scored if s.exact is not None), key=lambda s: s.na_prob)
    current = Fraction(sum(1 for s in answered if not s.question.has_answer))
    best, best_thresh = current, _answer_nothing_threshold(answered)
    for na_prob, group in itertools.groupby(answered, key=lambda s: s.na_prob):
        for s in group:  # gain from answering instead of abstaining
            current += getattr(s, metric) - int(not s.question.has_answer)
        if current > best:
            best, best_thresh = current, na_prob
    return _percent(best, len(scored)), best_thresh


def _answer_nothing_threshold(answered: list[_Scored]) -> float:
    # 0.0 is the official value; it only means "answer nothing" if every na_prob is > 0.
    if not answered or answered[0].na_prob > 0.0:
        return 0.0
    return math.nextafter(answered[0].na_prob, -math.inf)


def squad_evaluate(data: list[dict] | dict, predictions: dict[str, str],
                   na_probs: dict[str, float] | None = None, na_prob_thresh: float = 1.0,
                   version_2: bool | None = None) -> dict[str, float]:
    """Official-style SQuAD scores in percent (see the module docstring for the rules).

    `data` is the SQuAD JSON's "data" list or the whole JSON object; `predictions` maps
    question id to answer text ("" for "no answer"). v1.1 gives exact, f1 and total; v2.0
    adds HasAns_* / NoAns_* (for the sides that have questions) and, with `na_probs`
    (question id -> no-answer score), best_exact(_thresh) and best_f1(_thresh). A question
    counts as unanswerable when its na_prob > `na_prob_thresh`. `version_2=None` means v2.0
    if any question has an "is_impossible" key. "missing" (only when > 0) counts questions
    without a prediction.
    """
    questions, has_flag = _read_questions(data)
    version_2 = has_flag if version_2 is None else version_2
    if not version_2 and na_probs is not None:
        raise ValueError("na_probs only apply to SQuAD v2.0; this data is scored as v1.1 "
                         "(pass version_2=True to score it as v2.0)")
    scored = _score_questions(questions, predictions, na_probs if version_2 else None)
    thresh = na_prob_thresh if version_2 else math.inf
    out = _split_scores(scored, thresh)
    if version_2:
        for prefix, has_answer in (("HasAns_", True), ("NoAns_", False)):
            side = [s for s in scored if s.question.has_answer == has_answer]
            if side:
                out.update(_split_scores(side, thresh, prefix))
        if na_probs is not None:
            for metric in ("exact", "f1"):
                score, best_thresh = _best_threshold(scored, metric)
                out[f"best_{metric}"], out[f"best_{metric}_thresh"] = score, best_thresh
    missing = sum(1 for s in scored if s.exact is None)
    if missing:
        out["missing"] = float(missing)
    return out


# ---------------------------------------------------------------------------------------
# SQuAD v2.0 as the official script computes it


def squad_v2_official(data: list[dict] | dict, predictions: Mapping[str, str],
                      na_probs: Mapping[str, float] | None = None,
                      na_prob_thresh: float = 1.0) -> dict[str, float]:
    """What the official evaluate-v2.0.py prints for these inputs, figure for figure.

    Unlike `squad_evaluate` (exact fractions, and the choices in the module docstring), this
    repeats the script's own rules and float arithmetic in its order, so the figures equal
    its output on the same files (and the same Python) to the last bit: a question's score is
    the max over its gold answers (those normalising to "" dropped; [""] if none is left);
    a question with na_prob > na_prob_thresh scores 1.0 if it has no answer ("answers" empty)
    else 0.0; exact and f1 are percentages of the questions with a prediction; HasAns_* and
    NoAns_* are the two sides; with `na_probs`, best_exact/best_f1 walk the questions by
    ascending na_prob from "answer nothing" (one point per unanswerable question), adding the
    raw score of an answerable question and -1 (non-empty prediction) or 0 for an
    unanswerable one, and report the best total over all questions with a prediction and
    the na_prob where it was reached (0.0 if never beaten).

    One difference: a question without a prediction is left out of a side's totals, where
    the script stops with a KeyError. "The same Python" matters: from 3.12 on, sum() adds
    floats with compensation, so the script's last digits depend on the version it runs in.
    """
    articles = data["data"] if isinstance(data, Mapping) else data
    has_answer, exact, f1 = _official_raw_scores(articles, predictions)
    if not exact:
        raise ValueError("no SQuAD question has a prediction")
    odds = na_probs if na_probs is not None else {qid: 0.0 for qid in predictions}
    exact_t = _official_threshold(exact, odds, has_answer, na_prob_thresh)
    f1_t = _official_threshold(f1, odds, has_answer, na_prob_thresh)
    out = _official_totals(exact_t, f1_t, list(exact_t))
    for prefix, side in (("HasAns_", True), ("NoAns_", False)):
        ids = [qid for qid, answerable in has_answer.items() if answerable == side]
        if ids:
            totals = _official_totals(exact_t, f1_t, [q for q in ids if q in exact_t])
            out.update({prefix + key: value for key, value in totals.items()})
    if na_probs is not None:
        for metric, raw in (("exact", exact), ("f1", f1)):
            best, thresh = _official_best(predictions, raw, na_probs, has_answer)
            out[f"best_{metric}"], out[f"best_{metric}_thresh"] = best, thresh
    return out


def _official_raw_scores(articles: list[dict], predictions: Mapping[str, str]):
    """(id -> has an answer, id -> exact, id -> f1), in file order; a repeated id keeps its
    first place and its last question, as the script's dicts do."""
    has_answer: dict = {}
    exact: dict = {}
    f1: dict = {}
    missing = []
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qid, answers = qa["id"], qa.get("answers") or []
                has_answer[qid] = bool(answers)
                golds = [a["text"] for a in answers if normalize_answer(a["text"])] or [""]
                if qid not in predictions:
                    missing.append(str(qid))
                    continue
                exact[qid] = max(_official_exact(g, predictions[qid]) for g in golds)
                f1[qid] = max(_official_f1(g, predictions[qid]) for g in golds)
    if missing:
        log.warning("%d SQuAD questions have no prediction and are left out (first: %s)",
                    len(missing), ", ".join(missing[:5]))
    return has_answer, exact, f1


def _official_exact(gold: str, prediction: str) -> int:
    return int(normalize_answer(gold) == normalize_answer(prediction))


def _official_f1(gold: str, prediction: str) -> float:
    # The script's types and operation order: ints for the empty and no-overlap cases.
    gold_tokens = normalize_answer(gold).split()
    pred_tokens = normalize_answer(prediction).split()
    if not gold_tokens or not pred_tokens:
        return int(gold_tokens == pred_tokens)
    same = sum((Counter(gold_tokens) & Counter(pred_tokens)).values())
    if same == 0:
        return 0
    precision = 1.0 * same / len(pred_tokens)
    recall = 1.0 * same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def _official_threshold(scores: dict, na_probs: Mapping[str, float], has_answer: dict,
                        thresh: float) -> dict:
    return {qid: float(not has_answer[qid]) if na_probs[qid] > thresh else score
            for qid, score in scores.items()}


def _official_totals(exact: dict, f1: dict, ids: list) -> dict[str, float]:
    total = len(ids)
    return {"exact": 100.0 * sum(exact[q] for q in ids) / total,
            "f1": 100.0 * sum(f1[q] for q in ids) / total, "total": total}


def _official_best(predictions: Mapping[str, str], scores: dict,
                   na_probs: Mapping[str, float], has_answer: dict) -> tuple[float, float]:
    score = sum(1 for answerable in has_answer.values() if not answerable)
    best, best_thresh = score, 0.0
    for qid in sorted(na_probs, key=lambda q: na_probs[q]):  # stable: file order on ties
        if qid not in scores:
            continue
        if has_answer[qid]:
            score += scores[qid]
        else:
            score += -1 if predictions[qid] else 0
        if score > best:
            best, best_thresh = score, na_probs[qid]
    return 100.0 * best / len(scores), best_thresh


# ---------------------------------------------------------------------------------------
# RACE

RACE_LEVELS = ("middle", "high")


def race_accuracy(predictions: Any, labels: Any, levels: Sequence[str]) -> dict[str, float]:
    """Accuracy on "middle", "high" and "all" questions; a level without questions is left
    out. Predictions are option indices, or per-option logits of shape (n, options)."""
    pred, gold = _paired_arrays(predictions, labels, regression=False)
    level = np.asarray([str(x).lower() for x in levels])
    if len(level) != len(gold):
        raise ValueError(f"{len(level)} levels but {len(gold)} labels; they must pair up")
    unknown = sorted(set(level.tolist()) - set(RACE_LEVELS))
    if unknown:
        raise ValueError(f"unknown RACE levels {unknown}; expected 'middle' or 'high'")
    correct = pred == gold
    out = {name: float(np.mean(correct[level == name]))
           for name in RACE_LEVELS if np.any(level == name)}
    out["all"] = float(np.mean(correct))
    return out


def choice_accuracy(predictions: Any, labels: Any) -> dict[str, float]:
    """{"accuracy": the share of questions whose predicted choice is the gold one}.
    Predictions are choice indices, or per-choice scores of shape (n, choices)."""
    pred, gold = _paired_arrays(predictions, labels, regression=False)
    return {"accuracy": float(np.mean(pred == gold))}
