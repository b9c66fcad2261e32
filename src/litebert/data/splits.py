"""Pass 2 of `litebert data build`: each split's instances (static pairs), chunks (dynamic
pairs), packed instances or XLNet streams, and static masks, from the arrays pass 1 wrote
(see litebert.data.builder for the directory's layout)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from litebert.data.arrays import ArrayWriter
from litebert.data.arrays import memmap as _memmap
from litebert.data.build_config import SPLITS, BuildConfig
from litebert.data.instances import document_chunks, document_instances
from litebert.data.masking import MaskingConfig, mask_tokens
from litebert.data.packing import PackedSplit, Packer, assemble_packed, pack_documents
from litebert.data.pool import ordered_map
from litebert.data.streams import end_of_document_id, write_streams
from litebert.progress import progress
from litebert.tokenization.base import PairTemplate

log = logging.getLogger("litebert")

DOCS_PER_TASK = 256  # documents per instance-RNG block (as pass 1's documents per task)
INSTANCES_PER_BLOCK = 1024  # instances per static-masking RNG block


# ---- instances and static masks ----------------------------------------------------

def split_documents(num_docs: int, cfg: BuildConfig) -> np.ndarray:
    """Boolean (D,): True for held-out documents (a seeded random sample, at least one when
    heldout_fraction > 0 and there are two documents or more)."""
    heldout = np.zeros(num_docs, dtype=bool)
    if cfg.heldout_fraction > 0 and num_docs >= 2:
        count = max(1, int(round(cfg.heldout_fraction * num_docs)))
        rng = np.random.default_rng([cfg.seed, 1])
        heldout[rng.choice(num_docs, size=count, replace=False)] = True
    return heldout


def write_instances(out: Path, split: str, docs: np.ndarray, offsets: np.ndarray,
                    cfg: BuildConfig, template: PairTemplate) -> dict[str, int]:
    """All instances (static pairs) or chunks (dynamic pairs) of one split, dupe_factor
    copies, in document order (the sampler shuffles). RNG per (seed, split, copy, block of
    DOCS_PER_TASK documents). Returns the split's counts for the manifest: "instances" (the
    items of an epoch), and what sop_single_sentence='skip' left out."""
    dynamic = cfg.pairs == "dynamic"
    name, width = ("chunks", 4) if dynamic else ("instances", 5)
    make = document_chunks if dynamic else document_instances
    writer = ArrayWriter(out / f"{split}.{name}.bin", np.int64)
    icfg = cfg.instance_config(template)
    split_id = SPLITS.index(split)
    dropped: list[int] = []  # tokens of each skipped chunk
    for copy in range(cfg.dupe_factor):
        for block in range(0, len(docs), DOCS_PER_TASK):
            rng = np.random.default_rng([cfg.seed, 2, split_id, copy, block])
            for doc in range(block, min(block + DOCS_PER_TASK, len(docs))):
                writer.append(make(doc, offsets, docs, icfg, rng, dropped))
    writer.close()
    if dynamic:  # chunk_pair draws random Bs from the split's documents, by row
        write_array(out / f"{split}.documents.bin", docs)
    counts = {"instances": writer.count // width}
    if icfg.skips_single:
        counts.update(skipped_chunks=len(dropped), skipped_tokens=sum(dropped))
    return counts


def write_packed(out: Path, split: str, docs: np.ndarray, offsets: np.ndarray,
                 cfg: BuildConfig) -> dict[str, int]:
    """Packed instances of one split (litebert.data.packing), dupe_factor copies (the same
    packing, masked anew when masking is static). Returns the split's counts: "instances",
    "spans" and "cut_sentences" (sentences longer than an instance, cut into pieces)."""
    spans = ArrayWriter(out / f"{split}.spans.bin", np.int64)
    index = ArrayWriter(out / f"{split}.span_index.bin", np.int64)
    index.append([0])
    packer = Packer(cfg.max_seq_length, cfg.packing == "full-sentences")
    for _ in range(cfg.dupe_factor):
        packer.cut_sentences = 0
        for block_spans, counts in pack_documents(docs, offsets, packer):
            index.append(spans.count // 2 + np.cumsum(counts))
            spans.append(block_spans)
    spans.close()
    index.close()
    return {"instances": index.count - 1, "spans": spans.count // 2,
            "cut_sentences": packer.cut_sentences}


def open_packed(directory: Path, split: str) -> PackedSplit:
    """The packed instances of `split` in a data directory, memory-mapped."""
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
                       template: PairTemplate, token_dtype: str, workers: int) -> int:
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
    tasks = ((str(out), split, start, seed, mcfg, template, token_dtype, cfg.packed)
             for start in range(0, num_rows, INSTANCES_PER_BLOCK))
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
               template: PairTemplate, token_dtype: str, packed: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
    """Masks of instances start .. start + INSTANCES_PER_BLOCK: (M, 2) rows of (position,
    replacement id) and the number of masks of each instance."""
    rng = np.random.default_rng([*seed, start])
    parts, counts = [], []
    for ids, starts, maskable in _block_inputs(Path(out), split, start, template,
                                               token_dtype, packed):
        masked, _, positions = mask_tokens(ids, starts, maskable, mcfg, rng)
        parts.append(np.stack([positions, masked[positions]], axis=1))
        counts.append(len(positions))
    return np.concatenate(parts).astype(np.int32), np.asarray(counts, dtype=np.int64)


def _block_inputs(d: Path, split: str, start: int, template: PairTemplate, token_dtype: str,
                  packed: bool) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(ids, word starts, maskable) of instances start .. start + INSTANCES_PER_BLOCK."""
    tokens = _memmap(d / "tokens.bin", token_dtype)
    word_starts = _memmap(d / "word_starts.bin", np.uint8).view(bool)
    stop = start + INSTANCES_PER_BLOCK
    if packed:
        split_spans = open_packed(d, split)
        for i in range(start, min(stop, len(split_spans))):
            ids, _, starts, maskable = assemble_packed(tokens, word_starts,
                                                       split_spans.spans_of(i), template)
            yield ids, starts, maskable
        return
    for row in _memmap(d / f"{split}.instances.bin", np.int64).reshape(-1, 5)[start:stop]:
        ids, _, starts, maskable = assemble(tokens, word_starts, row, template)
        yield ids, starts, maskable


