"""A built data directory, read once per command: `open_data` reads and checks its manifest
(litebert.data.integrity.open_manifest: every file the size it records) into a DataManifest,
which everything that needs the manifest takes (the datasets, the held-out documents, a
blend's agreement, a checkpoint's data digest, whether items are pairs).

`as_data` lets a function take either: a DataManifest already read, or a directory it opens
itself (what a test or a one-off caller has).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litebert.data.build_config import BuildConfig
from litebert.data.integrity import MANIFEST, DataError, content_digest, open_manifest


@dataclass(frozen=True)
class DataManifest:
    """A data directory's manifest as read: the directory, the manifest's JSON (counts,
    splits, files, blocks, tokenizer), its build config and its content digest."""

    directory: Path
    content: dict[str, Any]  # manifest.json, earlier names read as today's
    config: BuildConfig
    digest: str  # integrity.content_digest: what a checkpoint records of the data

    @property
    def has_pairs(self) -> bool:
        """Whether the items are segment pairs (B gets the template's second token type):
        every objective but 'none' (packed layouts exist only with 'none')."""
        return self.config.objective != "none"

    @property
    def counts(self) -> dict[str, Any]:
        return self.content["counts"]


def open_data(directory: str | Path) -> DataManifest:
    """The manifest of `directory`, read once and checked (DataError naming the file and the
    fix: no manifest, not JSON, a file cut short, a config this release cannot read)."""
    directory = Path(directory)
    content = open_manifest(directory)
    try:
        config = BuildConfig(**content["config"])
    except (KeyError, TypeError, ValueError) as err:
        raise DataError(f"{directory / MANIFEST}: its build config cannot be read ({err}); "
                        f"rebuild it with `litebert data build --out {directory}`") from None
    return DataManifest(directory, content, config, content_digest(content))


def as_data(data: DataManifest | str | Path) -> DataManifest:
    """`data` itself when it was read already, else its directory opened (open_data)."""
    return data if isinstance(data, DataManifest) else open_data(data)
