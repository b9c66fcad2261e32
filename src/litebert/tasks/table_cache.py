"""Tokenized tables on disk: a table's rows tokenized once, by worker processes, into raw
memory-mapped arrays that every later seed and run reuses.

A table (a GLUE split or a generic CSV / TSV / JSON-lines / Parquet file) is read as a stream
of examples; batches of ROWS_PER_TASK rows are tokenized by a process pool
(litebert.data.pool.ordered_map; a table of under POOL_MIN_TASKS tasks in this process) and
appended, in row order, to the arrays of one cache entry:

    ids.bin        (T,) uint16 (uint32 for vocabularies over 65,536): every row's A tokens,
                   then its B tokens, no special tokens, NOT truncated
    a_starts.bin   (N,) int64    where row i's A tokens start in ids.bin
    a_lengths.bin  (N,) int32    how many tokens A has
    b_starts.bin, b_lengths.bin  the same for B (length 0 for single sentences)
    labels.bin     (N,) float64 scores (regression), or int32 codes into the manifest's
                   label_names (classification), -1 for an unlabeled row
    table.json     the manifest, written last: counts, label names, file sizes, and the
                   reader's ReadReport (so a cache hit reports the skipped rows as a read does)

Truncation and the special tokens are applied at batch time (tasks/table_inputs.py), so one
entry serves every --max-seq-length. The entry's name is a hash of what decides its content:
the tokenizer's fingerprint, how the table is read (reader, task, split or columns, whether
labels are scores) and the file's bytes (size and sha256; not its path or mtime, so a copy or
a touched file still hits). Files are written under temporary names and renamed; the manifest
comes last, so an interrupted build is no entry at all. An exclusive lock per entry makes
concurrent runs (the ranks of torchrun, two jobs on one machine) take turns: the second finds
the first's entry.

Where: --cache-dir, else $LITEBERT_DATA/tables, else ~/.cache/litebert/tables. Deleting the
folder (or one entry in it) is always safe: it is built again on the next run.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from litebert.data.arrays import ArrayWriter, memmap
from litebert.data.pool import ordered_map
from litebert.data.sources import default_cache_dir
from litebert.files import atomic_write_json, damaged_files, exclusive, file_digest
from litebert.tasks.examples import ReadReport, TaskDataError, TextExample
from litebert.tokenization import Tokenizer
from litebert.write_errors import explained_write

log = logging.getLogger("litebert")

FORMAT, VERSION = "litebert-table", 1
MANIFEST = "table.json"
ROWS_PER_TASK = 4096  # rows per tokenizer task: big enough to amortise a task's overhead
# A table of fewer tasks is tokenized in this process: a worker imports torch and litebert
# (seconds) before its first task, longer than one process takes for 32k rows.
POOL_MIN_TASKS = 8
NO_LABEL = -1  # the code of an unlabeled row (test splits)
COLUMNS = {"a_starts": np.int64, "a_lengths": np.int32, "b_starts": np.int64,
           "b_lengths": np.int32}


def default_table_cache() -> Path:
    """Where tokenized tables live unless --cache-dir says: beside the downloaded data."""
    return default_cache_dir() / "tables"


@dataclass(frozen=True)
class TableSource:
    """One table to tokenize: its file, how it is read (`reading`: reader name and settings,
    part of the cache key) and the function that streams its examples."""

    path: Path  # the file, or a saved dataset's folder
    reading: dict[str, Any]  # e.g. {"reader": "glue", "task": "sst2", "split": "train"}
    regression: bool  # labels are scores (float64) rather than classes
    stream: Callable[[], tuple[Iterator[TextExample], ReadReport]]


@dataclass
class EncodedTable:
    """One cache entry, memory-mapped: see the module docstring for the arrays."""

    directory: Path
    ids: np.ndarray  # (T,) uint16 / uint32
    a_starts: np.ndarray  # (N,) int64
    a_lengths: np.ndarray  # (N,) int32
    b_starts: np.ndarray  # (N,) int64
    b_lengths: np.ndarray  # (N,) int32
    labels: np.ndarray  # (N,) float64 scores, or int32 codes into label_names (-1: none)
    label_names: list[str] | None  # None: labels are scores
    pairs: bool  # rows hold a text pair
    labelled: bool  # every row has a label (a test split's have none)
    report: ReadReport

    def __len__(self) -> int:
        return len(self.a_starts)


# ---- the cache key -------------------------------------------------------------------------

def content_digest(path: Path) -> dict[str, Any]:
    """Size and sha256 of a file, or of every file of a folder (a saved dataset) by name."""
    if path.is_file():
        return _digest(path)
    files = sorted(p for p in path.rglob("*") if p.is_file())
    return {"files": {str(p.relative_to(path)): _digest(p) for p in files}}


def _digest(path: Path) -> dict[str, Any]:
    st = path.stat()
    return dict(_hashed(str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino))


@functools.lru_cache(maxsize=256)
def _hashed(path: str, size: int, mtime_ns: int, inode: int) -> dict[str, Any]:
    """file_digest, once per process for a file whose size, mtime and inode stay the same:
    the seeds of one run hash a table once (the key itself is the content's)."""
    return file_digest(path)


def table_key(source: TableSource, tokenizer_fingerprint: str) -> str:
    """The entry's name: a hash of the tokenizer, the reading settings and the content."""
    what = {"format": FORMAT, "version": VERSION, "tokenizer": tokenizer_fingerprint,
            "reading": source.reading, "regression": source.regression,
            "content": content_digest(source.path)}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:20]


