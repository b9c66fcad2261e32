"""Pass 2 of `litebert data build`: each split's instances (static pairs), chunks (dynamic
pairs), packed instances or XLNet streams, and static masks, from the arrays pass 1 wrote
(see litebert.data.builder for the directory's layout).

Everything runs by blocks: DOCS_PER_TASK documents, or INSTANCES_PER_BLOCK instances for
static masks. A task is a small description (directory, split, copy, block); whoever runs
it maps the arrays itself and returns the block's rows, which this process appends in
order. Pairs, chunks and static masks (Python per document or instance) run in the workers
(ordered_map, one shared pool); packing and streams, vectorised, run here (see
VECTORISED_WORKERS). Each block's RNG is seeded by (seed, purpose, split, copy, block),
never by the process, so the files do not depend on the workers. Full-sentences packing
runs on from one block into the next: each block becomes a sentence table, packed a step
per instance while the open instance's tokens carry over (litebert.data.packing)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from litebert.data.arrays import ArrayWriter, ReleasableMap, read_range
from litebert.data.arrays import memmap as _memmap
from litebert.data.blocks import DirectoryChecks
from litebert.data.build_config import SPLITS, BuildConfig
from litebert.data.instances import InstanceConfig, document_chunks, document_instances
from litebert.data.masking import MaskingConfig, mask_tokens
from litebert.data.packing import (
    PackedSplit,
    SentenceTable,
    assemble_packed,
    long_sentences,
    pack_block,
    pack_table,
    sentence_table,
    table_spans,
)
from litebert.data.pool import ordered_map, shared_pools
from litebert.data.streams import end_of_document_id, stream_block, write_streams
from litebert.data.word_starts import WordStarts
from litebert.files import temporary_name
from litebert.progress import progress
from litebert.tokenization.base import PairTemplate

log = logging.getLogger("litebert")

DOCS_PER_TASK = 256  # documents per instance-RNG block (as pass 1's documents per task)
INSTANCES_PER_BLOCK = 1024  # instances per static-masking RNG block
# Instances (documents in pass 2a) between releases of a worker's maps: each one's scattered
# reads (its tokens, a binary search of sentences.bin) map up to ~1 MB around them.
RELEASE_EVERY = 8
# Processes for packing and streams. Their blocks are vectorised numpy, cheaper than sending
# a block's result from a worker (bench_pass2, 2 workers on a loaded 2-core machine: several
# times slower than here); pairs and static masks, Python per document or instance, always
# go to the workers. Their tasks are the workers' kind, so raising this moves them there.
VECTORISED_WORKERS = 1


# ---- instances and static masks ----------------------------------------------------

def split_documents(num_docs: int, cfg: BuildConfig) -> np.ndarray:
    """Boolean (D,): True for held-out documents (a seeded random sample, at least one when
    heldout_fraction > 0 and there are two documents or more)."""
    heldout = np.zeros(num_docs, dtype=bool)
    heldout[heldout_documents(num_docs, cfg)] = True
    return heldout


def heldout_documents(num_docs: int, cfg: BuildConfig) -> np.ndarray:
    """(k,) sorted int64: the held-out documents of split_documents, as indices (k is
    heldout_fraction of D: no array the size of the corpus)."""
    if cfg.heldout_fraction <= 0 or num_docs < 2:
        return np.zeros(0, dtype=np.int64)
    count = max(1, int(round(cfg.heldout_fraction * num_docs)))
    rng = np.random.default_rng([cfg.seed, 1])
    return np.sort(rng.choice(num_docs, size=count, replace=False)).astype(np.int64)


class SplitDocuments:
    """A split's (D_split, 2) document ranges (first and one-past-last sentence), in a raw
    file that the workers map and this process reads by slices with pread: nothing the size
    of the corpus stays in memory here (at 160 GB of text, tens of millions of documents)."""

    def __init__(self, path: Path):
        self.path = path
        self.rows = path.stat().st_size // 16

    def __len__(self) -> int:
        return self.rows

    def __getitem__(self, key: slice) -> np.ndarray:
        start, stop, _ = key.indices(self.rows)
        return read_range(self.path, np.int64, 2 * start, 2 * max(start, stop)).reshape(-1, 2)


DOCUMENTS_PER_READ = 1 << 16  # documents.bin entries read at once (~3 MB of arrays at a time)


def write_split_documents(out: Path, held: np.ndarray, paths: dict[str, Path]) -> None:
    """Each split's document ranges into paths[split], documents.bin read a block at a time
    (held: the sorted held-out document indices)."""
    writers = {split: ArrayWriter(path, np.int64) for split, path in paths.items()}
    num_docs = (out / "documents.bin").stat().st_size // 8 - 1
    for first in range(0, num_docs, DOCUMENTS_PER_READ):
        last = min(first + DOCUMENTS_PER_READ, num_docs)
        starts = read_range(out / "documents.bin", np.int64, first, last + 1)  # (n + 1,)
        ranges = np.stack([starts[:-1], starts[1:]], axis=1)  # (n, 2)
        is_held = np.isin(np.arange(first, last),
                          held[np.searchsorted(held, first):np.searchsorted(held, last)])
        writers["train"].append(ranges[~is_held])
        writers["heldout"].append(ranges[is_held])
    for writer in writers.values():
        writer.close()


def write_instances(out: Path, split: str, docs: SplitDocuments, cfg: BuildConfig,
                    template: PairTemplate, workers: int) -> dict[str, int]:
    """All instances (static pairs) or chunks (dynamic pairs) of one split, dupe_factor
    copies, in document order (the sampler shuffles), a block of DOCS_PER_TASK documents
    per task with its own RNG (seed, 2, split, copy, block). Returns the split's counts for
    the manifest: "instances" (the items of an epoch), and what sop_single_sentence='skip'
    left out."""
    dynamic = cfg.pairs == "dynamic"
    name, width = ("chunks", 4) if dynamic else ("instances", 5)
    icfg = cfg.instance_config(template)
    writer = ArrayWriter(out / f"{split}.{name}.bin", np.int64)
    dropped: list[int] = []  # tokens of each skipped chunk
    # The workers map docs.path: random Bs come from any document of the split.
    tasks = ((str(out), str(docs.path), split, copy, block, block + DOCS_PER_TASK,
              cfg.seed, icfg, dynamic)
             for copy in range(cfg.dupe_factor) for block in range(0, len(docs), DOCS_PER_TASK))
    for rows, block_dropped in _blocks(instance_block, tasks, workers, f"pairs {split}",
                                       cfg.dupe_factor * _num_blocks(len(docs))):
        writer.append(rows)
        dropped += block_dropped
    writer.close()
    counts = {"instances": writer.count // width}
    if icfg.skips_single:
        counts.update(skipped_chunks=len(dropped), skipped_tokens=sum(dropped))
    return counts


def instance_block(out: str, docs_path: str, split: str, copy: int, block: int, stop: int,
                   seed: int, icfg: InstanceConfig, dynamic: bool
                   ) -> tuple[np.ndarray, list[int]]:
    """A worker's task: the instances (or chunks) of documents block .. stop of the split's
    document ranges in `docs_path`, and the tokens of each chunk skipped."""
    offsets = ReleasableMap(Path(out) / "sentences.bin", np.int64)
    docs = ReleasableMap(Path(docs_path), np.int64)
    ranges = docs.array.reshape(-1, 2)  # (D_split, 2)
    make = document_chunks if dynamic else document_instances
    rng = np.random.default_rng([seed, 2, SPLITS.index(split), copy, block])
    dropped: list[int] = []
    rows = []
    for n, doc in enumerate(range(block, min(stop, len(ranges))), 1):
        rows.append(make(doc, offsets.array, ranges, icfg, rng, dropped))
        if n % RELEASE_EVERY == 0:  # NSP's random B sentences come from anywhere
            offsets.release()
            docs.release()
    return np.concatenate(rows), dropped


def write_packed(out: Path, split: str, docs: SplitDocuments, cfg: BuildConfig, workers: int
                 ) -> dict[str, int]:
    """Packed instances of one split (litebert.data.packing), dupe_factor copies (the same
    packing, masked anew when masking is static). Returns the split's counts: "instances",
    "spans" and "cut_sentences" (sentences longer than an instance, cut into pieces)."""
    spans = ArrayWriter(out / f"{split}.spans.bin", np.int64)
    index = ArrayWriter(out / f"{split}.span_index.bin", np.int64)
    pack = _pack_across if cfg.packing == "full-sentences" else _pack_within
    for _ in range(cfg.dupe_factor):
        cut_sentences = 0
        for block_spans, first_spans, cut in pack(out, split, docs, cfg, workers):
            index.append(spans.count // 2 + first_spans)
            spans.append(block_spans)
            cut_sentences += cut
    index.append([spans.count // 2])  # the end of the last instance (P)
    spans.close()
    index.close()
    return {"instances": index.count - 1, "spans": spans.count // 2,
            "cut_sentences": cut_sentences}


def _pack_within(out: Path, split: str, docs: SplitDocuments, cfg: BuildConfig, workers: int
                 ) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """doc-sentences: no instance crosses a document, so each block is packed by a worker
    on its own."""
    tasks = ((str(out), docs[block:block + DOCS_PER_TASK], cfg.max_seq_length)
             for block in range(0, len(docs), DOCS_PER_TASK))
    yield from _blocks(packed_block, tasks, min(workers, VECTORISED_WORKERS),
                       f"packing {split}", _num_blocks(len(docs)))


def _pack_across(out: Path, split: str, docs: SplitDocuments, cfg: BuildConfig, workers: int
                 ) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """full-sentences: an instance may run on into the next block, so the workers make each
    block's table and the packing itself, a step per instance, runs here, carrying the
    tokens of the open instance from one block into the next."""
    tasks = ((str(out), docs[block:block + DOCS_PER_TASK], cfg.max_seq_length)
             for block in range(0, len(docs), DOCS_PER_TASK))
    used = 0
    for table in _blocks(table_block, tasks, min(workers, VECTORISED_WORKERS),
                         f"packing {split}", _num_blocks(len(docs))):
        begins, used = pack_table(table, used)
        yield (*table_spans(table, begins), long_sentences(table))


def packed_block(out: str, docs: np.ndarray, max_seq_length: int
                 ) -> tuple[np.ndarray, np.ndarray, int]:
    """A worker's task: doc-sentences packing of a block of documents (pack_block)."""
    return pack_block(docs, _memmap(Path(out) / "sentences.bin", np.int64), max_seq_length)


