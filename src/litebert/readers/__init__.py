"""Corpus readers: files -> a stream of documents (lists of sentences), one module per format
and one registry entry each (`READERS`; a new format is a module with a `Format` and a line
here). Every command that reads a corpus reads it here: `litebert data build`, `litebert
tokenizer train` and, for the columnar formats, the fine-tuning tables.

- text.py: "bert" (a sentence a line, blank lines between documents) and "paragraphs"
- jsonl.py: JSON lines, `text_field` (and `label_field`) of each object
- parquet.py: Parquet files; arrow.py: the folders of `datasets.Dataset.save_to_disk` and
  Arrow files; both read `text_field` (and `label_field`) a record batch at a time

`fmt="auto"` decides per input: a folder by what it holds (a saved dataset), a file by its
first bytes (Parquet's PAR1, Arrow's ARROW1 or stream marker), then by its name (*.parquet,
*.arrow, *.jsonl / *.json / *.ndjson, before any .gz/.bz2/.xz), else it is text and
`text.sniff` picks bert or paragraphs. A file of binary data (NUL bytes, or mostly invalid
UTF-8, in its first block after decompression) that no reader reads is a CorpusError naming
it and the formats litebert reads: it is never read as text, whatever `fmt` says.

Inputs are files, directories and glob patterns (`expand`, litebert.files.expand_inputs; a
saved dataset's folder is one input). Memory does not grow with the corpus: text is read line
by line in bounded pieces, tables a record batch at a time, and a document longer than
MAX_DOCUMENT_SENTENCES is cut. Bad input is repaired or skipped, never fatal, and counted in
`CorpusStats` (with the first examples as file:line) so that a long job reports what it lost.

Every reader also reads one *part* of a file (its `span` argument: byte ranges of text and
JSON lines, row groups of Parquet): `litebert data build`'s workers each read their own
parts (litebert.data.parts), and the parts' documents and reports add up to this module's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from litebert.files import expand_inputs, open_text, strip_compression
from litebert.readers.arrow import ARROW
from litebert.readers.base import (
    MAX_DOCUMENT_SENTENCES,
    CorpusError,
    CorpusStats,
    Document,
    EmptyCorpusError,
    Format,
    Table,
)
from litebert.readers.jsonl import JSONL
from litebert.readers.lines import head, not_text
from litebert.readers.parquet import PARQUET
from litebert.readers.sentences import split_sentences, text_to_sentences
from litebert.readers.text import BERT, PARAGRAPHS, sniff

READERS: dict[str, Format] = {f.name: f for f in (BERT, PARAGRAPHS, JSONL, PARQUET, ARROW)}
FORMATS = ("auto", *READERS)

__all__ = ["FORMATS", "MAX_DOCUMENT_SENTENCES", "READERS", "CorpusError", "CorpusStats",
           "Document", "EmptyCorpusError", "Format", "Table", "count_document", "detect_format",
           "empty_corpus", "expand", "is_folder_input",
           "open_table", "read_documents", "split_sentences", "text_to_sentences",
           "training_lines"]


def expand(inputs: str | Path | Iterable[str | Path], what: str = "corpus input") -> list[Path]:
    """The files (and saved-dataset folders) that `inputs` name, in a deterministic order."""
    return expand_inputs(inputs, what, unit=is_folder_input)


def is_folder_input(path: Path) -> bool:
    return any(f.folder is not None and f.folder(path) for f in READERS.values())


def readable_formats() -> str:
    return "; ".join(f.what for f in READERS.values())


def detect_format(path: Path, fmt: str = "auto", max_line_chars: int = 100_000) -> str:
    """The format `path` is read as (the rule is in the module docstring); with `fmt` given,
    checks that the file can be read so (a Parquet file is never read as text)."""
    path = Path(path)
    if path.is_dir():
        return _folder_format(path, fmt)
    block = head(path)
    found = next((f.name for f in READERS.values() if f.magic and f.magic(block)), None)
    if found and fmt not in ("auto", found):
        raise CorpusError(f"{path}: this is one of the {READERS[found].what}, not {fmt}; read "
                          f"it with format {found} (or auto)")
    kind = fmt if fmt != "auto" else _recognised(path, block)
    if (kind is None or not READERS[kind].binary) and (why := not_text(block)):
        raise CorpusError(f"{path}: not text ({why}) and in no format litebert reads; it "
                          f"reads {readable_formats()}; convert the file to one of them")
    return kind or sniff(path, max_line_chars)


def _folder_format(path: Path, fmt: str) -> str:
    found = next((f.name for f in READERS.values() if f.folder and f.folder(path)), None)
    if found is None:
        raise CorpusError(f"{path}: a folder that no reader reads as one input; it reads "
                          f"{readable_formats()}")
    if fmt not in ("auto", found):
        raise CorpusError(f"{path}: a folder of {READERS[found].what}, not {fmt}; read it "
                          f"with format {found} (or auto)")
    return found


def open_table(path: str | Path) -> Table | None:
    """`path` opened as columns when it is a columnar input (a Parquet or Arrow file by its
    first bytes or name, a saved dataset's folder), else None: for the fine-tuning tables."""
    path = Path(path)
    if path.is_dir():
        kind = _folder_format(path, "auto") if is_folder_input(path) else None
    else:
        kind = _recognised(path, head(path)) if path.is_file() else None
    table = READERS[kind].table if kind is not None else None
    return table(path) if table is not None else None


def _recognised(path: Path, block: bytes) -> str | None:
    """The format that the first bytes, else the name, of a file say; None for plain text."""
    found = next((f.name for f in READERS.values() if f.magic and f.magic(block)), None)
    name = strip_compression(path.name).lower()
    return found or next((f.name for f in READERS.values()
                          if f.suffixes and name.endswith(f.suffixes)), None)


def read_documents(inputs: list[str | Path] | str | Path, fmt: str = "auto",
                   text_field: str = "text", label_field: str | None = None,
                   stats: CorpusStats | None = None, *,
                   max_line_chars: int = 100_000) -> Iterator[Document]:
    """Stream the documents of `inputs` (files, directories, globs) in a deterministic order.

    Inputs and `fmt` are checked now (MissingInputError, a FileNotFoundError, names a missing
    path); the files are read lazily as the iterator is consumed. Pass a CorpusStats to see
    what was read, repaired and skipped. Raises EmptyCorpusError at the end if no document
    was found.
    """
    if isinstance(inputs, (str, Path)):
        inputs = [inputs]
    inputs = list(inputs)
    if fmt not in FORMATS:
        raise CorpusError(f"unknown corpus format {fmt!r}; choose from {FORMATS}")
    if max_line_chars < 1:
        raise CorpusError(f"max_line_chars={max_line_chars} must be positive")
    files = expand(inputs)
    stats = stats if stats is not None else CorpusStats()
    return _stream(files, inputs, fmt, text_field, label_field, stats, max_line_chars)


def _stream(files: list[Path], inputs: list[str | Path], fmt: str, text_field: str,
            label_field: str | None, stats: CorpusStats, max_chars: int) -> Iterator[Document]:
    found = 0
    for path in files:
        kind = detect_format(path, fmt, max_chars)
        stats.files += 1
        stats.formats[kind] = stats.formats.get(kind, 0) + 1
        for doc in READERS[kind].read(path, stats, max_chars, text_field=text_field,
                                      label_field=label_field):
            found += 1
            count_document(stats, doc)
            yield doc
    if not found:
        raise empty_corpus(stats, inputs)


def count_document(stats: CorpusStats, doc: Document) -> None:
    """What every document read adds to the corpus totals."""
    stats.documents += 1
    stats.sentences += len(doc.sentences)
    stats.characters += sum(map(len, doc.sentences))
    if len(doc.sentences) == 1:
        stats.note("one_sentence_documents", doc.source)


def empty_corpus(stats: CorpusStats, inputs: list[str | Path]) -> EmptyCorpusError:
    """The error of a corpus in which reading found no document."""
    why = "; ".join(stats.problems()) or "the files hold no text"
    names = ", ".join(map(str, inputs))
    return EmptyCorpusError(f"empty corpus: no documents in {names} "
                            f"({stats.files} file{'s' * (stats.files != 1)} read; {why})")


def training_lines(files: Iterable[Path], text_field: str = "text") -> Iterator[str]:
    """What tokenizer training reads of `files` (from `expand`): the raw lines of a text file,
    the sentences of the other formats' documents (as `data build` reads them). Every file's
    format is decided now, so a file that cannot be read fails before training starts."""
    kinds = [(path, detect_format(path)) for path in files]
    return _training_lines(kinds, text_field)


def _training_lines(kinds: list[tuple[Path, str]], text_field: str) -> Iterator[str]:
    for path, kind in kinds:
        if READERS[kind].lines:
            # A stray bad byte in a large corpus should not stop training: it becomes U+FFFD.
            with open_text(path, errors="replace") as handle:
                yield from handle
        else:
            for doc in read_documents([path], fmt=kind, text_field=text_field):
                yield from doc.sentences