# ---- finding or building an entry ----------------------------------------------------------

def encoded_table(source: TableSource, tokenizer: Tokenizer, tokenizer_dir: str | Path,
                  cache_dir: str | Path | None = None, workers: int = 1) -> EncodedTable:
    """The table of `source`, tokenized by `tokenizer` (loaded by workers from
    `tokenizer_dir`): the cache's entry, built first when there is none."""
    cache = Path(cache_dir) if cache_dir else default_table_cache()
    key = table_key(source, tokenizer.fingerprint)
    directory = cache / key
    with explained_write(directory, f"the tokenized table of {source.path}",
                         after="free some space or give --cache-dir another folder"), \
            exclusive(cache / f".{key}.lock", f"table cache {directory}"):
        table = load_table(directory)  # after the wait: another process may have built it
        if table is None:
            build_table(source, tokenizer, tokenizer_dir, directory, workers)
            table = load_table(directory)
            if table is None:
                raise TaskDataError(f"{directory}: the table cache entry just written cannot "
                                    "be read back; delete the folder and run again")
        else:
            log.info("%s: tokenized table found in the cache (%s)", source.path, directory)
    return table


def load_table(directory: Path) -> EncodedTable | None:
    """The entry in `directory`, mapped; None when it is missing, incomplete or damaged."""
    path = directory / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        return None
    damaged = damaged_files(directory, manifest["files"], checksums=False)
    if damaged:
        log.warning("%s: damaged table cache entry (%s); tokenizing again", directory,
                    "; ".join(damaged))
        return None
    arrays = {name: memmap(directory / f"{name}.bin", dtype) for name, dtype in COLUMNS.items()}
    names = manifest["label_names"]
    return EncodedTable(
        directory, memmap(directory / "ids.bin", np.dtype(manifest["id_dtype"])), **arrays,
        labels=memmap(directory / "labels.bin", np.float64 if names is None else np.int32),
        label_names=names, pairs=manifest["pairs"],
        labelled=manifest["rows"] > 0 and manifest["unlabeled"] == 0,
        report=ReadReport(**manifest["report"]))