def table_block(out: str, docs: np.ndarray, max_seq_length: int) -> SentenceTable:
    """A worker's task: the full-sentences table of a block of documents."""
    return sentence_table(docs, _memmap(Path(out) / "sentences.bin", np.int64),
                          max_seq_length, cross_documents=True)


def _num_blocks(num_docs: int) -> int:
    return -(-num_docs // DOCS_PER_TASK)


def _blocks(fn, tasks: Iterable[tuple], workers: int, desc: str, total: int) -> Iterator:
    """fn over the tasks in the workers, results in task order, with a progress bar."""
    return progress(ordered_map(fn, tasks, workers), desc=desc, total=total, unit="blocks")


def open_packed(directory: Path, split: str, checks: DirectoryChecks | None = None
                ) -> PackedSplit:
    """The packed instances of `split` in a data directory, memory-mapped; read through
    `checks` (litebert.data.blocks) when given."""
    if checks is not None:
        return PackedSplit(checks.open(f"{split}.spans.bin", np.int64, width=2),
                           checks.open(f"{split}.span_index.bin", np.int64))
    spans = _memmap(directory / f"{split}.spans.bin", np.int64).reshape(-1, 2)
    return PackedSplit(spans, _memmap(directory / f"{split}.span_index.bin", np.int64))


def write_array(path: Path, values: np.ndarray) -> None:
    writer = ArrayWriter(path, values.dtype)
    writer.append(values)
    writer.close()


def assemble(tokens, word_starts, row, template: PairTemplate):
    """The input of a row (FIELDS) in the template's layout, B only when b_len > 0: ids,
    token types, word starts and maskable flags (every special token unmaskable)."""
    a_start, a_len, b_start, b_len = (int(x) for x in row[:4])
    b = tokens[b_start:b_start + b_len] if b_len else None
    ids, types, special = template.build(tokens[a_start:a_start + a_len], b)
    starts = np.zeros(len(ids), dtype=bool)
    first = template.a_offset()  # 1 after [CLS], 0 when <cls> is last (XLNet)
    starts[first:first + a_len] = word_starts[a_start:a_start + a_len]
    if b_len:
        first = template.b_offset(a_len)
        starts[first:first + b_len] = word_starts[b_start:b_start + b_len]
    return ids, types, starts, ~special


def write_static_masks(out: Path, split: str, mcfg: MaskingConfig, cfg: BuildConfig,
                       tokenizer, token_dtype: str, workers: int) -> int:
    """Pass 2b (static masking): positions and replacement ids of every instance, in blocks
    of INSTANCES_PER_BLOCK with one RNG each, spread over the workers."""
    if cfg.packed:
        num_rows = len(open_packed(out, split))
    else:
        num_rows = (out / f"{split}.instances.bin").stat().st_size // 40
    masks = ArrayWriter(out / f"{split}.masks.bin", np.int32)
    index = ArrayWriter(out / f"{split}.mask_index.bin", np.int64)
    index.append([0])
    seed = (cfg.seed, 3, SPLITS.index(split))
    tasks = ((str(out), split, start, seed, mcfg, tokenizer.template, token_dtype, cfg.packed,
              tokenizer.word_start_ids) for start in range(0, num_rows, INSTANCES_PER_BLOCK))
    blocks = progress(ordered_map(mask_block, tasks, workers), desc=f"masking {split}",
                      total=-(-num_rows // INSTANCES_PER_BLOCK), unit="blocks")
    for block_masks, counts in blocks:
        before = masks.count // 2
        masks.append(block_masks)
        index.append(before + np.cumsum(counts))
    masks.close()
    index.close()
    return masks.count // 2


def mask_block(out: str, split: str, start: int, seed: tuple, mcfg: MaskingConfig,
               template: PairTemplate, token_dtype: str, packed: bool,
               word_start_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masks of instances start .. start + INSTANCES_PER_BLOCK: (M, 2) rows of (position,
    replacement id) and the number of masks of each instance. word_start_ids: the
    tokenizer's (V,) table that word starts are derived from (litebert.data.word_starts)."""
    rng = np.random.default_rng([*seed, start])
    parts, counts = [], []
    for ids, starts, maskable in _block_inputs(Path(out), split, start, template,
                                               token_dtype, packed, word_start_ids):
        masked, _, positions = mask_tokens(ids, starts, maskable, mcfg, rng)
        parts.append(np.stack([positions, masked[positions]], axis=1))
        counts.append(len(positions))
    return np.concatenate(parts).astype(np.int32), np.asarray(counts, dtype=np.int64)


def _block_inputs(d: Path, split: str, start: int, template: PairTemplate, token_dtype: str,
                  packed: bool, word_start_ids: np.ndarray
                  ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(ids, word starts, maskable) of instances start .. start + INSTANCES_PER_BLOCK. The
    held-out split's instances lie anywhere in tokens.bin: the maps are released every
    RELEASE_EVERY instances (arrays.ReleasableMap)."""
    tokens = ReleasableMap(d / "tokens.bin", token_dtype)
    offsets = ReleasableMap(d / "sentences.bin", np.int64)
    word_starts = WordStarts(tokens.array, offsets.array, word_start_ids)
    stop = start + INSTANCES_PER_BLOCK
    rows: Iterable[np.ndarray]  # a packed instance's (k, 2) spans, or a pair's (5,) row
    if packed:
        spans = open_packed(d, split)
        rows = (spans.spans_of(i) for i in range(start, min(stop, len(spans))))
    else:
        rows = _memmap(d / f"{split}.instances.bin", np.int64).reshape(-1, 5)[start:stop]
    make = assemble_packed if packed else assemble
    for n, row in enumerate(rows, 1):
        ids, _, starts, maskable = make(tokens.array, word_starts, row, template)
        yield ids, starts, maskable
        if n % RELEASE_EVERY == 0:
            tokens.release()
            offsets.release()


def build_splits(out: Path, cfg: BuildConfig, tokenizer, token_dtype: str,
                 workers: int) -> dict[str, dict[str, int]]:
    """Pass 2: each split's instances, chunks, packed instances or stream, and static masks,
    in `workers` processes (see the module's docstring); returns the manifest's counts."""
    num_docs = (out / "documents.bin").stat().st_size // 8 - 1
    # Each split's document ranges go to a file, not into memory: {split}.documents.bin where
    # the directory keeps it (dynamic pairs draw random Bs from it), else a temporary one.
    keep = cfg.packing == "pairs" and cfg.pairs == "dynamic"
    paths = {split: out / f"{split}.documents.bin" if keep else
             temporary_name(out / f"{split}.split-documents.bin") for split in SPLITS}
    try:
        write_split_documents(out, heldout_documents(num_docs, cfg), paths)
        return _write_splits(out, cfg, tokenizer, token_dtype, workers, paths)
    finally:
        for path in paths.values() if not keep else ():
            path.unlink(missing_ok=True)


def _write_splits(out: Path, cfg: BuildConfig, tokenizer, token_dtype: str, workers: int,
                  paths: dict[str, Path]) -> dict[str, dict[str, int]]:
    mcfg = cfg.masks(tokenizer)  # random replacements: tokenizer.replacement_ids only
    result = {}
    with shared_pools():  # one pool for every map below
        for split in SPLITS:
            docs = SplitDocuments(paths[split])
            counts = SPLIT_WRITERS[cfg.packing](out, split, docs, cfg, tokenizer, token_dtype,
                                                workers)
            result[split] = {"documents": int(len(docs)), **counts}
            _warn_skipped(split, result[split])
            if cfg.masking == "static":
                result[split]["masked_tokens"] = write_static_masks(
                    out, split, mcfg, cfg, tokenizer, token_dtype, workers)
    return result


def _pairs_split(out: Path, split: str, docs: SplitDocuments, cfg: BuildConfig, tokenizer,
                 token_dtype: str, workers: int) -> dict[str, int]:
    return write_instances(out, split, docs, cfg, tokenizer.template, workers)


def _packed_split(out: Path, split: str, docs: SplitDocuments, cfg: BuildConfig, tokenizer,
                  token_dtype: str, workers: int) -> dict[str, int]:
    return write_packed(out, split, docs, cfg, workers)


def _stream_split(out: Path, split: str, docs: SplitDocuments, cfg: BuildConfig, tokenizer,
                  token_dtype: str, workers: int) -> dict[str, int]:
    tasks = ((str(out), docs[block:block + DOCS_PER_TASK], token_dtype,
              end_of_document_id(tokenizer), tokenizer.word_start_ids)
             for block in range(0, len(docs), DOCS_PER_TASK))
    blocks = _blocks(stream_block, tasks, min(workers, VECTORISED_WORKERS), f"stream {split}",
                     _num_blocks(len(docs)))
    return write_streams(out, split, blocks, np.dtype(token_dtype), cfg.max_seq_length,
                         cfg.reuse_length)


# What pass 2 writes for each split, by BuildConfig.packing (litebert.data.packing.PACKINGS).
SPLIT_WRITERS = {"pairs": _pairs_split, "full-sentences": _packed_split,
                 "doc-sentences": _packed_split, "streams": _stream_split}


def _warn_skipped(split: str, counts: dict[str, int]) -> None:
    """sop_single_sentence='skip' on a corpus of one-sentence documents leaves nothing."""
    if counts.get("skipped_chunks"):
        log.log(logging.WARNING if counts["instances"] == 0 else logging.INFO,
                "%s: sop_single_sentence='skip' left out %d chunks of one sentence (%d tokens);"
                " %d instances remain", split, counts["skipped_chunks"],
                counts["skipped_tokens"], counts["instances"])
