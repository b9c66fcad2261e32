"""`litebert study run`: every run of a study, trained and evaluated alike, resumably.

Layout of a study directory OUT:

    study.json          the spec as run (resolved for quick or not), the budget, the runs
    corpus/             the fetched built-in corpus (a path corpus is read where it is)
    tokenizer/          one SentencePiece tokenizer, trained once, shared by every run
    data/<hash>/        one data directory per distinct BuildConfig (`build`'s cache key)
    runs/<name>/        an ordinary pre-training run dir (checkpoints, metrics, export)
    runs/<name>/study.json   the run's record:
        name, study, paper      the run's and study's names; the paper's figures for the row
        data, data_dir          the resolved BuildConfig (asdict) and the run's data directory
        pretrain, model         the resolved PretrainConfig.to_dict() and ModelConfig.to_dict()
        params                  {backbone, with_heads}: parameter counts
        tokens, minutes         non-padding tokens seen and minutes of pre-training (None
                                until it is done; minutes of the session that finished it)
        pretraining             {steps, tokens, minutes, resumed, final_eval} (None until done)
        results                 {pretraining: evaluate_pretraining's keys + data_dir, seed;
                                 similarity: {l2, degrees, tokens}; probes: run_probes' dict}

Every stage is skipped when its output exists: the tokenizer, each build (cache hit), a
pre-training recorded as finished, each evaluation recorded in the run's study.json. A
killed study therefore continues where it stopped (pre-training resumes from the newest
checkpoint), and `only` runs a subset, so the runs can be spread over machines that share
OUT or whose OUT/runs/* are gathered afterwards.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from litebert.data.builder import build, cache_key
from litebert.data.loader import PretrainingDataset
from litebert.data.sources import SOURCES, fetch
from litebert.files import atomic_write_json
from litebert.model import AutoModel
from litebert.model.counts import count
from litebert.objectives import evaluate_directory
from litebert.studies.probes import run_probes
from litebert.studies.similarity import layer_transitions
from litebert.studies.spec import (
    RunSpec,
    StudyError,
    StudySpec,
    build_config,
    pretrain_config,
)
from litebert.tokenization import Tokenizer, train_tokenizer
from litebert.train import checkpoint
from litebert.train.pretrain import model_config, pretrain_unless_complete
from litebert.train.run_config import PretrainConfig, saved_run_config

RECORD = "study.json"
EVAL_SEED = 0  # every run is scored on the same drawn examples
EVAL_INSTANCES = (2000, 400)  # SOP and NSP pairs each, at most: (full, quick)
SIMILARITY_BATCHES = 8  # held-out batches of the similarity measurement, at most
SIMILARITY_BATCH_SIZE = 16
DONE_FIELDS = ("pretraining", "tokens", "minutes", "results")  # work recorded, kept
PATH_FIELDS = {"data", "out", "resume", "restart"}  # of a PretrainConfig: where, not what
SPEED_FIELDS = {"num_workers", "peak_tflops", "compile",
                "activation_checkpointing"}  # how fast, not what: results stay


def say(message: str) -> None:
    print(f"[study] {message}", flush=True)


def run_study(spec: StudySpec, out: Path, *, quick: bool = False,
              only: list[str] | None = None, steps: int | None = None,
              workers: int = 1) -> dict[str, Any]:
    """Run (or continue) `spec` under `out`; returns {run name: its record}."""
    out = Path(out)
    resolved = spec.resolved(quick)
    if steps is not None:
        if steps <= 0:
            raise StudyError(f"--steps {steps}: must be positive")
        resolved = _with_steps(resolved, steps)
    chosen = [resolved.run(name) for name in only] if only else resolved.runs
    out.mkdir(parents=True, exist_ok=True)
    _write_study(resolved, out, quick)
    corpus = prepare_corpus(resolved, out)
    records = {}
    for i, run in enumerate(chosen, 1):
        say(f"run {i}/{len(chosen)}: {run.name}")
        tokenizer = prepare_tokenizer(resolved, corpus, out, resolved.run_tokenizer(run))
        records[run.name] = run_one(resolved, run, out, corpus, tokenizer, quick, workers)
    return records


def _with_steps(spec: StudySpec, steps: int) -> StudySpec:
    return dataclasses.replace(spec, budget={**spec.budget, "steps": steps})


def _write_study(spec: StudySpec, out: Path, quick: bool) -> None:
    """OUT/study.json; a study directory holds one version of a study, never two mixed."""
    study = {"name": spec.name, "title": spec.title, "paper": spec.paper, "quick": quick,
             "vocab_size": spec.vocab_size,
             "budget": spec.budget, "evaluations": spec.evaluations,
             "runs": [r.name for r in spec.runs], "spec": spec.to_dict()}
    path = out / RECORD
    if path.is_file():
        before = json.loads(path.read_text())
        for key in ("name", "quick", "budget", "vocab_size"):
            if before.get(key) != study[key]:
                raise StudyError(f"{path}: this directory holds {key}={before.get(key)!r}, "
                                 f"this run asks for {study[key]!r}; use another --out")
    atomic_write_json(path, study)


# ---- shared stages -------------------------------------------------------------------------

def prepare_corpus(spec: StudySpec, out: Path) -> Path:
    """A built-in source is fetched once into OUT/corpus; a path is used as it is (relative
    paths are tried from the current directory, then from the spec file's)."""
    if spec.corpus in SOURCES:
        path = out / "corpus" / f"{spec.corpus}.jsonl"
        if not path.is_file():
            say(f"corpus: fetching {spec.corpus}")
            path = fetch(spec.corpus, out / "corpus")
        return path
    path = Path(spec.corpus).expanduser()
    if not path.is_absolute() and not path.exists() and spec.source:
        path = Path(spec.source).parent / path
    if not path.exists():
        raise StudyError(f"{spec.source} field corpus: {spec.corpus} is neither a built-in "
                         f"source ({', '.join(sorted(SOURCES))}) nor an existing path")
    return path


def prepare_tokenizer(spec: StudySpec, corpus: Path, out: Path,
                      kind: str = "sentencepiece") -> Path:
    """OUT/tokenizer (ALBERT's SentencePiece layout) or OUT/tokenizer-KIND, each trained once
    with the study's vocabulary size (OUT/study.json pins it)."""
    tokenizer = out / ("tokenizer" if kind == "sentencepiece" else f"tokenizer-{kind}")
    if not (tokenizer / "spiece.model").is_file():
        say(f"tokenizer: {kind}, {spec.vocab_size} pieces")
        train_tokenizer(kind, [corpus], tokenizer, vocab_size=spec.vocab_size)
    return tokenizer


def prepare_data(values: dict[str, Any], where: str, corpus: Path, tokenizer: Path,
                 out: Path, workers: int) -> Path:
    """OUT/data/<cache key>: one directory per distinct build, shared by the runs."""
    cfg = build_config(values, where)
    key = cache_key([corpus], Tokenizer.from_pretrained(tokenizer).fingerprint, cfg)
    data = out / "data" / key
    build([corpus], tokenizer, data, cfg, workers=workers)  # a cache hit does nothing
    return data


# ---- one run -------------------------------------------------------------------------------

def run_one(spec: StudySpec, run: RunSpec, out: Path, corpus: Path, tokenizer: Path,
            quick: bool, workers: int) -> dict[str, Any]:
    where = f"{spec.source} run {run.name}"
    data = prepare_data(spec.run_data(run), f"{where} data", corpus, tokenizer, out, workers)
    run_dir = out / "runs" / run.name
    cfg = pretrain_config(spec, run, {"data": str(data), "out": str(run_dir),
                                      "resume": "auto", "export": True}, f"{where} pretrain")
    record = _record(spec, run, data, cfg)
    path = run_dir / RECORD
    if path.is_file():
        record = _continue(json.loads(path.read_text()), record, path)
    run_dir.mkdir(parents=True, exist_ok=True)
    if not record["pretraining"]:
        record["pretraining"] = _pretrain(cfg, run_dir)
        record.update(tokens=record["pretraining"]["tokens"],
                      minutes=record["pretraining"]["minutes"])
        atomic_write_json(path, record)
    for name in spec.evaluations:
        if name in record["results"]:
            continue
        say(f"{run.name}: evaluation {name}")
        record["results"][name] = evaluate(name, spec, run_dir, data, out, corpus, quick,
                                               workers)
        atomic_write_json(path, record)
    atomic_write_json(path, record)
    return record


def _record(spec: StudySpec, run: RunSpec, data: Path, cfg: PretrainConfig) -> dict[str, Any]:
    """The run's record before any work: what it is and what the paper reports for it."""
    config = model_config(cfg, data)
    backbone, with_heads = count(config)
    return {"name": run.name, "study": spec.name, "paper": run.paper,
            "data": dataclasses.asdict(build_config(spec.run_data(run), run.name)),
            "data_dir": str(data), "pretrain": cfg.to_dict(), "model": config.to_dict(),
            "params": {"backbone": backbone, "with_heads": with_heads},
            "tokens": None, "minutes": None, "pretraining": None, "results": {}}


def _continue(before: dict[str, Any], now: dict[str, Any], path: Path) -> dict[str, Any]:
    """The recorded progress, when the run is the same one; an error naming the file if not."""
    for key in ("data", "pretrain", "model"):
        old, new = before.get(key) or {}, now[key]
        if key == "pretrain":  # read as a config: either spelling, new fields at defaults
            old = {**saved_run_config({k: v for k, v in old.items()
                                       if k not in PATH_FIELDS}).to_dict(),
                   **{k: v for k, v in old.items() if k in PATH_FIELDS}}
        if key == "data":  # read as configs: a previous release's packing "xlnet" is today's
            old, new = (dataclasses.asdict(build_config(d, str(path))) for d in (old, new))
        # Paths may differ when OUT was moved or named otherwise: the settings must not.
        changed = sorted(k for k in set(old) | set(new) if k not in PATH_FIELDS | SPEED_FIELDS
                         and old.get(k) != new.get(k))
        if changed:
            raise StudyError(f"{path}: recorded with another {key} config (differs in "
                             f"{', '.join(changed)}); use another --out, or delete "
                             f"{path.parent} to train it anew")
    done: dict[str, Any] = {k: before[k] for k in DONE_FIELDS if before.get(k) is not None}
    return {**now, **done}


def _pretrain(cfg: PretrainConfig, run_dir: Path) -> dict[str, Any]:
    """Pre-train (resuming from the newest checkpoint); tokens seen and minutes of training,
    a killed and resumed run's segments together (metrics.jsonl's train_seconds; this
    call's wall time for a run from before that field)."""
    resumed = checkpoint.latest(run_dir)
    start = time.perf_counter()
    final = pretrain_unless_complete(cfg)
    last = _last_training_line(run_dir)
    seconds = last.get("train_seconds", time.perf_counter() - start)
    return {"steps": cfg.max_steps, "tokens": int(last.get("tokens", 0)),
            "minutes": round(seconds / 60, 3), "resumed": resumed is not None,
            "final_eval": final}


def _last_training_line(run_dir: Path) -> dict[str, Any]:
    """The last training record of metrics.jsonl ({} when none): its `tokens` are the
    non-padding tokens of all optimizer steps."""
    last: dict[str, Any] = {}
    path = run_dir / "metrics.jsonl"
    if path.is_file():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if "tokens" in row:
                last = row
    return last


# ---- evaluations ---------------------------------------------------------------------------

def evaluate(name: str, spec: StudySpec, run_dir: Path, data: Path, out: Path, corpus: Path,
             quick: bool, workers: int) -> dict[str, Any]:
    export = run_dir / "export"
    if (export / "discriminator").is_dir():  # ELECTRA: the discriminator is the model
        export = export / "discriminator"
    if name == "pretraining":
        return pretraining_eval(spec, export, corpus, out, quick, workers)
    if name == "similarity":
        return similarity_eval(export, data)
    return run_probes(spec.probes, model_dir=export, work=run_dir / "probes",
                      corpus_dir=corpus.parent, quick=quick)


def pretraining_eval(spec: StudySpec, export: Path, corpus: Path, out: Path, quick: bool,
                     workers: int) -> dict[str, Any]:
    """The objective's own evaluation of the export (one dispatch with `litebert
    eval-pretraining`: MLM, SOP and NSP accuracy of a model with an MLM head, replaced-token
    detection of an ELECTRA discriminator) on the held-out documents of the study's shared
    data (its `data` without any run's overrides), drawn from one seed: the same examples
    for every run, whatever objective it was trained with."""
    tokenizer = out / "tokenizer"
    data = prepare_data(spec.data, f"{spec.source} data", corpus, tokenizer, out, workers)
    instances = EVAL_INSTANCES[1] if quick else EVAL_INSTANCES[0]
    objective, result = evaluate_directory(export, data, instances=instances, seed=EVAL_SEED)
    return {**result, "data_dir": str(data), "seed": EVAL_SEED,
            "scored_by": objective.__name__}


def similarity_eval(export: Path, data: Path) -> dict[str, Any]:
    """Figure 2 on held-out instances of the run's own data (as masked for MLM; the masks
    are drawn from a fixed seed, so every run of one data directory sees the same inputs).
    Only the backbone is read, so any objective's export is measured alike."""
    model = AutoModel.from_pretrained(export)
    heldout = PretrainingDataset(data, "heldout", seed=EVAL_SEED)
    size = min(len(heldout), SIMILARITY_BATCHES * SIMILARITY_BATCH_SIZE)
    if size == 0:
        raise StudyError(f"{data}: no held-out instances for the similarity measurement")
    batches = [heldout.collate([heldout[j] for j in range(i, min(i + SIMILARITY_BATCH_SIZE, size))])
               for i in range(0, size, SIMILARITY_BATCH_SIZE)]
    return layer_transitions(model, batches)
