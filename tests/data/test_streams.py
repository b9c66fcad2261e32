"""`--packing streams` (litebert.data.streams): one stream per split, its files in the manifest,
the official loop's window count, <eod> (or the separator) after every document,
the reversed view against explicitly reversed arrays, config errors, the cache key, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from litebert.cli import main
from litebert.data.builder import BuildConfig, cache_key
from litebert.data.integrity import DataError
from litebert.data.loader import PretrainingDataset
from litebert.data.splits import split_documents
from litebert.data.streams import (
    SENTENCE_START,
    WORD_START,
    Stream,
    count_windows,
    open_stream,
)
from litebert.data.word_starts import WordStarts
from litebert.objectives.plm_data import PLMDataset
from litebert.tokenization import Tokenizer
from tests.data.builds import key_before_pairs_and_packing, small_build

STREAMS = dict(objective="none", packing="streams")


def official_window_count(length: int, seq_len: int, reuse_len: int) -> int:
    """create_tfrecords' loop over one row of `length` tokens, counted."""
    count, i = 0, 0
    while i + seq_len <= length:
        count += 1
        i += reuse_len
    return count


def expected_stream(directory, split: str, eod: int):
    """(ids, word starts, sentence starts) of a split, rebuilt from the corpus arrays."""
    manifest = json.loads((directory / "manifest.json").read_text())
    tokens = np.fromfile(directory / "tokens.bin", dtype=manifest["counts"]["token_dtype"])
    offsets = np.fromfile(directory / "sentences.bin", dtype=np.int64)
    table = Tokenizer.from_pretrained(directory / "tokenizer").word_start_ids
    words = WordStarts(tokens, offsets, table)[:]  # as encode_batch_flat gave them
    firsts = np.fromfile(directory / "documents.bin", dtype=np.int64)
    held = split_documents(len(firsts) - 1, BuildConfig(**manifest["config"]))
    ids, word_starts, sentence_starts = [], [], []
    for doc in np.flatnonzero(held if split == "heldout" else ~held):
        for s in range(firsts[doc], firsts[doc + 1]):
            piece = tokens[offsets[s]:offsets[s + 1]]
            ids += piece.tolist()
            word_starts += words[offsets[s]:offsets[s + 1]].tolist()
            sentence_starts += [True] + [False] * (len(piece) - 1)
        ids.append(eod)  # the end of the document: a sentence and a word of its own
        word_starts.append(True)
        sentence_starts.append(True)
    return np.array(ids), np.array(word_starts), np.array(sentence_starts)


def test_each_split_is_one_stream_of_its_documents(tmp_path, corpus_and_tokenizer):
    manifest, out = small_build(tmp_path, corpus_and_tokenizer, **STREAMS)
    sep = Tokenizer.from_pretrained(out / "tokenizer").sep_token_id  # no <eod> in ALBERT's
    assert manifest["config"]["reuse_len"] is None  # the default: max_seq_length // 2 = 32
    for split in ("train", "heldout"):
        entry = manifest["splits"][split]
        ids, words, sentences = expected_stream(out, split, sep)
        stream = open_stream(out, split, manifest["counts"]["token_dtype"])
        assert np.array_equal(stream.tokens(0, len(stream)), ids)
        assert np.array_equal(stream.word_starts(0, len(stream)), words)
        assert np.array_equal(stream.sentence_starts(0, len(stream)), sentences)
        assert entry["tokens"] == len(ids)
        assert entry["instances"] == official_window_count(len(ids), 64, 32) > 0
        files = manifest["files"]  # recorded like every other array (sizes and checksums)
        assert files[f"{split}.stream.bin"]["size"] == 2 * len(ids)  # uint16
        assert files[f"{split}.stream_flags.bin"]["size"] == len(ids)
        assert len(files[f"{split}.stream.bin"]["sha256"]) == 64
        # one separator after every document: as many as the split has documents
        assert (ids == sep).sum() == entry["documents"] and ids[-1] == sep
    assert not list(out.glob("*.instances.bin")) and not list(out.glob("*.spans.bin"))


def test_eod_closes_documents_when_the_vocabulary_has_one(tmp_path, corpus_and_tokenizer,
                                                          monkeypatch):
    monkeypatch.setattr(Tokenizer, "eod_token_id", property(lambda self: 7), raising=False)
    manifest, out = small_build(tmp_path, corpus_and_tokenizer, **STREAMS)
    ids, _, _ = expected_stream(out, "train", 7)
    stream = open_stream(out, "train", manifest["counts"]["token_dtype"])
    assert np.array_equal(stream.tokens(0, len(stream)), ids)
    assert (ids == 7).sum() >= manifest["splits"]["train"]["documents"]


def test_window_count_is_the_official_loops():
    for length in range(0, 200, 7):
        for seq_len, reuse in ((64, 32), (64, 20), (10, 3)):
            assert count_windows(length, seq_len, reuse) == \
                official_window_count(length, seq_len, reuse)


