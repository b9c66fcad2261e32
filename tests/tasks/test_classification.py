"""Generic CSV / TSV / JSON-lines classification data, labels and the regression rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from litebert.tasks.base import finetune_config
from litebert.tasks.classification import infer_labels, is_regression
from litebert.tasks.examples import TaskDataError, TextExample
from litebert.tasks.tables import read_table


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


# ---------------------------------------------------------------- Parquet and datasets' folders

PAIRS = [{"premise": "a cat sat", "hypothesis": "a cat rested", "label": 1, "idx": 10},
         {"premise": "rain fell", "hypothesis": "it was dry", "label": 0, "idx": 11},
         {"premise": "", "hypothesis": "empty premise", "label": 1, "idx": 12},
         {"premise": "the sun rose", "hypothesis": None, "label": 0, "idx": 13},
         {"premise": "birds sing", "hypothesis": "birds are loud", "label": 2, "idx": 14}]


def test_parquet_and_a_saved_dataset_read_as_their_jsonl(tmp_path: Path):
    from tests.readers.tables import write_all

    paths = write_all(tmp_path / "in", PAIRS)
    read = {kind: read_table(path, text_a="premise", text_b="hypothesis")
            for kind, path in paths.items()}
    expected = [("10", "a cat sat", "a cat rested", "1"), ("11", "rain fell", "it was dry", "0"),
                ("14", "birds sing", "birds are loud", "2")]
    for kind, (examples, report) in read.items():
        assert [(e.guid, e.text_a, e.text_b, e.label) for e in examples] == expected, kind
        assert (report.read, report.missing_fields) == (3, 2), kind
    unlabeled, _ = read_table(paths["arrow"], text_a="premise", label=None)
    assert [e.label for e in unlabeled] == [None] * 4


def test_columnar_tables_refuse_a_missing_or_nested_column(tmp_path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.readers.tables import write_all

    paths = write_all(tmp_path / "in", PAIRS)
    for kind in ("parquet", "arrow"):
        with pytest.raises(TaskDataError, match=r"no column 'sentence' \(asked for as text_a\)"
                                                r".*\['premise', 'hypothesis', 'label', 'idx'\]"):
            read_table(paths[kind])
        with pytest.raises(TaskDataError, match="no column 'other'"):
            read_table(paths[kind], text_a="premise", text_b="other")
    nested = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"tokens": [["a", "b"]], "label": [1]}), nested)
    with pytest.raises(TaskDataError, match=r"nested\.parquet: column 'tokens'.*nested"):
        read_table(nested, text_a="tokens")


def test_generic_task_data_from_a_datasetdict_folder_or_one_saved_dataset(tmp_path: Path):
    """`finetune --data` names a folder as DatasetDict.save_to_disk writes it (train/ and
    validation/ beside dataset_dict.json), or one saved dataset (dev carved from it)."""
    from litebert.tasks.sequence import load_data
    from tests.readers.tables import write_dataset_folder

    root = tmp_path / "topics"
    for split, n in (("train", 40), ("validation", 10)):
        write_dataset_folder(root / split, [{"text": f"{split} text {i}", "label": i % 2}
                                            for i in range(n)])
    (root / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "validation"]}))

    def load(data: Path):
        return load_data(finetune_config(task="classification", data=str(data), model="m",
                                        out="o", text_a="text"))

    train, dev, labels = load(root)
    assert (len(train), len(dev["dev"]), labels) == (40, 10, ["0", "1"])
    assert dev["dev"][0].text_a == "validation text 0"
    train, dev, _ = load(root / "train")  # one saved dataset: a dev split is carved from it
    assert (len(train), len(dev["dev"])) == (36, 4)
