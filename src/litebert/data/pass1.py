"""Pass 1 of `litebert data build`: the corpus's parts -> tokens, sentence and document
offsets, and the token histogram (layout in litebert.data.builder).

Each worker reads, parses, sentence-splits and tokenizes one part (litebert.data.parts) at a
time, DOCS_PER_TASK documents per tokenizer call, and appends the results to the part's own
temporary arrays (hidden `.part-NNNNNN.*.bin` files in the output directory): memory stays a
few chunks per process whatever the size of a part. The parent takes the finished parts in
corpus order (litebert.data.pool.ordered_map: at most 2 per worker in flight) and appends
their arrays to the directory's, offsets shifted, then removes them. `data merge` appends
whole shard directories with the same `ArraysWriter`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from litebert.data.arrays import ArrayWriter, PreadArray, memmap
from litebert.data.build_config import BuildConfig
from litebert.data.parts import (
    Part,
    StatsFolder,
    document_span,
    part_lines,
    read_part,
    stats_record,
)
from litebert.data.pool import ordered_map
from litebert.data.splits import heldout_documents
from litebert.progress import progress
from litebert.readers import CorpusStats, Document
from litebert.tokenization import Tokenizer

DOCS_PER_TASK = 256  # documents per tokenizer call
# Parts (8 MB each) a pass-1 worker reads before a fresh process replaces it (pool.py): a
# new worker's start (no torch: well under a second) against some 30 s of work. At 32 the
# workers of a 5 GB build still peaked 8 MB above a 50 MB build's, which reads 3-4 parts each.
PARTS_PER_WORKER = 8
# Word starts are not stored: they follow from the ids (litebert.data.word_starts).
ARRAYS = ("tokens", "sentences", "documents")
COPY_ELEMENTS = 1 << 22  # elements copied at a time when appending arrays
TOKEN_COUNTS = "token_counts.bin"  # (V,) int64: how often each id occurs in tokens.bin

_WORKER_TOKENIZER: Tokenizer | None = None  # a pool worker's, set by _init_worker


def _init_worker(tokenizer_dir: str) -> None:
    global _WORKER_TOKENIZER
    _WORKER_TOKENIZER = Tokenizer.from_pretrained(tokenizer_dir)
    _WORKER_TOKENIZER.num_threads = 1  # one process per core already


def token_dtype(tokenizer) -> np.dtype:
    return np.dtype(np.uint16 if len(tokenizer) <= 65536 else np.uint32)


def encode_documents(documents: list[list[str]], tokenizer=None):
    """Token ids, sentence lengths and sentences per document of a chunk. Sentences with no
    tokens are dropped; so are documents left with none."""
    tok = tokenizer or _WORKER_TOKENIZER
    if tok is None:
        raise RuntimeError("encode_documents: no tokenizer given, and _init_worker has not "
                           "loaded one in this process")
    # Sentences are encoded one by one; those that continue a document get the prefix that
    # running text gives them (byte-level BPE's space: "Ġword", as fine-tuning sees it).
    joiner = tok.continuation_prefix
    flat = [joiner + s if i and s else s for doc in documents for i, s in enumerate(doc)]
    ids, _, lengths = tok.encode_batch_flat(flat)
    first_sentence = np.cumsum([0] + [len(d) for d in documents[:-1]])
    per_doc = np.add.reduceat((lengths > 0).astype(np.int64), first_sentence)
    return ids, lengths[lengths > 0], per_doc[per_doc > 0]


def _chunks(documents: Iterable[Document], size: int) -> Iterator[list[list[str]]]:
    chunk: list[list[str]] = []
    for doc in documents:
        chunk.append(doc.sentences)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# ---- arrays in the directory's layout, appended piece by piece --------------------------------

def part_files(out: Path, index: int) -> dict[str, Path]:
    """The temporary arrays of part `index` (removed by remove_build_outputs: *.bin)."""
    return {name: out / f".part-{index:06d}.{name}.bin" for name in ARRAYS}


class ArraysWriter:
    """tokens / sentences / documents in the directory's layout, appended from
    chunks (`add`) or from arrays of the same layout (`append`), with offsets shifted and
    the token histogram and counts kept."""

    def __init__(self, files: dict[str, Path], dtype: np.dtype, vocab_size: int):
        self.dtype = dtype
        self.writers = {"tokens": ArrayWriter(files["tokens"], dtype),
                        "sentences": ArrayWriter(files["sentences"], np.int64),
                        "documents": ArrayWriter(files["documents"], np.int64)}
        self.writers["sentences"].append([0])
        self.writers["documents"].append([0])
        self.histogram = np.zeros(vocab_size, dtype=np.int64)  # (V,)
        self.tokens = self.sentences = self.documents = self.unknown = 0

    def add(self, chunk: tuple[np.ndarray, ...], unk_id: int | None) -> None:
        """One chunk of encode_documents' output: ids, lengths, per_doc."""
        ids, lengths, per_doc = chunk
        self.writers["tokens"].append(ids)
        self.writers["sentences"].append(self.tokens + np.cumsum(lengths))
        self.writers["documents"].append(self.sentences + np.cumsum(per_doc))
        self.histogram += np.bincount(ids, minlength=len(self.histogram))[:len(self.histogram)]
        self.unknown += int((ids == unk_id).sum()) if unk_id is not None else 0
        self.tokens += len(ids)
        self.sentences += len(lengths)
        self.documents += len(per_doc)

    def append(self, files: dict[str, Path], counts: dict[str, Any]) -> None:
        """Arrays of this layout (a part's, a shard's), streamed a chunk at a time."""
        _copy(files["tokens"], self.dtype, self.writers["tokens"], 0, 0)
        _copy(files["sentences"], np.int64, self.writers["sentences"], 1, self.tokens)
        _copy(files["documents"], np.int64, self.writers["documents"], 1, self.sentences)
        self.tokens += counts["tokens"]
        self.sentences += counts["sentences"]
        self.documents += counts["documents"]
        self.unknown += counts["unknown_tokens"]

    def close(self) -> dict[str, Any]:
        for w in self.writers.values():
            w.close()
        return {"tokens": self.tokens, "sentences": self.sentences,
                "unknown_tokens": self.unknown, "documents": self.documents,
                "token_dtype": self.dtype.name}


