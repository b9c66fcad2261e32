"""`litebert data build`: corpus -> memory-mapped token arrays + instance index + manifest.

Layout of a data directory (all arrays raw little-endian, read with np.memmap):

    tokens.bin          (N,) uint16 (uint32 for vocabularies over 65,535): every sentence's ids
    word_starts.bin     (N,) uint8: 1 where a token begins a word (for whole-word masking)
    sentences.bin       (S + 1,) int64: token offset of each sentence, then N
    documents.bin       (D + 1,) int64: first sentence of each document, then S
    {split}.instances.bin   (I, 5) int64: a_start, a_len, b_start, b_len, label
                            (static pairs only)
    {split}.chunks.bin      (C, 4) int64: first sentence, sentences, document (a row of the
                            next file), target length   (dynamic pairs only)
    {split}.documents.bin   (D_split, 2) int64: first and one-past-last sentence of each
                            document of the split   (dynamic pairs only)
    {split}.spans.bin       (P, 2) int64: token start and length of each span of text
    {split}.span_index.bin  (I + 1,) int64: first span of each instance, then P
                            (packing full-sentences / doc-sentences only, see
                            litebert.data.packing)
    {split}.stream.bin      (N_s,) token ids of the split's documents, each closed by <eod>
    {split}.stream_flags.bin  (N_s,) uint8: word and sentence starts   (packing xlnet only,
                            see litebert.data.streams)
    {split}.masks.bin       (M, 2) int32: position, replacement id   (static masking only)
    {split}.mask_index.bin  (I + 1,) int64: first mask row of each instance   (static only)
    tokenizer/          a copy of the tokenizer, so the directory is self-contained
    manifest.json       written last: config, its hash, counts, corpus report, and the size
                        and sha256 of every file above (checked by litebert.data.integrity)

Two passes keep memory flat: pass 1 streams documents through the tokenizer (in `workers`
processes, results written in corpus order, at most 2 chunks per worker in flight); pass 2
builds instances (static pairs), chunks (dynamic pairs: the pairs are drawn when an item
is read, see litebert.data.instances) or packed instances (litebert.data.packing) from
sentence lengths alone, or copies each split's tokens into one stream (packing xlnet,
litebert.data.streams). Randomness comes from numpy Generators seeded by (seed, purpose,
block of documents or instances), never from the worker that ran it, so the output does
not depend on the number of workers.

Instances take the layout of the tokenizer's pair template (`Tokenizer.template`): ALBERT's
and BERT's [CLS] A [SEP] B [SEP] with token types 0/1, RoBERTa's <s> A </s></s> B </s> with
types all 0; `assemble` builds an input from a row with it, for static masks and the loader.

Every file is written under a temporary name and renamed when complete; the manifest is
removed first on a rebuild and written last, so a killed build never looks complete.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from litebert.data.arrays import ArrayWriter
from litebert.data.arrays import memmap as _memmap
from litebert.data.instances import InstanceConfig, document_chunks, document_instances
from litebert.data.integrity import MANIFEST, explained_build, record_files, remove_build_outputs
from litebert.data.masking import MaskingConfig, mask_tokens
from litebert.data.packing import PACKINGS, PackedSplit, Packer, assemble_packed, pack_documents
from litebert.data.streams import end_of_document_id, write_streams
from litebert.files import (
    atomic_write_json,
    damaged_files,
    exclusive,
    expand_inputs,
)
from litebert.options import option
from litebert.progress import progress
from litebert.readers import FORMATS, CorpusStats, read_documents
from litebert.tokenization.base import PairTemplate

if TYPE_CHECKING:
    from litebert.tokenization import Tokenizer

log = logging.getLogger("litebert")

FORMAT = "litebert-pretraining-data"
VERSION = 2  # 2: the manifest records files; random replacements skip every special id
SPLITS = ("train", "heldout")
DOCS_PER_TASK = 256  # documents per tokenizer task and per instance-RNG block
INSTANCES_PER_BLOCK = 1024  # instances per static-masking RNG block


@dataclass(frozen=True)
class BuildConfig:
    # `litebert data build --help` is generated from these help texts (litebert.options).
    max_seq_length: int = option(512, "tokens per instance, [CLS] and [SEP]s included")
    objective: str = option(
        "sop", "sentence-pair task: sentence order (ALBERT), next sentence (BERT) or none",
        choices=("sop", "nsp", "none"))
    masking: str = option(
        "dynamic", "dynamic: new masks every epoch; static: drawn once per dupe copy, at "
        "build time", choices=("dynamic", "static"))
    dupe_factor: int = option(
        1, "copies of every document's instances, each paired and masked anew")
    short_seq_prob: float = option(
        0.1, "probability of a shorter instance (as BERT, to match fine-tuning lengths; "
        "packing 'pairs' only: packed instances are always filled, as RoBERTa's)")
    masked_lm_prob: float = option(0.15, "share of the tokens masked")
    max_predictions_per_seq: int = option(20, "masked tokens per instance, at most")
    max_ngram: int = option(3, "longest masked n-gram of whole words (ALBERT's n-gram masking)")
    heldout_fraction: float = option(0.01, "share of the documents held out for evaluation")
    seed: int = option(12345, "seed of the split, the pairs and the static masks")
    format: str = option(
        "auto", "corpus format (see litebert.readers): auto decides per input by its bytes "
        "and name; bert and paragraphs are text, jsonl JSON lines, parquet Parquet files, "
        "arrow the folders of datasets' save_to_disk (and .arrow files)", choices=FORMATS)
    text_field: str = option("text", "JSON lines, Parquet and Arrow: the field (column) holding "
                                     "a document's text")
    # Added after format version 2: see LATER_FIELDS.
    pairs: str = option(
        "static", "static: each chunk's A/B split, order and NSP partner drawn once, at build "
        "time (the reference); dynamic: drawn anew every epoch when an item is read, so the "
        "pair head cannot memorise the pairs (needs --masking dynamic)",
        choices=("static", "dynamic"))
    sop_single_sentence: str = option(
        "random", "sop, chunks of one sentence: random: B from another document, label 1 "
        "(the reference; mixes topic into SOP); skip: no instance (sop only)",
        choices=("random", "skip"))
    packing: str = option(
        "pairs", "pairs: segment pairs (sop, nsp or none); full-sentences: contiguous "
        "sentences up to max_seq_length, crossing documents with a separator between them; "
        "doc-sentences: the same within one document (RoBERTa; both need --objective none); "
        "xlnet: one stream of the split's documents, each closed by <eod>, read as XLNet's "
        "windows by objective plm (needs --objective none, dynamic masking, dupe_factor 1)",
        choices=PACKINGS)
    reuse_len: int | None = option(
        None, "packing xlnet: tokens at the start of each window whose states the next window "
        "reuses as memory; a window starts every reuse_len tokens", shown="max_seq_length // 2")

    def __post_init__(self) -> None:
        _ = self.instances  # constructing it validates the pair options
        self._check_packing()
        if self.masking not in ("dynamic", "static"):
            raise ValueError(f"masking={self.masking!r}: choose 'dynamic' or 'static'")
        if self.pairs not in ("static", "dynamic"):
            raise ValueError(f"pairs={self.pairs!r}: choose 'static' or 'dynamic'")
        if self.pairs == "dynamic" and self.masking == "static":
            raise ValueError("pairs='dynamic' needs masking='dynamic': static masks are drawn "
                             "at build time for a fixed pair, and dynamic pairs exist only when "
                             "an item is read")
        if self.dupe_factor < 1:
            raise ValueError(f"dupe_factor={self.dupe_factor}: must be at least 1")
        if not 0.0 <= self.heldout_fraction < 1.0:
            raise ValueError(f"heldout_fraction={self.heldout_fraction}: must be in [0, 1)")

    def _check_packing(self) -> None:
        if self.packing not in PACKINGS:
            raise ValueError(f"packing={self.packing!r}: choose from {PACKINGS}")
        if self.reuse_len is not None and self.packing != "xlnet":
            raise ValueError(f"reuse_len={self.reuse_len} applies to packing='xlnet' only "
                             f"(--packing xlnet); leave it out for packing={self.packing!r}")
        if self.packing == "pairs":
            return
        if self.packing == "xlnet":
            self._check_xlnet()
        if self.objective != "none":
            raise ValueError(
                f"packing={self.packing!r} needs objective='none' (--objective none), not "
                f"{self.objective!r}: a packed instance is one stretch of text with no sentence "
                "pair to label; for sop or nsp keep --packing pairs")
        if self.pairs != "static":
            raise ValueError(f"pairs={self.pairs!r} draws sentence pairs, which "
                             f"packing={self.packing!r} has none of; leave --pairs static")

    def _check_xlnet(self) -> None:
        """XLNet's windows: A and B, their label and the targets are drawn when an item is
        read (litebert.objectives.plm_data), from the one stream of each split."""
        if self.objective != "none" or self.pairs != "static":
            raise ValueError(f"packing='xlnet' needs objective='none' and pairs='static' "
                             f"(--objective none), not {self.objective!r} and {self.pairs!r}: "
                             "XLNet's A and B and their next-sentence label are drawn when a "
                             "window is read (objective plm), not at build time")
        if self.masking != "dynamic":
            raise ValueError("packing='xlnet' draws its prediction targets every epoch when an "
                             "item is read; static masks are MLM's: leave --masking dynamic")
        if self.dupe_factor != 1:
            raise ValueError(f"dupe_factor={self.dupe_factor}: packing='xlnet' writes each "
                             "split's stream once (its pairs and targets are drawn anew every "
                             "epoch); leave --dupe-factor 1")
        reuse = self.reuse_length
        if not 0 < reuse < self.max_seq_length - 3:
            raise ValueError(f"reuse_len={reuse}: must be positive and below max_seq_length - 3 "
                             f"= {self.max_seq_length - 3}, to leave room for A <sep> B <sep> "
                             f"<cls>")

    @property
    def packed(self) -> bool:
        """Instances are packed text (full-sentences, doc-sentences), not segment pairs
        (nor XLNet's streams)."""
        return self.packing in ("full-sentences", "doc-sentences")

    @property
    def reuse_length(self) -> int:
        """packing xlnet: reuse_len, by default half of max_seq_length (the official 256 of
        512)."""
        return self.max_seq_length // 2 if self.reuse_len is None else self.reuse_len

    @property
    def instances(self) -> InstanceConfig:
        """The pair options, with room for [CLS] A [SEP] B [SEP] (see instance_config)."""
        return InstanceConfig(self.max_seq_length, self.objective, self.short_seq_prob,
                              self.sop_single_sentence)

    def instance_config(self, template: PairTemplate) -> InstanceConfig:
        """The pair options with room for the template's special tokens of a pair (3, or
        RoBERTa's 4): what the instances of a directory are built and drawn with."""
        return dataclasses.replace(self.instances, specials=template.num_special(True))

    def masks(self, tokenizer) -> MaskingConfig:
        return MaskingConfig(mask_token_id=tokenizer.mask_token_id,
                             replacement_ids=tokenizer.replacement_ids,
                             masked_lm_prob=self.masked_lm_prob,
                             max_predictions_per_seq=self.max_predictions_per_seq,
                             max_ngram=self.max_ngram)


# ---- cache key -----------------------------------------------------------------------------

# Fields added after format version 2, with the value every earlier build implied. At that
# value they stay out of the cache key: such a build writes the very same bytes as before,
# so directories built before the field existed remain cache hits.
LATER_FIELDS = {"pairs": "static", "sop_single_sentence": "random", "packing": "pairs",
                "reuse_len": None}


def cache_key(inputs: Iterable[str | Path], tokenizer_fingerprint: str, cfg: BuildConfig) -> str:
    """Hash of the config, the tokenizer and the inputs' names, sizes and mtimes."""
    h = hashlib.sha256()
    config = {name: value for name, value in dataclasses.asdict(cfg).items()
              if name not in LATER_FIELDS or value != LATER_FIELDS[name]}
    h.update(json.dumps(config, sort_keys=True).encode())
    h.update(tokenizer_fingerprint.encode())
    for f in expand_inputs(inputs, what="corpus input"):
        st = f.stat()
        h.update(f"{f.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    h.update(f"{FORMAT}-{VERSION}".encode())
    return h.hexdigest()[:16]


def read_manifest(directory: str | Path) -> dict[str, Any] | None:
    path = Path(directory) / MANIFEST
    if not path.is_file():
        return None
    manifest = json.loads(path.read_text())
    return manifest if manifest.get("format") == FORMAT else None


# ---- pass 1: tokenize ----------------------------------------------------------------------

_WORKER_TOKENIZER: Tokenizer | None = None  # a pool worker's, set by _init_worker


def _init_worker(tokenizer_dir: str) -> None:
    global _WORKER_TOKENIZER
    from litebert.tokenization import Tokenizer

    _WORKER_TOKENIZER = Tokenizer.from_pretrained(tokenizer_dir)
    _WORKER_TOKENIZER.num_threads = 1  # one process per core already


def encode_documents(documents: list[list[str]], tokenizer=None):
    """Token ids, word starts, sentence lengths and sentences per document of a chunk.
    Sentences with no tokens are dropped; so are documents left with none."""
    tok = tokenizer or _WORKER_TOKENIZER
    if tok is None:
        raise RuntimeError("encode_documents: no tokenizer given, and _init_worker has not "
                           "loaded one in this process")
    # Sentences are encoded one by one; those that continue a document get the prefix that
    # running text gives them (byte-level BPE's space: "Ġword", as fine-tuning sees it).
    joiner = tok.continuation_prefix
    flat = [joiner + s if i and s else s for doc in documents for i, s in enumerate(doc)]
    ids, starts, lengths = tok.encode_batch_flat(flat)
    first_sentence = np.cumsum([0] + [len(d) for d in documents[:-1]])
    per_doc = np.add.reduceat((lengths > 0).astype(np.int64), first_sentence)
    return ids, starts, lengths[lengths > 0], per_doc[per_doc > 0]


def _chunks(documents: Iterator, size: int) -> Iterator[list[list[str]]]:
    chunk: list[list[str]] = []
    for doc in documents:
        chunk.append(doc.sentences)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def ordered_map(fn, tasks: Iterable, workers: int, initializer=None, initargs=()):
    """fn over tasks, results in task order; with workers > 1 in a process pool with at most
    2 tasks per worker in flight, so a long task stream never piles up in memory."""
    if workers <= 1:
        if initializer:
            initializer(*initargs)
        for task in tasks:
            yield fn(*task)
        return
    import multiprocessing as mp

    ctx = mp.get_context("spawn")  # fork + sentencepiece/torch threads is not safe
    with ctx.Pool(workers, initializer=initializer, initargs=initargs) as pool:
        pending: deque = deque()
        for task in tasks:
            pending.append(pool.apply_async(fn, task))
            if len(pending) >= 2 * workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def tokenize_corpus(inputs, tokenizer, tokenizer_dir: Path, out: Path, cfg: BuildConfig,
                    workers: int, stats) -> dict[str, Any]:
    """Pass 1: stream the corpus into tokens / word_starts / sentences / documents; returns
    the manifest's counts (ints, and the name of the token dtype)."""

    dtype = np.uint16 if len(tokenizer) <= 65536 else np.uint32
    writers = {"tokens": ArrayWriter(out / "tokens.bin", dtype),
               "word_starts": ArrayWriter(out / "word_starts.bin", np.uint8),
               "sentences": ArrayWriter(out / "sentences.bin", np.int64),
               "documents": ArrayWriter(out / "documents.bin", np.int64)}
    writers["sentences"].append([0])
    writers["documents"].append([0])
    tokens = sentences = unknown = 0
    docs = read_documents(list(inputs), fmt=cfg.format, text_field=cfg.text_field, stats=stats)
    bar = progress(desc="tokenizing", unit="docs")
    tasks = ((chunk,) for chunk in _chunks(docs, DOCS_PER_TASK))
    for ids, starts, lengths, per_doc in ordered_map(encode_documents, tasks, workers,
                                                     _init_worker, (str(tokenizer_dir),)):
        writers["tokens"].append(ids)
        writers["word_starts"].append(starts)
        writers["sentences"].append(tokens + np.cumsum(lengths))
        writers["documents"].append(sentences + np.cumsum(per_doc))
        tokens += len(ids)
        sentences += len(lengths)
        unknown += int((ids == tokenizer.unk_token_id).sum())
        bar.update(len(per_doc))
    bar.close()
    for w in writers.values():
        w.close()
    return {"tokens": tokens, "sentences": sentences, "unknown_tokens": unknown,
            "documents": writers["documents"].count - 1, "token_dtype": np.dtype(dtype).name}


# ---- pass 2: instances and static masks ----------------------------------------------------

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


# ---- the whole build -----------------------------------------------------------------------

def build(inputs: list[str | Path], tokenizer_dir: str | Path, out: str | Path,
          cfg: BuildConfig, workers: int = 1, force: bool = False) -> dict[str, Any]:
    """Build (or find in the cache) the data directory `out`; returns its manifest."""
    from litebert.tokenization import Tokenizer

    out, tokenizer_dir = Path(out), Path(tokenizer_dir)
    tokenizer = Tokenizer.from_pretrained(tokenizer_dir)
    key = cache_key(inputs, tokenizer.fingerprint, cfg)
    with exclusive(out.with_name(f".{out.name}.lock"), str(out)):  # one writer at a time
        with explained_build(out, expand_inputs(inputs, "corpus input")):
            return _build_locked(inputs, tokenizer, tokenizer_dir, out, cfg, workers, force,
                                 key)


def _build_locked(inputs: list[str | Path], tokenizer, tokenizer_dir: Path, out: Path,
                  cfg: BuildConfig, workers: int, force: bool, key: str) -> dict[str, Any]:
    """build(), holding the directory's lock: the cache check comes after the wait, so a
    process that waited for another's identical build finds it done."""

    manifest = read_manifest(out)
    if manifest and manifest.get("config_hash") == key and not force:
        damaged = damaged_files(out, manifest.get("files", {}), checksums=False)
        if not damaged:
            log.info("%s: cache hit (config hash %s), nothing to do", out, key)
            return manifest
        log.warning("%s: same config but damaged files (%s); rebuilding", out, "; ".join(damaged))
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)  # from here on the directory is incomplete
    remove_build_outputs(out)  # static masks when building dynamic ones, temporaries
    start = time.time()
    stats = CorpusStats()
    counts = tokenize_corpus(inputs, tokenizer, tokenizer_dir, out, cfg, workers, stats)
    splits = _build_splits(out, cfg, tokenizer, counts["token_dtype"], workers)
    tokenizer.save_pretrained(out / "tokenizer")
    files = record_files(out)  # reads every byte back: the checksums are of what is on disk
    manifest = {
        "format": FORMAT, "version": VERSION, "config_hash": key,
        "config": dataclasses.asdict(cfg), "counts": counts, "splits": splits,
        "tokenizer": {"fingerprint": tokenizer.fingerprint, "vocab_size": len(tokenizer),
                      "source": str(tokenizer_dir)},
        "inputs": [str(p) for p in inputs], "corpus": stats.to_dict(),
        "corpus_summary": stats.summary(),
        "seconds": round(time.time() - start, 2), "files": files,
    }
    atomic_write_json(out / MANIFEST, manifest)
    return manifest


def _build_splits(out: Path, cfg: BuildConfig, tokenizer, token_dtype: str,
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
