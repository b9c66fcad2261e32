"""The splits of a sentence(-pair) task as tokenized tables.

GLUE's split files, or a generic table: a directory's train.* and dev.* (or a DatasetDict's
train/ and validation/ folders), or one file with a dev share carved from it (a fixed seed,
so every --seeds run shares it). Each file is found in, or added to, the table cache
(tasks/table_cache.py) and viewed as TableRows (tasks/table_inputs.py); the reader's report
of skipped rows is logged whether the table was read now or found in the cache.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from litebert.readers import is_folder_input
from litebert.tasks.base import FinetuneConfig, FinetuneError
from litebert.tasks.classification import sorted_labels
from litebert.tasks.glue import GLUE_TASKS, split_path, stream_glue
from litebert.tasks.registry import GLUE
from litebert.tasks.table_cache import EncodedTable, TableSource, encoded_table
from litebert.tasks.table_inputs import TableRows
from litebert.tasks.tables import stream_table
from litebert.tokenization import Tokenizer

log = logging.getLogger("litebert")

TABLE_SUFFIXES = (".tsv", ".csv", ".jsonl", ".json", ".parquet")
# datasets' DatasetDict.save_to_disk names its dev split "validation"
SPLIT_FOLDERS = {"train": ("train",), "dev": ("dev", "validation")}


def glue_source(task: str, task_dir: str | Path, split: str) -> TableSource:
    """GLUE `task`'s `split` under `task_dir` as a table to tokenize."""
    spec = GLUE_TASKS[task]
    return TableSource(split_path(task, task_dir, split),
                       {"reader": "glue", "task": spec.name, "split": split},
                       spec.kind == "regression", lambda: stream_glue(task, task_dir, split))


def generic_source(cfg: FinetuneConfig, path: Path) -> TableSource:
    """A generic task's table file (or saved dataset folder) as a table to tokenize. The
    name's suffixes are part of how it is read: they choose the format."""
    columns = {"text_a": cfg.task_options.text_a, "text_b": cfg.task_options.text_b,
               "label": cfg.task_options.label_column}
    return TableSource(path, {"reader": "table", "suffixes": [s.lower() for s in path.suffixes],
                              **columns},
                       cfg.task == "regression", lambda: stream_table(path, **columns))


def encoded(cfg: FinetuneConfig, tokenizer: Tokenizer, source: TableSource) -> EncodedTable:
    """The table of `source` from the cache (tokenized first when it is not there), its
    skipped rows logged as a read logs them."""
    options = cfg.task_options
    table = encoded_table(source, tokenizer, cfg.model, options.cache_dir, options.workers)
    if table.report.skipped or table.report.repaired:
        log.warning(table.report.summary())
    return table


def table_rows(cfg: FinetuneConfig, tokenizer: Tokenizer, source: TableSource,
               labels: list[str] | None) -> TableRows:
    """Every row of `source`'s table, as model inputs of up to cfg.max_seq_length tokens."""
    table = encoded(cfg, tokenizer, source)
    return TableRows(table, np.arange(len(table)), tokenizer, cfg.max_seq_length, labels)


def load_tables(cfg: FinetuneConfig, tokenizer: Tokenizer, training: bool = True
                ) -> tuple[TableRows | None, dict[str, TableRows], list[str] | None]:
    """(train rows or None when not training, {dev name: rows}, label strings or None for
    regression)."""
    if cfg.task in GLUE:
        spec = GLUE_TASKS[cfg.task]
        labels = None if spec.kind == "regression" else list(spec.labels or [])
        train = table_rows(cfg, tokenizer, glue_source(cfg.task, cfg.data, "train"),
                           labels) if training else None
        names = ("dev_matched", "dev_mismatched") if cfg.task == "mnli" else ("dev",)
        dev = {n.replace("dev_", "") if cfg.task == "mnli" else n:
               table_rows(cfg, tokenizer, glue_source(cfg.task, cfg.data, n), labels)
               for n in names}
        return train, dev, labels
    return _generic(cfg, tokenizer)


def _generic(cfg: FinetuneConfig, tokenizer: Tokenizer
             ) -> tuple[TableRows, dict[str, TableRows], list[str] | None]:
    data = Path(cfg.data)
    train_file = find_split(data, "train") if data.is_dir() else None
    if train_file is not None:
        train = encoded(cfg, tokenizer, generic_source(cfg, train_file))
        dev_file = find_split(data, "dev")
        dev = encoded(cfg, tokenizer, generic_source(cfg, dev_file)) if dev_file else None
    elif data.is_dir() and not is_folder_input(data):  # a saved dataset's folder is a table
        names = ", ".join(["train" + s for s in TABLE_SUFFIXES] + ["a saved dataset train/"])
        raise FinetuneError(f"{data}: no train file ({names})")
    else:
        train, dev = encoded(cfg, tokenizer, generic_source(cfg, data)), None
    if dev is None:  # carve a dev split; fixed seed so every --seeds run shares it
        order = np.random.default_rng(0).permutation(len(train))
        cut = max(1, int(len(train) * cfg.task_options.dev_fraction))
        dev, dev_index, train_index = train, order[:cut], order[cut:]
    else:
        dev_index, train_index = np.arange(len(dev)), np.arange(len(train))
    if not len(train_index):
        raise FinetuneError(f"{cfg.data}: no training examples")
    labels = None if cfg.task == "regression" else \
        sorted_labels([*(train.label_names or []), *(dev.label_names or [])])
    return (TableRows(train, train_index, tokenizer, cfg.max_seq_length, labels),
            {"dev": TableRows(dev, dev_index, tokenizer, cfg.max_seq_length, labels)}, labels)


def find_split(directory: Path, stem: str) -> Path | None:
    """The file (or saved dataset folder) of split `stem` ("train", "dev") in `directory`."""
    for suffix in TABLE_SUFFIXES:
        if (directory / f"{stem}{suffix}").is_file():
            return directory / f"{stem}{suffix}"
    for name in SPLIT_FOLDERS[stem]:  # a DatasetDict's split folders
        if is_folder_input(directory / name):
            return directory / name
    return None
