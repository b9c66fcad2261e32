"""Parquet files (`*.parquet`, or any file that starts with the magic bytes PAR1), read a
record batch at a time with pyarrow: only the columns asked for are decoded, a few pages at
a time, so memory stays flat on a file of any size."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from litebert.readers.base import CorpusError, Format
from litebert.readers.columns import BATCH_ROWS, reader, uncompressed

if TYPE_CHECKING:
    import pyarrow as pa

MAGIC = b"PAR1"
WHAT = "Parquet file"


class ParquetTable:
    def __init__(self, path: Path):
        import pyarrow.parquet as pq

        uncompressed(path, WHAT)
        self.path, self.files = path, [path]
        try:
            # pre_buffer off and a read buffer: pages are read as they are decoded, not a
            # whole row group (which can be the whole file) at once.
            self._file = pq.ParquetFile(path, buffer_size=1 << 20, pre_buffer=False)
        except (OSError, ValueError) as err:
            raise CorpusError(f"{path}: not a readable {WHAT} ({err}); is it cut short? "
                              "write it again") from None
        self.schema = self._file.schema_arrow

    def batches(self, columns: list[str]) -> Iterator[tuple[Path, pa.RecordBatch]]:
        for batch in self._file.iter_batches(batch_size=BATCH_ROWS, columns=columns,
                                             use_threads=False):
            yield self.path, batch

    def groups(self, columns: list[str], span: tuple[int, int]
               ) -> Iterator[tuple[Path, pa.RecordBatch]]:
        """The batches of the row groups [first, stop) of `span`."""
        for batch in self._file.iter_batches(batch_size=BATCH_ROWS, columns=columns,
                                             row_groups=range(*span), use_threads=False):
            yield self.path, batch

    def rows_before(self, group: int) -> int:
        meta = self._file.metadata
        return sum(meta.row_group(i).num_rows for i in range(group))


def row_group_sizes(path: Path) -> list[int]:
    """The uncompressed bytes of each row group of a Parquet file (to plan parts by); none
    for a file that cannot be opened, which is then read whole and reported by the reader."""
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
    except (OSError, ValueError):  # pyarrow's errors; ParquetTable says what is wrong
        return []
    return [meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)]


PARQUET = Format("parquet", reader(ParquetTable), "Parquet files (.parquet)",
                 suffixes=(".parquet",), magic=lambda head: head.startswith(MAGIC),
                 binary=True, table=ParquetTable)