def build_splits(out: Path, cfg: BuildConfig, tokenizer, token_dtype: str,
                  workers: int) -> dict[str, dict[str, int]]:
    # Mapped, not read: at 160 GB of text sentences.bin alone is about 11 GB (S + 1 int64).
    offsets = _memmap(out / "sentences.bin", np.int64)
    documents = _memmap(out / "documents.bin", np.int64)
    bounds = np.stack([documents[:-1], documents[1:]], axis=1)  # (D, 2) sentence ranges
    heldout = split_documents(len(bounds), cfg)
    mcfg = cfg.masks(tokenizer)  # random replacements: tokenizer.replacement_ids only
    result = {}
    for split, chosen in (("train", ~heldout), ("heldout", heldout)):
        docs = bounds[chosen]
        counts = SPLIT_WRITERS[cfg.packing](out, split, docs, offsets, cfg, tokenizer,
                                            token_dtype)
        result[split] = {"documents": int(len(docs)), **counts}
        _warn_skipped(split, result[split])
        if cfg.masking == "static":
            result[split]["masked_tokens"] = write_static_masks(
                out, split, mcfg, cfg, tokenizer.template, token_dtype, workers)
    return result


def _pairs_split(out: Path, split: str, docs: np.ndarray, offsets: np.ndarray,
                 cfg: BuildConfig, tokenizer, token_dtype: str) -> dict[str, int]:
    return write_instances(out, split, docs, offsets, cfg, tokenizer.template)


def _packed_split(out: Path, split: str, docs: np.ndarray, offsets: np.ndarray,
                  cfg: BuildConfig, tokenizer, token_dtype: str) -> dict[str, int]:
    return write_packed(out, split, docs, offsets, cfg)


def _stream_split(out: Path, split: str, docs: np.ndarray, offsets: np.ndarray,
                  cfg: BuildConfig, tokenizer, token_dtype: str) -> dict[str, int]:
    return write_streams(out, split, docs, offsets, _memmap(out / "tokens.bin", token_dtype),
                         _memmap(out / "word_starts.bin", np.uint8),
                         end_of_document_id(tokenizer), cfg.max_seq_length, cfg.reuse_length)


# What pass 2 writes for each split, by BuildConfig.packing (litebert.data.packing.PACKINGS).
SPLIT_WRITERS = {"pairs": _pairs_split, "full-sentences": _packed_split,
                 "doc-sentences": _packed_split, "xlnet": _stream_split}


def _warn_skipped(split: str, counts: dict[str, int]) -> None:
    """sop_single_sentence='skip' on a corpus of one-sentence documents leaves nothing."""
    if counts.get("skipped_chunks"):
        log.log(logging.WARNING if counts["instances"] == 0 else logging.INFO,
                "%s: sop_single_sentence='skip' left out %d chunks of one sentence (%d tokens);"
                " %d instances remain", split, counts["skipped_chunks"],
                counts["skipped_tokens"], counts["instances"])
