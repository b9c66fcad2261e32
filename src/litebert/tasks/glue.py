"""GLUE: the benchmark's TSV files -> TextExamples, and predictions -> submission files.

`task_dir` is the folder of one task as the GLUE download lays it out (glue_data/SST-2),
or the GLUE root holding it (glue_data). The files are read with the csv module, tab
separated and with quoting off: GLUE sentences contain unbalanced quote characters that
quote-aware parsing would run together into one field spanning many lines.

Columns are found by the header's names, so extra columns do no harm; CoLA's train and dev
files have no header and are read by position (source, label, annotation, sentence). A row
with a different number of fields from the header, an unknown label or an STS-B score that
is not a number in 0-5 is skipped and counted in the ReadReport. Test splits carry no labels
(label None) and no row of them is dropped for its text: a submission needs one prediction
per test row, so a skipped test row (see the report) makes the submission unusable.
"""

from __future__ import annotations

import csv
import math
import numbers
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from litebert.files import atomic_write
from litebert.tasks.examples import (
    ReadReport,
    TaskDataError,
    TaskSpec,
    TextExample,
    read_rows,
    require_file,
)

_BINARY = ["0", "1"]
_NLI3 = ["contradiction", "entailment", "neutral"]  # the order of transformers' processors
_NLI2 = ["entailment", "not_entailment"]
_SPLITS = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
_MNLI_SPLITS = {"train": "train.tsv", "dev_matched": "dev_matched.tsv",
                "dev_mismatched": "dev_mismatched.tsv", "test_matched": "test_matched.tsv",
                "test_mismatched": "test_mismatched.tsv"}


def _spec(name: str, labels: list[str] | None, text_a: str, text_b: str | None,
          splits: dict[str, str] = _SPLITS) -> TaskSpec:
    kind = "classification" if labels is not None else "regression"
    return TaskSpec(name, kind, None if labels is None else list(labels), dict(splits),
                    text_a, text_b)


GLUE_TASKS: dict[str, TaskSpec] = {
    "cola": _spec("cola", _BINARY, "sentence", None),
    "sst2": _spec("sst2", _BINARY, "sentence", None),
    "mrpc": _spec("mrpc", _BINARY, "#1 String", "#2 String"),
    "stsb": _spec("stsb", None, "sentence1", "sentence2"),
    "qqp": _spec("qqp", _BINARY, "question1", "question2"),
    "mnli": _spec("mnli", _NLI3, "sentence1", "sentence2", _MNLI_SPLITS),
    "qnli": _spec("qnli", _NLI2, "question", "sentence"),
    "rte": _spec("rte", _NLI2, "sentence1", "sentence2"),
    "wnli": _spec("wnli", _BINARY, "sentence1", "sentence2"),
    "ax": _spec("ax", _NLI3, "sentence1", "sentence2", {"test": "AX.tsv"}),
}

# The column holding the label in labelled splits (ax has none: it is test-only).
_LABEL_COLUMN = {"cola": "label", "sst2": "label", "mrpc": "Quality", "stsb": "score",
                 "qqp": "is_duplicate", "mnli": "gold_label", "qnli": "label", "rte": "label",
                 "wnli": "label"}
_ID_COLUMNS = ("index", "id")  # QQP says "id", the others "index"; guid falls back to file:line
# CoLA's train/dev files have no header; these are the names of their four columns.
_COLA_COLUMNS = ["source", "label", "annotation", "sentence"]
_STSB_RANGE = (0.0, 5.0)
# The folder names of the GLUE download, to find a task inside the GLUE root.
_FOLDERS = {"cola": "CoLA", "sst2": "SST-2", "mrpc": "MRPC", "stsb": "STS-B", "qqp": "QQP",
            "mnli": "MNLI", "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI", "ax": "AX"}
# Submission file names (gluebenchmark.com) by (task, test split).
_SUBMISSIONS = {(t, "test"): f"{_FOLDERS[t]}.tsv" for t in GLUE_TASKS if t != "mnli"}
_SUBMISSIONS[("mnli", "test_matched")] = "MNLI-m.tsv"
_SUBMISSIONS[("mnli", "test_mismatched")] = "MNLI-mm.tsv"


def glue_task(task: str) -> TaskSpec:
    """The spec of `task`, spelt as in GLUE_TASKS or as the benchmark does ("SST-2", "STS-B")."""
    key = task.lower().replace("-", "").replace("_", "")
    if key not in GLUE_TASKS:
        raise TaskDataError(f"unknown GLUE task {task!r}; choose from {sorted(GLUE_TASKS)}")
    return GLUE_TASKS[key]


def _split_file(spec: TaskSpec, task_dir: Path, split: str) -> Path:
    if split not in spec.splits:
        raise TaskDataError(f"GLUE {spec.name} has no split {split!r}; "
                            f"choose from {list(spec.splits)}")
    name = spec.splits[split]
    path = task_dir / name
    nested = task_dir / _FOLDERS[spec.name] / name
    if not path.exists() and nested.exists():  # task_dir is the GLUE root
        path = nested
    require_file(path, f"GLUE {spec.name} {split}")
    return path


def read_glue(task: str, task_dir: str | Path,
              split: str) -> tuple[list[TextExample], ReadReport]:
    """The examples of one GLUE split, and a report of what was skipped and why."""
    examples, report = stream_glue(task, task_dir, split)
    return list(examples), report


