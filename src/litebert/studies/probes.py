"""Downstream probes of a study: fine-tune a pre-trained model on real labelled data.

Every probe reads a corpus that a package registry carries (litebert.data.sources), writes
its task data once under CORPUS_DIR/probes/<name>[-quick]/ (with probe.json saying what it
holds), then runs the ordinary `finetune` with several seeds and reports the dev metric of
each seed, their median and spread, and the majority-class baseline of the dev split.

- `bbc-topics`: a BBC article (its first 128 tokens) -> one of 5 topics; single text.
- `pang-lee-sentiment`: a movie-review sentence -> positive / negative; single sentence.
- `bbc-headlines`: RACE-style multiple choice over a multi-sentence passage: the article's
  body (headline removed) and four headlines, its own and three of other articles of the
  SAME topic, so the topic alone cannot tell them apart. This is where the paper expects
  inter-sentence coherence (SOP) to help: the model must read the passage as a whole.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from litebert.data.sources import fetch
from litebert.files import atomic_directory, read_text
from litebert.model.hub import read_config
from litebert.tasks.base import finetune_config
from litebert.tasks.finetune import finetune
from litebert.tasks.race import LETTERS

SPLIT_SEED = 0  # the train/dev split of every probe: fixed, so runs and seeds share it
DEV_FRACTION = 0.2
QUICK_SIZES = (400, 100)  # (train, dev) examples with --quick
PASSAGE_WORDS = 300  # words kept of a passage: more than max_seq_length tokens can hold
INFO = "probe.json"


class ProbeError(ValueError):
    """A bad probe request or unusable corpus; the message names the file or the probe."""


@dataclass(frozen=True)
class Probe:
    source: str  # the registry corpus (litebert.data.sources.SOURCES)
    task: str  # the finetune task reading the written data
    metric: str  # the dev metric reported
    write: Callable[[list[dict], Path, bool], dict]  # records, out dir, quick -> info
    steps: tuple[int, int]  # default fine-tuning steps (quick, full)
    max_seq_length: tuple[int, int]  # (quick, full)
    lr: float = 5e-4  # small pre-trained models need a larger rate than the paper's
    task_options: tuple[tuple[str, str], ...] = ()  # the task's own (tasks/registry.py)


# What the classification probes' tables call their columns (write_classification's).
TEXT_COLUMNS = (("text_a", "text"), ("label_column", "label"))


# ---- the corpora ---------------------------------------------------------------------------

def read_corpus(corpus_dir: Path, source: str) -> list[dict]:
    """The records of CORPUS_DIR/<source>.jsonl, fetched from the registry when missing."""
    path = Path(corpus_dir) / f"{source}.jsonl"
    if not path.is_file():
        fetch(source, Path(corpus_dir))
    records = []
    for lineno, line in enumerate(read_text(path).splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ProbeError(f"{path}:{lineno}: bad JSON ({err.msg})") from None
    if not records:
        raise ProbeError(f"{path}: no records")
    return records


def headline_and_body(text: str) -> tuple[str, str]:
    """bbc-news text: the first paragraph is the headline, the rest the article."""
    headline, _, body = text.strip().partition("\n\n")
    return headline.strip(), body.strip()


def _split(records: list[Any], quick: bool) -> tuple[list[Any], list[Any]]:
    """A fixed shuffled train/dev split; with quick, QUICK_SIZES of it."""
    order = np.random.default_rng(SPLIT_SEED).permutation(len(records))
    cut = max(1, int(len(records) * DEV_FRACTION))
    dev, train = [records[i] for i in order[:cut]], [records[i] for i in order[cut:]]
    if quick:
        train, dev = train[:QUICK_SIZES[0]], dev[:QUICK_SIZES[1]]
    return train, dev


def _majority(labels: list[str]) -> float:
    return Counter(labels).most_common(1)[0][1] / len(labels) if labels else 0.0


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")


# ---- the writers ---------------------------------------------------------------------------

def _first_words(text: str, n: int) -> str:
    return " ".join(text.split()[:n])


def write_classification(records: list[dict], out: Path, quick: bool) -> dict:
    """train.jsonl / dev.jsonl of {"id", "text", "label"}; the text cut to PASSAGE_WORDS (the
    tokenizer keeps max_seq_length tokens of it: for bbc-news the first 128)."""
    rows = [{"id": r["id"], "text": _first_words(r["text"], PASSAGE_WORDS), "label": r["label"]}
            for r in records if r.get("text") and r.get("label")]
    train, dev = _split(rows, quick)
    out.mkdir(parents=True, exist_ok=True)
    _write_jsonl(out / "train.jsonl", train)
    _write_jsonl(out / "dev.jsonl", dev)
    labels = sorted({r["label"] for r in rows})
    return {"train": len(train), "dev": len(dev), "labels": labels,
            "baseline": _majority([r["label"] for r in dev])}


def write_headlines(records: list[dict], out: Path, quick: bool) -> dict:
    """RACE layout {train,dev}/high/<n>.txt: body -> which of 4 same-topic headlines."""
    articles = []
    for r in records:
        headline, body = headline_and_body(r.get("text", ""))
        if headline and body:
            articles.append({"id": r["id"], "headline": headline, "body": body,
                             "label": r.get("label", "")})
    train, dev = _split(articles, quick)
    rng = np.random.default_rng(SPLIT_SEED)
    answers: dict[str, list[str]] = {}
    for split, chosen in (("train", train), ("dev", dev)):
        folder = out / split / "high"
        folder.mkdir(parents=True, exist_ok=True)
        # Distractors come from the same split, so no dev headline is seen in training.
        by_topic: dict[str, list[str]] = defaultdict(list)
        for a in chosen:
            by_topic[a["label"]].append(a["headline"])
        answers[split] = []
        for n, article in enumerate(chosen):
            record = _question(article, by_topic[article["label"]], rng)
            if record is not None:
                (folder / f"{n}.txt").write_text(json.dumps(record, ensure_ascii=False),
                                                 encoding="utf-8")
                answers[split].append(record["answers"][0])
    if not answers["train"] or not answers["dev"]:
        final = out.with_name(out.name.removesuffix(".tmp"))  # the name the caller knows
        raise ProbeError(f"{final}: too few articles per topic for 4 distinct headlines "
                         f"({len(train)} train, {len(dev)} dev articles)")
    return {"train": len(answers["train"]), "dev": len(answers["dev"]),
            "labels": list(LETTERS), "baseline": _majority(answers["dev"])}


def _question(article: dict, headlines: list[str], rng: np.random.Generator) -> dict | None:
    """One RACE record, or None when the topic has fewer than 3 other distinct headlines."""
    others = sorted(set(headlines) - {article["headline"]})
    if len(others) < len(LETTERS) - 1:
        return None
    picked = [others[i] for i in rng.choice(len(others), len(LETTERS) - 1, replace=False)]
    options = [article["headline"], *picked]
    order = rng.permutation(len(options))
    options = [options[i] for i in order]
    answer = LETTERS[int(np.flatnonzero(order == 0)[0])]
    return {"id": article["id"], "article": _first_words(article["body"], PASSAGE_WORDS),
            "questions": ["Which headline fits?"], "options": [options], "answers": [answer]}


PROBES: dict[str, Probe] = {
    "bbc-topics": Probe("bbc-news", "classification", "accuracy", write_classification,
                        steps=(60, 300), max_seq_length=(128, 128),
                        task_options=TEXT_COLUMNS),
    "pang-lee-sentiment": Probe("pang-lee-sentiment", "classification", "accuracy",
                                write_classification, steps=(60, 300),
                                max_seq_length=(64, 64), task_options=TEXT_COLUMNS),
    "bbc-headlines": Probe("bbc-news", "race", "all", write_headlines,
                           steps=(60, 400), max_seq_length=(128, 256)),
}
DESCRIBE = {
    "bbc-topics": "bbc-news articles (first {length} tokens) -> 5 topics",
    "pang-lee-sentiment": "Pang & Lee movie-review sentences -> positive/negative",
    "bbc-headlines": "bbc-news article body (up to {length} tokens) -> its headline among 4 "
                     "of the same topic (RACE layout)",
}


# ---- data, once ----------------------------------------------------------------------------

def probe_data(name: str, corpus_dir: Path, quick: bool) -> tuple[Path, dict]:
    """The task directory of probe `name` under CORPUS_DIR/probes/ and its probe.json: written
    on first use into a temporary folder and renamed, so a half-written one is never reused."""
    probe = _probe(name)
    out = Path(corpus_dir) / "probes" / (f"{name}-quick" if quick else name)
    if (out / INFO).is_file():
        return out, json.loads(read_text(out / INFO))
    with atomic_directory(out) as tmp:
        info = probe.write(read_corpus(corpus_dir, probe.source), tmp, quick)
        length = probe.max_seq_length[0 if quick else 1]
        info["data"] = (f"{DESCRIBE[name].format(length=length)}; {info['train']:,} train / "
                        f"{info['dev']:,} dev, split seed {SPLIT_SEED}; from {probe.source}")
        (tmp / INFO).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return out, info


def _probe(name: str) -> Probe:
    if name not in PROBES:
        raise ProbeError(f"unknown probe {name!r}; choose from {', '.join(PROBES)}")
    return PROBES[name]


# ---- fine-tuning ---------------------------------------------------------------------------

def run_probes(probes: list[dict], model_dir: Path, work: Path, corpus_dir: Path,
               quick: bool) -> dict[str, dict]:
    """Fine-tune model_dir on each probe ({"name", "seeds": 3, "steps": ...}; optional "lr",
    "batch_size", "max_seq_length") in WORK/<name>; {name: the probe's result}."""
    results = {}
    for spec in probes:
        if "name" not in spec:
            raise ProbeError(f"probe {spec!r} has no 'name'")
        results[spec["name"]] = run_probe(spec, Path(model_dir), Path(work) / spec["name"],
                                          Path(corpus_dir), quick)
    return results


def _fitting_length(model_dir: Path, wanted: int) -> int:
    """The probe's input length, cut to what the model's position table holds (a --quick
    study pre-trains with 64 positions; the probe's own default may be longer)."""
    return min(wanted, read_config(Path(model_dir)).max_sequence_length)


def run_probe(spec: dict, model_dir: Path, out: Path, corpus_dir: Path,
              quick: bool) -> dict[str, Any]:
    name = spec["name"]
    probe = _probe(name)
    data, info = probe_data(name, corpus_dir, quick)
    steps = int(spec.get("steps") or probe.steps[0 if quick else 1])
    seeds = int(spec.get("seeds", 3))
    length = _fitting_length(model_dir, int(spec.get(
        "max_seq_length", probe.max_seq_length[0 if quick else 1])))
    cfg = finetune_config(
        task=probe.task, data=str(data), model=str(model_dir), out=str(out), seeds=seeds,
        max_steps=steps, warmup_steps=max(1, steps // 10), eval_every=max(1, steps // 3),
        lr=float(spec.get("lr", probe.lr)), batch_size=int(spec.get("batch_size", 16)),
        max_seq_length=length, dropout=0.0, **dict(probe.task_options),
        # Every model of a study fine-tuned alike, whatever its family's own defaults
        # (litebert/models/<name>/finetune.py: ELECTRA's weight decay 0 and layer decay
        # 0.8, RoBERTa's beta2 0.98, ...): the study compares pre-training, not fine-tuning
        # recipes.
        weight_decay=float(spec.get("weight_decay", 0.01)),
        layer_decay=float(spec.get("layer_decay", 1.0)),
        adam_beta2=float(spec.get("adam_beta2", 0.999)))
    finetune(cfg)
    summary = json.loads(read_text(out / "results.json"))  # what finetune wrote
    runs = summary.get("runs") or [{"seed": summary["seed"], "dev": summary["dev"]}]
    values = [float(r["dev"][probe.metric]) for r in runs]
    # The data's description names the probe's default length; say the one this run used.
    described = DESCRIBE[name].format(length=length) + info["data"][info["data"].index(";"):]
    return {"data": described, "metric": probe.metric, "task": probe.task, "steps": steps,
            "max_seq_length": length,
            "seeds": [r["seed"] for r in runs], "values": values,
            "median": statistics.median(values), "min": min(values), "max": max(values),
            "baseline": info["baseline"], "train": info["train"], "dev": info["dev"]}
