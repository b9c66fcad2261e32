"""`data build --shard I/N` + `data merge`: the merged directory is a single build's."""

from __future__ import annotations

import json
import shutil

import pytest

from litebert.cli import main
from litebert.data import parts
from litebert.data.builder import BuildConfig, build
from litebert.data.integrity import DataError
from litebert.data.merge import merge

BUILD = ["--max-seq-length", "64", "--format", "bert", "--heldout-fraction", "0.1",
         "--workers", "1"]


@pytest.fixture(scope="module")
def shards(tmp_path_factory, corpus_and_tokenizer):
    """Shards 0-2 of 3 (parts of 4000 bytes: files cut mid-way), built through the CLI."""
    corpus, tok = corpus_and_tokenizer
    root = tmp_path_factory.mktemp("merge")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(parts, "PART_BYTES", 4000)
        for i in range(3):
            assert main(["data", "build", str(corpus), "--tokenizer", str(tok), "--out",
                         str(root / "shards" / str(i)), "--shard", f"{i}/3", *BUILD]) == 0
    return root


def test_merged_shards_equal_a_single_build(shards, corpus_and_tokenizer, capsys):
    corpus, tok = corpus_and_tokenizer
    assert main(["data", "merge", str(shards / "shards"), "--out", str(shards / "merged"),
                 "--workers", "1"]) == 0
    single = build([corpus], tok, shards / "single",
                   BuildConfig(max_seq_length=64, format="bert", heldout_fraction=0.1))
    merged = json.loads((shards / "merged" / "manifest.json").read_text())
    counts = [json.loads((shards / "shards" / str(i) / "manifest.json").read_text())["counts"]
              for i in range(3)]
    assert all(c["documents"] for c in counts)  # every shard holds part of the corpus
    assert {k: v for k, v in merged.items() if k != "seconds"} == \
        {k: v for k, v in single.items() if k != "seconds"}  # files' sha256 included
    stamp = (shards / "merged" / "tokens.bin").stat().st_mtime_ns
    again = build([corpus], tok, shards / "merged",
                  BuildConfig(max_seq_length=64, format="bert", heldout_fraction=0.1))
    assert again["seconds"] == merged["seconds"]  # a cache hit: the manifest as it was
    assert (shards / "merged" / "tokens.bin").stat().st_mtime_ns == stamp


def test_a_missing_shard_is_named(shards, tmp_path, capsys):
    assert main(["data", "merge", str(shards / "shards" / "0"), str(shards / "shards" / "2"),
                 "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "shard(s) 1 of 3 missing" in err and "--shard I/3" in err


def test_a_shard_of_another_config_is_named(shards, corpus_and_tokenizer, tmp_path):
    corpus, tok = corpus_and_tokenizer
    other = tmp_path / "other"
    for i in (0, 2):
        shutil.copytree(shards / "shards" / str(i), other / str(i))
    build([corpus], tok, other / "1", BuildConfig(max_seq_length=64, format="bert",
                                                  heldout_fraction=0.1, seed=7), shard=(1, 3))
    with pytest.raises(DataError, match=r"other/1: its config differs from .*/0's"):
        merge([other], tmp_path / "m")
