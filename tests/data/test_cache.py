"""The cache key hashes content: a copied corpus is a hit, one changed byte a miss, and the
recorded digests spare reading unchanged inputs again."""

from __future__ import annotations

import os
import shutil

import pytest

from litebert import files
from litebert.data import cache
from tests.data.builds import small_build


def test_a_copied_corpus_is_a_hit_and_a_changed_byte_a_miss(tmp_path, corpus_and_tokenizer):
    corpus, tok = corpus_and_tokenizer
    first, out = small_build(tmp_path, corpus_and_tokenizer)
    assert first["input_files"][0]["sha256"] == files.file_digest(corpus)["sha256"]
    copy = tmp_path / "elsewhere" / "copy.txt"
    copy.parent.mkdir()
    shutil.copyfile(corpus, copy)
    os.utime(copy, ns=(1, 1))  # another path and another mtime
    stamp = (out / "tokens.bin").stat().st_mtime_ns
    again, _ = small_build(tmp_path, (copy, tok))
    assert again["config_hash"] == first["config_hash"]
    assert (out / "tokens.bin").stat().st_mtime_ns == stamp  # a hit: nothing rewritten
    data = bytearray(copy.read_bytes())
    data[10] = ord("X") if data[10] != ord("X") else ord("Y")
    copy.write_bytes(bytes(data))  # the same size, one byte changed
    changed, _ = small_build(tmp_path, (copy, tok))
    assert changed["config_hash"] != first["config_hash"]
    assert (out / "tokens.bin").stat().st_mtime_ns != stamp


def test_recorded_digests_are_reused_when_path_size_and_mtime_match(tmp_path,
                                                                   corpus_and_tokenizer,
                                                                   monkeypatch):
    first, _ = small_build(tmp_path, corpus_and_tokenizer)

    def read(*args, **kwargs):
        raise AssertionError("an unchanged input was hashed again")

    monkeypatch.setattr(cache, "file_digest", read)
    again, _ = small_build(tmp_path, corpus_and_tokenizer)
    assert again["config_hash"] == first["config_hash"]
    os.utime(corpus_and_tokenizer[0])  # touched: its digest must be computed anew
    with pytest.raises(AssertionError, match="hashed again"):
        small_build(tmp_path, corpus_and_tokenizer)
