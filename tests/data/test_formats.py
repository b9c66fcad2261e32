"""`data build` from the datasets ecosystem's files: the same documents as JSON lines, as a
Parquet file and as a save_to_disk folder build the same data directory, and a binary file
is never built as text (issue 18: a Parquet file built as one "document" of repaired bytes)."""

from __future__ import annotations

import json

import pytest

from litebert.cli import main
from litebert.data.builder import BuildConfig, build
from tests.readers.tables import documents, write_all

# Manifest fields that name the inputs (their paths; their sizes and sha256, also in the cache
# key; the reader's report, with file:line examples and the format's name) or the clock.
# Everything else must be equal, "files" (every data file's sha256) included.
INPUT_FIELDS = ("inputs", "input_files", "config_hash", "corpus", "corpus_summary", "seconds")
COUNTS = ("documents", "sentences", "characters", "skipped", "repaired")


def _manifest(out):
    manifest = json.loads((out / "manifest.json").read_text())
    return {k: v for k, v in manifest.items() if k not in INPUT_FIELDS}


def test_jsonl_parquet_and_a_saved_dataset_build_identical_directories(tmp_path,
                                                                        corpus_and_tokenizer):
    _, tokenizer = corpus_and_tokenizer
    rows = documents(60)
    paths = write_all(tmp_path / "in", rows)
    cfg = BuildConfig(max_seq_length=64, heldout_fraction=0.1, masking="static")
    outs = {}
    for kind, path in paths.items():
        manifest = build([path], tokenizer, tmp_path / kind, cfg, workers=1)
        assert manifest["counts"]["documents"] == len(rows), kind
        assert manifest["corpus"]["formats"] == {kind: 1}
        outs[kind] = tmp_path / kind
    reference = outs.pop("jsonl")
    arrays = sorted(p.name for p in reference.glob("*.bin"))
    assert {"tokens.bin", "documents.bin", "train.instances.bin", "train.masks.bin"} <= set(arrays)
    for kind, out in outs.items():
        assert sorted(p.name for p in out.glob("*.bin")) == arrays
        for name in arrays:
            assert (out / name).read_bytes() == (reference / name).read_bytes(), (kind, name)
        assert _manifest(out) == _manifest(reference), kind
        corpus = json.loads((out / "manifest.json").read_text())["corpus"]
        expected = json.loads((reference / "manifest.json").read_text())["corpus"]
        assert [corpus[k] for k in COUNTS] == [expected[k] for k in COUNTS], kind
        assert (out / "manifest.json").read_text().count(str(paths[kind])) > 0


def test_the_cli_builds_a_parquet_file_and_a_saved_dataset(tmp_path, corpus_and_tokenizer,
                                                          capsys):
    _, tokenizer = corpus_and_tokenizer
    paths = write_all(tmp_path / "in", documents(30))
    for kind in ("parquet", "arrow"):
        code = main(["data", "build", str(paths[kind]), "--tokenizer", str(tokenizer),
                     "--out", str(tmp_path / kind), "--text-field", "text",
                     "--max-seq-length", "64", "--workers", "1"])
        assert code == 0
        manifest = json.loads((tmp_path / kind / "manifest.json").read_text())
        assert manifest["counts"]["documents"] == 30, kind  # not 1 (or 3) "documents"
        assert manifest["corpus"]["repaired"] == 0
    capsys.readouterr()


@pytest.mark.parametrize("name", ["blob.bin", "notes.txt", "docs.jsonl"])
def test_a_binary_file_is_refused_naming_it_and_the_formats(tmp_path, corpus_and_tokenizer,
                                                          capsys, name):
    _, tokenizer = corpus_and_tokenizer
    blob = tmp_path / name
    blob.write_bytes(bytes(range(256)) * 64)  # NUL bytes and invalid UTF-8
    code = main(["data", "build", str(blob), "--tokenizer", str(tokenizer),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "out" / "manifest.json").exists()
    assert f"{blob}: not text" in err
    assert "JSON lines" in err and "Parquet" in err and "save_to_disk" in err


def test_a_missing_text_field_names_the_columns(tmp_path, corpus_and_tokenizer, capsys):
    _, tokenizer = corpus_and_tokenizer
    paths = write_all(tmp_path / "in", documents(10))
    for kind in ("parquet", "arrow"):
        code = main(["data", "build", str(paths[kind]), "--tokenizer", str(tokenizer),
                     "--out", str(tmp_path / kind), "--text-field", "body"])
        err = capsys.readouterr().err
        assert code == 2, kind
        assert "no column 'body'" in err and "['text', 'label']" in err, err
