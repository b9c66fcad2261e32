"""SQuAD v1.1 / v2.0 data: read the JSON, cut contexts into windows, turn logits into answers.

The windows follow BERT/ALBERT's `run_squad.py`: [CLS] question [SEP] window [SEP] (XLNet's:
window <sep> question <sep> <cls>, the tokenizer's template decides), the
context tokenized once and cut into windows that step by `doc_stride` tokens, and a token's
"max context" window the one where min(left, right) context + 0.01 * window length is highest.
Answer spans go from characters to tokens through the tokenizer's offsets, and predicted spans
come back as slices of the original context, so no detokenization is needed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from litebert.files import InputFileError, read_text
from litebert.input_report import MAX_EXAMPLES, REPAIRED, SKIPPED, InputReport, Kind
from litebert.tokenization.base import PairTemplate

__all__ = ["SquadError", "SquadExample", "SquadFeature", "SquadReport", "answer_tokens",
           "apply_null_threshold", "make_features", "max_context_window", "postprocess",
           "read_squad", "windows"]

MAX_PROBLEMS = MAX_EXAMPLES  # examples kept per kind in a SquadReport
MAX_SHIFT = 8  # how many characters around answer_start a misplaced answer is looked for


class SquadError(ValueError):
    """A SQuAD file or argument that cannot be used."""


@dataclass
class SquadExample:
    qid: str
    question: str
    context: str
    answers: list[dict]  # {"text": str, "answer_start": int}, text == context[start:start+len]
    is_impossible: bool
    title: str = ""


@dataclass
class SquadFeature:
    example_index: int
    input_ids: list[int]
    token_type_ids: list[int]
    attention_mask: list[int]
    offsets: list[tuple[int, int] | None]  # context character span; None off the context
    max_context: list[bool]  # the window where this token has the most context
    start_position: int  # cls_index when there is no answer inside this window
    end_position: int
    cls_index: int = 0  # where the cls token is: 0 ([CLS] first), or last (XLNet's <cls>)
    is_impossible: bool = False  # no answer inside this window (always, for impossible ones)


@dataclass
class SquadReport(InputReport):
    """What read_squad kept, skipped and repaired (the common InputReport, by kind)."""

    KINDS: ClassVar[dict[str, Kind]] = {
        "duplicate_ids": Kind(SKIPPED, "questions whose id was seen before"),
        "no_answer_found": Kind(SKIPPED, "answerable questions without an answer found in "
                                         "the context"),
        "answers_fixed": Kind(REPAIRED, "answers whose answer_start was moved to their text"),
        "answers_dropped": Kind(REPAIRED, "answers not found near answer_start, dropped (the "
                                          "question kept another)"),
    }
    unit: ClassVar[str] = "questions"

    version: str = ""
    impossible: int = 0  # kept questions marked is_impossible

    def read_detail(self) -> str:
        return f" ({self.impossible:,} impossible)" if self.impossible else ""


# ---- reading ---------------------------------------------------------------------------------

def read_squad(path: str | Path, labeled: bool = True) -> tuple[list[SquadExample], SquadReport]:
    """The questions of a SQuAD v1.1 or v2.0 JSON file, with a report of what was dropped.

    An answer whose text is not at answer_start is looked for within MAX_SHIFT characters
    (also with its surrounding whitespace stripped) and its start fixed; if not found it is
    dropped. A question that is not impossible and has no answer left is skipped, as is a
    question whose id was seen before. `labeled=False` reads a test file: answers and
    is_impossible are ignored (every question gets answers [] and is_impossible False).
    """
    path = Path(path)
    data = _load_json(path)
    report = SquadReport(path=str(path), version=str(data.get("version", "")))
    examples: list[SquadExample] = []
    seen: set[str] = set()
    for a, article in enumerate(_need(data, "data", list, path, "the top level")):
        where = f"data[{a}]"
        _check(article, dict, path, where)
        title = str(article.get("title", ""))
        for p, paragraph in enumerate(_need(article, "paragraphs", list, path, where)):
            p_where = f"{where}.paragraphs[{p}]"
            _check(paragraph, dict, path, p_where)
            context = _need(paragraph, "context", str, path, p_where)
            for q, qa in enumerate(_need(paragraph, "qas", list, path, p_where)):
                example = _read_question(qa, context, title, report, seen,
                                         (path, f"{p_where}.qas[{q}]"), labeled)
                if example is not None:
                    examples.append(example)
    return examples, report


def _load_json(path: Path) -> dict[str, Any]:
    try:
        text = read_text(path)
    except InputFileError as err:
        raise SquadError(str(err)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise SquadError(f"{path}, line {err.lineno}, column {err.colno}: invalid JSON "
                         f"({err.msg})") from None
    _check(data, dict, path, "the top level")
    return data


def _check(value: Any, kind: type | tuple[type, ...], path: Path, where: str) -> None:
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise SquadError(f"{path}: {where}: expected {names}, got {type(value).__name__}")


def _need(obj: dict, key: str, kind: type | tuple[type, ...], path: Path, where: str) -> Any:
    if key not in obj:
        raise SquadError(f"{path}: {where}: missing {key!r}")
    _check(obj[key], kind, path, f"{where}.{key}")
    return obj[key]


def _read_question(qa: Any, context: str, title: str, report: SquadReport, seen: set[str],
                   at: tuple[Path, str], labeled: bool) -> SquadExample | None:
    path, where = at
    _check(qa, dict, path, where)
    qid = str(_need(qa, "id", (str, int), path, where))
    question = _need(qa, "question", str, path, where)
    impossible = labeled and "is_impossible" in qa and _need(qa, "is_impossible", bool, path,
                                                             where)
    name = f"{path}: question {qid}"
    if qid in seen:
        report.note("duplicate_ids", name, "duplicate question id; skipped")
        return None
    seen.add(qid)
    answers: list[dict] = []
    if labeled and not impossible:  # v2 impossible questions train and score as "no answer"
        raw = _need(qa, "answers", list, path, where) if "answers" in qa else []
        answers, lost = _read_answers(raw, context, name, report, (path, f"{where}.answers"))
        if not answers:  # one skip, whatever became of its answers
            detail = f" ({lost[0]})" if lost else ""
            report.note("no_answer_found", name,
                        f"no answer found in the context{detail}; question skipped")
            return None
        for why in lost:
            report.note("answers_dropped", name, f"{why}; answer dropped")
    report.read += 1
    report.impossible += impossible
    return SquadExample(qid, question, context, answers, impossible, title)


def _read_answers(raw: list, context: str, name: str, report: SquadReport,
                  at: tuple[Path, str]) -> tuple[list[dict], list[str]]:
    """The answers found (fixes noted in `report`), and why each of the others was not."""
    path, where = at
    answers, lost = [], []
    for i, answer in enumerate(raw):
        _check(answer, dict, path, f"{where}[{i}]")
        text = _need(answer, "text", str, path, f"{where}[{i}]")
        start = _need(answer, "answer_start", int, path, f"{where}[{i}]")
        found = _locate(context, text, start)
        if found is None:
            lost.append(f"answer {i} {text!r} is not at or near answer_start {start}")
            continue
        if found != (start, text):
            report.note("answers_fixed", name,
                        f"answer {i} {text!r}: answer_start {start} -> {found[0]} (fixed)")
        answers.append({"text": found[1], "answer_start": found[0]})
    return answers, lost


def _locate(context: str, text: str, start: int) -> tuple[int, str] | None:
    """(start, text) of the answer: as given, shifted by up to MAX_SHIFT characters, or with
    its surrounding whitespace stripped; None when not found or empty."""
    for candidate in dict.fromkeys((text, text.strip())):
        if not candidate:
            continue
        for shift in sorted(range(-MAX_SHIFT, MAX_SHIFT + 1), key=abs):
            if start + shift >= 0 and context.startswith(candidate, start + shift):
                return start + shift, candidate
    return None


# ---- features --------------------------------------------------------------------------------

def make_features(examples: Sequence[SquadExample], tokenizer, *, max_seq_length: int = 384,
                  doc_stride: int = 128, max_query_length: int = 64) -> list[SquadFeature]:
    """One feature per window of every example (at least one, even for an empty context), in
    the tokenizer's template: [CLS] Q [SEP] C [SEP] (RoBERTa's <s> Q </s></s> C </s>), or
    XLNet's C <sep> Q <sep> <cls> when <cls> is last (see _example_features)."""
    if tokenizer.cls_token_id is None or tokenizer.sep_token_id is None:
        raise SquadError(f"{getattr(tokenizer, 'path', tokenizer)}: the tokenizer needs "
                         "[CLS] and [SEP] tokens (<s> and </s>) for SQuAD features")
    template = tokenizer.template
    _check_lengths(max_seq_length, doc_stride, max_query_length, template.num_special(True))
    questions = _question_ids(examples, tokenizer, max_query_length)
    contexts: dict[str, tuple[list[int], np.ndarray]] = {}  # a context shared by questions
    features: list[SquadFeature] = []
    for index, (example, question) in enumerate(zip(examples, questions, strict=True)):
        if example.context not in contexts:
            contexts[example.context] = _context_tokens(tokenizer, example.context)
        ids, spans = contexts[example.context]
        room = max_seq_length - len(question) - template.num_special(True)
        features += _example_features(index, example, question, template, ids, spans, room,
                                      doc_stride)
    return features


