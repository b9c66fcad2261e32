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
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from litebert.data.arrays import ArrayWriter
from litebert.data.build_config import FORMAT, VERSION, BuildConfig
from litebert.data.integrity import MANIFEST, explained_build, record_files, remove_build_outputs
from litebert.data.pool import ordered_map
from litebert.data.splits import build_splits
from litebert.files import (
    atomic_write_json,
    damaged_files,
    exclusive,
    expand_inputs,
)
from litebert.progress import progress
from litebert.readers import CorpusStats, read_documents

if TYPE_CHECKING:
    from litebert.tokenization import Tokenizer

log = logging.getLogger("litebert")

DOCS_PER_TASK = 256  # documents per tokenizer task (pass 2's RNG blocks are as many)


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
    splits = build_splits(out, cfg, tokenizer, counts["token_dtype"], workers)
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
