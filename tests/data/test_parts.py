"""Parts of a corpus read by the workers of `data build`: small parts that cut files mid-way
give the very output of a sequential read, whatever the number of workers."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from litebert.data import parts
from litebert.data.builder import BuildConfig, build
from litebert.data.parts import document_span, plan_parts
from litebert.data.pass1 import encode_documents
from litebert.data.shard_plan import assign
from litebert.readers import CorpusStats, read_documents
from litebert.readers.text import document_boundary
from litebert.tokenization import Tokenizer
from tests.data.builds import write_corpus
from tests.readers.tables import documents

ARRAYS = ("tokens.bin", "sentences.bin", "documents.bin",
          "token_counts.bin", "train.instances.bin", "heldout.instances.bin")  # pass 1 and 2


def messy_bert(path, seed=0):
    """BERT format with what a boundary must survive: a BOM, CRLF and whitespace-only lines,
    runs of blank lines, an invalid UTF-8 line, one-sentence documents (noted by file:line),
    a document that spans several parts."""
    clean = write_corpus(path, docs=60, seed=seed).read_bytes()
    docs = clean.split(b"\n\n")
    docs[3] = docs[3].replace(b"\n", b"\r\n")
    docs[7] += b"\n \t\n\n"
    docs[11] = docs[11] + b"\nBad \xff byte here."
    docs[20] = b"\n".join(docs[20:30])  # a document longer than several parts
    path.write_bytes(b"\xef\xbb\xbf" + b"\n\n".join(docs))
    return path


def messy_jsonl(path):
    rows = [json.dumps(r) for r in documents(60, seed=1)]
    rows[5], rows[20] = "{not json", json.dumps({"other": 1})
    rows[30] = json.dumps({"text": "One sentence only."})
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def parquet_file(path):
    pq.write_table(pa.Table.from_pylist(documents(60, seed=2)), path, row_group_size=6)
    return path


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    root = tmp_path_factory.mktemp("parts")
    return {"bert": messy_bert(root / "a.txt"), "jsonl": messy_jsonl(root / "b.jsonl"),
            "parquet": parquet_file(root / "c.parquet")}


def test_document_boundary_moves_to_the_next_blank_line(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"One.\nTwo.\n\nThree.\n  \nFour.")
    assert document_boundary(path, 0, 100) == 0
    assert document_boundary(path, 1, 100) == 10  # mid "One." -> the blank line after Two.
    assert document_boundary(path, 11, 100) == 18  # "Three." starts at 11: its blank line
    assert document_boundary(path, 19, 100) == len(path.read_bytes())  # no blank line left
    assert document_boundary(path, 1, 100, until=5) == 5  # gives up at `until`


def test_parts_are_fixed_by_the_inputs_and_shards_tile_them(corpora, monkeypatch):
    monkeypatch.setattr(parts, "PART_BYTES", 1500)
    planned = plan_parts([corpora["bert"], corpora["parquet"]], "auto")
    bert = [p for p in planned if p.kind == "bert"]
    assert len(bert) > 5 and bert[0].first and bert[-1].last
    assert [p.stop for p in bert[:-1]] == [p.start for p in bert[1:]]
    spans = [document_span(p) for p in bert]
    assert any(a == b for a, b in spans)  # a part inside the long document reads nothing
    spans = [(a, b) for a, b in spans if a < b]
    assert [b for _, b in spans[:-1]] == [a for a, _ in spans[1:]]  # the others tile the file
    assert spans[0][0] == 0 and spans[-1][1] == corpora["bert"].stat().st_size
    assert sum(p.kind == "parquet" for p in planned) > 1
    chosen = assign(planned, 3)
    assert [p for c in chosen for p in c] == planned and all(chosen)


def _one_process(inputs, tok_dir, fmt):
    """What a sequential read gives: arrays from read_documents + encode_documents, and the
    corpus report (today's parent-reading build)."""
    tok = Tokenizer.from_pretrained(tok_dir)
    stats = CorpusStats()
    docs = [d.sentences for d in read_documents(inputs, fmt=fmt, stats=stats)]
    ids, lengths, per_doc = encode_documents(docs, tok)
    return ids, np.cumsum([0, *lengths]), np.cumsum([0, *per_doc]), stats.to_dict()


def _build(tmp_path, name, tok, fmt, inputs, workers, monkeypatch):
    monkeypatch.setattr(parts, "PART_BYTES", 1500)  # many parts, files cut mid-way
    assert len(plan_parts(inputs, fmt)) > 3
    cfg = BuildConfig(max_seq_length=64, format=fmt, heldout_fraction=0.1)
    return build(inputs, tok, tmp_path / name, cfg, workers=workers), tmp_path / name


@pytest.mark.parametrize("fmt", ["bert", "jsonl", "parquet"])
def test_parts_read_exactly_what_a_sequential_read_does(tmp_path, corpora,
                                                        corpus_and_tokenizer, monkeypatch, fmt):
    """Arrays and the corpus report (counts, bytes, every "file:line" example) equal those
    of reading the files one after the other, as the parent did before workers read."""
    _, tok = corpus_and_tokenizer
    inputs = [corpora[fmt]]
    manifest, out = _build(tmp_path, "one", tok, fmt, inputs, 1, monkeypatch)
    ids, sentences, docs, report = _one_process(inputs, tok, fmt)
    assert np.array_equal(np.fromfile(out / "tokens.bin", np.uint16), ids)
    assert np.array_equal(np.fromfile(out / "sentences.bin", np.int64), sentences)
    assert np.array_equal(np.fromfile(out / "documents.bin", np.int64), docs)
    assert manifest["corpus"] == report
    assert report["kinds"]  # the corpus has problems to report (one-sentence docs at least)


@pytest.mark.slow  # 3 builds in process pools per format: about a minute each here
@pytest.mark.parametrize("fmt", ["bert", "jsonl", "parquet"])
def test_output_is_the_same_for_1_2_3_workers(tmp_path, corpora, corpus_and_tokenizer,
                                              monkeypatch, fmt):
    _, tok = corpus_and_tokenizer
    built = {w: _build(tmp_path, str(w), tok, fmt, [corpora[fmt]], w, monkeypatch)
             for w in (1, 2, 3)}
    for w in (2, 3):
        for name in ARRAYS:
            assert (built[1][1] / name).read_bytes() == (built[w][1] / name).read_bytes()
        for field in ("counts", "splits", "corpus"):
            assert built[w][0][field] == built[1][0][field], (w, field)