class _Writers:
    """The entry's array files, appended to in row order, renamed into place by close()."""

    def __init__(self, directory: Path, id_dtype: np.dtype, regression: bool):
        self.ids = ArrayWriter(directory / "ids.bin", id_dtype)
        self.columns = {name: ArrayWriter(directory / f"{name}.bin", dtype)
                        for name, dtype in COLUMNS.items()}
        self.labels = ArrayWriter(directory / "labels.bin",
                                  np.float64 if regression else np.int32)

    def append(self, a_ids: np.ndarray, a_lengths: np.ndarray, b_ids: np.ndarray,
               b_lengths: np.ndarray) -> None:
        """One task's result: A's ids of its rows, then B's, stored back to back."""
        base = self.ids.count
        a_starts = base + np.cumsum(a_lengths) - a_lengths  # (n,) int64
        b_starts = base + len(a_ids) + np.cumsum(b_lengths) - b_lengths
        self.ids.append(a_ids)
        self.ids.append(b_ids)
        for name, values in (("a_starts", a_starts), ("a_lengths", a_lengths),
                             ("b_starts", b_starts), ("b_lengths", b_lengths)):
            self.columns[name].append(values)

    def discard(self) -> None:
        """Remove the temporaries of a build that failed."""
        for writer in [self.ids, *self.columns.values(), self.labels]:
            writer.file.discard()

    def close(self) -> list[str]:
        """Put every file in place; their names."""
        writers = [self.ids, *self.columns.values(), self.labels]
        for writer in writers:
            writer.close()
        return [w.path.name for w in writers]


def build_table(source: TableSource, tokenizer: Tokenizer, tokenizer_dir: str | Path,
                directory: Path, workers: int) -> None:
    """Read, tokenize and write the entry in `directory` (the manifest last)."""
    start = time.perf_counter()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MANIFEST).unlink(missing_ok=True)  # from here on the entry is incomplete
    examples, report = source.stream()
    id_dtype = np.dtype(np.uint16 if len(tokenizer) <= 1 << 16 else np.uint32)
    writers = _Writers(directory, id_dtype, source.regression)
    labels = _LabelCoder(source.regression, report)
    try:
        used = _tokenize(_chunks(examples, labels, writers.labels), writers, tokenizer,
                         tokenizer_dir, workers)
    except BaseException:
        writers.discard()
        raise
    files = writers.close()
    manifest = {"format": FORMAT, "version": VERSION, "source": str(source.path),
                "reading": source.reading, "rows": writers.labels.count,
                "tokens": writers.ids.count, "id_dtype": id_dtype.name,
                "pairs": bool(labels.pairs), "unlabeled": labels.unlabeled,
                "label_names": labels.names(),
                "tokenizer": tokenizer.fingerprint,
                "report": dataclasses.asdict(report),
                "seconds": round(time.perf_counter() - start, 2),
                "files": {name: {"size": (directory / name).stat().st_size} for name in files}}
    atomic_write_json(directory / MANIFEST, manifest)
    log.info("%s: tokenized %s rows (%s tokens) into %s in %.1f s with %d worker(s)",
             source.path, f"{manifest['rows']:,}", f"{manifest['tokens']:,}", directory,
             manifest["seconds"], used)


def _tokenize(chunks: Iterator[tuple[list[str], list[str] | None]], writers: _Writers,
              tokenizer: Tokenizer, tokenizer_dir: str | Path, workers: int) -> int:
    """Tokenize the chunks (in a pool of `workers`, or here for a small table) and append
    the results in order; the number of processes that tokenized."""
    head = list(itertools.islice(chunks, POOL_MIN_TASKS))
    tasks = itertools.chain(head, chunks)
    if workers <= 1 or len(head) < POOL_MIN_TASKS:  # here, with this tokenizer: no pool
        results = ordered_map(encode_chunk_here(tokenizer), tasks, 1)
        workers = 1
    else:
        results = ordered_map(encode_chunk, tasks, workers, _init_worker,
                              (str(tokenizer_dir), tokenizer.fingerprint))
    for a_ids, a_lengths, b_ids, b_lengths in results:
        writers.append(a_ids, a_lengths, b_ids, b_lengths)
    return workers


