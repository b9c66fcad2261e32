"""The table cache (tasks/table_cache.py) and the inputs built from it (tasks/table_inputs.py):
the same batches as tokenizing each example in memory, one tokenization per table and
tokenizer whatever the seeds and runs, bad rows reported from the cache as from a read."""

from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

import litebert
from litebert.tasks import table_cache
from litebert.tasks.base import FinetuneConfig, finetune_config
from litebert.tasks.batching import length_batches, pad_for
from litebert.tasks.sequence import encode_examples, load_data
from litebert.tasks.table_inputs import TableRows, select_rows, truncated_lengths
from litebert.tasks.table_splits import load_tables
from litebert.tokenization import train_tokenizer
from litebert.tokenization.tokenizer import _truncated_lengths

WORDS = ("the film was and plot actors story it a really great fine lovely awful poor "
         "dreadful boring council opened market in 1990 again who what where which").split()


def sentence(rng: np.random.Generator, low: int = 1, high: int = 14) -> str:
    """A few words, often more than max_seq_length's budget, sometimes one."""
    return " ".join(rng.choice(WORDS, rng.integers(low, high)))


@pytest.fixture(scope="module", params=["sentencepiece", "xlnet", "bpe"])
def tokenizer_dir(request, tmp_path_factory) -> Path:
    """A tiny tokenizer of each template: ALBERT's [CLS] A [SEP] B [SEP], XLNet's A <sep> B
    <sep> <cls> padded on the left, RoBERTa's <s> A </s></s> B </s>."""
    root = tmp_path_factory.mktemp(request.param)
    rng = np.random.default_rng(0)
    text = root / "text.txt"
    text.write_text("\n".join(sentence(rng) for _ in range(300)) + "\n")
    trained = train_tokenizer(request.param, [text], root / "tok",
                              vocab_size=300 if request.param == "bpe" else 120)
    model = root / "model"
    litebert.Tokenizer.from_pretrained(trained if trained.is_dir() else trained.parent) \
        .save_pretrained(model)
    return model


def write_tsv(path: Path, header: list[str], rows: list[tuple]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(["\t".join(header)] + ["\t".join(map(str, r)) for r in rows])
                    + "\n", encoding="utf-8")
    return path


def glue_stsb(root: Path, n: int = 90) -> Path:
    """STS-B: sentence pairs with scores (regression)."""
    rng = np.random.default_rng(1)
    for split in ("train", "dev"):
        write_tsv(root / f"{split}.tsv", ["index", "sentence1", "sentence2", "score"],
                  [(i, sentence(rng), sentence(rng), round(float(rng.uniform(0, 5)), 2))
                   for i in range(n)])
    return root


def generic_single(root: Path, n: int = 90) -> Path:
    """One CSV of single sentences with 3 classes; dev is carved from it."""
    rng = np.random.default_rng(2)
    path = root / "reviews.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("text,stars\n" + "".join(f"{sentence(rng)},{rng.integers(1, 4)}\n"
                                              for _ in range(n)))
    return path


def config(task: str, data: Path, model: Path, tmp_path: Path, **kw) -> FinetuneConfig:
    return finetune_config(**{**dict(task=task, data=str(data), model=str(model),
                                    out=str(tmp_path / "o"), max_seq_length=12,
                                    cache_dir=str(tmp_path / "cache"), workers=1), **kw})


def assert_same_batches(cached: TableRows, reference: list[dict], tokenizer) -> None:
    """Lengths, labels and every batch of a shuffled epoch equal the in-memory path's."""
    assert cached.lengths.tolist() == [len(r["input_ids"]) for r in reference]
    assert cached.labels().tolist() == [r["labels"] for r in reference]
    for ids in length_batches(cached.lengths, 8, np.random.default_rng(3)):
        ours, theirs = cached.batch(ids), pad_for(tokenizer, [reference[i] for i in ids])
        assert list(ours) == list(theirs)
        for key in theirs:
            assert ours[key].dtype == theirs[key].dtype, key
            assert torch.equal(ours[key], theirs[key]), key
    assert cached[5] == reference[5]  # one row as the tokenizer gives it


