"""Damage of the same size (bytes flipped, overwritten) is found as training reads: each
block is verified the first time a process reads it, and the first bad one stops the run
with one sentence naming the file, the block and `litebert data verify`, before anything
read from it reaches the model."""

from __future__ import annotations

import json
import logging
import multiprocessing
import re
import shutil

import numpy as np
import pytest

from litebert.cli import main
from litebert.data import blocks
from litebert.data.blocks import CorruptBlock
from litebert.data.heldout import draw_eval_set, open_heldout
from litebert.data.integrity import DataError
from litebert.data.loader import PretrainingDataset, RankSampler
from litebert.objectives.plm_data import PLMDataset
from litebert.tokenization import Tokenizer
from litebert.train.feed import DataPosition, batches
from tests.data.builds import small_build
from tests.helpers.launch import pretrain_args

BLOCK = 1024  # bytes per block in these builds: tokens.bin spans some 20 of them


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, corpus_and_tokenizer):
    root = tmp_path_factory.mktemp("blocks")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(blocks, "BLOCK_BYTES", BLOCK)
        _, out = small_build(root, corpus_and_tokenizer)
    return out


@pytest.fixture
def data(pristine, tmp_path):
    """A fresh copy per test: tests damage it."""
    return shutil.copytree(pristine, tmp_path / "data")


def flip(path, offsets):
    raw = bytearray(path.read_bytes())
    for at in offsets:
        raw[at] ^= 0xFF
    path.write_bytes(bytes(raw))


def every_200th_byte_ff(path):
    raw = bytearray(path.read_bytes())
    raw[::200] = b"\xff" * len(raw[::200])
    path.write_bytes(bytes(raw))


def sentence(directory, name, block, what="differs from its checksum"):
    """The one sentence of a bad block, as a pattern."""
    start = block * BLOCK
    return (re.escape(f"{directory / name}: block {block} (bytes {start:,} to ")
            + r"[\d,]+\) " + re.escape(what) + r".*" + re.escape(
                f"nothing was trained on it: run `litebert data verify {directory}`"))


def rows_of(directory):
    return np.fromfile(directory / "train.instances.bin", np.int64).reshape(-1, 5)


def reads_block(row, block):
    """Whether instance `row` (FIELDS) reads tokens of tokens.bin's block `block` (uint16)."""
    lo, hi = block * BLOCK // 2, (block + 1) * BLOCK // 2
    return any(length and start < hi and start + length > lo
               for start, length in ((row[0], row[1]), (row[2], row[3])))


def test_flipped_bytes_stop_the_first_item_that_reads_their_block(data):
    flip(data / "tokens.bin", [3 * BLOCK + 100, 3 * BLOCK + 101])
    dataset = PretrainingDataset(data)  # sizes are right: it opens
    rows = rows_of(data)
    bad = next(i for i, row in enumerate(rows) if reads_block(row, 3))
    clean = [i for i, row in enumerate(rows) if not reads_block(row, 3)][:20]
    for i in clean:  # items elsewhere read as before
        dataset[i]
    with pytest.raises(CorruptBlock, match=sentence(data, "tokens.bin", 3)):
        dataset[bad]
    with pytest.raises(CorruptBlock):  # and every time after
        dataset[bad]


def test_reading_one_item_verifies_only_the_blocks_it_reads(data):
    dataset = PretrainingDataset(data)
    dataset[0]
    verified = int(dataset.tokens.verified.sum())
    assert 1 <= verified <= 3 < len(dataset.tokens.verified)


def test_every_200th_byte_set_to_ff_is_found(data):
    every_200th_byte_ff(data / "tokens.bin")
    with pytest.raises(CorruptBlock, match=r"tokens\.bin: block \d+ .*litebert data verify"):
        PretrainingDataset(data)[0]