def stream_glue(task: str, task_dir: str | Path,
                split: str) -> tuple[Iterator[TextExample], ReadReport]:
    """read_glue's examples one at a time (flat memory for a table of any length); the file
    and its header are checked at once, the report fills in as the examples are drawn."""
    spec = glue_task(task)
    path = _split_file(spec, Path(task_dir), split)
    report = ReadReport(str(path))
    rows = read_rows(path, report, delimiter="\t", quoting=csv.QUOTE_NONE)
    if spec.name == "cola" and split != "test":
        header = _COLA_COLUMNS
    else:
        first = next(rows, None)
        if first is None:
            raise TaskDataError(f"{path}: empty file; expected a header row")
        header = [name.strip() for name in first[1]]
    labelled = not split.startswith("test")
    columns = _locate(spec, header, labelled, path)

    def examples() -> Iterator[TextExample]:
        for lineno, row in rows:
            if ex := _example(spec, row, lineno, len(header), columns, path, report):
                report.read += 1
                yield ex

    return examples(), report


def split_path(task: str, task_dir: str | Path, split: str) -> Path:
    """The file of `task`'s `split` under `task_dir` (a task folder or the GLUE root)."""
    spec = glue_task(task)
    return _split_file(spec, Path(task_dir), split)


class _Columns(NamedTuple):
    """Positions in a row: text_a always has one; the others None where the file has none."""

    text_a: int
    text_b: int | None
    label: int | None
    id: int | None


def _locate(spec: TaskSpec, header: list[str], labelled: bool, path: Path) -> _Columns:
    """Column positions of text_a, text_b, label and the id; TaskDataError if one is missing."""

    def position(name: str) -> int:
        if name not in header:
            raise TaskDataError(f"{path}: no column {name!r} for GLUE {spec.name}; "
                                f"the header has {header}")
        return header.index(name)

    label = _LABEL_COLUMN.get(spec.name) if labelled else None
    text_a = position(spec.text_a)
    text_b = None if spec.text_b is None else position(spec.text_b)
    label_at = None if label is None else position(label)
    ids = [header.index(n) for n in _ID_COLUMNS if n in header]
    return _Columns(text_a, text_b, label_at, ids[0] if ids else None)


def _example(spec: TaskSpec, row: list[str], lineno: int, width: int, columns: _Columns,
             path: Path, report: ReadReport) -> TextExample | None:
    where = f"{path}:{lineno}"
    if len(row) != width:
        report.note("wrong_field_count", where,
                    f"{len(row)} tab-separated fields, expected {width}")
        return None
    label: str | float | None = None
    if columns.label is not None:
        label = _label(spec, row[columns.label].strip(), where, report)
        if label is None:
            return None
    guid = row[columns.id].strip() if columns.id is not None else f"{path.name}:{lineno}"
    text_b = row[columns.text_b].strip() if columns.text_b is not None else None
    return TextExample(guid, row[columns.text_a].strip(), text_b, label)


def _label(spec: TaskSpec, raw: str, where: str, report: ReadReport) -> str | float | None:
    if spec.labels is not None:
        if raw in spec.labels:
            return raw
        report.note("bad_labels", where,
                    f"unknown label {raw!r} (GLUE {spec.name} has {spec.labels})")
        return None
    try:
        score = float(raw)
    except ValueError:
        report.note("bad_labels", where, f"score {raw!r} is not a number")
        return None
    low, high = _STSB_RANGE
    if not low <= score <= high:  # also false for nan
        report.note("bad_labels", where, f"score {raw!r} is outside {low:g}-{high:g}")
        return None
    return score


# ---------------------------------------------------------------- submissions


def submission_name(task: str, split: str) -> str:
    """The file name gluebenchmark.com expects for predictions on `task`'s test `split`."""
    spec = glue_task(task)
    key = (spec.name, split)
    if key not in _SUBMISSIONS:
        splits = [s for t, s in _SUBMISSIONS if t == spec.name]
        raise TaskDataError(f"GLUE takes predictions for the test splits only: {spec.name} "
                            f"split {split!r}; choose from {splits}")
    return _SUBMISSIONS[key]


def write_glue_predictions(task: str, split: str, predictions: list, out_dir: Path) -> Path:
    """Write the submission TSV ("index\\tprediction", rows 0..n-1 in example order).

    Classification predictions may be label strings or label indices into the task's
    labels (as an argmax gives them); STS-B predictions are numbers, written to 3 decimals.
    The file is written whole or not at all (a temporary file renamed into place).
    """
    spec = glue_task(task)
    path = Path(out_dir) / submission_name(spec.name, split)
    lines = ["index\tprediction"]
    for i, p in enumerate(predictions):
        lines.append(f"{i}\t{_prediction(spec, p, i)}")
    return atomic_write(path, "\n".join(lines) + "\n")


def _prediction(spec: TaskSpec, p, i: int) -> str:
    if hasattr(p, "item") and not isinstance(p, str):
        p = p.item()  # a numpy or torch scalar
    if spec.labels is None:
        if isinstance(p, (str, bool)) or not isinstance(p, numbers.Real) or not math.isfinite(p):
            raise TaskDataError(f"prediction {i}: {p!r} is not a finite STS-B score")
        return f"{float(p):.3f}"
    if isinstance(p, str):
        if p in spec.labels:
            return p
    elif isinstance(p, numbers.Integral) and not isinstance(p, bool):
        index = int(p)  # Integral's stubs declare no comparison with int
        if 0 <= index < len(spec.labels):
            return spec.labels[index]
    raise TaskDataError(f"prediction {i}: {p!r} is neither a label of GLUE {spec.name} "
                        f"{spec.labels} nor an index into them")