def _check_lengths(max_seq_length: int, doc_stride: int, max_query_length: int,
                   specials: int) -> None:
    if max_query_length < 1 or doc_stride < 1:
        raise SquadError(f"doc_stride={doc_stride} and max_query_length={max_query_length} "
                         "must be at least 1")
    if max_seq_length < max_query_length + specials + 1:
        raise SquadError(f"max_seq_length={max_seq_length} leaves no room for the context: "
                         f"a question of max_query_length={max_query_length} tokens and "
                         f"{specials} special tokens need it to be at least "
                         f"max_query_length + {specials + 1}")


def _question_ids(examples: Sequence[SquadExample], tokenizer,
                  max_query_length: int) -> list[list[int]]:
    if not examples:
        return []
    ids, _, lengths = tokenizer.encode_batch_flat([e.question for e in examples])
    parts = np.split(ids, np.cumsum(lengths)[:-1])
    return [part[:max_query_length].tolist() for part in parts]


def _context_tokens(tokenizer, context: str) -> tuple[list[int], np.ndarray]:
    """The context's ids and (n, 2) character spans in the original text."""
    encoded = tokenizer(context, add_special_tokens=False, return_offsets_mapping=True)
    spans = np.asarray(encoded["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    return list(encoded["input_ids"]), spans


def windows(n: int, room: int, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and length of each window over n tokens: at most `room` tokens each, stepping
    by min(stride, room), the last one reaching the end (one empty window when n == 0)."""
    if n <= room:
        return np.zeros(1, dtype=np.int64), np.array([n], dtype=np.int64)
    step = min(stride, room)
    count = -(-(n - room) // step) + 1
    starts = np.arange(count, dtype=np.int64) * step
    return starts, np.minimum(n - starts, room)


def max_context_window(starts: np.ndarray, lengths: np.ndarray, n: int) -> np.ndarray:
    """Per token, the window where it has the most context (the official score:
    min(left, right) + 0.01 * window length; the first window wins ties)."""
    if len(starts) == 1:
        return np.zeros(n, dtype=np.int64)
    position = np.arange(n)[None, :]
    left = position - starts[:, None]
    right = (starts + lengths - 1)[:, None] - position
    score = np.minimum(left, right) + 0.01 * lengths[:, None]
    return np.where((left >= 0) & (right >= 0), score, -np.inf).argmax(axis=0)


def answer_tokens(example: SquadExample, spans: np.ndarray) -> tuple[int, int] | None:
    """First and last context token overlapping the first answer; None when impossible."""
    if example.is_impossible or not example.answers:
        return None
    begin = example.answers[0]["answer_start"]
    end = begin + len(example.answers[0]["text"])
    hit = np.flatnonzero((spans[:, 1] > begin) & (spans[:, 0] < end)
                         & (spans[:, 1] > spans[:, 0]))
    return (int(hit[0]), int(hit[-1])) if hit.size else None


def _example_features(index: int, example: SquadExample, question: list[int],
                      template: PairTemplate, ids: list[int], spans: np.ndarray, room: int,
                      stride: int) -> list[SquadFeature]:
    """The windows of one example. The question is the template's A and the window its B,
    except with <cls> last: XLNet's run_squad.py puts the window first (C <sep> Q <sep>
    <cls>, context type 0, question 1, <cls> 2), as transformers' SQuAD features do for a
    tokenizer that pads on the left. A window without the answer points at the cls token."""
    starts, lengths = windows(len(ids), room, stride)
    best = max_context_window(starts, lengths, len(ids))
    answer = answer_tokens(example, spans)
    pairs = list(zip(spans[:, 0].tolist(), spans[:, 1].tolist(), strict=True))
    query = np.asarray(question, dtype=np.int64)
    context_first = template.cls_last
    first = template.a_offset() if context_first else template.b_offset(len(question))
    out = []
    for w, (begin, length) in enumerate(zip(starts.tolist(), lengths.tolist(), strict=True)):
        end = begin + length
        window = np.asarray(ids[begin:end], dtype=np.int64)
        built, types, _ = (template.build(window, query) if context_first
                           else template.build(query, window))
        n = len(built)
        offsets: list[tuple[int, int] | None] = [None] * n
        offsets[first:first + length] = pairs[begin:end]
        max_context = [False] * n
        max_context[first:first + length] = (best[begin:end] == w).tolist()
        cls_index = n - 1 if template.cls_last else 0
        start_position = end_position = cls_index
        inside = answer is not None and begin <= answer[0] and answer[1] < end
        if answer is not None and inside:
            start_position, end_position = answer[0] - begin + first, answer[1] - begin + first
        out.append(SquadFeature(
            example_index=index, input_ids=built.tolist(), token_type_ids=types.tolist(),
            attention_mask=[1] * n, offsets=offsets, max_context=max_context,
            start_position=start_position, end_position=end_position, cls_index=cls_index,
            is_impossible=not inside))
    return out


# ---- predictions -----------------------------------------------------------------------------

def features_by_example(examples: Sequence[SquadExample], features: Sequence[SquadFeature],
                        n_best_size: int, max_answer_length: int) -> list[list[int]]:
    """The feature indices of each example (its windows), after checking the n-best
    settings and every feature's example_index: what both post-processings start from."""
    if n_best_size < 1 or max_answer_length < 1:
        raise SquadError(f"n_best_size={n_best_size} and max_answer_length={max_answer_length} "
                         "must be at least 1")
    groups: list[list[int]] = [[] for _ in examples]
    for i, feature in enumerate(features):
        if not 0 <= feature.example_index < len(examples):
            raise SquadError(f"feature {i}: example_index {feature.example_index} is outside "
                             f"the {len(examples)} examples")
        groups[feature.example_index].append(i)
    return groups


def postprocess(examples: Sequence[SquadExample], features: Sequence[SquadFeature],
                start_logits, end_logits, *, n_best_size: int = 20, max_answer_length: int = 30,
                version_2: bool, null_score_diff_threshold: float = 0.0
                ) -> tuple[dict[str, str], dict[str, float], dict[str, list[dict]]]:
    """(predictions, null_odds, nbest) per question id, as the official run_squad.py.

    Logits: one row per feature (a list of arrays, or an array padded to one width). The
    null score is the lowest cls-token start + end over the question's features; null_odds is
    it minus the best span's score (math.inf when no span is valid). v2 predicts "" when
    null_odds > null_score_diff_threshold; pass math.inf to get every best span.
    """
    if len(start_logits) != len(features) or len(end_logits) != len(features):
        raise SquadError(f"{len(features)} features but {len(start_logits)} start and "
                         f"{len(end_logits)} end logit rows")
    groups = features_by_example(examples, features, n_best_size, max_answer_length)
    predictions: dict[str, str] = {}
    null_odds: dict[str, float] = {}
    nbest: dict[str, list[dict]] = {}
    for example, group in zip(examples, groups, strict=True):
        rows = [_feature_logits(features[i], start_logits[i], end_logits[i], i) for i in group]
        mine = [features[i] for i in group]
        found, null = _candidates(mine, rows, n_best_size, max_answer_length)
        entries = _nbest(example.context, mine, found, null, n_best_size, version_2)
        best = next((e for e in entries if e["text"]), None)
        odds = math.inf if best is None or null is None else \
            null[0] + null[1] - best["start_logit"] - best["end_logit"]
        abstain = version_2 and odds > null_score_diff_threshold
        predictions[example.qid] = "" if best is None or abstain else best["text"]
        null_odds[example.qid] = odds
        nbest[example.qid] = entries
    return predictions, null_odds, nbest


def apply_null_threshold(spans: dict[str, str], null_odds: dict[str, float], threshold: float
                         ) -> tuple[dict[str, str], dict[str, float]]:
    """v2 answers with the threshold applied, and the odds shifted by it.

    `spans` are the best spans (postprocess with null_score_diff_threshold=math.inf) and
    `null_odds` their null score minus span score. A question is answered "" when its odds
    exceed `threshold`. The shifted odds (odds - threshold) make 0 the decision boundary:
    written as the official script's na-prob file, its --na-prob-thresh 1.0 only meets
    questions already answered "", and its best_*_thresh read relative to `threshold`.
    """
    predictions = {qid: "" if null_odds[qid] > threshold else text
                   for qid, text in spans.items()}
    return predictions, {qid: null_odds[qid] - threshold for qid in spans}


def _feature_logits(feature: SquadFeature, starts, ends, i: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    n = len(feature.input_ids)
    starts, ends = np.asarray(starts, dtype=np.float64), np.asarray(ends, dtype=np.float64)
    if starts.ndim != 1 or ends.ndim != 1 or len(starts) < n or len(ends) < n:
        raise SquadError(f"feature {i}: logit rows of shape {starts.shape} and {ends.shape} "
                         f"do not cover its {n} tokens")
    return starts[:n], ends[:n]


def _candidates(features: list[SquadFeature], rows: list[tuple[np.ndarray, np.ndarray]],
                n_best: int, max_length: int) -> tuple[np.ndarray, tuple[float, float] | None]:
    """All valid spans of all features (top n_best starts x top n_best ends of each) as
    (feature, start, end, start logit, end logit) rows, and the (start, end) logits of the
    lowest null score."""
    parts = [np.zeros((0, 5))]
    null: tuple[float, float] | None = None
    for f, (feature, (s, e)) in enumerate(zip(features, rows, strict=True)):
        c = feature.cls_index  # "no answer" is start = end = the cls token
        if null is None or s[c] + e[c] < null[0] + null[1]:
            null = (float(s[c]), float(e[c]))
        top_s = np.argsort(-s, kind="stable")[:n_best]
        top_e = np.argsort(-e, kind="stable")[:n_best]
        in_context_s = np.array([feature.offsets[i] is not None for i in top_s.tolist()])
        in_context_e = np.array([feature.offsets[i] is not None for i in top_e.tolist()])
        start_ok = in_context_s & np.asarray(feature.max_context, dtype=bool)[top_s]
        length = top_e[None, :] - top_s[:, None] + 1
        ok = start_ok[:, None] & in_context_e[None, :] & (length >= 1) & (length <= max_length)
        si, ei = np.nonzero(ok)
        parts.append(np.stack([np.full(len(si), f), top_s[si], top_e[ei], s[top_s[si]],
                               e[top_e[ei]]], axis=1))
    return np.concatenate(parts), null


def _nbest(context: str, features: list[SquadFeature], found: np.ndarray,
           null: tuple[float, float] | None, n_best: int, version_2: bool) -> list[dict]:
    """The n_best distinct texts by start + end logit, with probabilities; in v2 the null
    answer "" takes its place by score and is appended if it did not make the list."""
    scores = found[:, 3] + found[:, 4]
    if not version_2:
        null = None  # v1 has no null answer
    if null is not None:  # the null answer as one more candidate, after ties (as official code)
        scores = np.append(scores, null[0] + null[1])
    kept: list[tuple[str, float, float]] = []
    seen: set[str] = set()
    for k in np.argsort(-scores, kind="stable").tolist():
        if len(kept) >= n_best:
            break
        if null is not None and k == len(found):
            text, s, e = "", *null
        else:
            f, start, end, s, e = found[k].tolist()
            text = _span_text(context, features[int(f)], int(start), int(end))
            if not text:  # a span of whitespace-only tokens
                continue
        if text not in seen:
            seen.add(text)
            kept.append((text, s, e))
    if null is not None and "" not in seen:
        kept.append(("", *null))
    totals = np.array([s + e for _, s, e in kept])
    weights = np.exp(totals - totals.max()) if kept else totals
    return [{"text": t, "probability": p, "start_logit": s, "end_logit": e}
            for (t, s, e), p in zip(kept, (weights / max(weights.sum(), 1e-300)).tolist(),
                                    strict=True)]


def _span_text(context: str, feature: SquadFeature, start: int, end: int) -> str:
    """The context characters of tokens start..end (both in the context: _candidates keeps
    no other span)."""
    first, last = feature.offsets[start], feature.offsets[end]
    if first is None or last is None:
        raise SquadError(f"feature of example {feature.example_index}: tokens {start}-{end} "
                         "are not all in the context")
    return context[first[0]:last[1]]
