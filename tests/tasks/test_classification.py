"""Generic CSV / TSV / JSON-lines classification data, labels and the regression rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from litebert.tasks.classification import infer_labels, is_regression, read_table
from litebert.tasks.examples import TaskDataError, TextExample


def put(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_with_quoting_multiline_fields_and_counted_skips(tmp_path: Path):
    path = put(tmp_path / "reviews.csv",
               'review,stars,extra\n'
               '"Great, really ""great"" food",5,x\n'
               '"Two lines\nof text",3,y\n'
               'too,many,fields,here\n'
               '   ,4,z\n'
               'Fine,,w\n'
               'Last one,1,v\n')
    examples, report = read_table(path, text_a="review", label="stars")
    assert [(e.guid, e.text_a, e.text_b, e.label) for e in examples] == [
        ("reviews.csv:2", 'Great, really "great" food', None, "5"),
        ("reviews.csv:3", "Two lines\nof text", None, "3"),
        ("reviews.csv:8", "Last one", None, "1")]
    assert report.notes == [f"{path}:5: 4 fields, expected 3", f"{path}:6: 'review' is empty",
                               f"{path}:7: 'stars' is empty"]
    assert (report.read, report.skipped) == (3, 3)


def test_tsv_pairs_with_quotes_and_id_column(tmp_path: Path):
    path = put(tmp_path / "pairs.tsv",
               'id\tpremise\thypothesis\tlabel\n'
               'p1\tHe said "yes.\tHe agreed.\tyes\n'
               'p2\tIt rained.\tThe ground is dry.\tno\n')
    examples, report = read_table(path, text_a="premise", text_b="hypothesis")
    assert [(e.guid, e.text_a, e.text_b, e.label) for e in examples] == [
        ("p1", 'He said "yes.', "He agreed.", "yes"),
        ("p2", "It rained.", "The ground is dry.", "no")]
    assert report.skipped == 0


def test_jsonl_fields_by_name_and_unlabeled(tmp_path: Path):
    lines = [{"text": "good", "label": 1, "idx": 7}, {"text": "bad", "label": 0},
             {"text": "so-so", "label": True}, "not json", {"text": ""}, ["a", "list"],
             {"label": 1}, {"text": "no label"}]
    path = put(tmp_path / "data.jsonl",
               "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n\n")
    examples, report = read_table(path, text_a="text")
    assert [(e.guid, e.text_a, e.label) for e in examples] == [
        ("7", "good", "1"), ("data.jsonl:2", "bad", "0"), ("data.jsonl:3", "so-so", "true")]
    assert [p.split(": ", 1)[1] for p in report.notes] == [
        "bad JSON: Expecting value (column 1)", "'text' is empty",
        "a JSON list, expected an object", "no field 'text'", "no field 'label'"]
    unlabeled, report = read_table(path, text_a="text", label=None, fmt="jsonl")
    assert [e.label for e in unlabeled] == [None] * 4 and unlabeled[-1].text_a == "no label"


def test_missing_column_is_an_immediate_error(tmp_path: Path):
    csv_path = put(tmp_path / "a.csv", "sentence,target\nhi,1\n")
    with pytest.raises(TaskDataError, match=r"a\.csv: no column 'label'.*\['sentence', 'target'\]"):
        read_table(csv_path)
    jsonl = put(tmp_path / "a.jsonl", '{"sentence": "hi", "y": 1}\n')
    with pytest.raises(TaskDataError, match=r"no column 'premise'.*\['sentence', 'y'\]"):
        read_table(jsonl, text_a="premise", label="y")
    tsv = put(tmp_path / "a.tsv", "sentence\tlabel\nhi\t1\n")
    with pytest.raises(TaskDataError, match="no column 'other'"):
        read_table(tsv, text_b="other")


def test_format_and_file_errors(tmp_path: Path):
    with pytest.raises(TaskDataError, match="no file"):
        read_table(tmp_path / "missing.csv")
    txt = put(tmp_path / "data.txt", "sentence\tlabel\nhi\t1\n")
    with pytest.raises(TaskDataError, match="extension '.txt'"):
        read_table(txt)
    assert read_table(txt, fmt="tsv")[0][0].label == "1"
    with pytest.raises(TaskDataError, match="unknown table format"):
        read_table(txt, fmt="xml")
    array = put(tmp_path / "array.json", '[{"sentence": "hi", "label": 1}]\n')
    with pytest.raises(TaskDataError, match="JSON array"):
        read_table(array)
    with pytest.raises(TaskDataError, match="empty file"):
        read_table(put(tmp_path / "empty.csv", "\n"))


def _examples(labels: list) -> list[TextExample]:
    return [TextExample(str(i), "t", None, x) for i, x in enumerate(labels)]


def test_infer_labels_sorted_numerically_when_integers():
    assert infer_labels(_examples(["2", "10", "1", "2", None])) == ["1", "2", "10"]
    assert infer_labels(_examples(["neg", "pos", "neg"])) == ["neg", "pos"]
    assert infer_labels(_examples([None])) == []


def test_is_regression_rule_and_flag():
    assert not is_regression(_examples(["0", "1"] * 20))
    assert not is_regression(_examples([str(i) for i in range(1, 6)]))  # star ratings
    assert is_regression(_examples([f"{i / 4:.2f}" for i in range(21)]))
    assert not is_regression(_examples(["a"] + [str(i) for i in range(20)]))
    assert is_regression(_examples([0.5, 4.0]))  # float labels, as STS-B's
    assert is_regression(_examples(["1", "2"]), regression=True)
    assert not is_regression(_examples([str(i) for i in range(50)]), regression=False)
    assert not is_regression(_examples([None]))
