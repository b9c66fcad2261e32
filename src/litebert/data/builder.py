"""`litebert data build`: corpus -> memory-mapped token arrays + instance index + manifest.

Layout of a data directory (all arrays raw little-endian, read with np.memmap):

    tokens.bin          (N,) uint16 (uint32 for vocabularies over 65,535): every sentence's ids
    token_counts.bin    (V,) int64: how often each id occurs in tokens.bin
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
    {split}.stream_flags.bin  (N_s,) uint8: word and sentence starts   (packing streams only,
                            see litebert.data.streams)
    {split}.masks.bin       (M, 2) int32: position, replacement id   (static masking only)
    {split}.mask_index.bin  (I + 1,) int64: first mask row of each instance   (static only)
    block_checksums.bin (B,) uint32: the crc32 of every 64 KiB block of the arrays above,
                        which readers verify as they first read each block
                        (litebert.data.blocks)
    tokenizer/          a copy of the tokenizer, so the directory is self-contained (its
                        word_start_ids give the word starts of tokens.bin with sentences.bin,
                        litebert.data.word_starts; version 2 stored them in word_starts.bin)
    manifest.json       written last: config, its cache key (litebert.data.cache), counts
                        (with the training split's commonest token), corpus report, the
                        inputs' sizes and sha256, the size and sha256 of every file
                        above (checked by litebert.data.integrity), and where each array's
                        block checksums begin

Two passes keep memory flat: pass 1 (litebert.data.pass1) cuts the corpus into parts fixed
by the inputs alone (litebert.data.parts); `workers` processes each read, parse, split and
tokenize a part into temporary arrays, which the parent appends in corpus order (at most 2
parts per worker in flight). `--shard I/N` runs pass 1 on the I-th of N contiguous,
byte-balanced runs of parts (litebert.data.shard_plan), and `data merge`
(litebert.data.merge) joins the shards and runs pass 2. Pass 2 builds instances (static
pairs), chunks (dynamic pairs: the pairs are drawn when an item is read, see
litebert.data.instances) or packed instances (litebert.data.packing) from sentence lengths
alone, or copies each split's tokens into one stream (packing streams,
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

import contextlib
import dataclasses
import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from litebert.data.arrays import memmap
from litebert.data.blocks import record_blocks
from litebert.data.build_config import FORMAT, VERSION, BuildConfig
from litebert.data.cache import LATER_FIELDS, cache_key, content_key, input_files
from litebert.data.integrity import (
    MANIFEST,
    array_names,
    explained_build,
    record_files,
    remove_build_outputs,
    with_current_names,
)
from litebert.data.parts import Part, part_record, plan_parts
from litebert.data.pass1 import TOKEN_COUNTS, commonest_training_token, tokenize_parts
from litebert.data.shard_plan import plan_shards
from litebert.data.splits import build_splits
from litebert.files import atomic_write_json, damaged_files, exclusive, expand_inputs
from litebert.readers import CorpusStats, empty_corpus
from litebert.tokenization import Tokenizer
from litebert.tokenization.added_tokens import extend_tokenizer, read_word_list

log = logging.getLogger("litebert")

__all__ = ["FORMAT", "LATER_FIELDS", "SHARD_FORMAT", "VERSION", "BuildConfig", "build",
           "cache_key", "finish_build", "read_manifest"]

SHARD_FORMAT = "litebert-pretraining-shard"  # a --shard build: pass 1 of part of the corpus


def read_manifest(directory: str | Path, fmt: str = FORMAT) -> dict[str, Any] | None:
    """The manifest of `directory` when it is one of format `fmt`, else None."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        return None
    manifest = json.loads(path.read_text())
    return with_current_names(manifest) if manifest.get("format") == fmt else None


# ---- the whole build -----------------------------------------------------------------------

def build(inputs: list[str | Path], tokenizer_dir: str | Path, out: str | Path,
          cfg: BuildConfig, workers: int = 1, force: bool = False,
          shard: tuple[int, int] | None = None,
          add_tokens: str | Path | None = None) -> dict[str, Any]:
    """Build (or find in the cache) the data directory `out`; returns its manifest. With
    `shard` (I, N): pass 1 of the I-th of N runs of the corpus's parts only, into a shard
    directory for `litebert data merge`. With `add_tokens` (a word list, one a line): the
    tokenizer gets these words as whole tokens first (litebert.tokenization.added_tokens);
    the data directory's tokenizer/ is the extended one."""
    out, tokenizer_dir = Path(out), Path(tokenizer_dir)
    tokenizer = Tokenizer.from_pretrained(tokenizer_dir)
    with contextlib.ExitStack() as stack:
        source = str(tokenizer_dir)
        if add_tokens is not None:  # workers read the extended tokenizer from a scratch folder
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tokenizer-")))
            tokenizer, tokenizer_dir = _with_added_words(tokenizer, Path(add_tokens), scratch)
            source += f" + {add_tokens}"
        with exclusive(out.with_name(f".{out.name}.lock"), str(out)):  # one writer at a time
            with explained_build(out, expand_inputs(inputs, "corpus input")):
                manifest = _build_locked(inputs, tokenizer, tokenizer_dir, out, cfg, workers,
                                         force, shard, source)
    return manifest


