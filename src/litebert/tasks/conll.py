"""CoNLL token-per-line files: read sentences of (words, tags), write conlleval input.

Reading: one token per line, columns separated by whitespace, the word in column 0 and
the tag in the last column or in `tag_column` (0-based; negative counts from the end).
Blank lines end sentences; "-DOCSTART-" lines (CoNLL-2003 document breaks) are skipped
with the blank line after them; a last sentence without a final blank line is kept.
Compressed files (.gz, ...) are read through litebert.files.open_bytes. Any error is one
ValueError naming file:line and what is wrong there.

Writing (`write_conll_predictions`): "word gold predicted" lines and a blank line after
each sentence, the input of the conlleval script (which reads the last two columns).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from litebert.files import atomic_write, open_bytes

DOCSTART = "-DOCSTART-"


@dataclass(frozen=True)
class Sentence:
    """One sentence: its words and tags (equal lengths) and the 1-based line it starts on."""
    words: list[str]
    tags: list[str]
    line: int


def _tag_of(columns: list[str], tag_column: int | None, where: str) -> str:
    if tag_column is None:
        if len(columns) < 2:
            raise ValueError(f"{where}: expected a word and a tag, found {len(columns)} "
                             "column(s)")
        return columns[-1]
    if not -len(columns) <= tag_column < len(columns) or (
            tag_column % len(columns) == 0):
        raise ValueError(f"{where}: {len(columns)} column(s), no tag column {tag_column} "
                         "(column 0 is the word)")
    return columns[tag_column]


def _lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(1-based line number, columns) of each line; [] for a blank line."""
    # Bytes decoded line by line (not open_text): a text stream decodes ahead in blocks,
    # so a bad byte would be blamed on the wrong line.
    with open_bytes(path) as handle:
        for number, raw in enumerate(handle, 1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise ValueError(f"{path}:{number}: not UTF-8 text ({err.reason})") from err
            yield number, line.split()


def read_conll(path: str | Path, tag_column: int | None = None) -> list[Sentence]:
    """The sentences of a CoNLL file (see the module docstring)."""
    path = Path(path)
    sentences: list[Sentence] = []
    words: list[str] = []
    tags: list[str] = []
    start = 0
    for number, columns in _lines(path):
        if not columns:
            if words:
                sentences.append(Sentence(words, tags, start))
                words, tags = [], []
            continue
        if columns[0] == DOCSTART:
            if words:
                raise ValueError(f"{path}:{number}: {DOCSTART} inside a sentence (no blank "
                                 "line before it)")
            continue  # its blank line is then skipped as any blank line between sentences
        if not words:
            start = number
        words.append(columns[0])
        tags.append(_tag_of(columns, tag_column, f"{path}:{number}"))
    if words:
        sentences.append(Sentence(words, tags, start))
    return sentences


def _check_sentence(n: int, words: Sequence[str], gold: Sequence[str],
                    predicted: Sequence[str]) -> None:
    if not len(words) == len(gold) == len(predicted):
        raise ValueError(f"sentence {n}: {len(words)} words, {len(gold)} gold tags and "
                         f"{len(predicted)} predicted")
    for i, text in enumerate((*words, *gold, *predicted)):
        # A space or newline inside a field would shift conlleval's columns.
        if not text or text != "".join(text.split()):
            raise ValueError(f"sentence {n}: field {text!r} (item {i}) is empty or holds "
                             "whitespace")


def conll_prediction_text(sentences: Iterable[tuple[Sequence[str], Sequence[str],
                                                    Sequence[str]]]) -> str:
    """The text of `write_conll_predictions` for (words, gold, predicted) sentences."""
    parts: list[str] = []
    for n, (words, gold, predicted) in enumerate(sentences):
        _check_sentence(n, words, gold, predicted)
        parts.extend(f"{w} {g} {p}\n" for w, g, p in zip(words, gold, predicted, strict=True))
        parts.append("\n")
    return "".join(parts)


def write_conll_predictions(path: str | Path,
                            sentences: Iterable[tuple[Sequence[str], Sequence[str],
                                                      Sequence[str]]]) -> Path:
    """Write (words, gold tags, predicted tags) sentences atomically as conlleval reads
    them; returns the path."""
    return atomic_write(path, conll_prediction_text(sentences))
