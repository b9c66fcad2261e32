"""Arrow IPC data: the folders that `datasets.Dataset.save_to_disk` writes, and single Arrow
files in either IPC layout, read a record batch at a time with pyarrow (no `datasets`).

A saved dataset is a folder of Arrow IPC *stream* files `data-00000-of-0000N.arrow` with
`dataset_info.json` (the features) and `state.json` (whose `_data_files` lists the shards in
order; without it the shards are read in name order). The folder is one input: its JSON files
are not read as corpus text. `DatasetDict.save_to_disk` writes one such folder per split
beside `dataset_dict.json`; that folder is refused with the splits to choose from, since
reading every split would mix the test data into training.

A file is recognised by its first bytes: "ARROW1" starts the IPC file layout, the
continuation marker 0xFFFFFFFF the stream layout (what datasets writes).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from litebert.readers.base import CorpusError, Format
from litebert.readers.columns import reader, uncompressed

if TYPE_CHECKING:
    import pyarrow as pa

FILE_MAGIC = b"ARROW1"
STREAM_MAGIC = b"\xff\xff\xff\xff"
STATE, INFO, SPLITS = "state.json", "dataset_info.json", "dataset_dict.json"
WHAT = "Arrow file"


def is_dataset_folder(path: Path) -> bool:
    """A folder that datasets' save_to_disk wrote (one dataset, or the splits of several)."""
    return path.is_dir() and any((path / name).is_file() for name in (STATE, INFO, SPLITS))


def shard_files(folder: Path) -> list[Path]:
    """The Arrow files of a saved dataset, in the order the dataset holds them."""
    if not (folder / STATE).is_file() and (folder / SPLITS).is_file():
        splits = sorted(p.name for p in folder.iterdir() if is_dataset_folder(p))
        raise CorpusError(f"{folder}: a dataset with the splits {splits} (a DatasetDict); "
                          f"name the split to read, e.g. {folder / (splits or ['train'])[0]}")
    if (folder / STATE).is_file():
        names = _state_shards(folder)
    else:
        names = sorted(p.name for p in folder.glob("*.arrow") if not p.name.startswith("."))
    if not names:
        raise CorpusError(f"{folder}: a saved dataset folder without .arrow files")
    for name in names:
        if not (folder / name).is_file():
            raise CorpusError(f"{folder}: {STATE} lists the shard {name!r}, which is missing; "
                              "copy the folder again")
    return [folder / name for name in names]


def _state_shards(folder: Path) -> list[str]:
    path = folder / STATE
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        names = [entry["filename"] for entry in state.get("_data_files") or []]
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise CorpusError(f"{path}: not a datasets state file ({err})") from None
    if state.get("_indices_data_files"):  # older datasets: rows chosen through an index file
        raise CorpusError(f"{folder}: saved with an indices mapping (an older datasets); save "
                          "it again after `dataset.flatten_indices()`")
    for name in names:
        if not isinstance(name, str) or Path(name).name != name:
            raise CorpusError(f"{path}: the shard name {name!r} is not a plain file name")
    return names


class ArrowTable:
    def __init__(self, path: Path):
        import pyarrow as pa

        self.path = path
        self.files = shard_files(path) if path.is_dir() else [path]
        for file in self.files:
            uncompressed(file, WHAT)
        try:
            with pa.OSFile(str(self.files[0])) as source:
                self.schema = _open(source).schema
        except (OSError, ValueError) as err:
            raise CorpusError(f"{self.files[0]}: not a readable {WHAT} ({err}); is it cut "
                              "short? write it again") from None

    def batches(self, columns: list[str]) -> Iterator[tuple[Path, pa.RecordBatch]]:
        import pyarrow as pa

        # Plain reads, not a memory map: each batch is read, used and freed, so resident
        # memory stays one batch however large the shard (mapped pages would count in RSS).
        for file in self.files:
            with pa.OSFile(str(file)) as source:
                for batch in _batches(_open(source)):
                    yield file, batch.select(columns)


def _open(source):
    """A reader of either IPC layout (the file layout starts with ARROW1)."""
    import pyarrow as pa

    start = source.read(len(FILE_MAGIC))
    source.seek(0)
    return pa.ipc.open_file(source) if start == FILE_MAGIC else pa.ipc.open_stream(source)


def _batches(ipc) -> Iterator[pa.RecordBatch]:
    if hasattr(ipc, "num_record_batches"):  # the file layout: batches by index
        yield from (ipc.get_batch(i) for i in range(ipc.num_record_batches))
    else:
        yield from ipc


ARROW = Format("arrow", reader(ArrowTable),
               "datasets' save_to_disk folders and Arrow files (.arrow)",
               suffixes=(".arrow",), binary=True, table=ArrowTable, folder=is_dataset_folder,
               magic=lambda head: head.startswith((FILE_MAGIC, STREAM_MAGIC)))
