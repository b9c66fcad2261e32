"""GLUE readers on small files in each task's distributed layout, and submission files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from litebert.tasks.examples import MAX_PROBLEMS, ReadReport, TaskDataError
from litebert.tasks.glue import GLUE_TASKS, glue_task, read_glue, write_glue_predictions

MNLI_HEAD = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
             "sentence1_parse\tsentence2_parse\tsentence1\tsentence2")
STSB_HEAD = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
MRPC_TAIL = "#1 ID\t#2 ID\t#1 String\t#2 String"


def _mnli_row(i: int, s1: str, s2: str, *labels: str) -> str:
    parse = "( ( x ) )\t( ( y ) )\t(ROOT x)\t(ROOT y)"
    return "\t".join([str(i), f"{100 + i}", f"{100 + i}e", "fiction", parse, s1, s2, *labels])


# folder -> file -> lines; each file in its GLUE layout, written by the tests themselves.
LAYOUTS: dict[str, dict[str, list[str]]] = {
    "CoLA": {
        "train.tsv": ["src1\t1\t\tThe cat sat on the mat.",
                      'src1\t0\t*\tThe cat "sat the.',
                      "src1\t1\tMissing its sentence.",  # 3 fields: malformed
                      "src2\t2\t\tA label CoLA does not have.",
                      "src2\t0\t*\tMat the on sat cat."],
        "dev.tsv": ["src3\t1\t\tBirds fly south.", "src3\t0\t*\tFly birds the south."],
        "test.tsv": ["index\tsentence", "0\tShe said \"hello.", "1\tHe left early."],
    },
    "SST-2": {
        "train.tsv": ["sentence\tlabel", 'a "charming" little film \t1', "dull and long \t0"],
        "dev.tsv": ["sentence\tlabel", "one of the year 's best \t1"],
        "test.tsv": ["index\tsentence", "0\tuneven but watchable", "1\ta mess"],
    },
    "MRPC": {
        "train.tsv": [f"\ufeffQuality\t{MRPC_TAIL}",
                      "1\t101\t102\tThe firm's shares rose 5 percent.\tShares in the firm rose 5%.",
                      "0\t103\t104\tIt rained on Monday.\tThe match was on Tuesday."],
        "dev.tsv": [f"\ufeffQuality\t{MRPC_TAIL}", "1\t105\t106\tHe won.\tHe was the winner."],
        "test.tsv": [f"\ufeffindex\t{MRPC_TAIL}", "0\t107\t108\tA dog barked.\tA dog made noise."],
    },
    "STS-B": {
        "train.tsv": [f"{STSB_HEAD}\tscore",
                      "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane takes off."
                      "\tAn air plane is taking off.\t5.000",
                      "1\tmain-captions\tMSRvid\t2012test\t0004\tnone\tnone\tA man plays a flute."
                      "\tA man plays a guitar.\t1.750",
                      "2\tmain-news\tnews\t2013\t0005\tnone\tnone\tx\ty\tfive",
                      "3\tmain-news\tnews\t2013\t0006\tnone\tnone\tx\ty\t7.5"],
        "dev.tsv": [f"{STSB_HEAD}\tscore",
                    "0\tmain-forums\tforum\t2015\t0001\tnone\tnone\tYes.\tNo.\t0.2"],
        "test.tsv": [STSB_HEAD, "0\tmain-news\tnews\t2016\t0001\tnone\tnone\tA b.\tC d."],
    },
    "QQP": {
        "train.tsv": ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
                      "201\t1\t2\tHow do I learn Python?\tWhat is the best way to learn Python?\t1",
                      "202\t3\t4\tWhy is the sky blue?\tHow tall is Everest?\t0"],
        "dev.tsv": ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
                    "203\t5\t6\tWhat is \"AI\"?\tDefine AI.\t1"],
        "test.tsv": ["id\tquestion1\tquestion2", "0\tIs tea healthy?\tIs coffee healthy?"],
    },
    "MNLI": {
        "train.tsv": [f"{MNLI_HEAD}\tlabel1\tgold_label",
                      _mnli_row(0, "A man eats.", "A person eats.", "entailment", "entailment"),
                      _mnli_row(1, "A man eats.", "Nobody eats.", "contradiction",
                                "contradiction")],
        "dev_matched.tsv": [
            f"{MNLI_HEAD}\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label",
            _mnli_row(2, "It is red.", "It has a colour.", *["entailment"] * 5, "entailment"),
            _mnli_row(3, "It is red.", "It is big.", *["neutral"] * 5, "-")],  # no gold label
        "dev_mismatched.tsv": [
            f"{MNLI_HEAD}\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label",
            _mnli_row(4, "She sings.", "She is silent.", *["contradiction"] * 5,
                      "contradiction")],
        "test_matched.tsv": [MNLI_HEAD, _mnli_row(0, "He runs.", "He moves.")],
        "test_mismatched.tsv": [MNLI_HEAD, _mnli_row(0, "We swim.", "We fly."),
                                _mnli_row(1, "We swim.", "We are wet.")],
    },
    "QNLI": {
        "train.tsv": ["index\tquestion\tsentence\tlabel",
                      "0\tWhen did it open?\tIt opened in 1901.\tentailment",
                      "1\tWho built it?\tIt is made of stone.\tnot_entailment"],
        "dev.tsv": ["index\tquestion\tsentence\tlabel", "0\tWhere?\tIn Paris.\tentailment"],
        "test.tsv": ["index\tquestion\tsentence", "0\tWhy?\tBecause."],
    },
    "RTE": {
        "train.tsv": ["index\tsentence1\tsentence2\tlabel",
                      "0\tParis is the capital of France.\tParis is in France.\tentailment"],
        "dev.tsv": ["index\tsentence1\tsentence2\tlabel", "0\tA.\tB.\tnot_entailment"],
        "test.tsv": ["index\tsentence1\tsentence2", "0\tC.\tD."],
    },
    "WNLI": {
        "train.tsv": ["index\tsentence1\tsentence2\tlabel",
                      "0\tThe trophy didn't fit in the case because it was big.\t"
                      "The trophy was big.\t1"],
        "dev.tsv": ["index\tsentence1\tsentence2\tlabel", "0\tE.\tF.\t0"],
        "test.tsv": ["index\tsentence1\tsentence2", "0\tG.\tH."],
    },
    "AX": {"AX.tsv": ["index\tsentence1\tsentence2", "0\tThe cat sat.\tThe cat did not sit.",
                      "1\tAll dogs bark.\tSome dogs bark."]},
}
FOLDERS = {"cola": "CoLA", "sst2": "SST-2", "mrpc": "MRPC", "stsb": "STS-B", "qqp": "QQP",
           "mnli": "MNLI", "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI", "ax": "AX"}
# (task, split) -> examples read, rows skipped
COUNTS = {("cola", "train"): (3, 2), ("cola", "dev"): (2, 0), ("cola", "test"): (2, 0),
          ("sst2", "train"): (2, 0), ("sst2", "dev"): (1, 0), ("sst2", "test"): (2, 0),
          ("mrpc", "train"): (2, 0), ("mrpc", "dev"): (1, 0), ("mrpc", "test"): (1, 0),
          ("stsb", "train"): (2, 2), ("stsb", "dev"): (1, 0), ("stsb", "test"): (1, 0),
          ("qqp", "train"): (2, 0), ("qqp", "dev"): (1, 0), ("qqp", "test"): (1, 0),
          ("mnli", "train"): (2, 0), ("mnli", "dev_matched"): (1, 1),
          ("mnli", "dev_mismatched"): (1, 0), ("mnli", "test_matched"): (1, 0),
          ("mnli", "test_mismatched"): (2, 0),
          ("qnli", "train"): (2, 0), ("qnli", "dev"): (1, 0), ("qnli", "test"): (1, 0),
          ("rte", "train"): (1, 0), ("rte", "dev"): (1, 0), ("rte", "test"): (1, 0),
          ("wnli", "train"): (1, 0), ("wnli", "dev"): (1, 0), ("wnli", "test"): (1, 0),
          ("ax", "test"): (2, 0)}


def write_lines(path: Path, lines: list[str], newline: str = "\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((newline.join(lines) + newline).encode("utf-8"))
    return path


@pytest.fixture
def glue_root(tmp_path: Path) -> Path:
    for folder, files in LAYOUTS.items():
        for name, lines in files.items():
            write_lines(tmp_path / folder / name, lines)
    return tmp_path


def test_every_split_of_every_task_is_covered():
    assert set(GLUE_TASKS) == set(FOLDERS)
    assert {(t, s) for t, spec in GLUE_TASKS.items() for s in spec.splits} == set(COUNTS)


@pytest.mark.parametrize(("task", "split"), sorted(COUNTS))
def test_reads_each_layout(glue_root: Path, task: str, split: str):
    examples, report = read_glue(task, glue_root / FOLDERS[task], split)
    spec = GLUE_TASKS[task]
    assert (report.read, report.skipped) == COUNTS[(task, split)]
    assert len(examples) == report.read and len(report.notes) == report.skipped
    for ex in examples:
        assert ex.text_a and (ex.text_b is None) == (spec.text_b is None)
        if split.startswith("test"):
            assert ex.label is None
        elif spec.kind == "regression":
            assert isinstance(ex.label, float) and 0 <= ex.label <= 5
        else:
            assert ex.label in spec.labels


def test_cola_headerless_train_by_position_with_quotes_and_counted_skips(glue_root: Path):
    examples, report = read_glue("cola", glue_root / "CoLA", "train")
    assert [(e.guid, e.text_a, e.label) for e in examples] == [
        ("train.tsv:1", "The cat sat on the mat.", "1"),
        ("train.tsv:2", 'The cat "sat the.', "0"),  # a quote is just a character
        ("train.tsv:5", "Mat the on sat cat.", "0")]
    path = glue_root / "CoLA" / "train.tsv"
    assert report.notes[0] == f"{path}:3: 3 tab-separated fields, expected 4"
    assert report.notes[1].startswith(f"{path}:4: unknown label '2'")
    test, _ = read_glue("cola", glue_root / "CoLA", "test")
    assert [(e.guid, e.text_a) for e in test] == [("0", 'She said "hello.'),
                                                  ("1", "He left early.")]


def test_pairs_ids_and_labels(glue_root: Path):
    mrpc, _ = read_glue("mrpc", glue_root / "MRPC", "train")  # header behind a byte-order mark
    assert (mrpc[0].text_a, mrpc[0].text_b, mrpc[0].label) == (
        "The firm's shares rose 5 percent.", "Shares in the firm rose 5%.", "1")
    assert mrpc[0].guid == "train.tsv:2"  # MRPC train has no id column
    qqp, _ = read_glue("qqp", glue_root / "QQP", "dev")
    assert (qqp[0].guid, qqp[0].text_a, qqp[0].label) == ("203", 'What is "AI"?', "1")
    stsb, _ = read_glue("stsb", glue_root / "STS-B", "train")
    assert [e.label for e in stsb] == [5.0, 1.75]
    mnli, report = read_glue("mnli", glue_root / "MNLI", "dev_matched")
    assert (mnli[0].text_a, mnli[0].text_b, mnli[0].label) == (
        "It is red.", "It has a colour.", "entailment")
    assert "unknown label '-'" in report.notes[0]
    mm, _ = read_glue("mnli", glue_root / "MNLI", "test_mismatched")
    assert [e.text_b for e in mm] == ["We fly.", "We are wet."]


def test_stsb_bad_scores_are_counted(glue_root: Path):
    _, report = read_glue("stsb", glue_root / "STS-B", "train")
    path = glue_root / "STS-B" / "train.tsv"
    assert report.notes == [f"{path}:4: score 'five' is not a number",
                               f"{path}:5: score '7.5' is outside 0-5"]


def test_columns_by_header_name_with_extra_columns_and_crlf(tmp_path: Path):
    write_lines(tmp_path / "train.tsv", ["label\tsource\tsentence", "1\tweb\tgood", "0\tweb\tbad"],
                newline="\r\n")
    examples, report = read_glue("SST-2", tmp_path, "train")  # the benchmark's spelling
    assert [(e.text_a, e.label) for e in examples] == [("good", "1"), ("bad", "0")]
    assert report.skipped == 0


def test_invalid_utf8_line_is_a_counted_skip(tmp_path: Path):
    path = tmp_path / "dev.tsv"
    path.write_bytes(b"sentence\tlabel\nfine\t1\nbad \xff byte\t0\nalso fine\t0\n")
    examples, report = read_glue("sst2", tmp_path, "dev")
    assert [e.text_a for e in examples] == ["fine", "also fine"]
    assert report.skipped == 1 and report.notes[0].startswith(f"{path}:3: invalid UTF-8")


def test_errors_name_the_path_and_the_choices(glue_root: Path, tmp_path: Path):
    with pytest.raises(TaskDataError, match="choose from .*'cola'"):
        read_glue("squad", glue_root, "train")
    with pytest.raises(TaskDataError, match="dev_matched"):
        read_glue("mnli", glue_root / "MNLI", "dev")
    (glue_root / "RTE" / "train.tsv").unlink()
    with pytest.raises(TaskDataError, match=r"no file .*RTE.*train\.tsv.*holds: dev\.tsv"):
        read_glue("rte", glue_root / "RTE", "train")
    write_lines(tmp_path / "q" / "train.tsv",
                ["index\tquestion\ttext\tlabel", "0\ta\tb\tentailment"])
    with pytest.raises(TaskDataError, match=r"no column 'sentence'.*\['index', 'question'"):
        read_glue("qnli", tmp_path / "q", "train")
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "test.tsv").write_text("")
    with pytest.raises(TaskDataError, match="empty file"):
        read_glue("wnli", tmp_path / "e", "test")


def test_glue_root_is_accepted_as_task_dir(glue_root: Path):
    examples, _ = read_glue("sts-b", glue_root, "dev")
    assert glue_task("STS_B").name == "stsb" and examples[0].label == pytest.approx(0.2)


def test_report_keeps_the_first_problems_and_counts_all(tmp_path: Path):
    rows = ["sentence\tlabel"] + [f"row {i}\tmaybe" for i in range(30)] + ["ok\t1"]
    write_lines(tmp_path / "train.tsv", rows)
    examples, report = read_glue("sst2", tmp_path, "train")
    assert len(examples) == 1 and report.skipped == 30 and len(report.notes) == MAX_PROBLEMS
    summary = report.summary()
    assert "read 1 examples, skipped 30" in summary
    assert f"skipped 30 rows with an unknown label or an unusable score; first: " \
           f"{tmp_path / 'train.tsv'}:2: unknown label 'maybe'" in summary
    assert report.counts == {"bad_labels": 30} and report.bad_labels == 30
    assert ReadReport("x").summary() == "x: read 0 examples, skipped 0"


# ---------------------------------------------------------------- submissions


def _read_tsv(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]


def test_classification_submission_from_labels_or_indices(tmp_path: Path):
    path = write_glue_predictions("cola", "test", [1, "0", np.int64(1)], tmp_path / "out")
    assert path.name == "CoLA.tsv"
    assert _read_tsv(path) == [["index", "prediction"], ["0", "1"], ["1", "0"], ["2", "1"]]
    path = write_glue_predictions("qnli", "test", [1, "entailment"], tmp_path)
    assert _read_tsv(path)[1:] == [["0", "not_entailment"], ["1", "entailment"]]


def test_stsb_submission_rounds_to_three_decimals(tmp_path: Path):
    path = write_glue_predictions("stsb", "test", [4.12345, 0, np.float32(2.9996)], tmp_path)
    assert path.name == "STS-B.tsv"
    assert _read_tsv(path)[1:] == [["0", "4.123"], ["1", "0.000"], ["2", "3.000"]]


def test_submission_file_names(tmp_path: Path):
    names = {(t, s): write_glue_predictions(t, s, [0], tmp_path).name
             for t, spec in GLUE_TASKS.items() for s in spec.splits if s.startswith("test")}
    assert names == {("cola", "test"): "CoLA.tsv", ("sst2", "test"): "SST-2.tsv",
                     ("mrpc", "test"): "MRPC.tsv", ("stsb", "test"): "STS-B.tsv",
                     ("qqp", "test"): "QQP.tsv", ("mnli", "test_matched"): "MNLI-m.tsv",
                     ("mnli", "test_mismatched"): "MNLI-mm.tsv", ("qnli", "test"): "QNLI.tsv",
                     ("rte", "test"): "RTE.tsv", ("wnli", "test"): "WNLI.tsv",
                     ("ax", "test"): "AX.tsv"}
    assert _read_tsv(tmp_path / "AX.tsv")[1] == ["0", "contradiction"]  # MNLI's label order


def test_submission_errors(tmp_path: Path):
    with pytest.raises(TaskDataError, match="test_matched"):
        write_glue_predictions("mnli", "dev_matched", [0], tmp_path)
    with pytest.raises(TaskDataError, match="prediction 1"):
        write_glue_predictions("rte", "test", [0, "maybe"], tmp_path)
    with pytest.raises(TaskDataError, match="prediction 0"):
        write_glue_predictions("sst2", "test", [2], tmp_path)
    with pytest.raises(TaskDataError, match="not a finite STS-B score"):
        write_glue_predictions("stsb", "test", [float("nan")], tmp_path)
    assert not list(tmp_path.iterdir())  # nothing half-written
