"""Corpus readers: files -> a stream of documents (lists of sentences).

Formats (`fmt`), decided per file when `fmt="auto"`:
- "bert": the format of BERT's create_pretraining_data.py: one sentence per line, a blank
  line between documents.
- "paragraphs": running text. Blank lines separate paragraphs; the lines of one paragraph
  are joined with a space (so soft-wrapped text such as reStructuredText reads right, and a
  file with one paragraph per line and no blank lines reads as one long paragraph). Each
  paragraph is split into sentences by `split_sentences`. A whole file is one document
  (cut every MAX_DOCUMENT_SENTENCES sentences, see below).
- "jsonl": one JSON object per line; `text_field` holds the document, split into paragraphs
  on blank lines and then into sentences; `label_field`, if given, is kept as
  `Document.label`.
"auto" picks jsonl for *.jsonl / *.json / *.ndjson names (before any .gz/.bz2/.xz), else
looks at the file's first 200 lines: "bert" when a blank line separates non-blank lines and
at least 75% of the non-blank lines read as exactly one sentence that ends in . ! ? (or a
closing quote/bracket after one); otherwise "paragraphs".

Inputs are files, directories and glob patterns, expanded by `litebert.files.expand_inputs`;
files ending in .gz / .bz2 / .xz (any case) are decompressed, and one whose bytes are not
what its name says is an error naming it.

Memory does not grow with the corpus: files are read line by line, a line is read in pieces
of at most 4 * max_line_chars bytes, and a document longer than MAX_DOCUMENT_SENTENCES is cut
into consecutive documents. Bad input is repaired or skipped, never fatal, and counted in
`CorpusStats` (with the first examples as file:line) so that a long job reports what it lost.

The built-in registry sources (`fetch`, `SOURCES`) live in litebert.data.sources and are
re-exported here.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol

from litebert.data.sources import SOURCES, FetchError, Source, fetch  # noqa: F401
from litebert.files import DamagedInputError, expand_inputs, open_bytes, strip_compression
from litebert.input_report import NOTED, REPAIRED, SKIPPED, InputReport, Kind

FORMATS = ("auto", "bert", "paragraphs", "jsonl")
MAX_DOCUMENT_SENTENCES = 10_000
MAX_JSON_LINE_CHARS = 1 << 24  # a JSON line is parsed whole; longer ones are skipped
MAX_EXAMPLES = 10  # per kind of repair/skip, in CorpusStats
SNIFF_LINES = 200


class CorpusError(ValueError):
    """Input that cannot be read as a corpus; the message names the file and the fix."""


class EmptyCorpusError(CorpusError):
    """Reading finished without a single document."""


@dataclass
class Document:
    sentences: list[str]
    source: str  # "file:line" of the document's first line
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
        "missing_text": Kind(SKIPPED, "JSON lines without the text field"),
        "unreadable_files": Kind(SKIPPED, "unreadable files (from the error on)"),
        "invalid_utf8_lines": Kind(REPAIRED, "lines of invalid UTF-8 (bad bytes -> U+FFFD)"),
        "long_lines_split": Kind(REPAIRED, "over-long lines/paragraphs (cut at whitespace)"),
        "documents_cut": Kind(REPAIRED, f"documents over {MAX_DOCUMENT_SENTENCES:,} sentences "
                                        "(cut)"),
        "missing_label": Kind(NOTED, "documents without the label field (label None)"),
    }
    unit: ClassVar[str] = "documents"
    max_examples: ClassVar[int] = MAX_EXAMPLES

    files: int = 0
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


# ---------------------------------------------------------------- sentence splitting

_CANDIDATE = re.compile(r"([.!?\u2026]+)[\"'\u201d\u2019)\]]*\s+")
_OPENERS = "\"'\u201c\u2018(["
_CLOSERS = "\"'\u201d\u2019)]"
_DOTTED = re.compile(r"(?:[^\W\d_]{1,3}\.)+[^\W\d_]{1,3}")  # U.S  e.g  Ph.D  a.m
# Capitalised ones match as written ("no." and "mar." end sentences); the lower-case ones
# match in any case ("Etc.", "VS.").
_ABBREVIATIONS = frozenset("""
    Mr Mrs Ms Dr Prof St Jr Sr Sen Rep Gen Gov Rev Fr Capt Col Lt Sgt Mt Messrs Mme Mlle
    No Nos Fig Figs Vol Vols Ch Sec Art Ed Eds Inc Ltd Co Corp
    Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec
    MR MRS DR ST NO INC LTD CO
