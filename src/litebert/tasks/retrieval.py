"""Retrieval evaluation: BEIR folders and nDCG@k, MRR@k and recall@k as trec_eval computes them.

Reading (`read_beir`): a BEIR folder holds `corpus.jsonl` (`_id`, `title`, `text`),
`queries.jsonl` (`_id`, `text`) and `qrels/<split>.tsv` (a `query-id corpus-id score` header,
then tab-separated lines). Bad JSON, a missing or non-string field, a repeated id, a qrels line
with the wrong number of columns or a non-integer score are errors naming file:line; so is an
empty corpus. A qrel naming a query or document that is not in the folder is skipped and
counted (`BeirData.unknown_qrels`; the first as file:line in `first_unknown`): published BEIR
sets contain such lines, and the metrics could not use them anyway. A missing `title` reads
as "" (several BEIR corpora omit it).

Metrics (`rank_metrics`, `score_metrics`) follow trec_eval (checked against pytrec_eval in
tests/tasks/test_retrieval.py): a document is relevant when its qrel score is >= 1; nDCG@k
has gain = qrel score and discount log2(rank + 1), the ideal ranking being the query's qrels
sorted by score; MRR@k is 1/rank of the first relevant document in the top k, else 0;
recall@k is relevant-in-top-k over all relevant. Equal scores are ordered by document id
descending as strings, as trec_eval sorts a run ("d10" before "d1"). Means are over the
queries that have at least one relevant document; queries without one (no qrels, or only
score-0 qrels) are left out and counted in "unjudged_queries". pytrec_eval still returns
zeros for a query whose qrels are all 0 and BEIR averages those in; we do not, because such a
query scores 0 whatever the model does.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from litebert.files import InputFileError, MissingInputError, open_text

DEFAULT_KS = (1, 3, 5, 10, 100)
Qrels = dict[str, dict[str, int]]


@dataclass
class BeirData:
    corpus: dict[str, tuple[str, str]]  # document id -> (title, text)
    queries: dict[str, str]  # query id -> text
    qrels: Qrels  # query id -> document id -> graded relevance
    unknown_qrels: int = 0  # qrels skipped because their query or document is not here
    first_unknown: str = ""  # the first of them, "file:line: why"


def _json_records(path: Path, fields: Sequence[str],
                  optional: Sequence[str] = ()) -> Iterable[tuple[str, list[str]]]:
    """(where, [field values]) for each non-blank line; `optional` fields default to ""."""
    if not path.is_file():
        raise MissingInputError(f"{path}: no such file (a BEIR folder needs it)")
    with open_text(path) as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise InputFileError(f"{where}: bad JSON ({err.msg}, column {err.colno})") from None
            if not isinstance(record, dict):
                raise InputFileError(f"{where}: a JSON line must be an object")
            values = []
            for name in (*fields, *optional):
                value = record.get(name, "" if name in optional else None)
                if not isinstance(value, str):
                    raise InputFileError(f"{where}: no string field {name!r}")
                values.append(value)
            yield where, values


def _by_id(records: Iterable[tuple[str, list[str]]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for where, (key, *rest) in records:
        if key in found:
            raise InputFileError(f"{where}: _id {key!r} appears twice")
        found[key] = rest
    return found


def _read_qrels(path: Path) -> list[tuple[str, str, str, int]]:
    """(where, query id, document id, score) for each line after the header."""
    if not path.is_file():
        raise MissingInputError(f"{path}: no such file (a BEIR folder needs it)")
    rows = []
    with open_text(path) as handle:
        for lineno, line in enumerate(handle, 1):
            line = line.rstrip("\r\n")
            if lineno == 1 or not line.strip():  # the header: query-id corpus-id score
                continue
            where = f"{path}:{lineno}"
            cells = line.split("\t")
            if len(cells) != 3:
                raise InputFileError(f"{where}: {len(cells)} tab-separated columns, expected 3 "
                                     "(query-id, corpus-id, score)")
            try:
                score = int(cells[2])
            except ValueError:
                raise InputFileError(f"{where}: score {cells[2]!r} is not an integer") from None
            rows.append((where, cells[0], cells[1], score))
    return rows


def read_beir(folder: str | Path, split: str = "test") -> BeirData:
    """The corpus, queries and `split` qrels of a BEIR folder (rules in the module docstring)."""
    folder = Path(folder)
    corpus_path = folder / "corpus.jsonl"
    corpus = {key: (title, text) for key, (text, title) in
              _by_id(_json_records(corpus_path, ("_id", "text"), ("title",))).items()}
    if not corpus:
        raise InputFileError(f"{corpus_path}: the corpus is empty")
    queries = {key: text for key, (text,) in
               _by_id(_json_records(folder / "queries.jsonl", ("_id", "text"))).items()}
    qrels: Qrels = {}
    unknown, first = 0, ""
    for where, query, doc, score in _read_qrels(folder / "qrels" / f"{split}.tsv"):
        if query not in queries or doc not in corpus:
            unknown += 1
            first = first or (f"{where}: query {query!r} is not in queries.jsonl"
                              if query not in queries else
                              f"{where}: document {doc!r} is not in corpus.jsonl")
            continue
        qrels.setdefault(query, {})[doc] = score
    return BeirData(corpus, queries, qrels, unknown, first)


# ---- ranking ---------------------------------------------------------------------------------

def top_k(scores: np.ndarray, doc_ids: Sequence[str], k: int) -> np.ndarray:
    """(Q, min(k, D)) column indices of each row's best scores, best first; equal scores are
    ordered by document id descending, as trec_eval orders them."""
    scores = np.asarray(scores, dtype=np.float64)  # (Q, D)
    if scores.ndim != 2 or scores.shape[1] != len(doc_ids):
        raise ValueError(f"scores of shape {scores.shape} for {len(doc_ids)} documents")
    if not np.isfinite(scores).all():
        raise ValueError("scores contain NaN or infinity")
    k = min(k, scores.shape[1])
    if k <= 0:
        return np.zeros((scores.shape[0], 0), dtype=np.int64)
    # Columns in tie order (id descending), so that "lower column wins" is the tie rule.
    order = np.array(sorted(range(len(doc_ids)), key=doc_ids.__getitem__, reverse=True))
    ordered = scores[:, order]  # (Q, D)
    kth = -np.partition(-ordered, k - 1, axis=1)[:, k - 1:k]  # (Q, 1) k-th best score
    above = ordered > kth  # (Q, D) always in the top k
    level = ordered == kth  # (Q, D) ties at the cut: the first columns fill the remaining places
    room = k - above.sum(axis=1, keepdims=True)  # (Q, 1)
    keep = above | (level & (np.cumsum(level, axis=1) <= room))  # exactly k per row
    columns = np.nonzero(keep)[1].reshape(-1, k)  # (Q, k) ascending, i.e. in tie order
    best = np.argsort(-np.take_along_axis(ordered, columns, axis=1), axis=1, kind="stable")
    return order[np.take_along_axis(columns, best, axis=1)]  # (Q, k)


def rankings(scores: np.ndarray, query_ids: Sequence[str], doc_ids: Sequence[str],
             k: int) -> dict[str, list[str]]:
    """Query id -> its top-k document ids, best first."""
    top = top_k(scores, doc_ids, k)  # (Q, k)
    if len(query_ids) != top.shape[0]:
        raise ValueError(f"{len(query_ids)} query ids for {top.shape[0]} rows of scores")
    return {query: [doc_ids[i] for i in row]
            for query, row in zip(query_ids, top.tolist(), strict=True)}


# ---- metrics ---------------------------------------------------------------------------------

def query_metrics(ranking: Sequence[str], relevance: Mapping[str, int],
                  ks: Sequence[int] = DEFAULT_KS) -> dict[str, float]:
    """nDCG@k, MRR@k and recall@k of one ranked list (best first) against its qrels."""
    relevant = sum(1 for score in relevance.values() if score > 0)
    if not relevant:
        raise ValueError("a query without relevant documents has no metrics")
    gains = [max(relevance.get(doc, 0), 0) for doc in ranking]
    ideal = sorted((score for score in relevance.values() if score > 0), reverse=True)
    first = next((rank for rank, gain in enumerate(gains, 1) if gain > 0), math.inf)
    out = {}
    for k in ks:
        dcg = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains[:k], 1))
        idcg = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(ideal[:k], 1))
        out[f"ndcg@{k}"] = dcg / idcg
        out[f"mrr@{k}"] = 1.0 / first if first <= k else 0.0
        out[f"recall@{k}"] = sum(1 for gain in gains[:k] if gain > 0) / relevant
    return out


def rank_metrics(ranked: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]],
                 ks: Sequence[int] = DEFAULT_KS) -> dict[str, Any]:
    """Means over the judged queries of `query_metrics`; a judged query missing from `ranked`
    counts as an empty list (scores 0), as a retriever that returned nothing."""
    judged = [query for query, rels in qrels.items() if any(s > 0 for s in rels.values())]
    totals = dict.fromkeys((f"{name}@{k}" for k in ks for name in ("ndcg", "mrr", "recall")),
                           0.0)
    for query in judged:
        for name, value in query_metrics(ranked.get(query, ()), qrels[query], ks).items():
            totals[name] += value
    means: dict[str, Any] = {name: total / len(judged) if judged else 0.0
                             for name, total in totals.items()}
    means["queries"] = len(judged)
    means["unjudged_queries"] = len(set(ranked) | set(qrels)) - len(judged)
    return means


def score_metrics(scores: np.ndarray, query_ids: Sequence[str], doc_ids: Sequence[str],
                  qrels: Mapping[str, Mapping[str, int]],
                  ks: Sequence[int] = DEFAULT_KS) -> dict[str, Any]:
    """`rank_metrics` of a (Q, D) score matrix, rows in `query_ids`, columns in `doc_ids`."""
    return rank_metrics(rankings(scores, query_ids, doc_ids, max(ks)), qrels, ks)