@pytest.mark.parametrize("task", ["stsb", "classification"])
def test_cached_batches_are_the_in_memory_inputs(tokenizer_dir, tmp_path, task):
    """A pair task with scores (GLUE STS-B) and a single-sentence task with classes (a CSV
    whose dev is carved), cut to 12 tokens: the batches built from the cache's arrays equal
    those of one tokenizer call per example, padded by pad_for."""
    data = glue_stsb(tmp_path / "STS-B") if task == "stsb" else generic_single(tmp_path / "g")
    cfg = config(task, data, tokenizer_dir, tmp_path, **({} if task == "stsb" else
                                                        {"text_a": "text",
                                                         "label_column": "stars"}))
    tok = litebert.Tokenizer.from_pretrained(tokenizer_dir)
    train, dev, labels = load_tables(cfg, tok)
    train_ex, dev_ex, labels_ex = load_data(cfg)
    assert labels == labels_ex and (labels is None) == (task == "stsb")
    assert train is not None and set(dev) == set(dev_ex) == {"dev"}
    assert (train.lengths > cfg.max_seq_length - 4).any()  # truncation happened
    assert_same_batches(train, encode_examples(tok, train_ex, labels, 12), tok)
    assert_same_batches(dev["dev"], encode_examples(tok, dev_ex["dev"], labels, 12), tok)
    assert select_rows(train, [4, 2])[1] == train[2]


def test_truncation_is_the_tokenizers_longest_first():
    a, b = np.meshgrid(np.arange(0, 13), np.arange(0, 13))
    a, b = a.ravel(), b.ravel()
    for budget in (0, 1, 5, 6, 9):
        keep_a, keep_b = truncated_lengths(a, b, budget, pairs=True)
        expected = [_truncated_lengths(int(x), int(y), True, budget + 3, 3)
                    for x, y in zip(a, b, strict=True) if x and y]
        assert [tuple(k) for k in zip(keep_a[a * b > 0].tolist(), keep_b[a * b > 0].tolist(),
                                      strict=True)] == expected
        single, none = truncated_lengths(a, b, budget, pairs=False)
        assert single.tolist() == np.minimum(a, budget).tolist() and not none.any()


def entry_bytes(cache: Path) -> dict[str, bytes]:
    """The array files of every entry in `cache`, by entry/name."""
    return {str(p.relative_to(cache)): p.read_bytes() for p in sorted(cache.glob("*/*.bin"))}


def test_second_run_or_seed_tokenizes_nothing_and_the_key_is_the_content(
        tokenizer_dir, tmp_path, monkeypatch):
    data = glue_stsb(tmp_path / "STS-B")
    cfg = config("stsb", data, tokenizer_dir, tmp_path)
    tok = litebert.Tokenizer.from_pretrained(tokenizer_dir)
    first, _, _ = load_tables(cfg, tok)
    stored = entry_bytes(tmp_path / "cache")

    def refuse(*args, **kwargs):
        raise AssertionError("tokenized again")

    monkeypatch.setattr(table_cache, "encode_chunk", refuse)
    again, _, _ = load_tables(cfg, tok)  # a second seed or run
    assert first is not None and again is not None
    assert torch.equal(again.batch(range(20))["input_ids"], first.batch(range(20))["input_ids"])
    # A copy elsewhere (another path, another mtime) is the same table.
    copy = tmp_path / "copy" / "STS-B"
    shutil.copytree(data, copy)
    load_tables(config("stsb", copy, tokenizer_dir, tmp_path), tok)
    assert entry_bytes(tmp_path / "cache") == stored
    # Another content is another table: it would be tokenized.
    with open(copy / "train.tsv", "a") as f:
        f.write("90\tone more\tpair\t1.0\n")
    with pytest.raises(AssertionError, match="tokenized again"):
        load_tables(config("stsb", copy, tokenizer_dir, tmp_path), tok)


