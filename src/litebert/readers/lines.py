"""Reading a (maybe compressed) file as lines with bounded memory, repairing invalid UTF-8,
and telling text from binary data by the first block of a file.

A `span` (start, stop) of byte offsets reads only the lines of an uncompressed file that
start in it (both offsets at line starts: see `line_boundary`), numbered from 1 within the
span: how a `data build` worker reads its part of a file (litebert.data.parts)."""

from __future__ import annotations

import io
import itertools
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import IO, Any, cast

from litebert.files import DamagedInputError, open_bytes
from litebert.readers.base import CorpusStats
from litebert.readers.sentences import cut_text


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


Span = tuple[int, int]  # byte offsets [start, stop) of an uncompressed file, at line starts
WHOLE: Span = (0, -1)  # the span of a whole file (compressed ones are read whole)


def lines(path: Path, stats: CorpusStats, max_chars: int,
          span: Span | None = None) -> Generator[tuple[int, str, bool], None, None]:
    """(line number, text, was_cut): a line longer than max_chars comes in several pieces.

    A read error (truncated .gz, I/O error) ends the file, counted, instead of the job.
    Typed as a Generator because detect_format stops early and close()s it, shutting the file.
    With `span`, only the lines that start in it, numbered from 1 (see the module docstring).
    """
    try:
        with open_bytes(path) if span is None or span == WHOLE else _open_span(path, span) as f:
            first_of_file = span is None or span[0] == 0  # only there can a BOM be
            yield from _read_lines(f, path, stats, max_chars, first_of_file)
    except _READ_ERRORS as err:
        # A DamagedInputError's message already names the file.
        why = (str(err).removeprefix(f"{path}: ") if isinstance(err, DamagedInputError)
               else f"{type(err).__name__}: {err}")
        stats.note("unreadable_files", str(path), why)


def _read_lines(f, path: Path, stats: CorpusStats, max_chars: int,
                first_of_file: bool = True) -> Iterator[tuple[int, str, bool]]:
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
        if lineno == 1 and first_of_file:
            text = text.lstrip("\ufeff")
        if len(text) <= max_chars:
            yield lineno, text, False
        else:
            yield from ((lineno, p, True) for p in cut_text(text, max_chars))


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
        pieces = cut_text(carry_text + text, max_chars)
        carry_text = "" if done else pieces.pop()  # the last piece may go on in the next read
        yield from pieces
        if done:
            break
        raw = f.readline(limit)
        stats.bytes += len(raw)
    if bad:
        stats.note("invalid_utf8_lines", f"{path}:{lineno}")


def text_lines(path: Path, stats: CorpusStats, max_chars: int,
               span: Span | None = None) -> Iterator[tuple[int, str, bool]]:
    """lines() for the text formats: an over-long line is counted once, then read as pieces."""
    last_cut = 0
    for lineno, text, cut in lines(path, stats, max_chars, span):
        if cut and lineno != last_cut:
            last_cut = lineno
            stats.note("long_lines_split", f"{path}:{lineno}",
                       f"over {max_chars:,} characters")
        yield lineno, text, cut


# ---------------------------------------------------------------- spans of a file

class _Window(io.RawIOBase):
    """The bytes [start, stop) of a file, read as a whole stream (EOF at stop)."""

    def __init__(self, path: Path, start: int, stop: int):
        self._file = open(path, "rb", buffering=0)  # noqa: SIM115 (closed in close)
        self._file.seek(start)
        self._left = stop - start

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._left <= 0:
            return 0
        view = memoryview(buffer)[:min(len(buffer), self._left)]
        n = self._file.readinto(view) or 0
        self._left -= n
        return n

    def close(self) -> None:
        self._file.close()
        super().close()


def _open_span(path: Path, span: Span) -> io.BufferedReader:
    return io.BufferedReader(_Window(path, *span), 1 << 20)


def skip_line(f: IO[bytes]) -> int:
    """Read the rest of the current line of `f` in bounded pieces; the bytes read."""
    size = 0
    while piece := f.readline(1 << 20):
        size += len(piece)
        if piece.endswith(b"\n"):
            break
    return size


def line_boundary(f: IO[bytes], offset: int) -> int:
    """The first line start at or after `offset` in the binary file `f`, which is left
    positioned there: a line belongs to the span in which it starts."""
    if offset <= 0:
        f.seek(0)
        return 0
    f.seek(offset - 1)
    return offset - 1 + skip_line(f)


def is_blank(raw: bytes, max_chars: int) -> bool:
    """A whole line (`raw`, its newline included) that reads as blank: no text, and not so
    long that `lines` cuts it into pieces (a cut blank piece ends no document)."""
    text, _ = _decode(raw.rstrip(b"\r\n"))
    return not text.strip() and len(text) <= max_chars


def count_lines(path: Path, span: Span) -> int:
    """The lines of an uncompressed file that start in `span` (offsets at line starts)."""
    count, last = 0, b"\n"
    with _open_span(path, span) as f:
        while block := f.read(1 << 22):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")  # a last line without its newline


# ---------------------------------------------------------------- text or binary

HEAD_BYTES = 8192  # what sniffing reads of a file, after decompression
# Share of a text's first block that may be invalid UTF-8 or control characters: a few bad
# bytes are a text to repair (counted), more is a binary file or a text in another encoding.
MAX_NOT_TEXT = 0.1
_TEXT_CONTROLS = frozenset("\t\n\r\f\v\x1b")


def head(path: Path) -> bytes:
    """The first HEAD_BYTES of the file's content, decompressed; what could be read when a
    damaged file stops before that (the reader then counts the damage)."""
    out = b""
    try:
        with open_bytes(path) as f:
            stream = cast(io.BufferedReader, f)  # read1: keep what came before a damage
            while len(out) < HEAD_BYTES and (chunk := stream.read1(HEAD_BYTES - len(out))):
                out += chunk
    except _READ_ERRORS:
        pass
    return out


def not_text(block: bytes) -> str | None:
    """Why `block` (a file's first bytes) is not text, or None when it is: NUL bytes, or more
    than MAX_NOT_TEXT of it invalid UTF-8 or control characters."""
    if b"\x00" in block:
        return "it holds NUL bytes"
    text = block[:_utf8_cut(block)].decode("utf-8", "replace")
    bad = sum(1 for c in text if c == "\ufffd" or (c < " " and c not in _TEXT_CONTROLS))
    if text and bad > MAX_NOT_TEXT * len(text):
        return f"{bad / len(text):.0%} of its first {len(block):,} bytes are not UTF-8 text"
    return None
