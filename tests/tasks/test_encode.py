"""tasks/encode.py: `encode` batches by length and puts the embeddings back in order, equal
to one text at a time; `embed_file` writes a float32 .npy of a .txt, JSON-lines or Parquet
column; a row without its text is one sentence naming file:line."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from litebert.cli import main
from litebert.model import AutoModel
from litebert.model.sentence_encoder import SentenceEncoder
from litebert.tasks.encode import as_encoder, embed_file, encode, read_texts
from litebert.tasks.examples import TaskDataError
from litebert.tokenization import Tokenizer

TEXTS = ["the bridge", "Anna visited the large museum of Kraków on 3 May with José",
         "a report", "", "the council of the river valley approved a budget", "x y z"]


@pytest.fixture(scope="module")
def bert(hf_model_dir):
    source = hf_model_dir("bert")
    return SentenceEncoder.from_pretrained(source).eval(), Tokenizer.from_pretrained(source)


def test_encode_batches_by_length_and_keeps_the_order(bert):
    encoder, tokenizer = bert
    batched = encode(encoder, tokenizer, TEXTS, batch_size=4, show_progress=False)
    alone = np.concatenate([encode(encoder, tokenizer, [t], batch_size=1, show_progress=False)
                            for t in TEXTS])
    assert batched.dtype == np.float32 and batched.shape == (len(TEXTS), 32)
    np.testing.assert_allclose(batched, alone, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-6)
    assert len({row.tobytes() for row in batched}) == len(TEXTS)


def test_encode_takes_a_backbone_with_a_pooling_and_leaves_the_mode(bert, hf_model_dir):
    encoder, tokenizer = bert
    backbone = AutoModel.from_pretrained(hf_model_dir("bert")).train()
    mine = encode(backbone, tokenizer, TEXTS, pooling="cls", show_progress=False)
    cls = encode(encoder, tokenizer, TEXTS, pooling="cls", show_progress=False)
    np.testing.assert_allclose(mine, cls, atol=1e-6)
    assert backbone.training  # put back as it was
    assert as_encoder(encoder) is encoder
    assert as_encoder(encoder, "cls").backbone is encoder.backbone
    short = encode(encoder, tokenizer, TEXTS, max_length=4, show_progress=False)
    assert not np.allclose(short[1], encode(encoder, tokenizer, TEXTS[1:2],
                                            show_progress=False)[0], atol=1e-3)


def write_texts(path, kind: str, texts: list[str]) -> None:
    if kind == "txt":
        path.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    elif kind == "jsonl":
        path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                                for i, t in enumerate(texts)))
    else:
        pq.write_table(pa.table({"text": texts, "n": list(range(len(texts)))}), path)


@pytest.mark.parametrize("kind", ["txt", "jsonl", "parquet"])
def test_embed_file_writes_one_float32_row_per_text(bert, hf_model_dir, tmp_path, kind):
    encoder, tokenizer = bert
    texts = [t for t in TEXTS if t] if kind != "txt" else TEXTS  # a blank line is a text
    path = tmp_path / f"texts.{kind}"
    write_texts(path, kind, texts)
    out = embed_file(hf_model_dir("bert"), path, tmp_path / "out.npy", batch_size=3,
                     show_progress=False)
    vectors = np.load(out)
    assert vectors.dtype == np.float32 and vectors.shape == (len(texts), 32)
    expected = encode(encoder, tokenizer, texts, show_progress=False)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npy", path.name]


def test_litebert_embed_writes_what_embed_file_does(bert, hf_model_dir, tmp_path, capsys):
    def rows(texts):
        return "".join(json.dumps({"body": t}) + "\n" for t in texts)

    path, out = tmp_path / "texts.jsonl", tmp_path / "vectors.npy"
    path.write_text(rows([t for t in TEXTS if t]), encoding="utf-8")
    assert main(["embed", str(hf_model_dir("bert")), str(path), "--out", str(out),
                 "--column", "body", "--pooling", "cls", "--batch-size", "2"]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    expected = embed_file(hf_model_dir("bert"), path, tmp_path / "direct.npy",
                          column="body", pooling="cls", batch_size=2, show_progress=False)
    np.testing.assert_array_equal(np.load(out), np.load(expected))
    path.write_text(rows(TEXTS), encoding="utf-8")  # the fourth row's text is empty
    assert main(["embed", str(hf_model_dir("bert")), str(path), "--out", str(out),
                 "--column", "body"]) == 2
    assert capsys.readouterr().err.startswith(f"litebert embed: error: {path}:4: 'body' is "
                                              f"empty")


def test_a_text_file_may_end_without_a_newline_and_start_with_a_bom(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes("\ufefffirst\r\nsecond".encode())
    assert read_texts(path) == ["first", "second"]


def test_bad_text_files_name_file_and_line(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"text": "a"}\n{"body": "b"}\n')
    with pytest.raises(TaskDataError, match=r"rows.jsonl:2: no field 'text': every row needs "
                                            r"a text, one embedding each \(1 rows without one\)"):
        read_texts(rows)
    with pytest.raises(TaskDataError, match=r"rows.jsonl: no column 'body' \(asked for as the "
                                            r"texts' column\)"):
        read_texts(rows, column="body")  # the first record stands for the header
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\xfe\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: invalid UTF-8"):
        read_texts(bad)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(TaskDataError, match="empty.txt: no texts to embed"):
        read_texts(empty)


def test_embed_file_runs_on_the_model_device(monkeypatch, hf_model_dir, tmp_path):
    """device None is the GPU when there is one (here: asked for the CPU explicitly)."""
    seen = []
    original = SentenceEncoder.to

    def spy(self, *args, **kwargs):
        seen.append(str(args[0]))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SentenceEncoder, "to", spy)
    (tmp_path / "t.txt").write_text("one\ntwo\n")
    embed_file(hf_model_dir("bert"), tmp_path / "t.txt", tmp_path / "o.npy", device="cpu",
               show_progress=False)
    assert seen == ["cpu"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    embed_file(hf_model_dir("bert"), tmp_path / "t.txt", tmp_path / "o.npy", show_progress=False)
    assert seen == ["cpu", "cpu"]
