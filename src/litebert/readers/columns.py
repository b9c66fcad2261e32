"""What the columnar formats share (Parquet files, Arrow files, the folders that
`datasets.Dataset.save_to_disk` writes): a `Table` is a file or folder opened as columns,
read a record batch at a time so that memory stays flat however large the file is.

Records are numbered from 1 within each file, so a document's source reads "file:row" as a
JSON line's reads "file:line". The text column must hold strings; a nested column (a list,
a struct) or a number is an error naming the column and its type, and a column that is not
there is an error naming the file and the columns it has. A Parquet file can be read by
spans of row groups (a `data build` worker's part, litebert.data.parts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

from litebert.files import compression_of
from litebert.readers.base import (
    CorpusError,
    CorpusStats,
    Document,
    GroupedTable,
    ReadFn,
    Table,
)
from litebert.readers.lines import WHOLE, Span
from litebert.readers.sentences import record_documents

BATCH_ROWS = 1024  # rows decoded at a time: a batch of long documents stays a few MB


def uncompressed(path: Path, what: str) -> None:
    """A columnar file is read by seeking, which a .gz/.bz2/.xz stream cannot do."""
    if compression_of(path):
        raise CorpusError(f"{path}: a compressed {what}; decompress it first (the format "
                          "compresses its own pages)")


def check_column(table: Table, name: str, role: str, *, text: bool) -> None:
    """CorpusError unless `name` is a column of `table` holding strings (`text`) or scalars."""
    import pyarrow as pa

    if name not in table.schema.names:
        raise CorpusError(f"{table.path}: no column {name!r} ({role}); the columns are "
                          f"{table.schema.names}")
    kind = table.schema.field(name).type
    value = kind.value_type if pa.types.is_dictionary(kind) else kind
    if pa.types.is_nested(value):
        raise CorpusError(f"{table.path}: column {name!r} ({role}) is nested ({kind}); "
                          "litebert reads one string per row: flatten it or pick another "
                          f"column of {table.schema.names}")
    if text and not (pa.types.is_string(value) or pa.types.is_large_string(value)
                     or getattr(pa.types, "is_string_view", lambda _: False)(value)):
        raise CorpusError(f"{table.path}: column {name!r} ({role}) holds {kind}, not text; "
                          f"the columns are {table.schema.names}")


def records(table: Table, columns: list[str],
            span: Span | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """("file:row", {column: value}) for every row, a batch decoded at a time; with a `span`
    of row groups (a Parquet file's part, see `ParquetTable.groups`), the rows of those
    groups, numbered as in the whole file."""
    if span is None or span == WHOLE:
        batches, first = table.batches(columns), 0
    else:
        grouped = cast(GroupedTable, table)  # only Parquet files are planned by row groups
        batches, first = grouped.groups(columns, span), grouped.rows_before(span[0])
    current, row = None, 0
    for file, batch in batches:
        if file != current:
            current, row = file, first
        values = batch.to_pydict()  # column -> list of Python values, one batch only
        for i in range(batch.num_rows):
            row += 1
            yield f"{file}:{row}", {name: values[name][i] for name in columns}


def reader(open_table: Callable[[Path], Table]) -> ReadFn:
    """The corpus reader of a columnar format that `open_table` opens."""

    def read(path: Path, stats: CorpusStats, max_chars: int, *, text_field: str,
             label_field: str | None, span: Span | None = None) -> Iterator[Document]:
        table = open_table(path)
        check_column(table, text_field, "the text field, --text-field", text=True)
        columns = [text_field]
        if label_field is not None:
            check_column(table, label_field, "the label field", text=False)
            columns.append(label_field)
        if span is None or span[0] == 0:  # a file's bytes count once, with its first part
            stats.bytes += sum(f.stat().st_size for f in table.files)
        try:
            for where, record in records(table, columns, span):
                text = record[text_field]
                if text is None:
                    stats.note("missing_text", where, f"{text_field!r} is null")
                    continue
                yield from record_documents(text, record.get(label_field or ""), where, stats,
                                            max_chars, text_field, label_field)
        except (OSError, ValueError) as err:  # pyarrow's errors are these; a damaged page
            if isinstance(err, CorpusError):
                raise
            stats.note("unreadable_files", str(path), f"{type(err).__name__}: {err}")

    return read
