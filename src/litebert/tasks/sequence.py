"""Sentence and sentence-pair classification / regression: GLUE and generic tables.

Input is the tokenizer's template, [CLS] A [SEP] (B [SEP]) or RoBERTa's <s> A </s>(</s> B </s>),
cut to max_seq_length from the longer side; the model is
EncoderForSequenceClassification (num_labels = 1 is regression with MSE). The splits are
tokenized once into the table cache and batched from its arrays (tasks/table_splits.py,
table_cache.py, table_inputs.py); `load_data` and `encode_examples` are the same in memory.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from litebert.model import EncoderForSequenceClassification
from litebert.readers import is_folder_input
from litebert.tasks.base import (
    FinetuneConfig,
    FinetuneError,
    NoPredictionFiles,
    model_overrides,
    reported,
)
from litebert.tasks.batching import length_batches, pad_for
from litebert.tasks.classification import infer_labels
from litebert.tasks.examples import TextExample
from litebert.tasks.glue import GLUE_TASKS, read_glue, submission_name, write_glue_predictions
from litebert.tasks.metrics import glue_metrics, primary_metric
from litebert.tasks.registry import GLUE
from litebert.tasks.runtime import Runtime
from litebert.tasks.table_inputs import TableRows
from litebert.tasks.table_splits import (
    TABLE_SUFFIXES,
    find_split,
    glue_source,
    load_tables,
    table_rows,
)
from litebert.tasks.tables import read_table
from litebert.tasks.word_labels import IGNORE_INDEX
from litebert.tokenization import Tokenizer


class SequenceTask(NoPredictionFiles):
    def __init__(self, cfg: FinetuneConfig, runtime: Runtime, training: bool = True):
        self.cfg, self.runtime = cfg, runtime
        self.tokenizer = Tokenizer.from_pretrained(cfg.model)
        train, self.dev_rows, self.labels = load_tables(cfg, self.tokenizer, training)
        self.regression = self.labels is None
        # Cross-entropy ignores label -100, so a batch's filler rows take it (finetune.py);
        # a regression's mean squared error has no such label: its short batches stay short.
        self.dummy_labels = None if self.regression else {"labels": IGNORE_INDEX}
        self.bucket_limit = runtime.bucket_limit(cfg.max_seq_length)
        self.primary = primary_metric(cfg.task if cfg.task in GLUE else
                                      ("regression" if self.regression else "classification"))
        self.train_rows: TableRows | list = [] if train is None else train
        self.train_lengths = np.zeros(0, np.int32) if train is None else train.lengths

    def collate(self, rows: TableRows | list[dict]) -> dict:
        """A batch of a TableRows view (built from its mapped arrays) or of row dicts."""
        if isinstance(rows, TableRows):
            return rows.batch(np.arange(len(rows)), bucket_limit=self.bucket_limit)
        return pad_for(self.tokenizer, rows, max_length=self.bucket_limit)

    def build_model(self) -> EncoderForSequenceClassification:
        labels = {"num_labels": 1} if self.regression else \
            {"id2label": dict(enumerate(self.labels or []))}
        return EncoderForSequenceClassification.from_pretrained(
            self.cfg.model, files=self.cfg.model_files, **labels, **model_overrides(self.cfg))

    def predict(self, model, rows: TableRows) -> np.ndarray:
        """Class indices (or scores for regression) in the order of `rows`, the batches
        shared by the ranks."""
        out = np.zeros(len(rows), dtype=np.float64 if self.regression else np.int64)
        batches = length_batches(rows.lengths, self.cfg.eval_batch_size, None)
        outputs = self.runtime.evaluate_batches(model, batches,
                                                lambda ids: rows.batch(
                                                    ids, labels=False,
                                                    bucket_limit=self.bucket_limit),
                                                lambda o: [o.logits])
        for ids, (logits,) in zip(batches, outputs, strict=True):  # (B, labels) float32
            out[ids] = logits[:, 0] if self.regression else logits.argmax(-1)
        return out

    def evaluate(self, model, out: Path) -> dict[str, float]:
        metrics = {}
        task = self.cfg.task if self.cfg.task in GLUE else (
            "regression" if self.regression else "classification")
        for name, rows in self.dev_rows.items():
            gold = rows.labels()
            result = glue_metrics(task, self.predict(model, rows), gold)
            if not self.regression:  # what always answering the commonest label scores
                result["majority_baseline"] = float(np.bincount(gold.astype(np.int64)).max()
                                                    / max(len(gold), 1))
            prefix = "" if len(self.dev_rows) == 1 else f"{name}_"
            metrics.update({prefix + k: v for k, v in result.items()})
        return metrics

    def score(self, metrics: dict[str, float]) -> float:
        key = self.primary if self.primary in metrics else f"matched_{self.primary}"
        return metrics[key]

    def save(self, model, directory: Path) -> None:
        model.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)

    @property
    def writes_test_predictions(self) -> bool:  # type: ignore[override]
        return self.cfg.task in GLUE

    def write_predictions(self, model, out: Path, dev: bool = True) -> list[Path]:
        """GLUE submission TSVs for the test split(s) present in the task directory (dev
        predictions have no file here; a generic table has no test split)."""
        if self.cfg.task not in GLUE:
            return super().write_predictions(model, out, dev)
        data = Path(self.cfg.data)
        jobs = [(self.cfg.task, data, split) for split in (
            ("test_matched", "test_mismatched") if self.cfg.task == "mnli" else ("test",))]
        if self.cfg.task == "mnli":  # the diagnostic set is scored with the MNLI model
            jobs += [("ax", d, "test") for d in (data, data.parent / "AX")]
        written: list[Path] = []
        for task, directory, split in jobs:
            if not (directory / GLUE_TASKS[task].splits[split]).is_file() or \
                    any(p.name == "AX.tsv" for p in written) and task == "ax":
                continue
            test = table_rows(self.cfg, self.tokenizer, glue_source(task, directory, split),
                              self.labels)
            predicted = self.predict(model, test)
            values = predicted.tolist() if self.regression else \
                [(self.labels or [])[i] for i in predicted]
            path = out / "predictions" / submission_name(task, split)
            if self.runtime.is_main:  # every rank predicts, one writes
                path = write_glue_predictions(task, split, values, out / "predictions")
            written.append(path)
        return written


# ---- data in memory: the reference the table cache is tested against ----------------------

def encode_examples(tokenizer: Tokenizer, examples: list[TextExample], labels: list[str] | None,
                    max_length: int) -> list[dict]:
    """Examples as row dicts, one tokenizer call each (what SequenceTask did before the table
    cache: tasks/table_inputs.py gives the same inputs from the cache's arrays)."""
    rows = []
    for ex in examples:
        enc = tokenizer(ex.text_a, ex.text_b, truncation=True, max_length=max_length)
        row: dict = {k: enc[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
        if ex.label is not None:
            row["labels"] = float(ex.label) if labels is None else labels.index(str(ex.label))
        rows.append(row)
    return rows


# ---- data ----------------------------------------------------------------------------------

def load_data(cfg: FinetuneConfig, training: bool = True):
    """(train examples, {dev name: examples}, label strings or None for regression)."""
    if cfg.task in GLUE:
        spec = GLUE_TASKS[cfg.task]
        train = reported(read_glue(cfg.task, cfg.data, "train")) if training else []
        names = ("dev_matched", "dev_mismatched") if cfg.task == "mnli" else ("dev",)
        dev = {n.replace("dev_", "") if cfg.task == "mnli" else n:
               reported(read_glue(cfg.task, cfg.data, n)) for n in names}
        labels = None if spec.kind == "regression" else list(spec.labels or [])
        return train, dev, labels
    return _generic(cfg)


def _generic(cfg: FinetuneConfig):
    options = cfg.task_options

    def read(path: Path):
        return reported(read_table(path, text_a=options.text_a, text_b=options.text_b,
                                   label=options.label_column))

    data = Path(cfg.data)
    train_file = find_split(data, "train") if data.is_dir() else None
    if train_file is not None:
        train = read(train_file)
        dev_file = find_split(data, "dev")
        dev = read(dev_file) if dev_file else None
    elif data.is_dir() and not is_folder_input(data):  # a saved dataset's folder is a table
        names = ", ".join(["train" + s for s in TABLE_SUFFIXES] + ["a saved dataset train/"])
        raise FinetuneError(f"{data}: no train file ({names})")
    else:
        train, dev = read(data), None
    if dev is None:  # carve a dev split; fixed seed so every --seeds run shares it
        order = np.random.default_rng(0).permutation(len(train))
        cut = max(1, int(len(train) * options.dev_fraction))
        dev, train = [train[i] for i in order[:cut]], [train[i] for i in order[cut:]]
    if not train:
        raise FinetuneError(f"{cfg.data}: no training examples")
    labels = None if cfg.task == "regression" else infer_labels(train + dev)
    return train, {"dev": dev}, labels
