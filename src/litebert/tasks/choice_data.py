"""Multiple-choice tables, SWAG's layout and any like it -> ChoiceExamples, and the
predictions file of the choice task.

A row holds a context, a start, N endings and a label: SWAG's CSV files (video-id, fold-ind,
startphrase, sent1, sent2, gold-source, ending0..ending3, label) and the `datasets` swag
"regular" config have these columns. Files are CSV, TSV, JSON lines, Parquet or a folder that
datasets' save_to_disk wrote, read as tasks/tables.py reads them. The columns are
ChoiceOptions' (tasks/registry.py): the context (sent1), the start (sent2; none: the ending
alone), the endings and the label, the right ending's index 0..N-1. Choice i is the pair
(context, start + " " + ending i).

The endings are the columns PREFIX0, PREFIX1, ... (ending0, ...), which declare N: every row
has N endings. A table without PREFIX0 has them as a list per row in one column (endings;
JSON lines, Parquet, saved datasets): rows may then differ in N (the task pads them per
batch), unless num_choices declares it.

A data folder holds train.* and dev.* (SWAG's val.csv, a DatasetDict's validation/ folder).
Bad rows are skipped and counted, each noted as "file:line: why" ("file:row" in a columnar
table): an ending missing or not text, a number of endings other than the declared N or
below 2, a label that is not an ending's index, an empty context. A missing column or an
empty file is a TaskDataError naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litebert.files import atomic_write
from litebert.readers import CorpusError, Table, is_folder_input
from litebert.readers.columns import check_column, records
from litebert.tasks.examples import ChoiceExample, ReadReport, TaskDataError, require_file
from litebert.tasks.registry import ChoiceOptions
from litebert.tasks.tables import (
    ID_COLUMNS,
    cell_text,
    columnar_table,
    table_format,
    text_records,
)

SPLIT_STEMS = {"train": ("train",), "dev": ("dev", "val", "validation")}
SUFFIXES = (".csv", ".tsv", ".jsonl", ".json", ".parquet")
SCORE_DECIMALS = 4  # the logits in the predictions file: enough to rank, short to read

Record = tuple[str, str, dict[str, Any]]  # (where, default guid, the row's fields)


def split_path(data: str | Path, split: str) -> Path:
    """The file (or saved dataset folder) of `split` ("train" or "dev") in the folder `data`."""
    data = Path(data)
    if not data.is_dir():
        raise TaskDataError(f"{data}: not a folder; multiple choice reads a folder holding "
                            "train.* and dev.* (or val.*, or a DatasetDict's train/ and "
                            "validation/)")
    for stem in SPLIT_STEMS[split]:
        for suffix in SUFFIXES:
            if (data / f"{stem}{suffix}").is_file():
                return data / f"{stem}{suffix}"
        if is_folder_input(data / stem):
            return data / stem
    names = ", ".join(f"{stem}.*" for stem in SPLIT_STEMS[split])
    raise TaskDataError(f"{data}: no {split} split ({names}, with a suffix of "
                        f"{' '.join(SUFFIXES)}, or a saved dataset's folder)")


@dataclass(frozen=True)
class Layout:
    """Where one table keeps a question's parts: ChoiceOptions resolved against its columns."""

    context: str
    start: str | None
    endings: tuple[str, ...]  # the ending columns; empty: the list column `listed`
    listed: str | None
    label: str
    declared: int | None  # the N every row must have: the ending columns', or num_choices

    @property
    def columns(self) -> list[str]:
        named = [self.context, self.start, *self.endings, self.listed, self.label]
        return [c for c in named if c is not None]


def layout_of(path: Path, columns: Sequence[str], options: ChoiceOptions) -> Layout:
    """The table's Layout; TaskDataError (one sentence naming the file) for a column that is
    not there or fewer than 2 declared endings."""
    endings: list[str] = []
    while f"{options.ending_prefix}{len(endings)}" in columns:
        endings.append(f"{options.ending_prefix}{len(endings)}")
    listed = None if endings else options.endings_column
    declared = len(endings) or options.num_choices
    start = options.start_column or None  # '' on the command line: no start
    roles = {"the context": options.context_column, "the start": start,
             "the endings": listed, "the label": options.label_column}
    for role, name in roles.items():
        if name is not None and name not in columns:
            also = f" nor {options.ending_prefix}0, ..." if role == "the endings" else ""
            raise TaskDataError(f"{path}: no column {name!r} ({role}){also}; the columns are "
                                f"{list(columns)}")
    if endings and options.num_choices is not None and options.num_choices != len(endings):
        raise TaskDataError(f"{path}: {len(endings)} ending columns ({endings[0]}.."
                            f"{endings[-1]}) but num_choices={options.num_choices}")
    if declared is not None and declared < 2:
        raise TaskDataError(f"{path}: {declared} ending(s) per question; multiple choice "
                            "needs at least 2")
    return Layout(options.context_column, start, tuple(endings), listed, options.label_column,
                  declared)


