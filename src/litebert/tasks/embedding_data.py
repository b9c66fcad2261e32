"""The data of the embedding task (tasks/embedding.py): training pairs or triplets, and the
three kinds of dev data with their metrics.

Training: a table (CSV / TSV / JSON lines / Parquet / a saved dataset folder;
tasks/tables.py's readers) with an anchor column, a positive column and optionally a
hard-negative column. A missing column is an error naming the file and the columns it has; a
row without one of its texts is skipped and counted, the first cases as file:line.

Dev data, one kind per run (`DevSet.kind`), each with its primary metric:
- "sts": pairs of sentences with a gold similarity (STS-B's sentence1, sentence2, score):
  Pearson and Spearman of the cosines against the scores; primary "spearman".
- "beir": a BEIR folder (tasks/retrieval.py: corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv):
  every query with qrels against the whole corpus (a document is its title and text), nDCG@k,
  MRR@k and recall@k as trec_eval computes them; primary "ndcg@10". A qrel naming a query or
  document the folder lacks is skipped with a warning naming its file:line (published BEIR
  sets have such lines); a folder left without any usable qrel is an error.
- "pairs": pairs or triplets in the training columns, without scores: each anchor retrieves
  among ALL the dev positives (and hard negatives), not only its batch's, so the metric does
  not depend on the batch size: "accuracy" (its own positive ranks first; primary) and
  "mrr@10". A tie with its own positive counts in the positive's favour. The dev loss was
  the other candidate: it moves with the scale and the batch's make-up, and says less about
  what the embeddings are used for, which is retrieval.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from litebert.tasks.base import FinetuneError, reported
from litebert.tasks.examples import TaskDataError
from litebert.tasks.metrics import glue_metrics
from litebert.tasks.registry import EmbeddingOptions
from litebert.tasks.retrieval import BeirData, rank_metrics, rankings, read_beir
from litebert.tasks.tables import MissingColumnError, stream_table

log = logging.getLogger("litebert")

PRIMARY = {"sts": "spearman", "beir": "ndcg@10", "pairs": "accuracy"}
QUERY_BLOCK = 256  # queries scored at once: a (256, D) score matrix, whatever the corpus


def pair_columns(options: EmbeddingOptions) -> tuple[str, str, str | None]:
    return options.anchor_column, options.positive_column, options.negative_column


def read_pairs(path: Path, options: EmbeddingOptions, lowercase: bool = False
               ) -> list[list[str]]:
    """[anchors, positives] or [anchors, positives, negatives]: the texts of a pair or
    triplet table, row for row (rows missing a text skipped, and logged)."""
    anchor, positive, negative = pair_columns(options)
    roles = {"text_a": "the anchor column", "text_b": "the positive column",
             "label": "the negative column"}
    examples, report = stream_table(path, text_a=anchor, text_b=positive, label=negative,
                                    roles=roles)
    rows = reported((list(examples), report))
    columns = [[ex.text_a for ex in rows], [str(ex.text_b) for ex in rows]]
    if negative is not None:  # the third column rides in the reader's label field
        columns.append([str(ex.label) for ex in rows])
    if not rows:
        raise TaskDataError(f"{path}: no pairs ({report.skipped} rows skipped)")
    return [[t.lower() for t in c] for c in columns] if lowercase else columns


@dataclass
class DevSet:
    """Dev data as texts: `columns` are what is embedded (sts: sentence1, sentence2; pairs:
    anchors, positives[, negatives]; beir: the judged queries, the corpus)."""

    kind: str
    source: str
    columns: list[list[str]]
    scores: np.ndarray | None = None  # sts: (N,) gold similarities
    query_ids: list[str] = field(default_factory=list)  # beir
    doc_ids: list[str] = field(default_factory=list)  # beir
    beir: BeirData | None = None


def read_sts(path: Path, options: EmbeddingOptions, lowercase: bool = False) -> DevSet:
    examples, report = stream_table(
        path, text_a=options.sentence1_column, text_b=options.sentence2_column,
        label=options.score_column, roles={"text_a": "the first sentence", "text_b":
                                           "the second sentence", "label": "the score"})
    rows = reported((list(examples), report))
    scores = []
    for ex in rows:
        try:
            scores.append(float(str(ex.label)))
        except ValueError:
            raise TaskDataError(f"{path} ({ex.guid}): score {ex.label!r} is not a "
                                "number") from None
    if len(rows) < 2:
        raise TaskDataError(f"{path}: {len(rows)} scored pairs; a correlation needs two")
    columns = [[ex.text_a for ex in rows], [str(ex.text_b) for ex in rows]]
    if lowercase:
        columns = [[t.lower() for t in c] for c in columns]
    return DevSet("sts", str(path), columns, np.array(scores))


def read_beir_dev(folder: Path, options: EmbeddingOptions, lowercase: bool = False) -> DevSet:
    split = options.qrels_split or ("dev" if (folder / "qrels" / "dev.tsv").is_file()
                                    else "test")
    data = read_beir(folder, split)
    if data.unknown_qrels:
        log.warning("%s (skipped; %d such qrels in all)", data.first_unknown, data.unknown_qrels)
    if not any(score > 0 for rels in data.qrels.values() for score in rels.values()):
        first = f"; the first skipped: {data.first_unknown}" if data.first_unknown else ""
        raise TaskDataError(f"{folder / 'qrels' / f'{split}.tsv'}: no qrel with a score above "
                            f"0 names a query and a document of the folder{first}")
    query_ids, doc_ids = list(data.qrels), list(data.corpus)
    queries = [data.queries[q] for q in query_ids]
    docs = [f"{title} {text}".strip() for title, text in data.corpus.values()]
    columns = [queries, docs]
    if lowercase:
        columns = [[t.lower() for t in c] for c in columns]
    return DevSet("beir", str(folder), columns, query_ids=query_ids, doc_ids=doc_ids,
                  beir=data)


def read_dev(path: Path, options: EmbeddingOptions, lowercase: bool = False) -> DevSet:
    """The dev data at `path`, of options.dev_format (auto: see the module docstring)."""
    kind = options.dev_format
    if kind == "auto" and path.is_dir() and (path / "corpus.jsonl").is_file():
        kind = "beir"
    if kind == "beir":
        return read_beir_dev(path, options, lowercase)
    if kind == "auto":
        try:  # a table with the STS columns is STS; failing that, pairs (or its error)
            return read_sts(path, options, lowercase)
        except MissingColumnError:
            kind = "pairs"
    if kind == "sts":
        return read_sts(path, options, lowercase)
    return DevSet("pairs", str(path), read_pairs(path, options, lowercase))


def held_out(columns: list[list[str]], fraction: float
             ) -> tuple[list[list[str]], list[list[str]]]:
    """(train, dev) columns: a `fraction` of the rows held out as dev, chosen with a fixed
    seed so every run and seed holds out the same ones."""
    n = len(columns[0])
    if not 0 < fraction < 1:
        raise FinetuneError(f"pairs_dev_fraction={fraction}: must lie in (0, 1)")
    order = np.random.default_rng(0).permutation(n)
    cut = max(1, int(n * fraction))
    if cut >= n:
        raise FinetuneError(f"{n} training pairs: too few to hold out dev pairs; give --dev")
    pick = [order[cut:], order[:cut]]
    train, dev = ([[c[i] for i in rows] for c in columns] for rows in pick)
    return train, dev


# ---- metrics -----------------------------------------------------------------------------------

def sts_metrics(first: np.ndarray, second: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Pearson and Spearman of the cosines of unit-length (N, H) pairs against the scores."""
    cosines = (first * second).sum(axis=1)  # (N,)
    metrics = glue_metrics("regression", cosines, gold)
    return {"spearman": metrics["spearman"], "pearson": metrics["pearson"]}


