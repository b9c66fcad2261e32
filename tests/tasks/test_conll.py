"""Tests for litebert.tasks.conll: reading CoNLL files and writing conlleval input."""

from __future__ import annotations

import gzip
import random
import warnings
from pathlib import Path

import pytest
from seqeval.metrics.sequence_labeling import precision_recall_fscore_support

from litebert.tasks.conll import conll_prediction_text, read_conll, write_conll_predictions
from litebert.tasks.entities import score_entities

CONLL2003 = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

BRUSSELS NNP B-NP B-LOC
"""


def test_reads_conll2003_with_docstart_and_no_final_blank(tmp_path: Path) -> None:
    path = tmp_path / "train.txt"
    path.write_text(CONLL2003)
    got = read_conll(path)
    assert [(s.words, s.tags, s.line) for s in got] == [
        (["EU", "rejects", "German"], ["B-ORG", "O", "B-MISC"], 3),
        (["Peter", "Blackburn"], ["B-PER", "I-PER"], 7),
        (["BRUSSELS"], ["B-LOC"], 12),
    ]


def test_tag_column_choice_and_gzip(tmp_path: Path) -> None:
    path = tmp_path / "train.txt.gz"
    with gzip.open(path, "wt") as f:
        f.write(CONLL2003)
    chunks = [s.tags for s in read_conll(path, tag_column=2)]
    assert chunks == [["B-NP", "B-VP", "B-NP"], ["B-NP", "I-NP"], ["B-NP"]]
    assert [s.tags for s in read_conll(path, tag_column=-1)][1] == ["B-PER", "I-PER"]


def test_blank_runs_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_bytes(b"\n\na O\r\nb B-PER\r\n\r\n\r\n\t\nc I-LOC\n")
    got = read_conll(path)
    assert [(s.words, s.tags, s.line) for s in got] == [
        (["a", "b"], ["O", "B-PER"], 3), (["c"], ["I-LOC"], 8)]


@pytest.mark.parametrize("text,tag_column,line,why", [
    ("a O\nb\n", None, 2, "expected a word and a tag, found 1 column"),
    ("a x O\n\nb O\n", 2, 3, "2 column(s), no tag column 2"),
    ("a O\n", 0, 1, "no tag column 0"),
    ("a O\n-DOCSTART- O\n", None, 2, "-DOCSTART- inside a sentence"),
])
def test_errors_name_file_and_line(tmp_path: Path, text: str, tag_column: int | None,
                                   line: int, why: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        read_conll(path, tag_column=tag_column)
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert why in str(info.value)


def test_bad_utf8_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"a O\n\xff O\n")
    with pytest.raises(ValueError, match=r"bad\.txt:2: not UTF-8"):
        read_conll(path)


def _random_sentences(rng: random.Random, n: int):
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-MISC"]
    out = []
    for k in range(n):
        length = rng.randint(1, 9)
        words = [f"w{k}_{i}" for i in range(length)]
        gold = [rng.choice(tags) for _ in words]
        out.append((words, gold, [t if rng.random() < 0.6 else rng.choice(tags) for t in gold]))
    return out


def test_round_trip_and_scores_equal_seqeval(tmp_path: Path) -> None:
    rng = random.Random(7)
    sentences = _random_sentences(rng, 40)
    path = write_conll_predictions(tmp_path / "out" / "predictions.txt", sentences)
    text = path.read_text()
    assert text.endswith("\n\n") and text.count("\n\n") == len(sentences)
    assert text.splitlines()[0] == " ".join(x[0] for x in sentences[0])
    gold = read_conll(path, tag_column=1)
    pred = read_conll(path)
    assert [s.words for s in gold] == [s[0] for s in sentences]
    assert [s.tags for s in gold] == [s[1] for s in sentences]
    assert [s.tags for s in pred] == [s[2] for s in sentences]
    ours = score_entities([s.tags for s in gold], [s.tags for s in pred])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p, r, f, support = precision_recall_fscore_support(
            [s[1] for s in sentences], [s[2] for s in sentences], average="micro")
    assert (ours.precision, ours.recall, ours.f1) == pytest.approx((p, r, f), abs=1e-12, rel=0)
    assert ours.gold == support


def test_writer_rejects_what_conlleval_would_misread() -> None:
    with pytest.raises(ValueError, match="sentence 0: 2 words, 2 gold tags and 1 predicted"):
        conll_prediction_text([(["a", "b"], ["O", "O"], ["O"])])
    with pytest.raises(ValueError, match="sentence 1: field 'a b'"):
        conll_prediction_text([(["x"], ["O"], ["O"]), (["a b"], ["O"], ["O"])])
