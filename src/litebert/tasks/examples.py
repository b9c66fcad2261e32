"""Fine-tuning examples and the shared machinery of the task readers.

Every reader returns `(examples, ReadReport)`, the task readers' `InputReport` (the type the
corpus and SQuAD readers use too). Bad rows are never fatal and never silent: each one is
skipped and counted by kind, with the first MAX_PROBLEMS of each kind kept as
"file:line: reason". What is wrong with the whole input (a missing file, an unknown task or
split, a column that is not there) raises TaskDataError at once, because no amount of
skipping would give a useful result.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from litebert.files import open_bytes
from litebert.input_report import MAX_EXAMPLES, SKIPPED, InputReport, Kind

MAX_PROBLEMS = MAX_EXAMPLES  # examples kept per kind; the count goes on past it
# csv.QUOTE_MINIMAL, QUOTE_ALL, QUOTE_NONNUMERIC, QUOTE_NONE: csv.reader's stubs accept only
# these literal values, so a plain int does not type-check.
Quoting = Literal[0, 1, 2, 3]


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
class ChoiceExample:
    """One multiple-choice question as the choice task encodes it: each choice is the pair
    (context, choices[i]). `label` indexes `choices`; `level` is RACE's ("middle", "high"),
    None elsewhere."""

    guid: str  # the file's id column, else "file:line" ("file:row" in a columnar table)
    context: str
    choices: list[str]  # SWAG's start + " " + ending; RACE's question with the option
    label: int | None
    level: str | None = None


class ReadReport(InputReport):
    """What one task read saw: examples kept, and every row (or file) skipped, by kind."""

    KINDS: ClassVar[dict[str, Kind]] = {
        "invalid_utf8": Kind(SKIPPED, "lines of invalid UTF-8"),
        "unreadable_rows": Kind(SKIPPED, "rows the CSV parser rejects"),
        "wrong_field_count": Kind(SKIPPED, "rows with the wrong number of fields"),
        "bad_json": Kind(SKIPPED, "malformed JSON lines or files, or JSON that is no object"),
        "missing_fields": Kind(SKIPPED, "records without a needed field, or with it empty"),
        "bad_labels": Kind(SKIPPED, "rows with an unknown label or an unusable score"),
        "unreadable_files": Kind(SKIPPED, "unreadable files"),
        "bad_files": Kind(SKIPPED, "files whose fields do not fit together (RACE)"),
        "bad_questions": Kind(SKIPPED, "questions with bad options or answer (RACE)"),
        "bad_endings": Kind(SKIPPED, "rows with the wrong number of endings, or one not text"),
    }
    unit: ClassVar[str] = "examples"


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
                    self.report.note("invalid_utf8", f"{self.path}:{lineno}",
                                     f"invalid UTF-8 ({err.reason})")
                    continue
                if lineno == 1:
                    text = text.lstrip("\ufeff")  # MRPC's files start with a byte-order mark
                if self.first is None:
                    self.first = lineno
                # csv wants one line ending, "\n": a "\r\n" file reads the same as a "\n" one.
                yield text.rstrip("\r\n") + "\n"


def read_rows(path: Path, report: ReadReport, *, delimiter: str,
              quoting: Quoting = csv.QUOTE_MINIMAL) -> Iterator[tuple[int, list[str]]]:
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
            report.note("unreadable_rows", f"{path}:{feed.first or reader.line_num}",
                        f"unreadable row ({err})")
            continue
        if any(cell.strip() for cell in row):  # blank lines separate nothing; no count
            yield feed.first or reader.line_num, row