def pair_metrics(anchors: np.ndarray, positives: np.ndarray,
                 negatives: np.ndarray | None = None) -> dict[str, float]:
    """Each anchor (N, H) against all positives (N, H) and negatives (M, H), unit length:
    accuracy (own positive first) and MRR@10; ties go to the positive."""
    candidates = positives if negatives is None else np.concatenate([positives, negatives])
    ranks = []
    for start in range(0, len(anchors), QUERY_BLOCK):
        block = anchors[start:start + QUERY_BLOCK] @ candidates.T  # (b, N + M)
        rows = np.arange(len(block))
        own = block[rows, start + rows]  # (b,)
        ranks.append((block > own[:, None]).sum(axis=1) + 1)
    rank = np.concatenate(ranks)  # (N,)
    return {"accuracy": float(np.mean(rank == 1)),
            "mrr@10": float(np.mean(np.where(rank <= 10, 1.0 / rank, 0.0))),
            "pairs": len(rank)}


def beir_metrics(queries: np.ndarray, docs: np.ndarray, dev: DevSet,
                 ks: tuple[int, ...]) -> dict[str, float]:
    """nDCG@k, MRR@k, recall@k of the judged queries (Q, H) ranking the corpus (D, H) by
    cosine (tasks/retrieval.py's rules)."""
    assert dev.beir is not None
    ranked: dict[str, list[str]] = {}
    for start in range(0, len(queries), QUERY_BLOCK):
        scores = queries[start:start + QUERY_BLOCK] @ docs.T  # (b, D)
        ranked.update(rankings(scores, dev.query_ids[start:start + QUERY_BLOCK],
                               dev.doc_ids, max(ks)))
    return rank_metrics(ranked, dev.beir.qrels, ks)


def parse_ks(text: str) -> tuple[int, ...]:
    """"1,3,5,10,100" -> (1, 3, 5, 10, 100), with 10 (the primary's k) always in."""
    try:
        ks = {int(k) for k in text.split(",") if k.strip()}
    except ValueError:
        raise FinetuneError(f"retrieval_ks={text!r}: expected comma-separated integers, e.g. "
                            "1,3,5,10,100") from None
    if any(k < 1 for k in ks):
        raise FinetuneError(f"retrieval_ks={text!r}: every k must be at least 1")
    return tuple(sorted(ks | {10}))
