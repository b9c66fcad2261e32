"""Tests for litebert.tasks.retrieval: BEIR folders, and metrics equal to pytrec_eval's."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import pytrec_eval

from litebert.files import InputFileError, MissingInputError
from litebert.tasks.retrieval import (
    query_metrics,
    rank_metrics,
    rankings,
    read_beir,
    score_metrics,
    top_k,
)

KS = (1, 3, 5, 10, 100)


def _random_case(seed: int, n_queries: int = 30, n_docs: int = 150):
    """(scores (Q, D), query ids, doc ids, qrels) with many tied scores and graded qrels."""
    rng = np.random.default_rng(seed)
    # Ids whose string order is not their numeric order ("d10" < "d2"), so ties test it.
    doc_ids = [f"d{i}" for i in rng.permutation(n_docs)]
    query_ids = [f"q{i}" for i in range(n_queries)]
    scores = rng.integers(0, 6, size=(n_queries, n_docs)) / 4.0  # (Q, D) few levels: ties
    qrels: dict[str, dict[str, int]] = {}
    for query in query_ids[:-2]:  # the last two queries have no qrels at all
        judged = rng.choice(n_docs, size=int(rng.integers(1, 8)), replace=False)
        qrels[query] = {doc_ids[j]: int(rng.integers(0, 3)) for j in judged}
        qrels[query][doc_ids[judged[0]]] = int(rng.integers(1, 3))  # at least one relevant
    qrels[query_ids[0]] = {doc_ids[0]: 0}  # judged, none relevant
    return scores, query_ids, doc_ids, qrels


def _run(scores, query_ids, doc_ids, top=None):
    """A pytrec_eval run: every document, or each query's `top` ranked by us (as BEIR does)."""
    if top is None:
        return {q: {d: float(s) for d, s in zip(doc_ids, row, strict=True)}
                for q, row in zip(query_ids, scores, strict=True)}
    ranked = rankings(scores, query_ids, doc_ids, top)
    index = {d: j for j, d in enumerate(doc_ids)}
    return {q: {d: float(scores[i, index[d]]) for d in ranked[q]} for i, q in enumerate(query_ids)}


def _oracle(qrels, run, measures):
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


def _relevant(qrels):
    return [q for q, rels in qrels.items() if any(s > 0 for s in rels.values())]


def test_pytrec_eval_breaks_ties_by_document_id_descending():
    # The rule top_k copies, checked in the oracle itself: "d2" > "d10" > "d1" as strings.
    result = _oracle({"q": {"d1": 1}}, {"q": {"d1": 1.0, "d10": 1.0, "d2": 1.0}}, {"recip_rank"})
    assert result["q"]["recip_rank"] == 1 / 3
    result = _oracle({"q": {"d10": 1}}, {"q": {"d1": 1.0, "d10": 1.0, "d2": 1.0}}, {"recip_rank"})
    assert result["q"]["recip_rank"] == 1 / 2


@pytest.mark.parametrize("seed", range(4))
def test_top_k_matches_a_full_sort(seed):
    scores, _, doc_ids, _ = _random_case(seed)
    for k in (1, 7, 10, 150, 400):
        got = top_k(scores, doc_ids, k)
        for row, picked in zip(scores, got, strict=True):
            by_id = sorted(range(len(doc_ids)), key=doc_ids.__getitem__, reverse=True)
            full = sorted(by_id, key=lambda j: -row[j])  # stable: ties stay id-descending
            assert picked.tolist() == full[:k]


@pytest.mark.parametrize("seed", range(4))
def test_metrics_equal_pytrec_eval(seed):
    scores, query_ids, doc_ids, qrels = _random_case(seed)
    ours = {q: query_metrics(ranked, qrels[q], KS)
            for q, ranked in rankings(scores, query_ids, doc_ids, max(KS)).items()
            if q in _relevant(qrels)}
    full = _oracle(qrels, _run(scores, query_ids, doc_ids),
                   {"ndcg_cut.1,3,5,10,100", "recall.1,3,5,10,100"})
    assert set(ours) == set(_relevant(qrels)) and len(ours) == len(query_ids) - 3
    for k in KS:
        cut = _oracle(qrels, _run(scores, query_ids, doc_ids, top=k), {"recip_rank"})
        for q in ours:
            assert ours[q][f"ndcg@{k}"] == pytest.approx(full[q][f"ndcg_cut_{k}"], abs=1e-12)
            assert ours[q][f"recall@{k}"] == pytest.approx(full[q][f"recall_{k}"], abs=1e-12)
            assert ours[q][f"mrr@{k}"] == pytest.approx(cut[q]["recip_rank"], abs=1e-12)
    means = score_metrics(scores, query_ids, doc_ids, qrels, KS)
    assert means["queries"] == len(ours) and means["unjudged_queries"] == 3
    for k in KS:
        cut = _oracle(qrels, _run(scores, query_ids, doc_ids, top=k), {"recip_rank"})
        expected = {"ndcg": [full[q][f"ndcg_cut_{k}"] for q in ours],
                    "recall": [full[q][f"recall_{k}"] for q in ours],
                    "mrr": [cut[q]["recip_rank"] for q in ours]}
        for name, values in expected.items():
            assert means[f"{name}@{k}"] == pytest.approx(sum(values) / len(values), abs=1e-12)


