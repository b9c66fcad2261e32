"""Damaged data directories: sizes checked on every open, checksums by verify_data, and older
manifests (no file records) still open."""

from __future__ import annotations

import json
import logging
import zlib

import numpy as np
import pytest

from litebert.cli import main
from litebert.data.integrity import DataError, verify_data
from litebert.data.loader import PretrainingDataset
from tests.data.builds import small_build


@pytest.fixture
def built(tmp_path, corpus_and_tokenizer):
    """A fresh static-masking directory (it has every kind of file) per test: tests damage it."""
    manifest, out = small_build(tmp_path, corpus_and_tokenizer, masking="static")
    return manifest, out


def truncate(path, keep_fraction=0.5):
    """Cut on an 8-byte boundary, as a partial copy does: the arrays still map, only shorter
    (before the size check: a broadcast error deep in __getitem__)."""
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep_fraction) // 8 * 8])


def flip_one_byte(path, offset=100):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_manifest_records_every_data_file(built):
    manifest, out = built
    files = manifest["files"]
    assert {"tokens.bin", "token_counts.bin", "sentences.bin", "documents.bin",
            "train.instances.bin", "train.masks.bin", "train.mask_index.bin",
            "heldout.instances.bin", "heldout.masks.bin", "heldout.mask_index.bin",
            "tokenizer/spiece.model", "tokenizer/tokenizer_config.json",
            "tokenizer/tokenizer.json", "block_checksums.bin"} == set(files)
    for name, record in files.items():
        assert record["size"] == (out / name).stat().st_size
        assert len(record["sha256"]) == 64
    # Every array's blocks, in one table of crc32s: the arrays' blocks, file after file.
    blocks = manifest["blocks"]
    arrays = sorted(n for n in files if n.endswith(".bin") and n != "block_checksums.bin")
    assert sorted(blocks["first"]) == arrays
    crcs = np.fromfile(out / "block_checksums.bin", "<u4")
    for name in arrays:
        data = (out / name).read_bytes()
        first = blocks["first"][name]
        mine = [zlib.crc32(data[at:at + blocks["bytes"]])
                for at in range(0, len(data), blocks["bytes"])]
        assert crcs[first:first + len(mine)].tolist() == mine


def test_intact_directory_verifies(built):
    manifest, out = built
    summary = verify_data(out)
    assert summary == {"directory": str(out), "files": len(manifest["files"]),
                       "bytes": sum(r["size"] for r in manifest["files"].values()), "ok": True}


def test_truncated_tokens_is_a_clear_error_on_open(built, capsys):
    _, out = built
    truncate(out / "tokens.bin")
    with pytest.raises(DataError, match=r"(?s)tokens\.bin: .*cut short.*--force") as err:
        PretrainingDataset(out)
    assert "sentences.bin" not in str(err.value)  # only the damaged file is named
    for command in (["data", "stats", str(out)], ["data", "inspect", str(out)]):
        assert main(command) == 2
        shown = capsys.readouterr().err
        assert "tokens.bin" in shown and "--force" in shown
    with pytest.raises(DataError, match="tokens.bin"):
        verify_data(out)


def test_missing_tokenizer_file_is_named(built):
    _, out = built
    (out / "tokenizer" / "spiece.model").unlink()
    with pytest.raises(DataError, match=r"(?s)tokenizer/spiece\.model: missing.*--force"):
        PretrainingDataset(out)


def test_changed_byte_opens_but_does_not_verify(built):
    _, out = built
    flip_one_byte(out / "tokens.bin")
    assert len(PretrainingDataset(out)) > 0  # the size is right: opening stays cheap
    with pytest.raises(DataError, match=r"(?s)tokens\.bin: sha256 differs.*--force") as err:
        verify_data(out)
    assert "1 file(s)" in str(err.value)


def test_damaged_cache_hit_is_rebuilt(tmp_path, corpus_and_tokenizer, built):
    first, out = built
    truncate(out / "train.masks.bin")
    again, _ = small_build(tmp_path, corpus_and_tokenizer, masking="static")  # no --force
    assert again["files"] == first["files"]
    assert verify_data(out)["ok"]


def test_older_manifest_opens_with_a_warning(built, caplog):
    manifest, out = built
    del manifest["files"], manifest["blocks"]  # as written before it recorded files
    (out / "manifest.json").write_text(json.dumps(manifest))
    with caplog.at_level(logging.WARNING, logger="litebert"):
        assert len(PretrainingDataset(out)) > 0
    assert "records no file sizes" in caplog.text and "--force" in caplog.text
    with pytest.raises(DataError, match="records no checksums.*--force"):
        verify_data(out)
    truncate(out / "tokens.bin")  # its counts still tell the arrays' sizes
    with pytest.raises(DataError, match=r"(?s)tokens\.bin: .*cut short"):
        PretrainingDataset(out)


def test_unreadable_manifest_is_named(built):
    _, out = built
    truncate(out / "manifest.json")
    with pytest.raises(DataError, match=r"manifest\.json: not a valid manifest.*--force"):
        PretrainingDataset(out)


def test_cli_data_verify(built, capsys):
    _, out = built
    assert main(["data", "verify", str(out)]) == 0
    assert "all as the manifest records" in capsys.readouterr().out
    flip_one_byte(out / "train.instances.bin")
    assert main(["data", "verify", str(out)]) == 2
    err = capsys.readouterr().err
    assert "train.instances.bin: sha256 differs" in err and "--force" in err


def test_a_corpus_given_as_data_says_so_with_the_build_command(corpus_and_tokenizer, tmp_path,
                                                              capsys):
    """Not `--out corpus.txt`, which would build onto the corpus: the build that reads it."""
    corpus, _ = corpus_and_tokenizer
    assert main(["pretrain", "--data", str(corpus), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"{corpus}: a corpus file (format bert), not a data directory" in err
    assert f"`litebert data build {corpus} --tokenizer TOKENIZER_DIR --out DATA_DIR`" in err
    assert f"--out {corpus}" not in err
    with pytest.raises(DataError, match="corpus file"):
        PretrainingDataset(corpus)

