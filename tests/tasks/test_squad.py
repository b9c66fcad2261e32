"""SQuAD: reading v1/v2 files, windowed features, answer spans and the n-best search.

Every fixture here is generated text; no SQuAD data is stored.
"""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from litebert.input_report import InputReport
from litebert.tasks.squad import (
    MAX_PROBLEMS,
    SquadError,
    SquadExample,
    apply_null_threshold,
    make_features,
    max_context_window,
    postprocess,
    read_squad,
    windows,
)
from litebert.tokenization import Tokenizer, train_sentencepiece
from tests.helpers.squad import _answer_in, _context, _sentence, _word


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory) -> Tokenizer:
    out = tmp_path_factory.mktemp("squad-spm")
    rng = random.Random(0)
    text_file = out / "corpus.txt"
    text_file.write_text("\n".join(_sentence(rng) for _ in range(2000)) + "\n")
    train_sentencepiece([text_file], out / "model", vocab_size=300)
    return Tokenizer.from_pretrained(out / "model")


def _squad_json(path, articles: list, version: str = "1.1"):
    path.write_text(json.dumps({"version": version, "data": articles}, indent=1))
    return path


def _article(title: str, context: str, qas: list) -> dict:
    return {"title": title, "paragraphs": [{"context": context, "qas": qas}]}


def _examples(n: int, sentences: int, seed: int, impossible_every: int = 0
              ) -> list[SquadExample]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        context = _context(rng, sentences)
        impossible = bool(impossible_every) and i % impossible_every == 0
        answers = [] if impossible else [_answer_in(rng, context)]
        question = " ".join(_word(rng) for _ in range(rng.randint(3, 9))) + "?"
        out.append(SquadExample(f"q{i}", question, context, answers, impossible))
    return out


# ---- reading ---------------------------------------------------------------------------------

def test_read_v1_fixes_and_counts(tmp_path):
    context = "Alpha beta gamma.  Delta  epsilon zeta 1990, eta theta."
    at = context.index
    qas = [
        {"id": "ok", "question": "Which?", "answers": [{"text": "gamma", "answer_start":
                                                        at("gamma")}]},
        {"id": "shifted", "question": "Which?",
         "answers": [{"text": "epsilon zeta", "answer_start": at("epsilon") - 2}]},
        {"id": "spaced", "question": "Which?",
         "answers": [{"text": " Alpha", "answer_start": 0}]},
        {"id": "lost", "question": "Which?", "answers": [{"text": "iota", "answer_start": 4}]},
        {"id": "half", "question": "Which?",
         "answers": [{"text": "kappa", "answer_start": 0},
                     {"text": "theta", "answer_start": at("theta")}]},
        {"id": "ok", "question": "Again?", "answers": [{"text": "beta", "answer_start": 6}]},
    ]
    path = _squad_json(tmp_path / "train-v1.1.json", [_article("T", context, qas)])
    examples, report = read_squad(path)
    by_id = {e.qid: e for e in examples}
    assert list(by_id) == ["ok", "shifted", "spaced", "half"]
    for example in examples:
        for answer in example.answers:
            start = answer["answer_start"]
            assert context[start:start + len(answer["text"])] == answer["text"]
    assert by_id["shifted"].answers == [{"text": "epsilon zeta", "answer_start": at("epsilon")}]
    assert by_id["spaced"].answers == [{"text": "Alpha", "answer_start": 0}]
    assert by_id["half"].answers == [{"text": "theta", "answer_start": at("theta")}]
    assert by_id["ok"].title == "T" and not by_id["ok"].is_impossible
    # "lost" is one skip (its answer is in the reason), "half" one repair: each counted once
    assert (report.read, report.skipped, report.answers_fixed, report.answers_dropped) == \
        (4, 2, 2, 1)
    assert f"{path}: question lost: no answer found in the context (answer 0 'iota' is not " \
           "at or near answer_start 4); question skipped" in report.notes
    assert any("duplicate" in p for p in report.notes)
    assert report.summary().startswith(f"{path}: read 4 questions, skipped 2, repaired 3\n")