def test_a_damaged_stream_is_an_error_naming_it(tmp_path, corpus_and_tokenizer):
    _, out = small_build(tmp_path, corpus_and_tokenizer, **STREAMS)
    with pytest.raises(DataError, match="packing streams.*objective plm"):
        PretrainingDataset(out)  # MLM's items do not exist in this layout
    path = out / "train.stream_flags.bin"
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(DataError, match="train.stream_flags.bin"):
        PLMDataset(out)


# ---- the reversed view -----------------------------------------------------------------------

def sentence_ids(starts: np.ndarray) -> np.ndarray:
    """The official alternating sentence ids of a stream with these sentence starts."""
    return np.cumsum(starts) % 2


def random_stream(rng, length: int, sentence_rate: float) -> Stream:
    starts = rng.random(length) < sentence_rate
    starts[0] = True
    words = (rng.random(length) < 0.6) | starts
    flags = (words * WORD_START | starts * SENTENCE_START).astype(np.uint8)
    return Stream(rng.integers(0, 1000, length).astype(np.uint16), flags)


@pytest.mark.parametrize("rate", [0.2, 0.001])  # 0.001: scans longer than SCAN tokens
def test_reversed_view_is_the_stream_reversed(rate):
    rng = np.random.default_rng(0)
    stream = random_stream(rng, 3000, rate)
    back = stream.reversed()
    n = len(stream)
    ids = stream.ids[::-1].astype(np.int64)
    words = ((stream.flags & WORD_START) > 0)[::-1]
    # Boundaries where the reversed official sentence ids change (position 0 starts one).
    rev = sentence_ids((stream.flags & SENTENCE_START) > 0)[::-1]
    starts = np.concatenate([[True], rev[1:] != rev[:-1]])
    assert np.array_equal(back.tokens(0, n), ids)
    assert np.array_equal(back.word_starts(0, n), words)
    assert np.array_equal(back.sentence_starts(0, n), starts)
    for _ in range(200):
        a, b = sorted(rng.integers(0, n + 1, 2).tolist())
        assert np.array_equal(back.tokens(a, b), ids[a:b])
        assert np.array_equal(back.sentence_starts(a, b), starts[a:b])
    for view, flags in ((stream, (stream.flags & SENTENCE_START) > 0), (back, starts)):
        for pos in rng.integers(0, n, 100).tolist():
            after = [k for k in range(pos, n) if flags[k]]
            before = [k for k in range(0, pos + 1) if flags[k]]
            assert view.next_sentence_start(pos) == (after[0] if after else n)
            assert view.sentence_start_at_or_before(pos) == before[-1]


# ---- config, cache key, command line ---------------------------------------------------------

def test_streams_config_errors():
    assert BuildConfig(**STREAMS).reuse_length == 256
    assert BuildConfig(**STREAMS, max_seq_length=64, reuse_len=40).reuse_length == 40
    with pytest.raises(ValueError,
                       match="packing='streams' needs objective='none'.*objective plm"):
        BuildConfig(packing="streams")
    with pytest.raises(ValueError, match="leave --masking dynamic"):
        BuildConfig(**STREAMS, masking="static")
    with pytest.raises(ValueError, match="leave --dupe-factor 1"):
        BuildConfig(**STREAMS, dupe_factor=2)
    for reuse in (0, 61):
        with pytest.raises(ValueError, match=f"reuse_len={reuse}: must be positive and below "
                                             "max_seq_length - 3 = 61"):
            BuildConfig(**STREAMS, max_seq_length=64, reuse_len=reuse)
    with pytest.raises(ValueError, match="reuse_len=8 applies to packing='streams' only"):
        BuildConfig(reuse_len=8)


def test_cache_key_covers_reuse_len(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("One.\nTwo.\n")
    keys = [cache_key([corpus], "tok", BuildConfig(**STREAMS, max_seq_length=64, reuse_len=r))
            for r in (None, 32, 16)]
    assert len(set(keys)) == 3
    # reuse_len at its default stays out of the key: earlier directories are still hits.
    assert cache_key([corpus], "tok", BuildConfig()) == key_before_pairs_and_packing(corpus,
                                                                                     "tok")


def test_cli_builds_streams(tmp_path, corpus_and_tokenizer, capsys):
    corpus, tok = corpus_and_tokenizer
    out = tmp_path / "cli"
    assert main(["data", "build", str(corpus), "--tokenizer", str(tok), "--out", str(out),
                 "--max-seq-length", "64", "--reuse-len", "24", "--workers", "1",
                 "--format", "bert", "--objective", "none", "--packing", "streams"]) == 0
    printed = capsys.readouterr().out
    splits = json.loads(printed[:printed.index("\n}") + 2])["splits"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["reuse_len"] == 24
    assert splits["train"]["instances"] == official_window_count(splits["train"]["tokens"],
                                                                 64, 24)
    assert len(PLMDataset(out, "heldout")) == splits["heldout"]["instances"] > 0
    assert main(["data", "build", str(corpus), "--tokenizer", str(tok), "--out", str(out),
                 "--packing", "streams"]) == 2
    assert "--objective none" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["data", "build", "--help"])
    assert exit_.value.code == 0
    assert "(default: max_seq_length // 2)" in " ".join(capsys.readouterr().out.split())
