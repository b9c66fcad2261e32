"""Is a data directory still what `data build` wrote? Sizes on every open, checksums on demand.

`build` records every data file's size and sha256 in the manifest, which it writes last
(`record_files`). Opening a directory (`open_manifest`: the dataset, `data inspect`, `data
stats`) compares sizes only: a stat per file, and it catches the usual damage, a copy or a
disk that cut a file short, before numpy turns it into a baffling shape error far from the
cause. `verify_data` reads every byte and compares checksums, for after a copy or when in
doubt (`litebert data verify DIR`). Between the two, readers verify each block of an array
as they first read it (litebert.data.blocks).

Manifests written before these records existed still open: their counts imply the sizes of
the arrays (not of the tokenizer files), which are checked instead, with a warning.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from litebert.data.packing import packing_name
from litebert.files import damaged_files, describe_files, is_temporary
from litebert.readers import detect_format
from litebert.write_errors import WriteFailed, explained_write, human_size

log = logging.getLogger("litebert")

MANIFEST = "manifest.json"


class DataError(ValueError):
    """A data directory that cannot be used; the message says why and what to do."""

_WARNED: set[Path] = set()  # directories already warned about (once per process is enough)


def record_files(directory: str | Path,
                 known: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """{name: {size, sha256}} of every data file of a finished build: the arrays (*.bin) and
    the files under tokenizer/; names are relative POSIX paths, as stored in the manifest.
    Files whose records are `known` (made as they were read for another purpose) are not
    read again."""
    directory = Path(directory)
    known = known or {}
    names = array_names(directory)
    names += [p.relative_to(directory).as_posix() for p in (directory / "tokenizer").rglob("*")
              if p.is_file() and not is_temporary(p)]
    records = {**describe_files(directory, [n for n in names if n not in known]),
               **{n: known[n] for n in names if n in known}}
    return dict(sorted(records.items()))


def array_names(directory: Path) -> list[str]:
    """The names of the arrays (*.bin) of a finished build, temporaries left out."""
    return sorted(p.name for p in directory.glob("*.bin") if p.is_file() and not is_temporary(p))


def remove_build_outputs(out: Path) -> None:
    """The arrays (*.bin) and temporaries a build of `out` writes: what an earlier (maybe
    killed) build left before a new one starts, or what a failed build wrote."""
    for path in out.iterdir():
        if path.is_file() and (path.name.endswith(".bin") or is_temporary(path)):
            path.unlink()


@contextlib.contextmanager
def explained_build(out: Path, inputs: Iterable[Path]) -> Iterator[None]:
    """Building `out`: a failed write (a full disk) is a WriteFailed naming the file, and the
    arrays written so far are removed (the directory has no manifest yet, so they are no use,
    and they hold the space). The space needed is a rough guess: arrays of token ids take
    about as many bytes as the text they come from."""
    sizes = [Path(p).stat().st_size for p in inputs]  # bytes of each (maybe compressed) input
    needed = f"about its inputs' {human_size(sum(sizes))} or more"
    after = ("the arrays written so far were removed and it has no manifest, so nothing uses "
             "it: free some space, then run `litebert data build` again")
    try:
        with explained_write(out, "the data directory", needed=needed, after=after):
            yield
    except WriteFailed:
        with contextlib.suppress(OSError):
            remove_build_outputs(out)
        raise


def load_manifest(directory: Path) -> dict[str, Any]:
    """The manifest as JSON; DataError when there is none (nothing built, or a build that
    was interrupted, or a file named where a directory belongs) or when it is not valid
    JSON."""
    if directory.is_file():
        raise _not_a_directory(directory)
    path = directory / MANIFEST
    if not path.is_file():
        leftovers = [p for p in directory.iterdir() if is_temporary(p)] \
            if directory.is_dir() else []
        why = "an interrupted build (temporary files left)" if leftovers else "no data here"
        raise DataError(f"{directory}: no {MANIFEST} ({why}); run `litebert data build` "
                        f"with --out {directory}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a valid manifest ({err}); {_rebuild(directory)}") from None
    return with_current_names(manifest)


def _not_a_directory(path: Path) -> DataError:
    """A file named as a data directory: most often the corpus itself, so the fix is the
    build that turns it into one (never `--out` the file, which would build onto it)."""
    try:
        what = f"a corpus file (format {detect_format(path)})"
    except (ValueError, OSError):  # not text, or damaged: no reader takes it
        what = "a file"
    return DataError(f"{path}: {what}, not a data directory; build one from it with "
                     f"`litebert data build {path} --tokenizer TOKENIZER_DIR --out DATA_DIR` "
                     "and name DATA_DIR instead")


def with_current_names(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest with its config's earlier names read as today's (a previous release's
    packing "xlnet" is "streams"), so that no reader has to know the old spelling. The file
    is not rewritten: its cache key stays the one it was built with."""
    config = manifest.get("config")
    if isinstance(config, dict) and "packing" in config:
        config["packing"] = packing_name(config["packing"])
    return manifest