def test_a_damaged_instance_row_is_named_not_a_numpy_error(data):
    row = 7
    flip(data / "train.instances.bin", [row * 40 + 3])  # a_start of row 7
    dataset = PretrainingDataset(data)
    with pytest.raises(CorruptBlock, match=sentence(data, "train.instances.bin",
                                                    row * 40 // BLOCK)):
        dataset[row]


def test_damaged_block_checksums_are_named_when_the_directory_opens(data):
    flip(data / "block_checksums.bin", [5])
    with pytest.raises(CorruptBlock, match=r"block_checksums\.bin: the block checksums differ "
                                           r".*litebert data verify"):
        PretrainingDataset(data)


def test_an_older_directory_checks_ids_against_the_vocabulary_and_says_so_once(data, caplog):
    manifest = json.loads((data / "manifest.json").read_text())
    del manifest["blocks"]  # as a build before block checksums wrote it
    (data / "manifest.json").write_text(json.dumps(manifest))
    with caplog.at_level(logging.WARNING, logger="litebert"):
        PretrainingDataset(data)[0]
        PretrainingDataset(data, "heldout")[0]
    vocab = len(Tokenizer.from_pretrained(data / "tokenizer"))
    said = [r.getMessage() for r in caplog.records if "block checksums" in r.getMessage()]
    assert said == [f"{data}: manifest.json records no block checksums (built before they "
                    "were), so reading checks only that token ids are below the vocabulary "
                    f"size ({vocab}); `litebert data verify {data}` is the only check of the "
                    "rest"]
    every_200th_byte_ff(data / "tokens.bin")
    with pytest.raises(CorruptBlock, match=r"tokens\.bin: block \d+ .* holds token id [\d,]+, "
                                           rf"outside the vocabulary of {vocab}.*data verify"):
        PretrainingDataset(data)[0]


def test_a_loader_worker_reports_the_one_sentence(data):
    every_200th_byte_ff(data / "tokens.bin")
    dataset = PretrainingDataset(data)
    sampler = RankSampler(len(dataset), 0, 1, seed=1)
    with pytest.raises(CorruptBlock) as caught:
        next(batches(dataset, sampler, 4, 1, DataPosition()))
    assert not multiprocessing.active_children()  # the worker ended with the error
    text = str(caught.value)
    assert re.fullmatch(r"\S+tokens\.bin: block \d+ \(bytes [\d,]+ to [\d,]+\) differs .*"
                        r"then rebuild", text)
    assert "Caught" not in text and "Traceback" not in text and "\n" not in text


def test_pretrain_stops_before_a_step_on_damaged_tokens(data, tmp_path, capsys):
    """A 30-step run on such a file finished with exit 0, trained on the damaged ids."""
    every_200th_byte_ff(data / "tokens.bin")
    run = tmp_path / "run"
    assert main(pretrain_args(data, run, 2, 8, "--num-workers", "1")) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.fullmatch(r"litebert pretrain: error: \S+tokens\.bin: block \d+ .*litebert "
                        r"data verify .*then rebuild", err)
    metrics = run / "metrics.jsonl"
    steps = [json.loads(x) for x in metrics.read_text().splitlines()] if metrics.exists() else []
    assert not [x for x in steps if "loss" in x]  # not one step trained


def test_the_held_out_evaluation_set_is_read_through_the_checks_too(data):
    every_200th_byte_ff(data / "tokens.bin")
    held = open_heldout(data)
    with pytest.raises(CorruptBlock, match=r"tokens\.bin: block \d+ .*litebert data verify"):
        draw_eval_set(held, instances=8, seed=0, batch_size=4)


def test_a_damaged_stream_is_found_by_plm_items(tmp_path, corpus_and_tokenizer):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(blocks, "BLOCK_BYTES", BLOCK)
        _, out = small_build(tmp_path, corpus_and_tokenizer, objective="none",
                             packing="streams")
    flip(out / "train.stream.bin", [BLOCK + 10])
    dataset = PLMDataset(out)
    dataset[0]  # block 0 is fine
    with pytest.raises(DataError, match=sentence(out, "train.stream.bin", 1)):
        for index in range(len(dataset)):
            dataset[index]
