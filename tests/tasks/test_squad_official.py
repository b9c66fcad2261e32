"""SQuAD v2 end to end: the figures we report are what the official script gives our files.

A micro model is fine-tuned on generated SQuAD 2.0 data; its predictions.json and
null_odds.json are then scored by `official_v2` below, a plain rewrite of the rules of the
official evaluate-v2.0.py run with `--na-prob-file null_odds.json` (default
--na-prob-thresh 1.0), and every reported figure must equal its result exactly.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import string
from collections import Counter

import pytest
import torch

import litebert
from litebert.tasks.base import finetune_config
from litebert.tasks.finetune import evaluate_model, finetune
from litebert.tokenization import Tokenizer, train_sentencepiece
from tests.helpers.squad import _answer_in, _context, _sentence, _word

MICRO = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
             embedding_size=16, max_position_embeddings=128)
LENGTHS = dict(max_seq_length=64, doc_stride=16, max_query_length=16)

# ---- the official script's rules, written out ---------------------------------------------


def _normalize(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _exact(gold: str, prediction: str) -> int:
    return int(_normalize(gold) == _normalize(prediction))


def _f1(gold: str, prediction: str):
    gold_tokens, pred_tokens = _normalize(gold).split(), _normalize(prediction).split()
    if len(gold_tokens) == 0 or len(pred_tokens) == 0:
        return int(gold_tokens == pred_tokens)
    same = sum((Counter(gold_tokens) & Counter(pred_tokens)).values())
    if same == 0:
        return 0
    precision = 1.0 * same / len(pred_tokens)
    recall = 1.0 * same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def official_v2(dataset: dict, preds: dict, na_probs: dict, na_prob_thresh: float = 1.0) -> dict:
    has_answer, exact, f1 = {}, {}, {}
    for article in dataset["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qid = qa["id"]
                has_answer[qid] = bool(qa["answers"])
                golds = [a["text"] for a in qa["answers"] if _normalize(a["text"])]
                if not golds:
                    golds = [""]
                assert qid in preds, f"the script would report {qid} missing"
                exact[qid] = max(_exact(g, preds[qid]) for g in golds)
                f1[qid] = max(_f1(g, preds[qid]) for g in golds)
    exact_applied, f1_applied = {}, {}
    for qid in exact:
        if na_probs[qid] > na_prob_thresh:
            exact_applied[qid] = f1_applied[qid] = float(not has_answer[qid])
        else:
            exact_applied[qid], f1_applied[qid] = exact[qid], f1[qid]
    out = {}

    def totals(prefix: str, ids: list) -> None:
        # Python's sum(), as the script: its float rounding is part of the figures.
        out[prefix + "exact"] = 100.0 * sum(exact_applied[q] for q in ids) / len(ids)
        out[prefix + "f1"] = 100.0 * sum(f1_applied[q] for q in ids) / len(ids)
        out[prefix + "total"] = len(ids)

    totals("", list(exact_applied))
    answerable = [q for q in has_answer if has_answer[q]]
    unanswerable = [q for q in has_answer if not has_answer[q]]
    if answerable:
        totals("HasAns_", answerable)
    if unanswerable:
        totals("NoAns_", unanswerable)
    for name, raw in (("exact", exact), ("f1", f1)):
        score = len(unanswerable)  # answer nothing: every unanswerable question is right
        best, best_thresh = score, 0.0
        for qid in sorted(na_probs, key=lambda k: na_probs[k]):
            if qid not in raw:
                continue
            if has_answer[qid]:
                score += raw[qid]
            elif preds[qid]:
                score += -1
            if score > best:
                best, best_thresh = score, na_probs[qid]
        out[f"best_{name}"] = 100.0 * best / len(raw)
        out[f"best_{name}_thresh"] = best_thresh
    return out


def test_reference_by_hand():
    data = {"data": [{"paragraphs": [{"qas": [
        {"id": "a", "answers": [{"text": "cat sat"}, {"text": "the cat"}]},  # f1 max 1
        {"id": "b", "answers": [{"text": "a"}]},  # normalises to "": gold [""]
        {"id": "u", "answers": []}]}]}]}
    preds = {"a": "sat cat", "b": "", "u": "dog"}
    out = official_v2(data, preds, {"a": -1.0, "b": 2.0, "u": 0.5})
    # b: na 2.0 > 1.0 -> scored float(not has_answer) = 0 (raw "" vs [""] would be 1).
    assert out["exact"] == 0.0 and out["f1"] == 100.0 / 3
    # best: start 1 (u right); a +1 -> 2 at -1.0; u -1 -> 1; b +1 -> 2 (not better).
    assert (out["best_f1"], out["best_f1_thresh"]) == (200.0 / 3, -1.0)


# ---- fixtures ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def micro_model(tmp_path_factory):
    root = tmp_path_factory.mktemp("squad-micro")
    rng = random.Random(0)
    text = root / "text.txt"
    text.write_text("\n".join(_sentence(rng) for _ in range(2000)) + "\nThe cat sat on a mat.\n")
    tok = Tokenizer.from_file(train_sentencepiece([text], root / "tok", vocab_size=300))
    torch.manual_seed(0)
    model = litebert.EncoderForPreTraining(litebert.ModelConfig(vocab_size=len(tok), **MICRO))
    model.save_pretrained(root / "model")
    tok.save_pretrained(root / "model")
    return root / "model"


def _v2_json(n: int, seed: int, odd_cases: bool) -> dict:
    """n paragraphs, each with an answerable and an unanswerable question; with odd_cases
    also two gold answers, a gold answer that normalises to "" and an answer the reader
    cannot find (skipped by it, still scored by the script)."""
    rng = random.Random(seed)
    paragraphs = []
    for i in range(n):
        context = _context(rng, 2)
        question = " ".join(_word(rng) for _ in range(4)) + "?"
        paragraphs.append({"context": context, "qas": [
            {"id": f"q{i}", "question": question, "is_impossible": False,
             "answers": [_answer_in(rng, context)]},
            {"id": f"n{i}", "question": question[::-1], "is_impossible": True, "answers": [],
             "plausible_answers": [_answer_in(rng, context)]}]})
    if odd_cases:
        context = "The cat sat on a mat. " + _context(rng, 1)
        paragraphs.append({"context": context, "qas": [
            {"id": "two", "question": "who sat?", "is_impossible": False,
             "answers": [{"text": "The cat", "answer_start": 0},
                         {"text": "cat", "answer_start": 4}]},
            {"id": "article", "question": "which mat?", "is_impossible": False,
             "answers": [{"text": "a", "answer_start": context.index(" a ") + 1}]},
            {"id": "lost", "question": "where?", "is_impossible": False,
             "answers": [{"text": "nowhere", "answer_start": 3}]}]})
    return {"version": "v2.0", "data": [{"title": "t", "paragraphs": paragraphs}]}


@pytest.fixture(scope="module")
def trained(micro_model, tmp_path_factory):
    data = tmp_path_factory.mktemp("squad2-data")
    (data / "train-v2.0.json").write_text(json.dumps(_v2_json(40, 1, odd_cases=False)))
    dev = _v2_json(12, 2, odd_cases=True)
    (data / "dev-v2.0.json").write_text(json.dumps(dev))
    test = json.loads(json.dumps(dev))  # the dev questions, answers and flags removed
    for paragraph in test["data"][0]["paragraphs"]:
        for qa in paragraph["qas"]:
            for key in ("answers", "is_impossible", "plausible_answers"):
                qa.pop(key, None)
    (data / "test-v2.0.json").write_text(json.dumps(test))
    out = tmp_path_factory.mktemp("squad2-out")
    result = finetune(finetune_config(task="squad2", data=str(data), model=str(micro_model),
                                     out=str(out), lr=2e-3, batch_size=16, max_steps=30,
                                     warmup_steps=3, eval_every=10, **LENGTHS))
    return data, out, result, dev


def _read(path):
    return json.loads(path.read_text())


# ---- the tests -----------------------------------------------------------------------------

def test_reported_figures_are_the_official_scripts_on_our_files(trained):
    data, out, result, dev = trained
    predictions, null_odds = _read(out / "predictions.json"), _read(out / "null_odds.json")
    theta = _read(out / "model" / "squad.json")["null_score_diff_threshold"]
    assert result["dev"] == {**official_v2(dev, predictions, null_odds),
                             "null_score_diff_threshold": theta}
    assert _read(out / "results.json")["dev"] == result["dev"]
    # Every dev question is in both files (the reader's skipped one as no answer), and the
    # script's 1.0 rule meets only questions already answered "".
    ids = [qa["id"] for p in dev["data"][0]["paragraphs"] for qa in p["qas"]]
    assert list(predictions) == ids and list(null_odds) == ids
    assert (predictions["lost"], null_odds["lost"]) == ("", float("inf"))
    assert all(predictions[q] == "" for q in ids if null_odds[q] > 0)
    assert all(predictions[q] != "" for q in ids if null_odds[q] <= 0)
    assert result["metric"] == "f1"


def test_test_file_predictions_use_the_saved_threshold(trained):
    data, out, _, _ = trained
    predictions, null_odds = _read(out / "predictions.json"), _read(out / "null_odds.json")
    test_predictions = _read(out / "predictions" / "test_predictions.json")
    test_odds = _read(out / "predictions" / "test_null_odds.json")
    kept = [q for q in predictions if q != "lost"]  # the test reader needs no answers
    assert set(test_predictions) == set(predictions)
    # The best checkpoint and its threshold: the same answers and odds as on dev.
    assert {q: test_predictions[q] for q in kept} == {q: predictions[q] for q in kept}
    assert {q: test_odds[q] for q in kept} == {q: null_odds[q] for q in kept}


def test_evaluate_reports_official_figures_and_applies_the_stored_threshold(trained,
                                                                            tmp_path):
    data, out, result, dev = trained
    model = tmp_path / "model"
    shutil.copytree(out / "model", model)
    settings = _read(model / "squad.json")
    settings["null_score_diff_threshold"] = stored = 1000.0  # answer every question
    (model / "squad.json").write_text(json.dumps(settings))
    again = evaluate_model(finetune_config(task="squad2", data=str(data), model=str(model),
                                          out=str(tmp_path / "eval"), **LENGTHS))
    evaluated = tmp_path / "eval"
    assert again["dev"] == {
        **official_v2(dev, _read(evaluated / "predictions.json"),
                      _read(evaluated / "null_odds.json")),
        "null_score_diff_threshold": result["dev"]["null_score_diff_threshold"]}  # refitted
    assert again["dev"] == result["dev"]
    test_predictions = _read(evaluated / "predictions" / "test_predictions.json")
    test_odds = _read(evaluated / "predictions" / "test_null_odds.json")
    theta = result["dev"]["null_score_diff_threshold"]
    dev_odds = _read(out / "null_odds.json")
    for qid, text in test_predictions.items():
        assert text != ""  # every odds is below the stored 1000
        assert test_odds[qid] + stored == pytest.approx(dev_odds[qid] + theta, abs=1e-9) \
            or qid == "lost"