""".split())
_ABBREVIATIONS_ANY_CASE = frozenset("e.g i.e etc vs cf al viz approx ca est p pp".split())


def split_sentences(text: str) -> list[str]:
    """Split running text into sentences by rule (English-oriented, no model).

    A boundary is a run of . ! ? or ... (then any closing quotes/brackets "'”’)]) followed by
    whitespace, then optional opening quotes/brackets "'“‘([, then an uppercase or caseless
    letter or a digit. A candidate is NOT a boundary when the run is:
    - an ellipsis (two or more dots, or …) without ! or ?: an ellipsis continues a sentence;
    - a single "." after a known abbreviation (Mr. Mrs. Dr. St. e.g. i.e. etc. vs. Fig. Jan.
      Inc. ..., see _ABBREVIATIONS; "No." but not "no."), after a dotted abbreviation
      of 1-3 letter groups (U.S. Ph.D. a.m.), or after a single uppercase letter (initials as
      in "J. K. Rowling").
    Decimals ("3.14") and "?!" need no rule: a dot inside a number has no whitespace after
    it, and "?!" is one run. Limits: a sentence really ending in an abbreviation ("... in the
    U.S. The next") is not split. Sentences are stripped; empty ones dropped.
    """
    out: list[str] = []
    start = 0
    for m in _CANDIDATE.finditer(text):
        if _ends_sentence(text, m):
            sentence = text[start:m.end()].strip()
            if sentence:
                out.append(sentence)
            start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def _ends_sentence(text: str, m: re.Match) -> bool:
    following = text[m.end():m.end() + 8].lstrip(_OPENERS)
    if not following or not (following[0].isdigit()
                             or (following[0].isalpha() and not following[0].islower())):
        return False
    marks = m.group(1)
    if "!" in marks or "?" in marks:
        return True
    if marks != ".":
        return False  # ellipsis
    dot = m.start(1)
    if dot == 0 or text[dot - 1].isspace():
        return True  # a lone " ." as in tokenized text
    word = text[max(0, dot - 40):dot].split()[-1].strip(_OPENERS + _CLOSERS)
    if len(word) == 1 and word.isupper():
        return False  # an initial
    return not (word in _ABBREVIATIONS or word.lower() in _ABBREVIATIONS_ANY_CASE
                or _DOTTED.fullmatch(word))


def _cut(text: str, max_chars: int) -> list[str]:
    """Cut text into pieces of at most max_chars, at the last whitespace that fits."""
    pieces = []
    while len(text) > max_chars:
        text = text.lstrip()  # leading whitespace is no place to cut
        if len(text) <= max_chars:
            break
        at = max(text.rfind(c, 0, max_chars + 1) for c in " \t\u3000\xa0")
        at = at if at > 0 else max_chars
        pieces.append(text[:at])
        text = text[at:].lstrip()
    pieces.append(text)
    return pieces


# ---------------------------------------------------------------- reading lines


def _decode(raw: bytes) -> tuple[str, bool]:
    try:
        return raw.decode("utf-8"), False  # the fast path: valid UTF-8
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace"), True


def _utf8_cut(buf: bytes) -> int:
    """Where a trailing incomplete UTF-8 sequence starts (len(buf) if none)."""
    for back in range(1, min(4, len(buf)) + 1):
        b = buf[-back]
        if b < 0x80:
            break
        if b >= 0xC0:  # a lead byte: is its sequence complete?
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            return len(buf) - back if need > back else len(buf)
    return len(buf)


# files.open_bytes turns decompression errors into DamagedInputError; OSError is a failing disk.
_READ_ERRORS = (OSError, DamagedInputError)


def _lines(path: Path, stats: CorpusStats,
           max_chars: int) -> Generator[tuple[int, str, bool], None, None]:
    """(line number, text, was_cut): a line longer than max_chars comes in several pieces.

    A read error (truncated .gz, I/O error) ends the file, counted, instead of the job.
    Typed as a Generator because detect_format stops early and close()s it, shutting the file.
    """
    try:
        with open_bytes(path) as f:
            yield from _read_lines(f, path, stats, max_chars)
    except _READ_ERRORS as err:
        # A DamagedInputError's message already names the file.
        why = (str(err).removeprefix(f"{path}: ") if isinstance(err, DamagedInputError)
               else f"{type(err).__name__}: {err}")
        stats.note("unreadable_files", str(path), why)


def _read_lines(f, path: Path, stats: CorpusStats,
                max_chars: int) -> Iterator[tuple[int, str, bool]]:
    limit = 4 * max_chars  # more bytes than this is surely more than max_chars characters
    for lineno in itertools.count(1):
        raw = f.readline(limit)
        if not raw:
            return
        stats.bytes += len(raw)
        if len(raw) == limit and not raw.endswith(b"\n"):
            yield from ((lineno, p, True) for p in _long_line(f, raw, path, lineno, stats,
                                                              max_chars))
            continue
        text, bad = _decode(raw.rstrip(b"\r\n"))
        if bad:
            stats.note("invalid_utf8_lines", f"{path}:{lineno}")
        if lineno == 1:
            text = text.lstrip("\ufeff")
        if len(text) <= max_chars:
            yield lineno, text, False
        else:
            yield from ((lineno, p, True) for p in _cut(text, max_chars))


def _long_line(f, raw: bytes, path: Path, lineno: int, stats: CorpusStats,
               max_chars: int) -> Iterator[str]:
    """The pieces of a line longer than the read limit, without holding the whole line."""
    limit, bad, carry_bytes, carry_text = len(raw), False, b"", ""
    while True:
        done = len(raw) < limit or raw.endswith(b"\n")
        buf = carry_bytes + (raw.rstrip(b"\r\n") if done else raw)
        at = len(buf) if done else _utf8_cut(buf)  # never decode half a character
        text, b = _decode(buf[:at])
        bad, carry_bytes = bad or b, buf[at:]
        pieces = _cut(carry_text + text, max_chars)
        carry_text = "" if done else pieces.pop()  # the last piece may go on in the next read
        yield from pieces
        if done:
            break
        raw = f.readline(limit)
        stats.bytes += len(raw)
    if bad:
        stats.note("invalid_utf8_lines", f"{path}:{lineno}")


def _text_lines(path: Path, stats: CorpusStats, max_chars: int) -> Iterator[tuple[int, str, bool]]:
    """_lines for the text formats: an over-long line is counted once, then read as pieces."""
    last_cut = 0
    for lineno, text, cut in _lines(path, stats, max_chars):
        if cut and lineno != last_cut:
            last_cut = lineno
            stats.note("long_lines_split", f"{path}:{lineno}", f"over {max_chars:,} characters")
        yield lineno, text, cut


# ---------------------------------------------------------------- the three formats


def _read_bert(path: Path, stats: CorpusStats, max_chars: int, **_) -> Iterator[Document]:
    sentences: list[str] = []
    first = 0
    yielded = False
    for lineno, text, cut in _text_lines(path, stats, max_chars):
        sentence = text.strip()
        if sentence:
            if not sentences:
                first = lineno
            sentences.append(sentence)
            if len(sentences) > MAX_DOCUMENT_SENTENCES:
                yield _cut_document(sentences, f"{path}:{first}", stats)
                sentences, first = sentences[-1:], lineno
        elif not cut and sentences:  # a blank line ends the document
            yield Document(sentences, f"{path}:{first}")
            sentences, yielded = [], True
    if sentences:
        yield Document(sentences, f"{path}:{first}")
    elif not yielded:
        stats.note("empty_documents", str(path), "no text in the file")


def _cut_document(sentences: list[str], source: str, stats: CorpusStats,
                  label: str | None = None) -> Document:
    stats.note("documents_cut", source, f"over {MAX_DOCUMENT_SENTENCES:,} sentences")
    return Document(sentences[:MAX_DOCUMENT_SENTENCES], source, label)


def _paragraphs(path: Path, stats: CorpusStats, max_chars: int) -> Iterator[tuple[int, str]]:
    """(first line, text) of each blank-line-separated block, its lines joined by a space.

    A block that grows past max_chars is handed on at a line boundary, to bound memory.
    """
    block: list[str] = []
    first = size = 0
    for lineno, text, cut in _text_lines(path, stats, max_chars):
        text = text.strip()
        if text:
            if not block:
                first = lineno
            block.append(text)
            size += len(text) + 1
            if size <= max_chars:
                continue
        elif cut or not block:
            continue
        yield first, " ".join(block)
        block, size = [], 0
    if block:
        yield first, " ".join(block)


def _read_paragraphs(path: Path, stats: CorpusStats, max_chars: int,
                     **_) -> Iterator[Document]:
    sentences: list[str] = []
    first = 0
    for lineno, paragraph in _paragraphs(path, stats, max_chars):
        if not sentences:
            first = lineno
        sentences.extend(split_sentences(paragraph))
        while len(sentences) > MAX_DOCUMENT_SENTENCES:
            yield _cut_document(sentences, f"{path}:{first}", stats)
            sentences, first = sentences[MAX_DOCUMENT_SENTENCES:], lineno
    if sentences:
        yield Document(sentences, f"{path}:{first}")
    else:
        stats.note("empty_documents", str(path), "no text in the file")


_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")


def text_to_sentences(text: str, max_chars: int = 100_000,
                      stats: CorpusStats | None = None, where: str = "") -> list[str]:
    """A document's text -> sentences: paragraphs on blank lines (a paragraph's lines joined by
    a space), each split by `split_sentences`; a paragraph over max_chars is first cut at
    whitespace (counted in `stats` as long_lines_split at `where`)."""
    sentences: list[str] = []
    for block in _BLANK_LINE.split(text):
        paragraph = " ".join(line.strip() for line in block.splitlines() if line.strip())
        if len(paragraph) > max_chars and stats is not None:
            stats.note("long_lines_split", where, f"a paragraph over {max_chars:,} characters")
        for piece in _cut(paragraph, max_chars):
            sentences.extend(split_sentences(piece))
    return sentences


def _read_jsonl(path: Path, stats: CorpusStats, max_chars: int, text_field: str,
                label_field: str | None) -> Iterator[Document]:
    last_cut = 0
    for lineno, line, cut in _lines(path, stats, MAX_JSON_LINE_CHARS):
        where = f"{path}:{lineno}"
        if cut:
            if lineno != last_cut:
                last_cut = lineno
                stats.note("bad_json_lines", where, f"over {MAX_JSON_LINE_CHARS:,} characters")
            continue
        if not line.strip():
            continue
        if lineno == 1 and line.lstrip().startswith("["):
            raise CorpusError(f"{where}: a JSON array; litebert reads JSON lines (one object "
                              "per line): convert it, e.g. with `jq -c '.[]'`")
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            stats.note("bad_json_lines", where, f"{err.msg} (column {err.colno})")
            continue
        text = record.get(text_field) if isinstance(record, dict) else None
        if not isinstance(text, str):
            stats.note("missing_text", where, f"no string field {text_field!r}")
            continue
        label = None
        if label_field is not None:
            label = record.get(label_field)
            if label is None:
                stats.note("missing_label", where, f"no field {label_field!r}")
            label = None if label is None else str(label)
        sentences = text_to_sentences(text, max_chars, stats, where)
        if not sentences:
            stats.note("empty_documents", where, f"field {text_field!r} has no text")
            continue
        while len(sentences) > MAX_DOCUMENT_SENTENCES:
            yield _cut_document(sentences, where, stats, label)
            sentences = sentences[MAX_DOCUMENT_SENTENCES:]
        yield Document(sentences, where, label)


class _Reader(Protocol):
    """A format's reader; _stream passes every reader the jsonl fields (the others ignore them)."""

    def __call__(self, path: Path, stats: CorpusStats, max_chars: int, *, text_field: str,
                 label_field: str | None) -> Iterator[Document]: ...


_READERS: dict[str, _Reader] = {"bert": _read_bert, "paragraphs": _read_paragraphs,
                                "jsonl": _read_jsonl}
JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")
_SENTENCE_END = re.compile(r"[.!?\u2026][\"'\u201d\u2019)\]]*$")


def detect_format(path: Path, max_line_chars: int = 100_000) -> str:
    """The format "auto" reads `path` as (the rule is in the module docstring)."""
    if strip_compression(path.name).lower().endswith(JSON_SUFFIXES):
        return "jsonl"
    scratch = CorpusStats()  # sniffing must not count anything twice
    lines = _lines(path, scratch, max_line_chars)
    head = [text.strip() for _, text, _ in itertools.islice(lines, SNIFF_LINES)]
    lines.close()
    while head and not head[-1]:
        head.pop()
    text = [line for line in head if line]
    separated = len(text) > 1 and any(not line for line in head[head.index(text[0]):])
    single = sum(1 for line in text
                 if _SENTENCE_END.search(line) and len(split_sentences(line)) == 1)
    return "bert" if separated and single >= 0.75 * len(text) else "paragraphs"


# ---------------------------------------------------------------- inputs and the stream


def read_documents(inputs: list[str | Path] | str | Path, fmt: str = "auto",
                   text_field: str = "text", label_field: str | None = None,
                   stats: CorpusStats | None = None, *,
                   max_line_chars: int = 100_000) -> Iterator[Document]:
    """Stream the documents of `inputs` (files, directories, globs) in a deterministic order.

    Inputs and `fmt` are checked now (MissingInputError, a FileNotFoundError, names a missing
    path); the files are
    read lazily as the iterator is consumed. Pass a CorpusStats to see what was read,
    repaired and skipped. Raises EmptyCorpusError at the end if no document was found.
    """
    if isinstance(inputs, (str, Path)):
        inputs = [inputs]
    inputs = list(inputs)
    if fmt not in FORMATS:
        raise CorpusError(f"unknown corpus format {fmt!r}; choose from {FORMATS}")
    if max_line_chars < 1:
        raise CorpusError(f"max_line_chars={max_line_chars} must be positive")
    files = expand_inputs(inputs, what="corpus input")
    stats = stats if stats is not None else CorpusStats()
    return _stream(files, inputs, fmt, text_field, label_field, stats, max_line_chars)


def _stream(files: list[Path], inputs: list[str | Path], fmt: str, text_field: str,
            label_field: str | None, stats: CorpusStats, max_chars: int) -> Iterator[Document]:
    found = 0
    for path in files:
        kind = detect_format(path, max_chars) if fmt == "auto" else fmt
        stats.files += 1
        stats.formats[kind] = stats.formats.get(kind, 0) + 1
        for doc in _READERS[kind](path, stats, max_chars, text_field=text_field,
                                  label_field=label_field):
            found += 1
            stats.documents += 1
            stats.sentences += len(doc.sentences)
            stats.characters += sum(map(len, doc.sentences))
            if len(doc.sentences) == 1:
                stats.note("one_sentence_documents", doc.source)
            yield doc
    if not found:
        why = "; ".join(stats.problems()) or "the files hold no text"
        names = ", ".join(map(str, inputs))
        raise EmptyCorpusError(f"empty corpus: no documents in {names} "
                               f"({stats.files} file{'s' * (stats.files != 1)} read; {why})")
