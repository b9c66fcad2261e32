"""`litebert data merge`: the shard directories of `litebert data build --shard I/N` -> one
data directory, equal to what a single `data build` of the same corpus writes.

The shards must form one complete set: one format version, config, tokenizer and inputs
(sizes and sha256), every I of the same N exactly once; anything else is a DataError naming
the directory and what differs. Their arrays are appended in shard order with offsets
shifted (streamed: memory stays flat), their token histograms summed, and the corpus report
rebuilt from every part's own report (litebert.data.parts.StatsFolder), so it reads as one
sequential pass would have written it. Then pass 2 runs on the whole, as in a single build.
The manifest equals a single build's except "seconds" (the merge's own time).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from litebert.data.arrays import memmap
from litebert.data.build_config import BuildConfig
from litebert.data.builder import SHARD_FORMAT, finish_build, read_manifest
from litebert.data.integrity import MANIFEST, DataError, explained_build, remove_build_outputs
from litebert.data.parts import Part, StatsFolder
from litebert.data.pass1 import ARRAYS, TOKEN_COUNTS, ArraysWriter, write_histogram
from litebert.files import damaged_files, exclusive
from litebert.readers import empty_corpus
from litebert.tokenization import Tokenizer

HEADER = ("config_hash", "config", "tokenizer", "inputs", "input_files")
_PART_FIELDS = tuple(f.name for f in dataclasses.fields(Part))


def shard_directories(paths: list[str | Path]) -> list[Path]:
    """The directories named, or for a directory without a manifest, its subdirectories
    that have one (`data merge shards/` with shards/0, shards/1, ...)."""
    found: list[Path] = []
    for path in map(Path, paths):
        if not path.is_dir():
            raise DataError(f"{path}: no such shard directory; name the --out directories of "
                            "`litebert data build --shard I/N`, or the folder holding them")
        if (path / MANIFEST).is_file():
            found.append(path)
        else:
            found += sorted(d for d in path.iterdir() if (d / MANIFEST).is_file())
    if not found:
        raise DataError(f"no shard directories in {', '.join(map(str, paths))}: build them "
                        "with `litebert data build ... --shard I/N --out DIR`")
    return found


def load_shards(directories: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """(directory, manifest) of every shard, in shard order, checked to be one complete set
    (see the module docstring)."""
    shards = []
    for d in directories:
        manifest = read_manifest(d, SHARD_FORMAT)
        if manifest is None:
            raise DataError(f"{d}: not a shard directory (no {MANIFEST} of format "
                            f"{SHARD_FORMAT!r}); build it with `litebert data build ... "
                            "--shard I/N`")
        problems = damaged_files(d, manifest.get("files", {}), checksums=False)
        if problems:
            raise DataError(f"{d}: damaged shard ({'; '.join(problems)}); build it again")
        shards.append((d, manifest))
    _check_same(shards)
    _check_complete(shards)
    return sorted(shards, key=lambda s: s[1]["shard"][0])


def _identity(manifest: dict[str, Any]) -> dict[str, Any]:
    """What every shard of one set shares, by field (inputs by content, not by path)."""
    return {"format version": manifest.get("version"), "config": manifest.get("config"),
            "tokenizer": manifest.get("tokenizer", {}).get("fingerprint"),
            "inputs": [(r["size"], r["sha256"]) for r in manifest.get("input_files", [])],
            "shard count N": manifest["shard"][1]}


def _check_same(shards: list[tuple[Path, dict[str, Any]]]) -> None:
    first_dir, first = shards[0][0], _identity(shards[0][1])
    for d, manifest in shards[1:]:
        mine = _identity(manifest)
        for field, value in mine.items():
            if value != first[field]:
                raise DataError(f"{d}: its {field} differs from {first_dir}'s, so they are not "
                                "shards of one build; build every shard with the same inputs, "
                                "tokenizer and options")


def _check_complete(shards: list[tuple[Path, dict[str, Any]]]) -> None:
    n = shards[0][1]["shard"][1]
    seen = Counter(m["shard"][0] for _, m in shards)
    twice = sorted(i for i, count in seen.items() if count > 1)
    if twice:
        dirs = [str(d) for d, m in shards if m["shard"][0] in twice]
        raise DataError(f"shard {twice[0]}/{n} is given more than once ({', '.join(dirs)}); "
                        "name each shard directory once")
    missing = [i for i in range(n) if i not in seen]
    if missing:
        raise DataError(f"shard(s) {', '.join(map(str, missing))} of {n} missing from "
                        f"{', '.join(str(d) for d, _ in shards)}; build them with `litebert "
                        f"data build ... --shard I/{n}` and merge again")


def merge(paths: list[str | Path], out: str | Path, workers: int = 1,
          force: bool = False) -> dict[str, Any]:
    """Merge the shards in `paths` into the data directory `out`; returns its manifest (a
    cache hit when `out` already holds this build)."""
    out = Path(out)
    shards = load_shards(shard_directories(paths))
    first_dir, first = shards[0]
    tokenizer = Tokenizer.from_pretrained(first_dir / "tokenizer")
    with exclusive(out.with_name(f".{out.name}.lock"), str(out)):
        existing = read_manifest(out)
        if (not force and existing and existing.get("config_hash") == first["config_hash"]
                and not damaged_files(out, existing.get("files", {}), checksums=False)):
            return existing
        with explained_build(out, [d / "tokens.bin" for d, _ in shards]):
            return _merge_locked(shards, tokenizer, out, workers)


def _merge_locked(shards: list[tuple[Path, dict[str, Any]]], tokenizer, out: Path,
                  workers: int) -> dict[str, Any]:
    start = time.time()
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)  # from here on the directory is incomplete
    remove_build_outputs(out)
    first = shards[0][1]
    dtype = np.dtype(first["counts"]["token_dtype"])
    arrays = ArraysWriter({name: out / f"{name}.bin" for name in ARRAYS}, dtype, len(tokenizer))
    folder = StatsFolder()
    for d, manifest in shards:
        arrays.append({name: d / f"{name}.bin" for name in ARRAYS}, manifest["counts"])
        arrays.histogram += memmap(d / TOKEN_COUNTS, np.int64)
        for record in manifest["parts"]:
            part = Part(**{name: record[name] for name in _PART_FIELDS})
            folder.add(part, record["stats"], record["lines"])
    counts = arrays.close()
    write_histogram(out, arrays.histogram)
    if not counts["documents"]:
        raise empty_corpus(folder.stats, first["inputs"])
    header = {name: first[name] for name in HEADER}
    cfg = BuildConfig(**first["config"])
    return finish_build(out, cfg, tokenizer, header, counts, folder.stats, workers, start)
