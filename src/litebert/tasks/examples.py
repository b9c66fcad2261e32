"""Fine-tuning examples and the shared machinery of the task readers.

Every reader returns `(examples, ReadReport)`. Following the corpus readers, bad rows are
never fatal and never silent: each one is skipped and counted in the report, with the first
MAX_PROBLEMS kept as "file:line: reason". What is wrong with the whole input (a missing file,
an unknown task or split, a column that is not there) raises TaskDataError at once, because
no amount of skipping would give a useful result.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from litebert.files import open_bytes

MAX_PROBLEMS = 20  # kept in ReadReport.problems; the count goes on past it
SUMMARY_PROBLEMS = 5  # shown by ReadReport.summary()


class TaskDataError(ValueError):
    """Task data that cannot be read at all; the message names the path and the choices."""


@dataclass
class TextExample:
    """One sentence or sentence pair. `label` is None for unlabeled (test) data, a string for
    classification (as written in the file) and a float for GLUE's STS-B regression."""

    guid: str  # the file's id/index column, else "file:line"
    text_a: str
    text_b: str | None
    label: str | float | None


@dataclass
class RaceExample:
    """One multiple-choice question over an article; `label` indexes `options` (0-3)."""

    guid: str  # "level/file-question index", e.g. "high/1024.txt-2"
    article: str
    question: str
    options: list[str]
    label: int | None
    level: str  # "middle" or "high"


@dataclass
class ReadReport:
    """What one read saw: examples kept, rows skipped, and the first problems as file:line."""

    path: str
    read: int = 0
    skipped: int = 0
    problems: list[str] = field(default_factory=list)  # first MAX_PROBLEMS "file:line: why"

    def note(self, where: str, why: str) -> None:
        """Count one skipped row (or file) at `where`, keeping the reason if there is room."""
        self.skipped += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"{where}: {why}")

    def summary(self) -> str:
        lines = [f"{self.path}: read {self.read:,} examples, skipped {self.skipped:,}"]
        lines += [f"  {p}" for p in self.problems[:SUMMARY_PROBLEMS]]
        more = self.skipped - min(len(self.problems), SUMMARY_PROBLEMS)
        if more > 0 and self.problems:
            lines.append(f"  ... and {more:,} more")
        return "\n".join(lines)


@dataclass
class TaskSpec:
    """A task's shape: the kind of target, its label set and where its splits live."""

    name: str
    kind: str  # "classification" | "regression"
    labels: list[str] | None  # None for regression
    splits: dict[str, str]  # split name -> file name relative to the task directory
    text_a: str  # column holding the first text
    text_b: str | None  # column holding the second text of a pair, None for single texts


# ---------------------------------------------------------------- delimited files


def require_file(path: Path, what: str) -> None:
    """TaskDataError naming `path` (and what the folder holds) unless it is a readable file."""
    if path.is_file():
        return
    if path.is_dir():
        raise TaskDataError(f"{what}: {path} is a folder, not a file")
    parent = path.parent
    if parent.is_dir():
        names = sorted(p.name for p in parent.iterdir() if not p.name.startswith("."))
        held = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "") or "nothing"
        raise TaskDataError(f"{what}: no file {path} (the folder holds: {held})")
    raise TaskDataError(f"{what}: no file {path} (no folder {parent})")


class _LineFeed:
    """Decoded lines of a file for csv.reader, remembering where the current row began.

    Decoding is ours rather than open()'s so that a line of invalid UTF-8 costs that line
    (counted) instead of the whole read.
    """

    def __init__(self, path: Path, report: ReadReport):
        self.path, self.report = path, report
        self.first: int | None = None  # line the row being parsed started on

    def __iter__(self) -> Iterator[str]:
        with open_bytes(self.path) as f:
            for lineno, raw in enumerate(f, 1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    self.report.note(f"{self.path}:{lineno}", f"invalid UTF-8 ({err.reason})")
                    continue
                if lineno == 1:
                    text = text.lstrip("\ufeff")  # MRPC's files start with a byte-order mark
                if self.first is None:
                    self.first = lineno
                # csv wants one line ending, "\n": a "\r\n" file reads the same as a "\n" one.
                yield text.rstrip("\r\n") + "\n"


def read_rows(path: Path, report: ReadReport, *, delimiter: str,
              quoting: int = csv.QUOTE_MINIMAL) -> Iterator[tuple[int, list[str]]]:
    """(line the row starts on, fields) for each non-blank row of a delimited UTF-8 file.

    A row the csv module rejects (a field over csv.field_size_limit(), a stray carriage
    return) is counted in `report` and skipped; reading goes on with the next line.
    """
    feed = _LineFeed(path, report)
    reader = csv.reader(feed, delimiter=delimiter, quoting=quoting)
    while True:
        feed.first = None
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            report.note(f"{path}:{feed.first or reader.line_num}", f"unreadable row ({err})")
            continue
        if any(cell.strip() for cell in row):  # blank lines separate nothing; no count
            yield feed.first or reader.line_num, row
