"""The cache key of a data directory: a hash of what defines its content, so that a build
whose directory already holds that content does nothing.

The key hashes the build config (fields added after format version 2 only when they differ
from the value older builds implied: LATER_FIELDS; renamed values under their first name:
KEY_NAMES), the tokenizer's fingerprint, the directory format and version, and each input
file's size and sha256, in input order. Paths
and modification times stay out: a corpus copied elsewhere gives the same key, one changed
byte another. Hashing a large corpus takes minutes, so a manifest records each input's
(path, size, mtime_ns, sha256) and the next check reuses the digest of every file whose
path, size and mtime are unchanged (`input_files`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from litebert.data.build_config import FORMAT, VERSION, BuildConfig
from litebert.files import expand_inputs, file_digest

# Fields added after format version 2, with the value every earlier build implied. At that
# value they stay out of the cache key, so that adding a field changes no existing key.
LATER_FIELDS = {"pairs": "static", "sop_single_sentence": "random", "packing": "pairs",
                "reuse_len": None}
# Values renamed since they entered the key, hashed under the name they had then: a directory
# built as packing "xlnet" is a cache hit for packing "streams", and any other key unchanged.
KEY_NAMES = {"packing": {"streams": "xlnet"}}


def input_files(inputs: Iterable[str | Path],
                known: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """{path, size, mtime_ns, sha256} of every file of `inputs` (a saved dataset's files
    one by one), in input order; the sha256 of `known` records (a manifest's "input_files")
    is reused when path, size and mtime match, else the file is read."""
    recorded = {(r["path"], r["size"], r["mtime_ns"]): r["sha256"] for r in known or []}
    records = []
    for f in expand_inputs(inputs, what="corpus input"):
        st, path = f.stat(), str(f.resolve())
        digest = recorded.get((path, st.st_size, st.st_mtime_ns)) or file_digest(f)["sha256"]
        records.append({"path": path, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                        "sha256": digest})
    return records


def content_key(files: list[dict[str, Any]], tokenizer_fingerprint: str,
                cfg: BuildConfig) -> str:
    """16 hex digits of the hash described in the module docstring."""
    h = hashlib.sha256()
    config = {name: KEY_NAMES.get(name, {}).get(value, value)
              for name, value in dataclasses.asdict(cfg).items()
              if name not in LATER_FIELDS or value != LATER_FIELDS[name]}
    h.update(json.dumps(config, sort_keys=True).encode())
    h.update(tokenizer_fingerprint.encode())
    for record in files:
        h.update(f"{record['size']}\0{record['sha256']}\n".encode())
    h.update(f"{FORMAT}-{VERSION}".encode())
    return h.hexdigest()[:16]


def cache_key(inputs: Iterable[str | Path], tokenizer_fingerprint: str, cfg: BuildConfig,
              known: list[dict[str, Any]] | None = None) -> str:
    """The cache key of building `inputs` with `cfg` and the tokenizer (see the module)."""
    return content_key(input_files(inputs, known), tokenizer_fingerprint, cfg)