def test_bad_rows_are_reported_from_the_cache_as_from_a_read(tokenizer_dir, tmp_path, caplog):
    data = glue_stsb(tmp_path / "STS-B", n=20)
    with open(data / "train.tsv", "a") as f:
        f.write("20\tno score\there\tmany\n21\ttoo\tmany\tfields\t1\n")
    cfg = config("stsb", data, tokenizer_dir, tmp_path)
    tok = litebert.Tokenizer.from_pretrained(tokenizer_dir)
    summaries = []
    for _ in range(2):  # tokenized, then found in the cache
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="litebert"):
            train, _, _ = load_tables(cfg, tok)
        summaries.append([r.getMessage() for r in caplog.records])
        assert train is not None and len(train) == 20
    assert summaries[0] == summaries[1]
    [summary] = summaries[0]
    assert f"{data / 'train.tsv'}:22: score 'many' is not a number" in summary
    assert "skipped 2" in summary and "wrong number of fields" in summary


def test_an_interrupted_or_damaged_entry_is_built_again(tokenizer_dir, tmp_path, monkeypatch):
    data = generic_single(tmp_path / "g", n=30)
    cfg = config("classification", data, tokenizer_dir, tmp_path, text_a="text",
                 label_column="stars")
    tok = litebert.Tokenizer.from_pretrained(tokenizer_dir)
    encode = table_cache.encode_chunk

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(table_cache, "encode_chunk", fail)
    with pytest.raises(OSError, match="disk full") as failed:
        load_tables(cfg, tok)
    assert "could not write the tokenized table of" in str(failed.value)
    assert "--cache-dir" in str(failed.value)
    assert not list((tmp_path / "cache").glob("*/table.json"))  # no entry: no manifest
    assert not list((tmp_path / "cache").glob("*/.*.tmp-*"))  # and no temporaries left
    monkeypatch.setattr(table_cache, "encode_chunk", encode)
    train, _, _ = load_tables(cfg, tok)
    assert train is not None and len(train) == 27
    [ids] = (tmp_path / "cache").glob("*/ids.bin")
    ids.write_bytes(ids.read_bytes()[:-2])  # cut short
    calls = []
    monkeypatch.setattr(table_cache, "encode_chunk",
                        lambda *a, **k: calls.append(1) or encode(*a, **k))
    again, _, _ = load_tables(cfg, tok)
    assert calls and again is not None and again[3] == train[3]


def test_concurrent_runs_tokenize_a_table_once(tokenizer_dir, tmp_path, monkeypatch):
    """Two runs at once (the ranks of torchrun): the lock makes the second wait and find
    the first's entry."""
    data = glue_stsb(tmp_path / "STS-B", n=30)
    cfg = config("stsb", data, tokenizer_dir, tmp_path)
    tok = litebert.Tokenizer.from_pretrained(tokenizer_dir)
    encode, calls = table_cache.encode_chunk, []
    monkeypatch.setattr(table_cache, "encode_chunk",
                        lambda *a, **k: calls.append(1) or encode(*a, **k))
    results: list = []
    runs = [threading.Thread(target=lambda: results.append(load_tables(cfg, tok)))
            for _ in range(2)]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    assert len(results) == 2 and len(calls) == 2  # one train and one dev table, once each


@pytest.mark.slow
@pytest.mark.parametrize("tokenizer_dir", ["sentencepiece"], indirect=True)
def test_worker_processes_write_the_same_entry(tokenizer_dir, tmp_path, monkeypatch):
    """Two worker processes, tasks of 7 rows: the same bytes as one worker."""
    monkeypatch.setattr(table_cache, "ROWS_PER_TASK", 7)
    monkeypatch.setattr(table_cache, "POOL_MIN_TASKS", 2)
    data = glue_stsb(tmp_path / "STS-B", n=40)
    tok = litebert.Tokenizer.from_pretrained(tokenizer_dir)
    stored = []
    for workers in (1, 2):
        cfg = config("stsb", data, tokenizer_dir, tmp_path / str(workers), workers=workers)
        load_tables(cfg, tok, training=False)
        stored.append(entry_bytes(tmp_path / str(workers) / "cache"))
    assert stored[0] == stored[1]
