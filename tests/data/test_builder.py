"""`data build` end to end on a generated corpus: files, cache, atomicity, dataset, sampler."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from litebert import files
from litebert.cli import main
from litebert.data import parts, splits
from litebert.data.builder import BuildConfig, build
from litebert.data.integrity import DataError, verify_data
from litebert.data.loader import PretrainingDataset, RankSampler, collate
from litebert.files import is_temporary
from litebert.tokenization import Tokenizer
from litebert.write_errors import WriteFailed, human_size
from tests.data.builds import small_build, write_corpus


def test_build_writes_a_complete_directory(tmp_path, corpus_and_tokenizer):
    manifest, out = small_build(tmp_path, corpus_and_tokenizer)
    assert manifest["counts"]["documents"] == 120
    names = {p.name for p in out.iterdir()}
    assert {"tokens.bin", "sentences.bin", "documents.bin", "manifest.json",
            "train.instances.bin", "heldout.instances.bin", "tokenizer"} <= names
    assert "word_starts.bin" not in names  # derived from the ids (litebert.data.word_starts)
    assert not [n for n in names if n.endswith(".tmp")]
    tokens = np.fromfile(out / "tokens.bin", dtype=manifest["counts"]["token_dtype"])
    assert len(tokens) == manifest["counts"]["tokens"]
    assert manifest["splits"]["heldout"]["documents"] == 12
    for split in ("train", "heldout"):
        rows = np.fromfile(out / f"{split}.instances.bin", dtype=np.int64)
        assert manifest["splits"][split]["instances"] == len(rows) // 5 > 0


def test_output_does_not_depend_on_workers(tmp_path, corpus_and_tokenizer, monkeypatch):
    monkeypatch.setattr(parts, "PART_BYTES", 4000)  # parts that cut the corpus mid-way
    assert len(parts.plan_parts([corpus_and_tokenizer[0]], "bert")) > 3
    first, one = small_build(tmp_path, corpus_and_tokenizer, "one", workers=1, masking="static")
    second, two = small_build(tmp_path, corpus_and_tokenizer, "two", workers=2,
                              masking="static")
    for name in ("tokens.bin", "sentences.bin", "documents.bin",
                 "token_counts.bin", "train.instances.bin", "train.masks.bin",
                 "heldout.instances.bin"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    assert first["counts"] == second["counts"] and first["corpus"] == second["corpus"]


def test_pass_2_maps_the_indexes_instead_of_reading_them_whole(tmp_path, corpus_and_tokenizer,
                                                               monkeypatch):
    """sentences.bin grows with the corpus (about 11 GB at 160 GB of text): the build reads
    it, and documents.bin, through a memory map, with the same output."""
    _, read = small_build(tmp_path, corpus_and_tokenizer, "read")

    def whole(*args, **kwargs):
        raise AssertionError("an index read whole into memory")

    monkeypatch.setattr(np, "fromfile", whole)
    _, mapped = small_build(tmp_path, corpus_and_tokenizer, "mapped")
    for name in ("train.instances.bin", "heldout.instances.bin", "sentences.bin"):
        assert (read / name).read_bytes() == (mapped / name).read_bytes(), name


def test_same_config_is_a_cache_hit_and_a_new_one_rebuilds(tmp_path, corpus_and_tokenizer):
    first, out = small_build(tmp_path, corpus_and_tokenizer)
    stamp = (out / "tokens.bin").stat().st_mtime_ns
    again, _ = small_build(tmp_path, corpus_and_tokenizer)
    assert again["config_hash"] == first["config_hash"]
    assert (out / "tokens.bin").stat().st_mtime_ns == stamp  # nothing rewritten
    other, _ = small_build(tmp_path, corpus_and_tokenizer, seed=7)
    assert other["config_hash"] != first["config_hash"]


def test_interrupted_build_never_looks_complete(tmp_path, corpus_and_tokenizer, monkeypatch):
    _, out = small_build(tmp_path, corpus_and_tokenizer)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(splits, "write_instances", crash)
    with pytest.raises(KeyboardInterrupt):
        small_build(tmp_path, corpus_and_tokenizer, seed=99)  # a different config: rebuild
    with pytest.raises(DataError, match="no manifest.json"):
        PretrainingDataset(out)
    monkeypatch.undo()
    manifest, _ = small_build(tmp_path, corpus_and_tokenizer, seed=99)
    assert PretrainingDataset(out).manifest["config_hash"] == manifest["config_hash"]


@pytest.mark.parametrize("objective, key", [("sop", "sentence_order_label"),
                                            ("nsp", "next_sentence_label"), ("none", None)])
def test_dataset_items(tmp_path, corpus_and_tokenizer, objective, key):
    _, out = small_build(tmp_path, corpus_and_tokenizer, objective=objective)
    ds = PretrainingDataset(out)
    tok = Tokenizer.from_pretrained(out / "tokenizer")
    assert len(ds) > 50
    predicted = 0
    for i in range(0, len(ds), 7):
        item = ds[i]
        ids, types, labels = item["input_ids"], item["token_type_ids"], item["labels"]
        assert len(ids) <= 64 and ids[0] == tok.cls_token_id
        seps = (labels == -100) & (ids == tok.sep_token_id)
        assert seps.sum() >= (1 if objective == "none" else 2)
        assert labels[0] == -100 and labels[-1] == -100  # specials never predicted
        predicted += bool((labels != -100).any())
        assert (types == 1).any() == (objective != "none")
        if key:
            assert int(item[key]) in (0, 1)
        else:
            assert "sentence_order_label" not in item and "next_sentence_label" not in item
    # A short input whose words are all longer than its mask budget gets no mask (as in the
    # reference); this test's tokenizer splits words into many pieces, so allow a few.
    assert predicted >= 0.8 * len(range(0, len(ds), 7))


def test_in_order_pair_decodes_to_corpus_text(tmp_path, corpus_and_tokenizer):
    corpus, _ = corpus_and_tokenizer
    _, out = small_build(tmp_path, corpus_and_tokenizer, short_seq_prob=0.0)
    ds = PretrainingDataset(out)
    tok = Tokenizer.from_pretrained(out / "tokenizer")
    text = " ".join(corpus.read_text().lower().split())
    # In order and not truncated (truncation trims tokens off either end of A or B).
    row = next(r for r in np.asarray(ds.rows) if r[4] == 0 and r[1] + r[3] < 61)
    a = tok.decode(ds.tokens[row[0]:row[0] + row[1]].tolist())
    b = tok.decode(ds.tokens[row[2]:row[2] + row[3]].tolist())
    assert f"{a} {b}".strip() in text


def test_dynamic_masks_change_per_epoch_static_do_not(tmp_path, corpus_and_tokenizer):
    _, dyn = small_build(tmp_path, corpus_and_tokenizer, "dyn")
    _, sta = small_build(tmp_path, corpus_and_tokenizer, "sta", masking="static")
    d, s = PretrainingDataset(dyn), PretrainingDataset(sta)
    first_d, first_s = d[3]["labels"].clone(), s[3]["labels"].clone()
    assert torch.equal(first_d, PretrainingDataset(dyn)[3]["labels"])  # same seed, epoch
    d.set_epoch(1)
    s.set_epoch(1)
    changed = sum(not torch.equal(PretrainingDataset(dyn)[i]["labels"], d[i]["labels"])
                  for i in range(20))
    assert changed >= 15
    assert torch.equal(first_s, s[3]["labels"])


def test_static_dupe_factor_multiplies_instances(tmp_path, corpus_and_tokenizer):
    one, _ = small_build(tmp_path, corpus_and_tokenizer, "x1", masking="static")
    three, _ = small_build(tmp_path, corpus_and_tokenizer, "x3", masking="static",
                           dupe_factor=3)
    ratio = three["splits"]["train"]["instances"] / one["splits"]["train"]["instances"]
    assert 2.7 < ratio < 3.3


def test_collate_pads_to_a_multiple_of_eight(tmp_path, corpus_and_tokenizer):
    _, out = small_build(tmp_path, corpus_and_tokenizer)
    ds = PretrainingDataset(out)
    items = [ds[i] for i in range(5)]
    batch = collate(items)
    longest = max(len(x["input_ids"]) for x in items)
    assert batch["input_ids"].shape == (5, -(-longest // 8) * 8)
    assert batch["sentence_order_label"].shape == (5,)
    for i, x in enumerate(items):
        n = len(x["input_ids"])
        assert batch["attention_mask"][i].sum() == n
        assert torch.all(batch["labels"][i, n:] == -100)


def test_rank_sampler_gives_disjoint_deterministic_shares():
    shares = [list(RankSampler(103, rank=r, world_size=2, seed=5)) for r in range(2)]
    assert len(shares[0]) == len(shares[1]) == 51
    assert not set(shares[0]) & set(shares[1])
    again = RankSampler(103, rank=0, world_size=2, seed=5)
    assert list(again) == shares[0]
    again.set_epoch(1)
    assert list(again) != shares[0]
    with pytest.raises(ValueError, match="rank 2 is outside world size 2"):
        RankSampler(10, rank=2, world_size=2)


def test_cli_build_inspect_stats(tmp_path, corpus_and_tokenizer, capsys):
    corpus, tok = corpus_and_tokenizer
    out = tmp_path / "cli"
    assert main(["data", "build", str(corpus), "--tokenizer", str(tok), "--out", str(out),
                 "--max-seq-length", "64", "--workers", "1", "--format", "bert"]) == 0
    assert main(["data", "inspect", str(out), "-n", "2"]) == 0
    shown = capsys.readouterr().out
    assert "#0 (" in shown and "[[" in shown and "sentence_order_label=" in shown
    assert main(["data", "stats", str(out), "--sample", "200"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert 0.1 < report["masking"]["mask_rate"] < 0.2
    assert report["masking"]["whole_word_fraction"] == 1.0
    assert 0.3 < report["splits"]["train"]["label_1_fraction"] < 0.8


def test_missing_directory_is_a_clear_error(tmp_path, capsys):
    assert main(["data", "stats", str(tmp_path / "nothing")]) == 2
    assert "no manifest.json" in capsys.readouterr().err


def test_kill_9_mid_build_leaves_nothing_that_looks_complete(tmp_path, corpus_and_tokenizer):
    """A real SIGKILL while pass 1 writes: no manifest, a clear error, a clean rebuild."""
    _, tok = corpus_and_tokenizer
    corpus = write_corpus(tmp_path / "big.txt", docs=15_000, seed=3)
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "litebert.cli", "data", "build", str(corpus), "--tokenizer",
           str(tok), "--out", str(out), "--workers", "1", "--format", "bert",
           "--max-seq-length", "64"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while not any(is_temporary(p) and "tokens.bin" in p.name for p in
                  (out.iterdir() if out.is_dir() else [])) and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the build finished before it could be killed"
    assert not (out / "manifest.json").exists()
    with pytest.raises(DataError, match="interrupted build"):
        PretrainingDataset(out)
    small = BuildConfig(max_seq_length=64, format="bert")
    manifest = build([corpus], tok, out, small)
    assert PretrainingDataset(out).manifest["config_hash"] == manifest["config_hash"]
    assert not [p for p in out.iterdir() if is_temporary(p)]


def test_bpe_sentences_inside_a_document_are_tokenized_as_running_text(tmp_path):
    """Byte-level BPE marks a word's leading space ("Ġthe"): a document's sentences, encoded
    one by one, must give the ids of the document encoded whole, as fine-tuning sees text."""
    from litebert.tokenization.train import train_bpe

    docs = [["The cat sat on the mat.", "Then the dog ran home.", "It was late."],
            ["A bird flew by.", "The end came soon."]]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(doc) for doc in docs) + "\n")
    tok_dir = train_bpe([corpus], tmp_path / "tok", vocab_size=300, min_frequency=1)
    out = tmp_path / "data"
    build([corpus], tok_dir, out, BuildConfig(max_seq_length=64, objective="none",
                                              format="bert", heldout_fraction=0.0))
    tok = Tokenizer.from_pretrained(tok_dir)
    tokens = np.fromfile(out / "tokens.bin", dtype=np.uint16)
    first = np.fromfile(out / "documents.bin", dtype=np.int64)
    offsets = np.fromfile(out / "sentences.bin", dtype=np.int64)
    for d, doc in enumerate(docs):
        ids = tokens[offsets[first[d]]:offsets[first[d + 1]]].tolist()
        assert ids == tok.encode(" ".join(doc), add_special_tokens=False)
    assert tok.convert_ids_to_tokens(int(tokens[offsets[1]])).startswith("\u0120")  # "ĠThen"


@pytest.fixture(scope="module")
def xlnet_build(tmp_path_factory):
    """A pairs build with an XLNet tokenizer: A <sep> B <sep> <cls>."""
    from litebert.tokenization import train_tokenizer

    root = tmp_path_factory.mktemp("xlnet-build")
    corpus = write_corpus(root / "corpus.txt")
    tok = train_tokenizer("xlnet", [corpus], root / "tok", vocab_size=200).parent
    return small_build(root, (corpus, tok), objective="sop")[1]


def test_xlnet_pairs_put_word_starts_on_their_own_tokens(xlnet_build):
    """With <cls> last, A starts at position 0: word starts (hence whole-word masks) sit on
    A's and B's own pieces, never on a separator or <cls> (the old offset 1 put them one
    token to the right)."""
    from litebert.data.splits import assemble

    ds = PretrainingDataset(xlnet_build)
    tok = Tokenizer.from_pretrained(xlnet_build / "tokenizer")
    assert tok.template.cls_last
    for row in np.asarray(ds.rows)[:40]:
        ids, types, starts, maskable = assemble(ds.tokens, ds.word_starts, row, ds.template)
        a_start, a_len, b_start, b_len = (int(x) for x in row[:4])
        assert ids[-1] == tok.cls_token_id and types[-1] == 2
        expected = np.zeros(len(ids), dtype=bool)
        expected[:a_len] = ds.word_starts[a_start:a_start + a_len]
        first = a_len + 1
        expected[first:first + b_len] = ds.word_starts[b_start:b_start + b_len]
        assert starts.tolist() == expected.tolist()
        assert not (starts & ~maskable).any()


# ---- a write that fails: a full disk ---------------------------------------------------------

class FillsUp:
    """A file that takes `room` bytes, then fails as a full disk does (ENOSPC)."""

    def __init__(self, file, room: int):
        self.file, self.room = file, room

    def write(self, data) -> int:
        if len(data) > self.room:
            self.file.write(bytes(data)[:self.room])
            self.room = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.file.write(data)

    def close(self) -> None:
        self.file.close()


def full_disk_at(monkeypatch, name: str, room: int) -> None:
    """The data file `name` (written atomically: `.NAME.tmp-PID` first) fills the disk."""
    real = open

    def opener(path, mode="r", *args, **kwargs):
        file = real(path, mode, *args, **kwargs)
        if "w" in mode and Path(path).name.startswith(f".{name}.tmp-"):
            return FillsUp(file, room)
        return file

    monkeypatch.setattr(files, "open", opener, raising=False)


def test_a_full_disk_while_building_is_one_sentence_and_leaves_no_arrays(
        tmp_path, corpus_and_tokenizer, monkeypatch, capsys):
    corpus, tok = corpus_and_tokenizer
    out = tmp_path / "data"
    args = ["data", "build", str(corpus), "--tokenizer", str(tok), "--out", str(out),
            "--max-seq-length", "64", "--workers", "1", "--format", "bert"]
    full_disk_at(monkeypatch, "tokens.bin", room=1000)
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"litebert data: error: could not write the data directory's "
                          f"tokens.bin to {out}: no space left on the device (it needs about "
                          f"its inputs' {human_size(corpus.stat().st_size)} or more, ")
    assert err.endswith("free there); the arrays written so far were removed and it has no "
                        "manifest, so nothing uses it: free some space, then run `litebert "
                        "data build` again")
    assert sorted(p.name for p in out.iterdir()) == []  # no arrays, temporaries, manifest

    full_disk_at(monkeypatch, "train.instances.bin", room=0)  # pass 2 this time
    with pytest.raises(WriteFailed, match="the data directory's train.instances.bin to "):
        small_build(tmp_path, corpus_and_tokenizer)
    assert sorted(p.name for p in out.iterdir()) == []
    monkeypatch.undo()
    assert main(args) == 0
    assert (out / "manifest.json").is_file() and verify_data(out)


def test_token_histogram_and_the_commonest_training_token(tmp_path, corpus_and_tokenizer):
    """token_counts.bin counts tokens.bin; the manifest's commonest training token is what
    the scan of an older directory (no such count in its manifest) finds."""
    from litebert.data.heldout import commonest_training_token, open_heldout

    manifest, out = small_build(tmp_path, corpus_and_tokenizer, heldout_fraction=0.3)
    tokens = np.fromfile(out / "tokens.bin", dtype=np.uint16)
    histogram = np.fromfile(out / "token_counts.bin", dtype=np.int64)
    assert len(histogram) == manifest["tokenizer"]["vocab_size"]
    assert np.array_equal(histogram, np.bincount(tokens, minlength=len(histogram)))
    assert "token_counts.bin" in manifest["files"]
    recorded = manifest["counts"]["commonest_training_token"]
    assert commonest_training_token(open_heldout(out)) == recorded
    manifest["counts"]["commonest_training_token"] = recorded + 1  # the record is what is read
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert commonest_training_token(open_heldout(out)) == recorded + 1
    del manifest["counts"]["commonest_training_token"]  # as an older build wrote it
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert commonest_training_token(open_heldout(out)) == recorded


def test_the_data_command_does_not_import_torch(tmp_path, corpus_and_tokenizer):
    """`litebert data build` parses only the data commands' options (the training commands'
    import torch and the models, about 4 s) and builds without torch, in 2 workers."""
    corpus, tokenizer = corpus_and_tokenizer
    code = ("import sys\nfrom litebert.cli import main\n"
            f"rc = main(['data', 'build', {str(corpus)!r}, '--tokenizer', {str(tokenizer)!r}, "
            f"'--out', {str(tmp_path / 'out')!r}, '--workers', '2', '--max-seq-length', '32'])\n"
            "print(rc, sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines()[-1] == "0 []"
    assert (tmp_path / "out" / "manifest.json").is_file()
