"""RACE: reading comprehension from English exams, as distributed -> RaceExamples, and those
as the multiple-choice task's rows (`race_choices`: the article and, per option, the
question with the option written into its blank, `option_text`).

Layout: `{data_dir}/{train,dev,test}/{middle,high}/*.txt`, each file one JSON object
    {"article": str, "questions": [str], "options": [[4 str]], "answers": ["A".."D"],
     "id": "high1.txt"}
with one RaceExample per question (guid "level/file-i", i counting from 0). Files are read
in natural order of their names (2.txt before 10.txt), middle before high.

Bad input is skipped and counted in the ReadReport: a file that is not UTF-8 JSON, lacks a
string article, or whose questions/options/answers lists differ in length, costs the whole
file (one skip: which option belongs to which question cannot be told); a question with other
than 4 string options or an answer outside A-D costs that question. A file without an
"answers" field is read unlabeled (label None), for data without keys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from litebert.files import InputFileError, atomic_write, read_text
from litebert.tasks.examples import ChoiceExample, RaceExample, ReadReport, TaskDataError

SPLITS = ("train", "dev", "test")
LEVELS = ("middle", "high")
LETTERS = "ABCD"


def _natural(path: Path) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def _level_dirs(data_dir: Path, split: str) -> list[Path]:
    if split not in SPLITS:
        raise TaskDataError(f"RACE has no split {split!r}; choose from {list(SPLITS)}")
    split_dir = data_dir / split
    if not split_dir.is_dir():
        raise TaskDataError(f"RACE {split}: no folder {split_dir} (expected "
                            f"{data_dir}/{{{','.join(SPLITS)}}}/{{{','.join(LEVELS)}}}/*.txt)")
    dirs = [split_dir / level for level in LEVELS if (split_dir / level).is_dir()]
    if not dirs:
        raise TaskDataError(f"RACE {split}: {split_dir} has neither {LEVELS[0]}/ nor "
                            f"{LEVELS[1]}/")
    return dirs


def read_race(data_dir: str | Path, split: str) -> tuple[list[RaceExample], ReadReport]:
    """The questions of one RACE split (both levels), and a report of what was skipped."""
    data_dir = Path(data_dir)
    report = ReadReport(str(data_dir / split))
    examples: list[RaceExample] = []
    for level_dir in _level_dirs(data_dir, split):
        for path in sorted(level_dir.glob("*.txt"), key=_natural):
            examples.extend(_read_file(path, level_dir.name, report))
    report.read = len(examples)
    return examples, report


def _load(path: Path, report: ReadReport) -> dict | None:
    try:
        record = json.loads(read_text(path))
    except InputFileError as err:
        report.note("unreadable_files", str(path), str(err).removeprefix(f"{path}: "))
        return None
    except json.JSONDecodeError as err:
        report.note("bad_json", str(path),
                    f"bad JSON: {err.msg} (line {err.lineno}, column {err.colno})")
        return None
    if not isinstance(record, dict):
        report.note("bad_json", str(path), f"a JSON {type(record).__name__}, expected an object")
        return None
    return record


def _check_file(record: dict) -> str | None:
    """Why the whole file is unusable, or None."""
    if not isinstance(record.get("article"), str):
        return "no string field 'article'"
    fields = ["questions", "options"] + (["answers"] if "answers" in record else [])
    for name in fields:
        if not isinstance(record.get(name), list):
            return f"field {name!r} is not a list"
    sizes = [len(record[name]) for name in fields]
    if len(set(sizes)) > 1:
        counts = (f"{n} {name}" for n, name in zip(sizes, fields, strict=True))
        return "lengths differ: " + ", ".join(counts)
    return None


def _read_file(path: Path, level: str, report: ReadReport) -> list[RaceExample]:
    record = _load(path, report)
    if record is None:
        return []
    why = _check_file(record)
    if why:
        report.note("bad_files", str(path), why)
        return []
    answers = record.get("answers")
    out = []
    for i, question in enumerate(record["questions"]):
        options = record["options"][i]
        answer = None if answers is None else answers[i]
        why = _check_question(question, options, answer)
        if why:
            report.note("bad_questions", f"{path} question {i}", why)
            continue
        label = None if answer is None else LETTERS.index(answer)
        out.append(RaceExample(f"{level}/{path.name}-{i}", record["article"], question,
                               list(options), label, level))
    return out


def _check_question(question, options, answer) -> str | None:
    if not isinstance(question, str):
        return "the question is not a string"
    if (not isinstance(options, list) or len(options) != len(LETTERS)
            or not all(isinstance(o, str) for o in options)):
        n = len(options) if isinstance(options, list) else type(options).__name__
        return f"{n} options, expected {len(LETTERS)} strings"
    if answer is not None and (not isinstance(answer, str) or answer not in LETTERS
                               or len(answer) != 1):
        return f"answer {answer!r} is not one of {', '.join(LETTERS)}"
    return None


def option_text(question: str, option: str) -> str:
    """As the official ALBERT code: a question with a blank ("_") gets the option written into
    the blank; otherwise the option follows the question."""
    return question.replace("_", option) if "_" in question else f"{question} {option}"


def race_choices(examples: list[RaceExample]) -> list[ChoiceExample]:
    """RACE's questions as multiple-choice rows: the article as the context, one choice per
    option (option_text), the level kept for the metric."""
    return [ChoiceExample(ex.guid, ex.article, [option_text(ex.question, o) for o in ex.options],
                          ex.label, ex.level) for ex in examples]


def write_race_predictions(examples: Sequence[RaceExample | ChoiceExample],
                           predictions: list[int], path: Path) -> Path:
    """Write {guid: "A".."D"} as JSON, one prediction (an option index) per example."""
    if len(examples) != len(predictions):
        raise TaskDataError(f"{len(predictions)} predictions for {len(examples)} examples")
    out: dict[str, str] = {}
    for ex, p in zip(examples, predictions, strict=True):
        if hasattr(p, "item"):
            p = p.item()  # a numpy or torch scalar
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < len(LETTERS):
            raise TaskDataError(f"prediction for {ex.guid}: {p!r} is not an option index 0-3")
        if ex.guid in out:
            raise TaskDataError(f"two examples share the guid {ex.guid!r}")
        out[ex.guid] = LETTERS[p]
    return atomic_write(path, json.dumps(out, indent=1) + "\n")