def read_choices(path: str | Path, options: ChoiceOptions
                 ) -> tuple[list[ChoiceExample], ReadReport]:
    """The questions of one table file or saved dataset folder, and a report of the rows
    skipped; TaskDataError when nothing usable is left."""
    path = Path(path)
    report = ReadReport(str(path))
    layout, rows = _open(path, options, report)
    examples = []
    for where, guid, record in rows:
        example = _example(record, layout, where, guid, report)
        if example is not None:
            examples.append(example)
    report.read = len(examples)
    if not examples:
        raise TaskDataError(f"{path}: no usable rows ({report.skipped} skipped"
                            + (f", e.g. {report.notes[0]})" if report.notes else ")"))
    return examples, report


def _open(path: Path, options: ChoiceOptions, report: ReadReport
          ) -> tuple[Layout, Iterator[Record]]:
    """The table's layout and its rows."""
    table = columnar_table(path, "auto")
    if table is not None:
        layout = layout_of(table.path, table.schema.names, options)
        return layout, _columnar_rows(table, layout)
    kind = table_format(path, "auto")
    require_file(path, "multiple-choice table")
    columns, lines = text_records(path, kind, report)
    layout = layout_of(path, columns, options)
    return layout, ((f"{path}:{n}", f"{path.name}:{n}", record) for n, record in lines)


def _columnar_rows(table: Table, layout: Layout) -> Iterator[Record]:
    wanted = layout.columns + [c for c in ID_COLUMNS if c in table.schema.names]
    try:
        for name in wanted:
            if name != layout.listed:  # the one column that holds a list per row
                check_column(table, name, "a column read", text=False)
        for where, record in records(table, wanted):
            yield where, Path(where).name, record
    except CorpusError as err:
        raise TaskDataError(str(err)) from None
    except (OSError, ValueError) as err:  # pyarrow's errors: a damaged page
        raise TaskDataError(f"{table.path}: unreadable ({type(err).__name__}: {err}); write "
                            "it again") from None


def _example(record: dict[str, Any], layout: Layout, where: str, guid: str,
             report: ReadReport) -> ChoiceExample | None:
    """The row as a question, or None (noted in `report`) when it is not usable."""
    context = cell_text(record.get(layout.context))
    if not context:
        why = "is not there" if layout.context not in record else "is empty"
        report.note("missing_fields", where, f"the context {layout.context!r} {why}")
        return None
    endings = _endings(record, layout, where, report)
    if endings is None:
        return None
    label = _label(record.get(layout.label), len(endings))
    if label is None:
        report.note("bad_labels", where, f"label {record.get(layout.label)!r} is not an "
                                         f"ending's index 0-{len(endings) - 1}")
        return None
    start = cell_text(record.get(layout.start)) if layout.start is not None else None
    ids = (text for name in ID_COLUMNS if (text := cell_text(record.get(name))))
    return ChoiceExample(next(ids, guid), context,
                         [f"{start} {ending}" if start else ending for ending in endings], label)


def _endings(record: dict[str, Any], layout: Layout, where: str,
             report: ReadReport) -> list[str] | None:
    """The row's endings, or None (noted) when one is missing or their number is wrong."""
    if layout.endings:
        texts = [cell_text(record.get(name)) for name in layout.endings]
        empty = [name for name, text in zip(layout.endings, texts, strict=True) if not text]
        if empty:
            report.note("bad_endings", where, f"{len(texts) - len(empty)} endings, expected "
                                              f"{len(texts)} ({', '.join(empty)} empty)")
            return None
        return [text for text in texts if text]  # every one (for mypy: str, not None)
    value = record.get(layout.listed or "")
    if not isinstance(value, list):
        report.note("bad_endings", where, f"{layout.listed!r} is not a list of endings")
        return None
    endings = [text for text in map(cell_text, value) if text]
    if len(endings) != len(value):
        report.note("bad_endings", where, f"{len(value) - len(endings)} of the "
                                          f"{len(value)} endings empty or not text")
    elif layout.declared is not None and len(value) != layout.declared:
        report.note("bad_endings", where, f"{len(value)} endings, expected "
                                          f"{layout.declared} (num_choices)")
    elif len(value) < 2:
        report.note("bad_endings", where, f"{len(value)} ending(s), a question needs 2 or more")
    else:
        return endings
    return None


def _label(value: Any, n: int) -> int | None:
    """The label as an ending's index 0..n-1 (an int, or its text as CSV has it), else None."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
        return None
    return value


def write_choice_predictions(examples: Sequence[ChoiceExample], predictions: Sequence[int],
                             scores: Sequence[Sequence[float]], path: Path) -> Path:
    """JSON lines, one per question in the order read: {"id", "label" (the gold index),
    "prediction", "scores" (the logit of each of its choices)}."""
    if not len(examples) == len(predictions) == len(scores):
        raise TaskDataError(f"{len(predictions)} predictions and {len(scores)} score lists "
                            f"for {len(examples)} questions")
    lines = (json.dumps({"id": ex.guid, "label": ex.label, "prediction": int(p),
                         "scores": [round(float(s), SCORE_DECIMALS) for s in row]}) + "\n"
             for ex, p, row in zip(examples, predictions, scores, strict=True))
    return atomic_write(path, "".join(lines))