def test_read_v2_impossible(tmp_path):
    context = "Some words here and more words there."
    qas = [
        {"id": "a", "question": "Q?", "is_impossible": False,
         "answers": [{"text": "more words", "answer_start": context.index("more")}]},
        {"id": "b", "question": "Q?", "is_impossible": True, "answers": [],
         "plausible_answers": [{"text": "words", "answer_start": 5}]},
    ]
    path = _squad_json(tmp_path / "dev-v2.0.json", [_article("T", context, qas)], "v2.0")
    examples, report = read_squad(path)
    assert [e.is_impossible for e in examples] == [False, True]
    assert examples[1].answers == []
    assert (report.version, report.read, report.impossible, report.skipped) == ("v2.0", 2, 1, 0)
    assert report.summary() == f"{path}: read 2 questions (1 impossible), skipped 0"


def test_read_counts_every_skip_in_the_common_report(tmp_path):
    context = "Alpha beta gamma."
    qas = [{"id": "a", "question": "Q?", "answers": [{"text": "beta", "answer_start": 6}]},
           {"id": "a", "question": "Again?", "answers": [{"text": "beta", "answer_start": 6}]},
           {"id": "b", "question": "Q?", "answers": [{"text": "omega", "answer_start": 0}]}]
    path = _squad_json(tmp_path / "dev.json", [_article("T", context, qas)])
    examples, report = read_squad(path)
    assert [e.qid for e in examples] == ["a"]
    assert isinstance(report, InputReport)
    assert (report.read, report.skipped, report.repaired) == (1, 2, 0)
    assert report.counts == {"duplicate_ids": 1, "no_answer_found": 1}
    data = report.to_dict()
    assert (data["read"], data["skipped"], data["version"]) == (1, 2, "1.1")
    assert data["kinds"]["duplicate_ids"]["examples"] == [
        f"{path}: question a: duplicate question id; skipped"]
    assert "skipped 1 questions whose id was seen before" in report.summary()


def test_read_test_file_without_answers(tmp_path):
    qas = [{"id": "t1", "question": "Q?"}, {"id": "t2", "question": "R?", "answers": [],
                                             "is_impossible": True}]
    path = _squad_json(tmp_path / "test-v2.0.json", [_article("T", "Some context.", qas)])
    examples, report = read_squad(path, labeled=False)
    assert [(e.qid, e.answers, e.is_impossible) for e in examples] == [
        ("t1", [], False), ("t2", [], False)]
    assert report.skipped == 0
    assert read_squad(path)[1].skipped == 1  # as training data, t1 has no answer


def test_read_problems_are_capped(tmp_path):
    qas = [{"id": f"x{i}", "question": "Q?", "answers": [{"text": "zzz", "answer_start": 0}]}
           for i in range(MAX_PROBLEMS + 5)]
    _, report = read_squad(_squad_json(tmp_path / "s.json", [_article("T", "abc", qas)]))
    assert report.skipped == MAX_PROBLEMS + 5 and len(report.notes) == MAX_PROBLEMS


def test_read_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": "1.1",\n "data": [\n  {"title": "x",, "paragraphs": []}]}')
    with pytest.raises(SquadError, match=r"bad\.json, line 3, column \d+: invalid JSON"):
        read_squad(bad)
    missing = _squad_json(tmp_path / "m.json", [{"title": "x", "paragraphs": [
        {"context": "abc", "qas": [{"id": "q", "answers": []}]}]}])
    with pytest.raises(SquadError, match=r"m\.json: data\[0\]\.paragraphs\[0\]\.qas\[0\]: "
                                         r"missing 'question'"):
        read_squad(missing)
    wrong = _squad_json(tmp_path / "w.json", [{"title": "x", "paragraphs": {}}])
    with pytest.raises(SquadError, match=r"data\[0\]\.paragraphs: expected list, got dict"):
        read_squad(wrong)
    with pytest.raises(SquadError, match="no such file"):
        read_squad(tmp_path / "absent.json")


# ---- windows and features --------------------------------------------------------------------

def _official_windows(n: int, room: int, stride: int) -> list[tuple[int, int]]:
    """BERT run_squad.py's doc_spans loop, written out."""
    spans, start = [], 0
    while start < n:
        length = min(n - start, room)
        spans.append((start, length))
        if start + length == n:
            break
        start += min(length, stride)
    return spans or [(0, 0)]


