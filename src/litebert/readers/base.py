"""What every corpus reader shares: the document it yields, the report it fills, its errors,
the registry entry (`Format`) that says how a format is recognised and read, and the `Table`
that a columnar format opens (see `litebert.readers.columns`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

from litebert.input_report import NOTED, REPAIRED, SKIPPED, InputReport, Kind

if TYPE_CHECKING:
    import pyarrow as pa

MAX_DOCUMENT_SENTENCES = 10_000
MAX_EXAMPLES = 10  # per kind of repair/skip, in CorpusStats


class CorpusError(ValueError):
    """Input that cannot be read as a corpus; the message names the file and the fix."""


class EmptyCorpusError(CorpusError):
    """Reading finished without a single document."""


@dataclass
class Document:
    sentences: list[str]
    source: str  # "file:line" of the document's first line ("file:row" in a table)
    label: str | None = None


@dataclass
class CorpusStats(InputReport):
    """What reading saw: the corpus totals, and every repair or skip by kind with its first
    examples (the counting and reporting are `InputReport`'s; `read` counts documents)."""

    KINDS: ClassVar[dict[str, Kind]] = {
        "one_sentence_documents": Kind(NOTED, "one-sentence documents (kept: a later stage "
                                              "decides)"),
        "empty_documents": Kind(SKIPPED, "empty documents"),
        "bad_json_lines": Kind(SKIPPED, "malformed JSON lines"),
        "missing_text": Kind(SKIPPED, "records without the text field"),
        "unreadable_files": Kind(SKIPPED, "unreadable files (from the error on)"),
        "invalid_utf8_lines": Kind(REPAIRED, "lines of invalid UTF-8 (bad bytes -> U+FFFD)"),
        "long_lines_split": Kind(REPAIRED, "over-long lines/paragraphs (cut at whitespace)"),
        "documents_cut": Kind(REPAIRED, f"documents over {MAX_DOCUMENT_SENTENCES:,} sentences "
                                        "(cut)"),
        "missing_label": Kind(NOTED, "documents without the label field (label None)"),
    }
    unit: ClassVar[str] = "documents"
    max_examples: ClassVar[int] = MAX_EXAMPLES

    files: int = 0  # a dataset folder counts as one
    sentences: int = 0
    characters: int = 0  # of the sentences kept
    bytes: int = 0  # read from the files, after decompression
    formats: dict[str, int] = field(default_factory=dict)  # files read per format

    @property
    def documents(self) -> int:
        return self.read

    @documents.setter
    def documents(self, value: int) -> None:
        self.read = value

    def headline(self) -> str:
        formats = ", ".join(f"{f} {n}" for f, n in sorted(self.formats.items()))
        return (f"{self.files:,} file{'s' * (self.files != 1)} ({formats or 'none'}), "
                f"{self.bytes / 1e6:,.1f} MB read: {self.documents:,} documents, "
                f"{self.sentences:,} sentences, {self.characters:,} characters")

    def to_dict(self) -> dict:
        return {**super().to_dict(), "documents": self.documents}


def cut_document(sentences: list[str], source: str, stats: CorpusStats,
                 label: str | None = None) -> Document:
    """The first MAX_DOCUMENT_SENTENCES of `sentences` as a document, the cut counted."""
    stats.note("documents_cut", source, f"over {MAX_DOCUMENT_SENTENCES:,} sentences")
    return Document(sentences[:MAX_DOCUMENT_SENTENCES], source, label)


def split_document(sentences: list[str], source: str, stats: CorpusStats,
                   label: str | None = None) -> Iterator[Document]:
    """A record's sentences as documents of at most MAX_DOCUMENT_SENTENCES each."""
    while len(sentences) > MAX_DOCUMENT_SENTENCES:
        yield cut_document(sentences, source, stats, label)
        sentences = sentences[MAX_DOCUMENT_SENTENCES:]
    yield Document(sentences, source, label)


class Table(Protocol):
    path: Path
    files: list[Path]  # the data files, in reading order
    schema: pa.Schema

    def batches(self, columns: list[str]) -> Iterator[tuple[Path, pa.RecordBatch]]:
        """(data file, batch of `columns`) in order; a batch never spans two files."""
        ...


class GroupedTable(Table, Protocol):
    """A table that a `data build` reads by parts of row groups (Parquet)."""

    def groups(self, columns: list[str], span: tuple[int, int]
               ) -> Iterator[tuple[Path, pa.RecordBatch]]:
        """The batches of the row groups [first, stop) of `span`."""
        ...

    def rows_before(self, group: int) -> int:
        """Rows in the row groups before `group`."""
        ...


class ReadFn(Protocol):
    """A format's reader. Every reader gets the record fields; the text formats ignore them.
    `span`: read one part of the file (litebert.data.parts): byte offsets of an uncompressed
    text or JSON-lines file, row groups of a Parquet file, or (0, -1) the whole file; with
    a span, a file-level note that the file held no text is left to the caller."""

    def __call__(self, path: Path, stats: CorpusStats, max_chars: int, *, text_field: str,
                 label_field: str | None,
                 span: tuple[int, int] | None = None) -> Iterator[Document]: ...


@dataclass(frozen=True)
class Format:
    """One registry entry (`litebert.readers.READERS`): how `auto` recognises the format and
    how it is read. Recognition goes folder, then first bytes, then name (see read_documents).

    `lines`: the format is lines of text, which tokenizer training takes as they are (the
    others give it their documents' sentences). `binary`: the format is not text, so its
    files skip the check that refuses binary data. `table`: opens a file or folder as
    columns, for the fine-tuning tables (see `litebert.readers.columns`).
    """

    name: str
    read: ReadFn
    what: str  # for messages: "Parquet files (.parquet)"
    suffixes: tuple[str, ...] = ()  # lower case, after .gz/.bz2/.xz is stripped
    magic: Callable[[bytes], bool] | None = None  # the first bytes, after decompression
    folder: Callable[[Path], bool] | None = None  # a folder that is one input
    lines: bool = False
    binary: bool = False
    table: Callable[[Path], Table] | None = None
