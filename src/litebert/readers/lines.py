"""Reading a (maybe compressed) file as lines with bounded memory, repairing invalid UTF-8,
and telling text from binary data by the first block of a file."""

from __future__ import annotations

import io
import itertools
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import cast

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


def lines(path: Path, stats: CorpusStats,
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


def text_lines(path: Path, stats: CorpusStats,
               max_chars: int) -> Iterator[tuple[int, str, bool]]:
    """lines() for the text formats: an over-long line is counted once, then read as pieces."""
    last_cut = 0
    for lineno, text, cut in lines(path, stats, max_chars):
        if cut and lineno != last_cut:
            last_cut = lineno
            stats.note("long_lines_split", f"{path}:{lineno}",
                       f"over {max_chars:,} characters")
        yield lineno, text, cut


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