def test_hand_computed_case():
    # Ranking a, b, c, d; qrels a=0, b=2, d=1, e=1 (e never retrieved).
    m = query_metrics(["a", "b", "c", "d"], {"a": 0, "b": 2, "d": 1, "e": 1}, (1, 3, 5))
    assert m["mrr@1"] == 0.0 and m["mrr@3"] == 0.5 and m["mrr@5"] == 0.5
    assert m["recall@1"] == 0.0 and m["recall@3"] == 1 / 3 and m["recall@5"] == 2 / 3
    idcg3 = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert m["ndcg@3"] == pytest.approx((2 / math.log2(3)) / idcg3, abs=1e-15)
    assert m["ndcg@5"] == pytest.approx((2 / math.log2(3) + 1 / math.log2(5)) / idcg3,
                                        abs=1e-15)
    assert m["ndcg@1"] == 0.0


def test_rank_metrics_counts_missing_and_unjudged_queries():
    means = rank_metrics({"q1": ["a"], "q3": ["a"]}, {"q1": {"a": 1}, "q2": {"b": 1}}, (1,))
    assert means == {"ndcg@1": 0.5, "mrr@1": 0.5, "recall@1": 0.5, "queries": 2,
                     "unjudged_queries": 1}


def test_top_k_rejects_bad_scores():
    with pytest.raises(ValueError, match="NaN"):
        top_k(np.array([[0.0, np.nan]]), ["a", "b"], 1)
    with pytest.raises(ValueError, match="shape"):
        top_k(np.zeros((1, 3)), ["a", "b"], 1)


# ---- reading BEIR folders --------------------------------------------------------------------

def _write_beir(root, corpus=None, queries=None, qrels=None):
    corpus = corpus if corpus is not None else [
        json.dumps({"_id": "d1", "title": "T", "text": "one"}),
        json.dumps({"_id": "d2", "text": "two"})]
    queries = queries if queries is not None else [json.dumps({"_id": "q1", "text": "what"})]
    qrels = qrels if qrels is not None else ["q1\td1\t2", "q1\td2\t0", "q1\tzz\t1", "q9\td1\t1"]
    (root / "qrels").mkdir(exist_ok=True)
    (root / "corpus.jsonl").write_text("".join(line + "\n" for line in corpus))
    (root / "queries.jsonl").write_text("".join(line + "\n" for line in queries))
    (root / "qrels" / "test.tsv").write_text(
        "".join(line + "\n" for line in ["query-id\tcorpus-id\tscore", *qrels]))


def test_read_beir(tmp_path):
    _write_beir(tmp_path)
    data = read_beir(tmp_path)
    assert data.corpus == {"d1": ("T", "one"), "d2": ("", "two")}
    assert data.queries == {"q1": "what"}
    assert data.qrels == {"q1": {"d1": 2, "d2": 0}}
    assert data.unknown_qrels == 2
    assert data.first_unknown == f"{tmp_path / 'qrels' / 'test.tsv'}:4: document 'zz' is not " \
                                 "in corpus.jsonl"


@pytest.mark.parametrize(("files", "message"), [
    ({"corpus": ["{bad"]}, r"corpus.jsonl:1: bad JSON"),
    ({"corpus": ["[1]"]}, r"corpus.jsonl:1: a JSON line must be an object"),
    ({"corpus": ['{"_id": "d1"}']}, r"corpus.jsonl:1: no string field 'text'"),
    ({"corpus": ['{"_id": "d1", "text": "a"}', "", '{"_id": "d1", "text": "b"}']},
     r"corpus.jsonl:3: _id 'd1' appears twice"),
    ({"corpus": []}, r"corpus.jsonl: the corpus is empty"),
    ({"queries": ['{"_id": 7, "text": "a"}']}, r"queries.jsonl:1: no string field '_id'"),
    ({"qrels": ["q1\td1"]}, r"test.tsv:2: 2 tab-separated columns, expected 3"),
    ({"qrels": ["q1\td1\t1.5"]}, r"test.tsv:2: score '1.5' is not an integer"),
])
def test_read_beir_errors(tmp_path, files, message):
    _write_beir(tmp_path, **files)
    with pytest.raises(InputFileError, match=message):
        read_beir(tmp_path)


def test_read_beir_missing_split(tmp_path):
    _write_beir(tmp_path)
    with pytest.raises(MissingInputError, match="dev.tsv: no such file"):
        read_beir(tmp_path, split="dev")