def _copy(source: Path, dtype, writer: ArrayWriter, skip: int, shift: int) -> None:
    values = memmap(source, dtype)[skip:]
    for at in range(0, len(values), COPY_ELEMENTS):
        writer.append(values[at:at + COPY_ELEMENTS] + shift if shift else
                      values[at:at + COPY_ELEMENTS])


# ---- a worker: one part ---------------------------------------------------------------------

def tokenize_part(part: Part, out: str, text_field: str) -> dict[str, Any]:
    """Read and tokenize one part into its temporary arrays; its counts, histogram, lines
    and report."""
    tok = _WORKER_TOKENIZER
    if tok is None:
        raise RuntimeError("tokenize_part: _init_worker has not loaded a tokenizer")
    span = document_span(part)
    stats = CorpusStats()
    arrays = ArraysWriter(part_files(Path(out), part.index), token_dtype(tok), len(tok))
    for chunk in _chunks(read_part(part, span, stats, text_field), DOCS_PER_TASK):
        arrays.add(encode_documents(chunk, tok), tok.unk_token_id)
    counts = arrays.close()
    return {"counts": counts, "histogram": arrays.histogram, "lines": part_lines(part, span),
            "stats": stats_record(stats)}


# ---- the parent: parts in order -------------------------------------------------------------

def tokenize_parts(parts: list[Part], tokenizer, tokenizer_dir: Path, out: Path,
                   cfg: BuildConfig, workers: int,
                   records: list[dict[str, Any]]) -> tuple[dict[str, Any], StatsFolder]:
    """Pass 1 over `parts` into `out`; the manifest's counts (with the histogram written to
    token_counts.bin) and the corpus report. Appends each part's record to `records` (what
    `data merge` needs to add up the shards' reports)."""
    arrays = ArraysWriter({name: out / f"{name}.bin" for name in ARRAYS},
                          token_dtype(tokenizer), len(tokenizer))
    folder = StatsFolder()
    bar = progress(desc="tokenizing", unit="docs")
    tasks = ((part, str(out), cfg.text_field) for part in parts)
    results = ordered_map(tokenize_part, tasks, workers, _init_worker, (str(tokenizer_dir),),
                          recycle_after=PARTS_PER_WORKER)
    for part, result in zip(parts, results, strict=True):
        files = part_files(out, part.index)
        arrays.append(files, result["counts"])
        arrays.histogram += result["histogram"]
        for path in files.values():
            path.unlink()
        folder.add(part, result["stats"], result["lines"])
        records.append({"part": part.index, "lines": result["lines"],
                        "stats": result["stats"]})
        bar.update(result["counts"]["documents"])
    bar.close()
    counts = arrays.close()
    write_histogram(out, arrays.histogram)
    return counts, folder


def write_histogram(out: Path, histogram: np.ndarray) -> None:
    writer = ArrayWriter(out / TOKEN_COUNTS, np.int64)
    writer.append(histogram)
    writer.close()


def commonest_training_token(out: Path, histogram: np.ndarray, cfg: BuildConfig,
                             dtype: str, special_mask: np.ndarray) -> int:
    """The commonest non-special token of the training split: the histogram of all tokens
    minus the held-out documents' (about heldout_fraction of them, read from tokens.bin).

    Read with pread, not through a mapping: touching scattered pages of a freshly written
    file maps the cached pages around each one too (the kernel's fault-around), so a map
    read of 1% of the documents left most of tokens.bin resident in this process."""
    size = len(histogram)
    counts = histogram.copy()
    held = heldout_documents(_length(out / "documents.bin", np.int64) - 1, cfg)  # (k,)
    with PreadArray(out / "documents.bin", np.int64) as starts, \
            PreadArray(out / "sentences.bin", np.int64) as offsets, \
            PreadArray(out / "tokens.bin", dtype) as tokens:
        # A bincount per block of documents: 256 keep its (n,) int64 copy of the ids near 1 MB.
        for at in range(0, len(held), 256):
            docs = held[at:at + 256]
            first = offsets.at(starts.at(docs))  # (k,) token range of each document
            last = offsets.at(starts.at(docs + 1))
            ids = np.concatenate([tokens.span(a, b) for a, b in
                                  zip(first.tolist(), last.tolist(), strict=True)])
            counts -= np.bincount(ids, minlength=size)[:size]
    special = np.flatnonzero(special_mask)
    counts[special[special < size]] = -1
    return int(counts.argmax())


def _length(path: Path, dtype) -> int:
    return path.stat().st_size // np.dtype(dtype).itemsize