class _LabelCoder:
    """Labels of a stream of examples as one array per chunk: scores as float64, classes as
    int32 codes in the order the label strings first appear."""

    def __init__(self, regression: bool, report: ReadReport):
        self.regression, self.report = regression, report
        self.codes: dict[str, int] = {}
        self.pairs: bool | None = None  # whether the rows are pairs, from the first row
        self.unlabeled = 0  # rows without a label

    def keep(self, ex: TextExample) -> float | int | None:
        """The row's label value; None (a bad_labels skip) for a score that is no number."""
        if self.pairs is None:
            self.pairs = ex.text_b is not None
        if ex.label is None:
            self.unlabeled += 1
            return float("nan") if self.regression else NO_LABEL
        if not self.regression:
            return self.codes.setdefault(str(ex.label), len(self.codes))
        try:
            return float(ex.label)
        except ValueError:
            self.report.note("bad_labels", ex.guid, f"score {ex.label!r} is not a number")
            self.report.read -= 1
            return None

    def names(self) -> list[str] | None:
        return None if self.regression else list(self.codes)


def _chunks(examples: Iterable[TextExample], labels: _LabelCoder,
            label_writer: ArrayWriter) -> Iterator[tuple[list[str], list[str] | None]]:
    """Tokenizer tasks of ROWS_PER_TASK rows: (A texts, B texts or None). Each chunk's labels
    are written as it is cut, so they follow the rows' order as the ids do."""
    texts_a: list[str] = []
    texts_b: list[str] = []
    values: list[float | int] = []
    for ex in examples:
        value = labels.keep(ex)
        if value is None:
            continue
        texts_a.append(ex.text_a)
        texts_b.append(ex.text_b or "")
        values.append(value)
        if len(texts_a) == ROWS_PER_TASK:
            label_writer.append(values)
            yield texts_a, texts_b if labels.pairs else None
            texts_a, texts_b, values = [], [], []
    if texts_a:
        label_writer.append(values)
        yield texts_a, texts_b if labels.pairs else None


# ---- tokenizing, in a worker or here -------------------------------------------------------

_WORKER_TOKENIZER: Tokenizer | None = None  # a pool worker's, set by _init_worker


def _init_worker(tokenizer_dir: str, fingerprint: str) -> None:
    global _WORKER_TOKENIZER
    tokenizer = Tokenizer.from_pretrained(tokenizer_dir)
    if tokenizer.fingerprint != fingerprint:  # the run's tokenizer was loaded otherwise
        raise TaskDataError(f"{tokenizer_dir}: its tokenizer differs from the run's (another "
                            "file or settings); run with --workers 1")
    tokenizer.num_threads = 1  # one process per core already
    _WORKER_TOKENIZER = tokenizer


def encode_chunk(texts_a: list[str], texts_b: list[str] | None, tokenizer=None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(A ids, A lengths, B ids, B lengths) of one task's rows: ids int32 flat, lengths
    int32 per row; B empty (lengths 0) for single sentences."""
    tok = tokenizer or _WORKER_TOKENIZER
    if tok is None:
        raise RuntimeError("encode_chunk: no tokenizer given, and _init_worker has not "
                           "loaded one in this process")
    a_ids, _, a_lengths = tok.encode_batch_flat(texts_a, 1)
    if texts_b is None:
        return a_ids, a_lengths.astype(np.int32), a_ids[:0], np.zeros(len(texts_a), np.int32)
    b_ids, _, b_lengths = tok.encode_batch_flat(texts_b, 1)
    return a_ids, a_lengths.astype(np.int32), b_ids, b_lengths.astype(np.int32)


def encode_chunk_here(tokenizer: Tokenizer) -> Callable:
    """encode_chunk with this process's tokenizer (one worker: no pool)."""
    def encode(texts_a: list[str], texts_b: list[str] | None):
        return encode_chunk(texts_a, texts_b, tokenizer)
    return encode
