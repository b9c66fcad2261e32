"""`litebert data inspect` / `data stats` on XLNet stream directories
(litebert.objectives.plm_report): stats against PLMDataset and the corpus the directory was
built from, inspect's blocks read back into the items' pieces and targets, the dispatch by
packing, and the other packings' output as litebert.data.report gives it."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from litebert.cli import main
from litebert.data.loader import PretrainingDataset
from litebert.data.report import describe, stats
from litebert.data.word_starts import WordStarts
from litebert.objectives.plm_data import PLMDataset
from litebert.objectives.plm_report import (
    INSTANCES,
    REPORTERS,
    replay_targets,
    reporter_for,
    window_stats,
)
from litebert.tokenization import Tokenizer, train_sentencepiece
from tests.data.builds import small_build, write_corpus

SEQ, REUSE, DOCS = 64, 24, 120
HEADER = re.compile(r"#(\d+) \((\d+) tokens, (\d+) targets, next_sentence_label=([01]), "
                    r"reuse (\d+)\)")


@pytest.fixture(scope="module")
def corpus_and_tokenizer(tmp_path_factory):
    root = tmp_path_factory.mktemp("plm_report")
    corpus = write_corpus(root / "corpus.txt", docs=DOCS)
    return corpus, train_sentencepiece([corpus], root / "tok", vocab_size=200).parent


@pytest.fixture(scope="module")
def xlnet_dir(tmp_path_factory, corpus_and_tokenizer):
    _, out = small_build(tmp_path_factory.mktemp("xlnet"), corpus_and_tokenizer,
                         max_seq_length=SEQ, reuse_len=REUSE, objective="none",
                         packing="streams")
    return out


# ---- stats -----------------------------------------------------------------------------------

def test_stats_agree_with_the_dataset_and_the_corpus(xlnet_dir, capsys):
    assert main(["data", "stats", str(xlnet_dir), "--sample", "150"]) == 0
    report = json.loads(capsys.readouterr().out)
    manifest = json.loads((xlnet_dir / "manifest.json").read_text())
    assert report["config"] == manifest["config"] and report["counts"] == manifest["counts"]
    splits = report["splits"]
    for split, entry in splits.items():
        ds = PLMDataset(xlnet_dir, split)
        assert entry["windows"] == len(ds) > 0
        assert entry["documents"] == manifest["splits"][split]["documents"]
        assert (entry["seq_len"], entry["reuse_len"]) == (SEQ, REUSE)
        assert entry["windows_sampled"] == min(150, len(ds))
        # Exactly num_predict = T // K targets unless a window lacks tokens (never at T = 64).
        assert ds.num_predict == SEQ // 6 and entry["targets_per_window"] == ds.num_predict
        assert 0.0 <= entry["random_b_fraction"] <= 1.0
        assert 0.0 < entry["multiword_target_fraction"] < 1.0
        assert entry["mean_a_length"] + entry["mean_b_length"] == pytest.approx(SEQ - REUSE - 3)
    assert splits["train"]["documents"] + splits["heldout"]["documents"] == DOCS
    # Random half of the time, and always when no sentence boundary falls within A's reach.
    assert 0.4 < splits["train"]["random_b_fraction"] < 1.0
    # The stream's shape without its closers, against the corpus arrays it was cut from.
    sentences = len(np.fromfile(xlnet_dir / "sentences.bin", dtype=np.int64)) - 1
    tokens = manifest["counts"]["tokens"]
    ids = np.fromfile(xlnet_dir / "tokens.bin", dtype=manifest["counts"]["token_dtype"])
    words = WordStarts(ids, np.fromfile(xlnet_dir / "sentences.bin", dtype=np.int64),
                       Tokenizer.from_pretrained(xlnet_dir / "tokenizer").word_start_ids)[:].sum()
    per_doc = sum(e["sentences_per_document"] * e["documents"] for e in splits.values())
    assert per_doc == pytest.approx(sentences, rel=1e-3)
    assert sum(e["tokens"] - e["documents"] for e in splits.values()) == tokens
    per_word = sum((e["tokens"] - e["documents"]) / e["pieces_per_word"] for e in splits.values())
    assert per_word == pytest.approx(words, rel=1e-3)


def test_replayed_targets_are_the_items_and_spans_follow_max_span(xlnet_dir):
    """The spans the report counts are drawn from each item's own Generator: its replayed
    targets are the item's, every span lies in them, and with max_span 1 (the paper's
    ablation without span prediction) no span holds two words."""
    shares = {}
    for max_span in (5, 1):
        ds = PLMDataset(xlnet_dir, max_span=max_span, bi_data=True)
        for index in (0, 7, ds.windows, len(ds) - 1):  # forwards and backwards
            is_target, spans = replay_targets(ds, index)
            assert np.array_equal(is_target, ds[index]["is_target"].numpy())
            for begin, end, words in spans:
                assert is_target[begin:end].all() and 1 <= words <= max_span
        shares[max_span] = window_stats(ds, sample=100, seed=1)["multiword_target_fraction"]
    assert shares[1] == 0.0 < shares[5] < 1.0


# ---- inspect ---------------------------------------------------------------------------------

def parse_block(block: str) -> tuple[re.Match, dict[str, list[str]]]:
    """(header match, pieces of each marked line) of one inspect block."""
    head, *lines = block.splitlines()
    match = HEADER.fullmatch(head)
    assert match, head
    parts = {}
    for line, name in zip(lines, ("reuse", "A", "B"), strict=True):
        marker = f"| {name} | "
        assert line.startswith(marker), line
        parts[name] = line[len(marker):].split(" ")
    return match, parts


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_inspect_shows_the_items_pieces_parts_and_targets(xlnet_dir, capsys, split):
    assert main(["data", "inspect", str(xlnet_dir), "-n", "4", "--split", split]) == 0
    blocks = capsys.readouterr().out.split("\n\n")
    assert blocks[-1] == "" and len(blocks) == 5  # each block ends with a blank line
    ds = PLMDataset(xlnet_dir, split)
    tokenizer = Tokenizer.from_pretrained(xlnet_dir / "tokenizer")
    for index, block in enumerate(blocks[:-1]):
        item = ds[index]
        match, parts = parse_block(block)
        assert match.groups() == (str(index), str(SEQ), str(int(item["is_target"].sum())),
                                  str(int(item["next_sentence_label"])), str(REUSE))
        shown = parts["reuse"] + parts["A"] + parts["B"]
        targets = [p.startswith("[[") and p.endswith("]]") for p in shown]
        assert np.array_equal(targets, item["is_target"].numpy())
        pieces = [p[2:-2] if hit else p for p, hit in zip(shown, targets, strict=True)]
        assert pieces == tokenizer.convert_ids_to_tokens(item["input_ids"].tolist())
        types = item["token_type_ids"].numpy()
        assert len(parts["reuse"]) == REUSE
        assert len(parts["A"]) == int((types == 0).sum()) - REUSE  # A and its <sep>
        sep, cls = tokenizer.convert_ids_to_tokens([tokenizer.sep_token_id,
                                                    tokenizer.cls_token_id])
        assert parts["A"][-1] == parts["B"][-2] == sep and parts["B"][-1] == cls


def test_a_damaged_stream_is_a_clear_cli_error(xlnet_dir, tmp_path, capsys):
    copy = shutil.copytree(xlnet_dir, tmp_path / "copy")
    path = copy / "heldout.stream.bin"
    path.write_bytes(path.read_bytes()[:-8])
    for command in (["data", "stats", str(copy)], ["data", "inspect", str(copy), "--split",
                                                   "heldout"]):
        assert main(command) == 2
        assert "heldout.stream.bin" in capsys.readouterr().err


# ---- the other packings ----------------------------------------------------------------------

@pytest.mark.parametrize("cfg", [{}, {"objective": "none", "packing": "full-sentences"}],
                         ids=["pairs", "full-sentences"])
def test_other_packings_read_as_litebert_data_report_shows_them(tmp_path,
                                                                corpus_and_tokenizer, capsys,
                                                                cfg):
    """The output of the commands before stream directories had a reporter, rebuilt from
    litebert.data.report: the same bytes."""
    _, out = small_build(tmp_path, corpus_and_tokenizer, **cfg)
    assert reporter_for(out) is INSTANCES and reporter_for(out) not in REPORTERS.values()
    ds = PretrainingDataset(out, "heldout")
    tokenizer = Tokenizer.from_pretrained(out / "tokenizer")
    assert main(["data", "inspect", str(out), "-n", "3", "--split", "heldout"]) == 0
    assert capsys.readouterr().out == "".join(
        describe(ds, i, tokenizer) + "\n\n" for i in range(min(3, len(ds))))
    assert main(["data", "stats", str(out), "--sample", "50"]) == 0
    assert capsys.readouterr().out == json.dumps(stats(out, sample=50), indent=2) + "\n"