def _with_added_words(tokenizer: Tokenizer, word_list: Path, scratch: Path
                      ) -> tuple[Tokenizer, Path]:
    """The tokenizer extended with the words of `word_list`, written into `scratch`."""
    words = read_word_list(word_list)
    extended, skipped = extend_tokenizer(tokenizer, words, scratch)
    if skipped:
        log.warning("%s: %d word(s) already in the vocabulary as one token, skipped: %s",
                    word_list, len(skipped), ", ".join(skipped[:20]))
    log.info("%s: %d word(s) added as tokens %d..%d", word_list, len(extended) - len(tokenizer),
             len(tokenizer), len(extended) - 1)
    return extended, scratch


def _cached(out: Path, manifest: dict[str, Any] | None, key: str,
            shard: tuple[int, int] | None) -> bool:
    if not manifest or manifest.get("config_hash") != key:
        return False
    if shard is not None and manifest.get("shard") != list(shard):
        return False
    damaged = damaged_files(out, manifest.get("files", {}), checksums=False)
    if damaged:
        log.warning("%s: same config but damaged files (%s); rebuilding", out,
                    "; ".join(damaged))
        return False
    log.info("%s: cache hit (config hash %s), nothing to do", out, key)
    return True


def _build_locked(inputs: list[str | Path], tokenizer, tokenizer_dir: Path, out: Path,
                  cfg: BuildConfig, workers: int, force: bool,
                  shard: tuple[int, int] | None, source: str) -> dict[str, Any]:
    """build(), holding the directory's lock: the cache check comes after the wait, so a
    process that waited for another's identical build finds it done."""
    manifest = read_manifest(out, FORMAT if shard is None else SHARD_FORMAT)
    files = input_files(inputs, (manifest or {}).get("input_files"))
    key = content_key(files, tokenizer.fingerprint, cfg)
    if not force and _cached(out, manifest, key, shard):
        assert manifest is not None
        return manifest
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)  # from here on the directory is incomplete
    remove_build_outputs(out)  # static masks when building dynamic ones, temporaries
    start = time.time()
    chosen = (plan_parts(inputs, cfg.format, cfg.text_field) if shard is None
              else _shard_of(inputs, cfg, shard))
    records: list[dict[str, Any]] = []
    counts, folder = tokenize_parts(chosen, tokenizer, tokenizer_dir, out, cfg, workers,
                                    records)
    header = {"config_hash": key, "config": dataclasses.asdict(cfg),
              "tokenizer": {"fingerprint": tokenizer.fingerprint, "vocab_size": len(tokenizer),
                            "source": source},
              "inputs": [str(p) for p in inputs], "input_files": files}
    if shard is not None:
        return _write_shard(out, tokenizer, header, counts, folder.stats, chosen, records,
                            shard, start)
    if not counts["documents"]:
        raise empty_corpus(folder.stats, inputs)
    return finish_build(out, cfg, tokenizer, header, counts, folder.stats, workers, start)


def _shard_of(inputs: list[str | Path], cfg: BuildConfig, shard: tuple[int, int]) -> list[Part]:
    """The parts of shard I of N (litebert.data.shard_plan), with a warning when it has
    none: its directory will hold nothing, which `data merge` accepts."""
    index, count = shard
    chosen = plan_shards(inputs, cfg.format, cfg.text_field, count)[index]
    if not chosen:
        log.warning("shard %d/%d gets no part of the corpus: it has fewer than %d pieces to "
                    "share (documents, or files read whole: compressed, paragraphs, Arrow), "
                    "so this shard will be empty; build with fewer shards", index, count,
                    count)
    return chosen


def finish_build(out: Path, cfg: BuildConfig, tokenizer, header: dict[str, Any],
                 counts: dict[str, Any], stats: CorpusStats, workers: int,
                 start: float) -> dict[str, Any]:
    """After pass 1 (one build's, or the merged shards'): the commonest training token,
    pass 2, the tokenizer's copy and the manifest."""
    histogram = np.array(memmap(out / TOKEN_COUNTS, np.int64))  # (V,): small
    counts["commonest_training_token"] = commonest_training_token(
        out, histogram, cfg, counts["token_dtype"], np.asarray(tokenizer.special_mask))
    splits = build_splits(out, cfg, tokenizer, counts["token_dtype"], workers)
    tokenizer.save_pretrained(out / "tokenizer")
    # Every byte read back once: the checksums are of what is on disk.
    blocks, digests = record_blocks(out, array_names(out))
    files = record_files(out, digests)
    manifest = {"format": FORMAT, "version": VERSION, **header, "counts": counts,
                "splits": splits, "corpus": stats.to_dict(),
                "corpus_summary": stats.summary(),
                "seconds": round(time.time() - start, 2), "files": files, "blocks": blocks}
    atomic_write_json(out / MANIFEST, manifest)
    return manifest


def _write_shard(out: Path, tokenizer, header: dict[str, Any], counts: dict[str, Any],
                 stats: CorpusStats, parts: list[Part], records: list[dict[str, Any]],
                 shard: tuple[int, int], start: float) -> dict[str, Any]:
    """A shard's manifest: what `data merge` checks and adds up. "parts" keeps each part's
    own report, so the merged report equals a single build's; "corpus" is this shard's
    alone (its line numbers count from the shard's first part of each file)."""
    tokenizer.save_pretrained(out / "tokenizer")
    manifest = {"format": SHARD_FORMAT, "version": VERSION, "shard": list(shard), **header,
                "counts": counts, "corpus": stats.to_dict(),
                "parts": [{**part_record(p), **r} for p, r in zip(parts, records, strict=True)],
                "seconds": round(time.time() - start, 2), "files": record_files(out)}
    atomic_write_json(out / MANIFEST, manifest)
    return manifest