def _official_max_context(spans: list[tuple[int, int]], span_index: int, position: int) -> bool:
    best_score, best_index = None, None
    for i, (start, length) in enumerate(spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, i
    return span_index == best_index


@pytest.mark.parametrize("n,room,stride", [(0, 5, 2), (5, 5, 2), (6, 5, 2), (10, 4, 3),
                                           (10, 4, 5), (37, 8, 3), (100, 30, 7), (64, 9, 9)])
def test_windows_match_official_loop(n, room, stride):
    starts, lengths = windows(n, room, stride)
    spans = list(zip(starts.tolist(), lengths.tolist(), strict=True))
    assert spans == _official_windows(n, room, stride)
    best = max_context_window(starts, lengths, n)
    for w in range(len(spans)):
        for p in range(spans[w][0], spans[w][0] + spans[w][1]):
            assert (best[p] == w) == _official_max_context(spans, w, p)


def test_features_cover_long_contexts(tokenizer):
    examples = _examples(6, sentences=12, seed=1)
    features = make_features(examples, tokenizer, max_seq_length=64, doc_stride=16,
                             max_query_length=8)
    for index, example in enumerate(examples):
        mine = [f for f in features if f.example_index == index]
        assert len(mine) > 2, "the contexts should need several windows"
        n_context = len(tokenizer(example.context, add_special_tokens=False)["input_ids"])
        seen = np.zeros(n_context, dtype=int)
        best = np.zeros(n_context, dtype=int)
        question = tokenizer.encode(example.question, add_special_tokens=False)[:8]
        for f in mine:
            n_head = len(question) + 2
            assert f.input_ids[:n_head] == [tokenizer.cls_token_id, *question,
                                            tokenizer.sep_token_id]
            assert f.input_ids[-1] == tokenizer.sep_token_id and len(f.input_ids) <= 64
            assert f.token_type_ids == [0] * n_head + [1] * (len(f.input_ids) - n_head)
            assert f.attention_mask == [1] * len(f.input_ids)
            assert f.offsets[:n_head] == [None] * n_head and f.offsets[-1] is None
            assert not any(f.max_context[:n_head]) and not f.max_context[-1]
            spans = f.offsets[n_head:-1]
            first = _token_index(tokenizer, example.context, spans[0])
            seen[first:first + len(spans)] += 1
            best[first:first + len(spans)] += np.array(f.max_context[n_head:-1])
        assert (seen >= 1).all() and (best == 1).all()
        assert max(seen) >= 2, "windows overlap by the stride"


def _token_index(tokenizer, context: str, span: tuple[int, int]) -> int:
    offsets = tokenizer(context, add_special_tokens=False,
                        return_offsets_mapping=True)["offset_mapping"]
    return offsets.index(tuple(span))


def test_answer_positions_map_back(tokenizer):
    examples = _examples(30, sentences=6, seed=2, impossible_every=5)
    features = make_features(examples, tokenizer, max_seq_length=48, doc_stride=12,
                             max_query_length=10)
    answered = set()
    for f in features:
        example = examples[f.example_index]
        if example.is_impossible:
            assert (f.start_position, f.end_position) == (0, 0)
            continue
        answer = example.answers[0]
        begin, end = answer["answer_start"], answer["answer_start"] + len(answer["text"])
        spans = [s for s in f.offsets if s is not None]
        inside = spans[0][0] <= begin and end <= spans[-1][1]
        if f.start_position == 0:
            assert f.end_position == 0 and not inside
            continue
        assert inside and f.start_position <= f.end_position
        s, e = f.offsets[f.start_position], f.offsets[f.end_position]
        assert example.context[s[0]:e[1]] == answer["text"]
        answered.add(f.example_index)
    assert answered == {i for i, e in enumerate(examples) if not e.is_impossible}


def test_short_and_empty_contexts(tokenizer):
    examples = _examples(3, sentences=1, seed=3)
    examples.append(SquadExample("empty", "who?", "", [], True))
    features = make_features(examples, tokenizer)
    assert [f.example_index for f in features] == [0, 1, 2, 3]
    assert all(f.max_context.count(True) == len(f.offsets) - f.offsets.count(None)
               for f in features)
    assert len(features[3].input_ids) == len(tokenizer.encode("who?")) + 1
    with pytest.raises(SquadError, match="max_seq_length=20 leaves no room"):
        make_features(examples, tokenizer, max_seq_length=20, max_query_length=64)


# ---- postprocess -----------------------------------------------------------------------------

def _logits(features, width=None, fill=-8.0):
    width = width or max(len(f.input_ids) for f in features)
    return np.full((len(features), width), fill), np.full((len(features), width), fill)


def _target_feature(features, index):
    """The feature of example `index` holding its answer where the answer start token has its
    maximum context."""
    return next(i for i, f in enumerate(features) if f.example_index == index
                and f.start_position and f.max_context[f.start_position])


def test_postprocess_finds_the_planted_span(tokenizer):
    examples = _examples(5, sentences=10, seed=4)
    features = make_features(examples, tokenizer, max_seq_length=64, doc_stride=20,
                             max_query_length=16)
    starts, ends = _logits(features, width=64)
    for index in range(len(examples)):
        t = _target_feature(features, index)
        starts[t, features[t].start_position] = 6.0
        ends[t, features[t].end_position] = 5.0
    predictions, null_odds, nbest = postprocess(examples, features, starts, ends,
                                                version_2=False)
    for example in examples:
        assert predictions[example.qid] == example.answers[0]["text"]
        entries = nbest[example.qid]
        assert entries[0]["text"] == example.answers[0]["text"]
        assert entries[0]["start_logit"] == 6.0 and entries[0]["end_logit"] == 5.0
        assert math.isclose(sum(e["probability"] for e in entries), 1.0)
        assert len({e["text"] for e in entries}) == len(entries) <= 20
        totals = [e["start_logit"] + e["end_logit"] for e in entries]
        assert totals == sorted(totals, reverse=True)
        assert null_odds[example.qid] == pytest.approx(-16 - 11)
    rows = [(s[:len(f.input_ids)], e[:len(f.input_ids)])
            for f, s, e in zip(features, starts, ends, strict=True)]
    trimmed = postprocess(examples, features, [r[0] for r in rows], [r[1] for r in rows],
                          version_2=False)
    assert trimmed[0] == predictions


def test_postprocess_v2_null_threshold(tokenizer):
    examples = _examples(2, sentences=3, seed=5)
    features = make_features(examples, tokenizer)
    starts, ends = _logits(features)
    for index in range(2):
        t = _target_feature(features, index)
        starts[t, features[t].start_position] = 3.0
        ends[t, features[t].end_position] = 2.0
        starts[t, 0], ends[t, 0] = 4.0, 3.0  # null 7 beats the span's 5 by 2
    kw = dict(version_2=True)
    predictions, null_odds, nbest = postprocess(examples, features, starts, ends, **kw)
    answers = [e.answers[0]["text"] for e in examples]
    assert list(predictions.values()) == ["", ""]
    assert list(null_odds.values()) == [pytest.approx(2.0)] * 2
    assert nbest["q0"][0]["text"] == "" and nbest["q0"][1]["text"] == answers[0]
    predictions, _, _ = postprocess(examples, features, starts, ends, **kw,
                                    null_score_diff_threshold=2.5)
    assert list(predictions.values()) == answers
    predictions, _, _ = postprocess(examples, features, starts, ends, version_2=False)
    assert list(predictions.values()) == answers
    starts[:, 0] = ends[:, 0] = -30.0  # the null loses to every span, yet stays in the n-best
    predictions, null_odds, nbest = postprocess(examples, features, starts, ends, **kw)
    assert list(predictions.values()) == answers
    assert null_odds["q0"] == pytest.approx(-60 - 5)
    assert len(nbest["q0"]) == 21 and nbest["q0"][-1]["text"] == ""


def test_apply_null_threshold_shifts_the_odds():
    spans = {"a": "x", "b": "y", "c": "", "d": "w"}
    odds = {"a": -3.0, "b": 0.5, "c": math.inf, "d": 1.5}
    predictions, shifted = apply_null_threshold(spans, odds, 0.5)
    assert predictions == {"a": "x", "b": "y", "c": "", "d": ""}  # "" iff odds > 0.5
    assert shifted == {"a": -3.5, "b": 0.0, "c": math.inf, "d": 1.0}
    assert all((shifted[q] > 0) == (predictions[q] == "") for q in spans)


def test_postprocess_respects_lengths_and_context(tokenizer):
    examples = _examples(1, sentences=4, seed=6)
    features = make_features(examples, tokenizer)
    assert len(features) == 1
    f = features[0]
    first = f.offsets.index(next(s for s in f.offsets if s is not None))
    starts, ends = _logits(features)
    starts[0, first], ends[0, first + 5] = 9.0, 9.0  # best span: 6 tokens
    starts[0, first + 2], ends[0, first + 3] = 4.0, 4.0  # best span of <= 3 tokens
    ends[0, 1] = 20.0  # a question token: never an answer end
    kw = dict(version_2=False, n_best_size=5)
    predictions, _, nbest = postprocess(examples, features, starts, ends, **kw)
    context = examples[0].context
    assert predictions["q0"] == context[f.offsets[first][0]:f.offsets[first + 5][1]]
    predictions, _, nbest = postprocess(examples, features, starts, ends, **kw,
                                        max_answer_length=3)
    assert predictions["q0"] == context[f.offsets[first + 2][0]:f.offsets[first + 3][1]]
    assert len(nbest["q0"]) <= 5
    for entry in nbest["q0"]:
        assert entry["text"] in context and entry["end_logit"] < 20.0


def test_postprocess_errors(tokenizer):
    examples = _examples(2, sentences=2, seed=7)
    features = make_features(examples, tokenizer)
    starts, ends = _logits(features)
    with pytest.raises(SquadError, match="features but"):
        postprocess(examples, features, starts[:-1], ends, version_2=False)
    with pytest.raises(SquadError, match="do not cover"):
        postprocess(examples, features, starts[:, :3], ends[:, :3], version_2=False)


def _reference_postprocess(examples, features, starts, ends, n_best, max_length, version_2):
    """run_squad.py's write_predictions written out slowly, with texts cut from the context."""
    predictions, odds, nbest = {}, {}, {}
    for index, example in enumerate(examples):
        prelim, null = [], None
        for fi, f in enumerate(features):
            if f.example_index != index:
                continue
            s, e = list(starts[fi][:len(f.input_ids)]), list(ends[fi][:len(f.input_ids)])
            if null is None or s[0] + e[0] < null[0] + null[1]:
                null = (s[0], e[0])
            top_s = [i for i, _ in sorted(enumerate(s), key=lambda x: x[1], reverse=True)]
            top_e = [i for i, _ in sorted(enumerate(e), key=lambda x: x[1], reverse=True)]
            for a in top_s[:n_best]:
                for b in top_e[:n_best]:
                    if (f.offsets[a] is None or f.offsets[b] is None or not f.max_context[a]
                            or b < a or b - a + 1 > max_length):
                        continue
                    text = example.context[f.offsets[a][0]:f.offsets[b][1]]
                    prelim.append((s[a] + e[b], text, s[a], e[b]))
        if version_2:
            prelim.append((null[0] + null[1], "", null[0], null[1]))
        entries, seen = [], set()
        for total, text, s, e in sorted(prelim, key=lambda x: x[0], reverse=True):
            if len(entries) >= n_best:
                break
            if text not in seen:
                seen.add(text)
                entries.append((total, text, s, e))
        if version_2 and "" not in seen:
            entries.append((null[0] + null[1], "", null[0], null[1]))
        best = next(x for x in entries if x[1])
        odds[example.qid] = null[0] + null[1] - best[0]
        predictions[example.qid] = "" if version_2 and odds[example.qid] > 0 else best[1]
        weights = np.exp(np.array([x[0] for x in entries]) - max(x[0] for x in entries))
        nbest[example.qid] = [{"text": t, "probability": p, "start_logit": s, "end_logit": e}
                              for (_, t, s, e), p in zip(entries, weights / weights.sum(),
                                                         strict=True)]
    return predictions, odds, nbest


@pytest.mark.parametrize("version_2", [False, True])
def test_postprocess_matches_the_official_loops(tokenizer, version_2):
    examples = _examples(8, sentences=8, seed=8, impossible_every=3)
    features = make_features(examples, tokenizer, max_seq_length=64, doc_stride=24,
                             max_query_length=12)
    rng = np.random.default_rng(0)
    starts = np.round(rng.normal(size=(len(features), 64)), 1)  # rounded: ties happen
    ends = np.round(rng.normal(size=(len(features), 64)), 1)
    got = postprocess(examples, features, starts, ends, version_2=version_2, n_best_size=7,
                      max_answer_length=6)
    want = _reference_postprocess(examples, features, starts, ends, 7, 6, version_2)
    assert got[0] == want[0]
    assert got[1] == pytest.approx(want[1])
    for qid, entries in want[2].items():
        assert [e["text"] for e in got[2][qid]] == [e["text"] for e in entries]
        for mine, theirs in zip(got[2][qid], entries, strict=True):
            assert mine == pytest.approx(theirs)
