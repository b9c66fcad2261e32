"""Reading task tables: CSV, TSV, JSON lines, Parquet, datasets' save_to_disk folders, as
sentence(-pair) examples (read_table, stream_table) or raw records for other readers.

Formats (`fmt`; "auto" goes by the extension: .csv, .tsv, .jsonl / .json, and for the
columnar formats by what `litebert.readers.open_table` recognises: a Parquet or Arrow file by
its first bytes or name, a saved dataset's folder by what it holds):
- "csv": a header row, then rows; standard CSV quoting (a quoted field may hold commas,
  quotes doubled, line breaks).
- "tsv": a header row, then rows; tab separated with quoting off, as GLUE and most TSV
  writers do, so a quote character is just a character (a text cannot hold a tab).
- "jsonl": one JSON object per line, fields by name; a JSON array is refused with a hint.
- "parquet", "arrow": columns by name, read a record batch at a time (litebert.readers); a
  row's guid is "file:row" (an Arrow folder's rows are numbered per shard file).
Columns/fields are named by `text_a`, `text_b` and `label` (None: no labels, for test data).
A column missing from the header (for JSON lines: from the first record; for the columnar
formats: from the schema) raises TaskDataError at once, naming the file, the column and the
columns that exist; so does a nested (list or struct) column. Row-level
problems are skipped and counted in the ReadReport: a wrong number of fields, a record
without a field, an empty text or label, a line of invalid UTF-8 or JSON.

Labels are kept as the strings written in the file (JSON numbers and booleans as their
text: 1 -> "1", true -> "true"); tasks/classification.py's `infer_labels` gives the label
set and `is_regression` decides whether they are scores. The guid is the row's "guid", "id",
"idx" or "index" column if it has one, else "file:line".
"""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Iterator, Mapping
from pathlib import Path

from litebert.files import open_bytes, strip_compression
from litebert.readers import READERS, CorpusError, Table, open_table
from litebert.readers.columns import check_column, records
from litebert.tasks.examples import (
    Quoting,
    ReadReport,
    TaskDataError,
    TextExample,
    read_rows,
    require_file,
)

FORMATS = ("auto", "csv", "tsv", "jsonl", "parquet", "arrow")
_COLUMNAR = ("parquet", "arrow")
_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}
ID_COLUMNS = ("guid", "id", "idx", "index")


class MissingColumnError(TaskDataError):
    """A table without a column asked for (the message names the columns it has)."""


def table_format(path: Path, fmt: str) -> str:
    if fmt not in FORMATS:
        raise TaskDataError(f"unknown table format {fmt!r}; choose from {FORMATS}")
    if fmt != "auto":
        return fmt
    kind = _SUFFIXES.get(Path(strip_compression(path.name)).suffix.lower())
    if kind is None:
        raise TaskDataError(f"{path}: cannot tell the format from the extension "
                            f"{path.suffix!r}; name it .csv/.tsv/.jsonl/.parquet or pass fmt= "
                            f"one of {FORMATS[1:]}")
    return kind


def read_table(path: str | Path, *, text_a: str = "sentence", text_b: str | None = None,
               label: str | None = "label", fmt: str = "auto",
               roles: Mapping[str, str] | None = None) -> tuple[list[TextExample], ReadReport]:
    """The examples of one CSV / TSV / JSON-lines / Parquet file or saved dataset folder, and
    a report of what was skipped."""
    examples, report = stream_table(path, text_a=text_a, text_b=text_b, label=label, fmt=fmt,
                                    roles=roles)
    return list(examples), report


def stream_table(path: str | Path, *, text_a: str = "sentence", text_b: str | None = None,
                 label: str | None = "label", fmt: str = "auto",
                 roles: Mapping[str, str] | None = None
                 ) -> tuple[Iterator[TextExample], ReadReport]:
    """read_table's examples one at a time (flat memory for a table of any length): what is
    wrong with the whole file (no such file or column) raises here, at once; the report fills
    in as the examples are drawn. `roles` names text_a, text_b and label in those messages
    as the caller's options do (e.g. {"text_a": "the anchor column"})."""
    path = Path(path)
    report = ReadReport(str(path))
    names = {"text_a": text_a, "text_b": text_b, "label": label}
    table = columnar_table(path, fmt)
    if table is not None:
        return _column_examples(table, names, report, roles), report
    kind = table_format(path, fmt)
    require_file(path, "table")
    columns, records = text_records(path, kind, report)
    _require_columns(path, names, columns, roles)

    def examples() -> Iterator[TextExample]:
        for lineno, record in records:
            example = _example(record, names, f"{path}:{lineno}", f"{path.name}:{lineno}",
                               report)
            if example is not None:
                report.read += 1
                yield example

    return examples(), report


def text_records(path: Path, kind: str, report: ReadReport
                 ) -> tuple[list[str], Iterator[tuple[int, dict]]]:
    """The columns of a "csv", "tsv" or "jsonl" file (its header; the first JSON record
    stands for the header of JSON lines) and its records as (line, dict); an empty file is a
    TaskDataError."""
    if kind != "jsonl":
        return _table_records(path, report, "," if kind == "csv" else "\t")
    records = _jsonl_records(path, report)
    first = next(records, None)
    if first is None:
        raise TaskDataError(f"{path}: no JSON records ({report.skipped} lines skipped)")
    return list(first[1]), itertools.chain([first], records)


