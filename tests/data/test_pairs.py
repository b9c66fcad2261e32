"""`--pairs dynamic` and `--sop-single-sentence skip` on built directories: files, epochs,
workers and ranks, label balance, config errors, the cache key, `data stats`."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from litebert.cli import main
from litebert.data.builder import BuildConfig, cache_key
from litebert.data.loader import PretrainingDataset, RankSampler, collate
from tests.data.builds import key_before_pairs_and_packing, small_build


def document_of(ds, positions):
    """Document (a row of documents.bin) of token positions."""
    firsts = np.fromfile(ds.directory / "documents.bin", dtype=np.int64)
    sentence = np.searchsorted(ds.offsets, positions, side="right") - 1
    return np.searchsorted(firsts, sentence, side="right") - 1


def epoch_pairs(ds, epoch):
    """(len(ds), 5) pairs of one epoch."""
    ds.set_epoch(epoch)
    return np.stack([ds.pair(i) for i in range(len(ds))])


def test_dynamic_build_stores_chunks_and_records_them(tmp_path, corpus_and_tokenizer):
    manifest, out = small_build(tmp_path, corpus_and_tokenizer, pairs="dynamic")
    for split in ("train", "heldout"):
        assert not (out / f"{split}.instances.bin").exists()
        chunks = np.fromfile(out / f"{split}.chunks.bin", dtype=np.int64).reshape(-1, 4)
        docs = np.fromfile(out / f"{split}.documents.bin", dtype=np.int64).reshape(-1, 2)
        assert manifest["splits"][split]["instances"] == len(chunks) > 0
        assert len(docs) == manifest["splits"][split]["documents"]
        assert {f"{split}.chunks.bin", f"{split}.documents.bin"} <= set(manifest["files"])
        assert np.all(chunks[:, 1] >= 1) and np.all(chunks[:, 2] < len(docs))
        # A chunk lies within its document.
        assert np.all(docs[chunks[:, 2], 0] <= chunks[:, 0])
        assert np.all(chunks[:, 0] + chunks[:, 1] <= docs[chunks[:, 2], 1])
    assert len(PretrainingDataset(out)) == manifest["splits"]["train"]["instances"]


def test_dynamic_pairs_change_per_epoch_and_repeat_within_one(tmp_path, corpus_and_tokenizer):
    _, out = small_build(tmp_path, corpus_and_tokenizer, pairs="dynamic")
    ds = PretrainingDataset(out)
    first = epoch_pairs(ds, 0)
    assert np.array_equal(first, epoch_pairs(PretrainingDataset(out), 0))  # another run
    second = epoch_pairs(ds, 1)
    assert np.mean(np.any(first != second, axis=1)) > 0.7  # split point, order, partner, cut
    assert np.mean(first[:, 4] != second[:, 4]) > 0.25
    # An item is its pair, masked: the unmasked tokens and the label are the pair's.
    again = PretrainingDataset(out)
    again.set_epoch(1)
    for i in range(0, len(ds), 11):
        item, row = again[i], second[i]
        a, b = ds.tokens[row[0]:row[0] + row[1]], ds.tokens[row[2]:row[2] + row[3]]
        cls, sep = ds.special_ids["cls"], ds.special_ids["sep"]
        expected = np.concatenate([[cls], a, [sep], b, [sep]])
        kept = item["labels"].numpy() == -100
        assert np.array_equal(item["input_ids"].numpy()[kept], expected[kept])
        assert int(item["sentence_order_label"]) == row[4]


def test_dynamic_pairs_are_the_same_in_loader_workers_and_ranks(tmp_path, corpus_and_tokenizer):
    _, out = small_build(tmp_path, corpus_and_tokenizer, pairs="dynamic")
    ds = PretrainingDataset(out)
    ds.set_epoch(3)
    sampler = RankSampler(len(ds), rank=1, world_size=2, seed=0)
    sampler.set_epoch(3)
    order = list(sampler)[:32]
    batches = [order[i:i + 8] for i in range(0, len(order), 8)]
    loader = DataLoader(ds, batch_sampler=batches, collate_fn=collate, num_workers=2)
    alone = PretrainingDataset(out)  # in this process, knowing nothing of ranks
    alone.set_epoch(3)
    for indices, batch in zip(batches, loader, strict=True):
        expected = collate([alone[i] for i in indices])
        for key, value in expected.items():
            assert torch.equal(batch[key], value), key


def test_dynamic_sop_labels_are_balanced_within_documents(tmp_path, corpus_and_tokenizer):
    _, out = small_build(tmp_path, corpus_and_tokenizer, pairs="dynamic")
    ds = PretrainingDataset(out)
    rows = np.concatenate([epoch_pairs(ds, e) for e in range(4)])
    same = document_of(ds, rows[:, 0]) == document_of(ds, rows[:, 2])
    assert np.array_equal(rows[same, 4] == 1, rows[same, 2] < rows[same, 0])  # 1 = swapped
    assert 0.45 < rows[same, 4].mean() < 0.55, rows[same, 4].mean()
    assert np.all(rows[~same, 4] == 1)  # one-sentence chunks, the reference's rule


@pytest.mark.parametrize("pairs", ["static", "dynamic"])
def test_skip_keeps_every_sop_pair_in_one_document(tmp_path, corpus_and_tokenizer, pairs):
    manifest, out = small_build(tmp_path, corpus_and_tokenizer, pairs=pairs,
                                sop_single_sentence="skip")
    assert manifest["splits"]["train"]["skipped_chunks"] > 0
    assert manifest["splits"]["train"]["skipped_tokens"] > 0
    rows = []
    for split in ("train", "heldout"):
        ds = PretrainingDataset(out, split)
        rows += [epoch_pairs(ds, e) for e in range(3 if pairs == "dynamic" else 1)]
    both = np.concatenate(rows)
    assert set(np.unique(both[:, 4])) == {0, 1}
    assert np.all(document_of(ds, both[:, 0]) == document_of(ds, both[:, 2]))
    assert np.array_equal(both[:, 4] == 1, both[:, 2] < both[:, 0])
    assert 0.4 < both[:, 4].mean() < 0.6, both[:, 4].mean()


def test_invalid_combinations_are_config_errors():
    with pytest.raises(ValueError, match="pairs='dynamic' needs masking='dynamic'"):
        BuildConfig(pairs="dynamic", masking="static")
    with pytest.raises(ValueError, match="'skip' is for objective 'sop' only, not 'nsp'"):
        BuildConfig(objective="nsp", sop_single_sentence="skip")
    with pytest.raises(ValueError, match="pairs='sometimes'"):
        BuildConfig(pairs="sometimes")
    BuildConfig(pairs="dynamic", objective="nsp")  # fine: the flag is sop's alone


def test_cache_key_covers_the_pair_options_and_keeps_old_keys(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("One.\nTwo.\n")
    keys = {cache_key([corpus], "tok", BuildConfig(**kw))
            for kw in ({}, {"pairs": "dynamic"}, {"sop_single_sentence": "skip"},
                       {"pairs": "dynamic", "sop_single_sentence": "skip"})}
    assert len(keys) == 4
    # At their defaults the new fields stay out of the key: directories built before they
    # existed (byte-identical output) remain cache hits.
    assert cache_key([corpus], "tok", BuildConfig()) == key_before_pairs_and_packing(corpus, "tok")


def test_cli_dynamic_skip_build_inspect_and_stats(tmp_path, corpus_and_tokenizer, capsys):
    corpus, tok = corpus_and_tokenizer
    out = tmp_path / "cli"
    assert main(["data", "build", str(corpus), "--tokenizer", str(tok), "--out", str(out),
                 "--max-seq-length", "64", "--workers", "1", "--format", "bert",
                 "--pairs", "dynamic", "--sop-single-sentence", "skip"]) == 0
    capsys.readouterr()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["pairs"] == "dynamic"
    assert manifest["splits"]["train"]["skipped_chunks"] > 0
    assert main(["data", "inspect", str(out), "-n", "2"]) == 0
    assert "sentence_order_label=" in capsys.readouterr().out
    assert main(["data", "stats", str(out), "--sample", "300"]) == 0
    train = json.loads(capsys.readouterr().out)["splits"]["train"]
    assert train["pairs_sampled"] == min(300, train["instances"])
    assert train["cross_document_fraction"] == 0.0
    assert 0.4 < train["label_1_fraction"] == train["label_1_fraction_same_document"] < 0.6


def test_stats_show_the_reference_rules_topic_leak(tmp_path, corpus_and_tokenizer):
    from litebert.data.report import stats

    _, out = small_build(tmp_path, corpus_and_tokenizer)
    train = stats(out, sample=100)["splits"]["train"]
    assert "pairs_sampled" not in train  # static pairs: every instance
    assert train["cross_document_fraction"] > 0.05
    assert train["label_1_fraction"] > train["label_1_fraction_same_document"]