def content_digest(manifest: dict[str, Any]) -> str:
    """What a data directory holds, as 16 hex digits: a hash of its files' recorded sizes and
    checksums (and of its build config for manifests without them). Paths and times do not
    enter: a copied or moved directory has the same digest."""
    content = manifest.get("files") or {"config": manifest.get("config"),
                                        "counts": manifest.get("counts")}
    text = json.dumps(content, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def open_manifest(directory: str | Path) -> dict[str, Any]:
    """The manifest of a data directory whose files all have the sizes it records.

    DataError naming every missing or resized file otherwise. An older manifest (no file
    records) is checked against the sizes its counts imply, with a warning.
    """
    directory = Path(directory)
    manifest = load_manifest(directory)
    recorded = manifest.get("files")
    if recorded is None:
        if directory not in _WARNED:
            _WARNED.add(directory)
            log.warning("%s: %s records no file sizes or checksums (built by an older "
                        "litebert), so only the array sizes its counts imply can be checked; "
                        "%s to record them", directory, MANIFEST, _rebuild(directory))
        recorded = sizes_from_counts(manifest)
    problems = damaged_files(directory, recorded, checksums=False)
    if problems:
        raise _damaged(directory, problems)
    return manifest


def verify_data(directory: str | Path) -> dict[str, Any]:
    """Read every byte of a data directory and compare it with the manifest's records.

    Returns {"directory": str, "files": count, "bytes": total size, "ok": True}. Raises
    DataError when there is no (valid) manifest, when it records no checksums (built by an
    older litebert), or when a file is missing, of another size or of other content; the
    message names each such file and says how to rebuild.
    """
    directory = Path(directory)
    manifest = load_manifest(directory)
    recorded = manifest.get("files")
    if not recorded:
        raise DataError(f"{directory}: {MANIFEST} records no checksums (built by an older "
                        f"litebert), so the data cannot be verified; {_rebuild(directory)} "
                        "to record them")
    problems = damaged_files(directory, recorded, checksums=True)
    if problems:
        raise _damaged(directory, problems)
    return {"directory": str(directory), "files": len(recorded),
            "bytes": sum(int(r["size"]) for r in recorded.values()), "ok": True}


def sizes_from_counts(manifest: dict[str, Any]) -> dict[str, dict[str, int]]:
    """{name: {"size": bytes}} of the arrays, from the counts of a manifest (see the layout
    in litebert.data.builder): what an older manifest can still vouch for. Not word_starts.bin,
    which such directories hold but nothing reads any more (litebert.data.word_starts)."""
    counts, splits = manifest["counts"], manifest["splits"]
    n = counts["tokens"]
    sizes = {"tokens.bin": n * np.dtype(counts["token_dtype"]).itemsize,  # (N,) uint16/32
             "sentences.bin": 8 * (counts["sentences"] + 1),  # (S + 1,) int64
             "documents.bin": 8 * (counts["documents"] + 1)}  # (D + 1,) int64
    for split, entry in splits.items():
        sizes[f"{split}.instances.bin"] = 40 * entry["instances"]  # (I, 5) int64
        if "masked_tokens" in entry:  # static masking
            sizes[f"{split}.masks.bin"] = 8 * entry["masked_tokens"]  # (M, 2) int32
            sizes[f"{split}.mask_index.bin"] = 8 * (entry["instances"] + 1)  # (I + 1,) int64
    return {name: {"size": size} for name, size in sizes.items()}


def _damaged(directory: Path, problems: list[str]) -> DataError:
    listed = "\n  ".join(problems)
    fix = _rebuild(directory)
    return DataError(f"{directory}: damaged data directory ({len(problems)} file(s) differ "
                     f"from {MANIFEST}):\n  {listed}\n{fix[0].upper()}{fix[1:]}")


def _rebuild(directory: Path) -> str:
    return (f"rebuild it with `litebert data build ... --out {directory} --force` (the same "
            f"inputs and options; {MANIFEST} lists them under \"inputs\" and \"config\")")