def _require_columns(path: str | Path, names: dict[str, str | None], columns: list[str],
                     roles: Mapping[str, str] | None = None) -> None:
    for role, name in names.items():
        if name is not None and name not in columns:
            asked = (roles or {}).get(role, role)
            raise MissingColumnError(f"{path}: no column {name!r} (asked for as {asked}); "
                                f"the columns are {columns}")


def columnar_table(path: Path, fmt: str) -> Table | None:
    """`path` opened as columns when it is (or `fmt` says it is) Parquet or Arrow, else None."""
    try:
        if fmt in _COLUMNAR:
            opener = READERS[fmt].table
            assert opener is not None  # the columnar formats all open as tables
            return opener(path)
        return open_table(path) if fmt == "auto" else None
    except CorpusError as err:
        raise TaskDataError(str(err)) from None


def _column_examples(table: Table, names: dict[str, str | None], report: ReadReport,
                     roles: Mapping[str, str] | None = None) -> Iterator[TextExample]:
    """The examples of a columnar table; its columns are checked before this returns."""
    columns = table.schema.names
    _require_columns(table.path, names, columns, roles)
    wanted = [n for n in names.values() if n is not None]
    wanted += [n for n in ID_COLUMNS if n in columns and n not in wanted]
    try:
        for name in wanted:
            check_column(table, name, "a column read", text=False)
    except CorpusError as err:
        raise TaskDataError(str(err)) from None
    return _columnar_rows(table, names, wanted, report)


def _columnar_rows(table: Table, names: dict[str, str | None], wanted: list[str],
                   report: ReadReport) -> Iterator[TextExample]:
    try:
        for where, record in records(table, wanted):
            example = _example(record, names, where, Path(where).name, report)
            if example is not None:
                report.read += 1
                yield example
    except CorpusError as err:
        raise TaskDataError(str(err)) from None
    except (OSError, ValueError) as err:  # pyarrow's errors: a damaged page
        raise TaskDataError(f"{table.path}: unreadable ({type(err).__name__}: {err}); write "
                            "it again") from None


def _table_records(path: Path, report: ReadReport,
                   delimiter: str) -> tuple[list[str], Iterator[tuple[int, dict]]]:
    """The header of a CSV/TSV file (its first non-blank row) and its rows as (line, dict)."""
    quoting: Quoting = csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE
    rows = read_rows(path, report, delimiter=delimiter, quoting=quoting)
    first = next(rows, None)
    if first is None:
        raise TaskDataError(f"{path}: empty file; expected a header row")
    header = [name.strip() for name in first[1]]

    def records() -> Iterator[tuple[int, dict]]:
        for lineno, row in rows:
            if len(row) != len(header):
                report.note("wrong_field_count", f"{path}:{lineno}",
                            f"{len(row)} fields, expected {len(header)}")
                continue
            yield lineno, dict(zip(header, row, strict=True))

    return header, records()


def _jsonl_records(path: Path, report: ReadReport) -> Iterator[tuple[int, dict]]:
    seen = False
    with open_bytes(path) as f:
        for lineno, raw in enumerate(f, 1):
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8").lstrip("\ufeff")
            except UnicodeDecodeError as err:
                report.note("invalid_utf8", where, f"invalid UTF-8 ({err.reason})")
                continue
            if not line.strip():
                continue
            if not seen and line.lstrip().startswith("["):
                raise TaskDataError(f"{where}: a JSON array; this reads JSON lines (one "
                                    "object per line): convert it, e.g. with `jq -c '.[]'`")
            seen = True
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                report.note("bad_json", where, f"bad JSON: {err.msg} (column {err.colno})")
                continue
            if not isinstance(record, dict):
                report.note("bad_json", where,
                            f"a JSON {type(record).__name__}, expected an object")
                continue
            yield lineno, record


def cell_text(value) -> str | None:
    """A cell or JSON value as label/text; None for what cannot be one (null, list, object)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return None


def _example(record: dict, names: dict[str, str | None], where: str, guid: str,
             report: ReadReport) -> TextExample | None:
    values: dict[str, str | None] = {}
    for role, name in names.items():
        if name is None:
            values[role] = None
            continue
        if name not in record:
            report.note("missing_fields", where, f"no field {name!r}")
            return None
        value = cell_text(record[name])
        if not value:
            what = "empty" if value == "" or record[name] is None else "not text"
            report.note("missing_fields", where, f"{name!r} is {what}")
            return None
        values[role] = value
    text_a = values["text_a"]
    if text_a is None:  # read_table's text_a is a str; None here is a caller's mistake
        raise TaskDataError(f"{where}: no text_a column was named")
    ids = (text for n in ID_COLUMNS if n in record and (text := cell_text(record[n])))
    return TextExample(next(ids, guid), text_a, values["text_b"], values["label"])
