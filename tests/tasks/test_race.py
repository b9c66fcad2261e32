"""RACE reader on a small tree in the distributed layout, and the prediction writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from litebert.tasks.examples import TaskDataError
from litebert.tasks.race import read_race, write_race_predictions

OPTIONS = ["a cat", "a dog", "a bird", "a fish"]


def record(n_questions: int, answers: list | None = None, **overrides) -> dict:
    rec = {"article": "Tom has a pet. It barks at night.",
           "questions": [f"Question {i}?" for i in range(n_questions)],
           "options": [list(OPTIONS) for _ in range(n_questions)],
           "answers": answers if answers is not None else ["B"] * n_questions,
           "id": "x.txt"}
    rec.update(overrides)
    return rec


def put(path: Path, content: dict | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content),
                    encoding="utf-8")


@pytest.fixture
def race_dir(tmp_path: Path) -> Path:
    put(tmp_path / "train/middle/2.txt", record(2, ["A", "D"]))
    put(tmp_path / "train/middle/10.txt", record(1, ["C"], article='He said "fine" and left.'))
    put(tmp_path / "train/high/1.txt", record(3, ["A", "E", "B"]))  # E: not an answer
    put(tmp_path / "train/high/3.txt", '{"article": "cut off", "questions": [')  # bad JSON
    put(tmp_path / "train/high/4.txt", record(2, ["A"]))  # 2 questions, 1 answer
    bad_options = record(2)
    bad_options["options"][0] = ["only", "three", "options"]
    put(tmp_path / "train/high/5.txt", bad_options)
    put(tmp_path / "train/high/notes.md", "not a RACE file")
    put(tmp_path / "dev/high/7.txt", record(1, ["D"]))
    return tmp_path


def test_reads_middle_then_high_one_example_per_question(race_dir: Path):
    examples, report = read_race(race_dir, "train")
    assert [(e.guid, e.label, e.level) for e in examples] == [
        ("middle/2.txt-0", 0, "middle"), ("middle/2.txt-1", 3, "middle"),
        ("middle/10.txt-0", 2, "middle"),  # natural order: 2 before 10
        ("high/1.txt-0", 0, "high"), ("high/1.txt-2", 1, "high"),
        ("high/5.txt-1", 1, "high")]
    first = examples[0]
    assert first.article.startswith("Tom has a pet") and first.question == "Question 0?"
    assert first.options == OPTIONS and examples[2].article == 'He said "fine" and left.'
    assert report.read == 6 and report.skipped == 4


def test_skips_name_the_file_and_question(race_dir: Path):
    _, report = read_race(race_dir, "train")
    high = race_dir / "train" / "high"
    problems = "\n".join(report.notes)
    assert f"{high / '1.txt'} question 1: answer 'E' is not one of A, B, C, D" in problems
    assert f"{high / '3.txt'}: bad JSON" in problems
    assert f"{high / '4.txt'}: lengths differ: 2 questions, 2 options, 1 answers" in problems
    assert f"{high / '5.txt'} question 0: 3 options, expected 4 strings" in problems
    assert "skipped 4" in report.summary()


def test_one_level_and_unlabeled_files(tmp_path: Path):
    rec = record(2)
    del rec["answers"]
    put(tmp_path / "test/high/1.txt", rec)
    examples, report = read_race(tmp_path, "test")
    assert [e.label for e in examples] == [None, None] and report.skipped == 0


def test_missing_split_or_levels_is_an_error(race_dir: Path, tmp_path: Path):
    with pytest.raises(TaskDataError, match="no folder .*test"):
        read_race(race_dir, "test")
    with pytest.raises(TaskDataError, match="choose from"):
        read_race(race_dir, "validation")
    (tmp_path / "empty" / "dev").mkdir(parents=True)
    with pytest.raises(TaskDataError, match="neither middle/ nor high/"):
        read_race(tmp_path / "empty", "dev")


def test_write_predictions(race_dir: Path, tmp_path: Path):
    examples, _ = read_race(race_dir, "train")
    path = write_race_predictions(examples, [0, 1, 2, 3, 0, 1], tmp_path / "out" / "race.json")
    assert json.loads(path.read_text()) == {
        "middle/2.txt-0": "A", "middle/2.txt-1": "B", "middle/10.txt-0": "C",
        "high/1.txt-0": "D", "high/1.txt-2": "A", "high/5.txt-1": "B"}
    with pytest.raises(TaskDataError, match="5 predictions for 6"):
        write_race_predictions(examples, [0] * 5, tmp_path / "x.json")
    with pytest.raises(TaskDataError, match="not an option index"):
        write_race_predictions(examples, [0, 1, 2, 3, 4, 0], tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()
