"""Byte-level BPE: ids, offsets, pairs and truncation equal transformers' RobertaTokenizerFast on
real text; RoBERTa's layout and template; word starts, special ids, files, errors; training and
`litebert tokenizer train --kind bpe`."""

from __future__ import annotations

import gzip
import json
import random
import shutil

import numpy as np
import pytest

from litebert.cli import main
from litebert.tokenization import Tokenizer, TokenizerError, train_bpe
from tests.fixtures_sp import EDGE_TEXTS, generated_paragraphs
from tests.helpers.tokenizer_agreement import pairs_of, sample


def roberta(directory):
    from transformers import RobertaTokenizerFast

    return RobertaTokenizerFast.from_pretrained(str(directory))


def _vocab_and_merges_only(tok: Tokenizer, directory):
    """A directory with only vocab.json and merges.txt, as RoBERTa's release has them."""
    directory.mkdir()
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(tok.path.parent / name, directory / name)
    return directory


def _same(mine: dict, theirs: dict, i: int) -> bool:
    return (mine["input_ids"][i] == theirs["input_ids"][i]
            and mine["offset_mapping"][i] == [tuple(s) for s in theirs["offset_mapping"][i]])


@pytest.mark.parametrize("files", ["saved", "vocab_and_merges"])
def test_ids_and_offsets_equal_roberta_on_bbc(bbc_bpe, bbc_sentences, tmp_path, files,
                                              record_property):
    directory = bbc_bpe.save_pretrained(tmp_path / "saved") if files == "saved" else \
        _vocab_and_merges_only(bbc_bpe, tmp_path / "vm")
    ours, theirs = Tokenizer.from_pretrained(directory), roberta(directory)
    texts = sample(bbc_sentences, 3000, seed=5)
    a, b = pairs_of(texts)
    same = total = 0
    for args in ((texts,), (a, b)):
        mine = ours(*args, return_offsets_mapping=True)
        their = theirs(*args, return_offsets_mapping=True, return_token_type_ids=True)
        assert all(t == [0] * len(t) for t in their["token_type_ids"])
        assert mine["token_type_ids"] == their["token_type_ids"]
        same += sum(_same(mine, their, i) for i in range(len(args[0])))
        total += len(args[0])
    rng = random.Random(0)  # truncation: both sides, either side, odd and even budgets
    for x, y in zip(a[:1000], b[:1000], strict=True):
        for strategy in (True, "only_first", "only_second"):
            length = rng.randrange(6, 48)
            try:
                mine = ours(x, y, truncation=strategy, max_length=length)
            except TokenizerError:  # the named side is too short: transformers raises too
                with pytest.raises(Exception, match="(?i)truncat|too short"):
                    theirs(x, y, truncation=strategy, max_length=length)
                continue
            same += mine["input_ids"] == theirs(x, y, truncation=strategy,
                                                max_length=length)["input_ids"]
            total += 1
    record_property(f"bpe_roberta_agreement_{files}", same / total)
    print(f"\nbpe ({files}): RobertaTokenizerFast gives litebert's ids and offsets on "
          f"{same}/{total} encodings")
    assert same == total


def test_edge_texts_equal_roberta(bbc_bpe, tmp_path):
    theirs = roberta(bbc_bpe.save_pretrained(tmp_path / "saved"))
    texts = [*EDGE_TEXTS, " leading space", "trailing  ", "\u00e9t\u00e9 \U0001f600 \t\n x"]
    for text, pair in zip(texts, texts[3:] + texts[:3], strict=True):
        mine = bbc_bpe(text, pair or None, return_offsets_mapping=True)
        their = theirs(text, pair or None, return_offsets_mapping=True)
        assert mine["input_ids"] == their["input_ids"], (text, pair)
        assert mine["offset_mapping"] == [tuple(s) for s in their["offset_mapping"]], text


def test_roberta_layout_and_template(bbc_bpe):
    tok = bbc_bpe
    assert tok.kind == "bpe" and len(tok) == 5000
    assert (tok.cls_token_id, tok.pad_token_id, tok.sep_token_id, tok.unk_token_id,
            tok.mask_token_id) == (0, 1, 2, 3, 4999)
    assert tok.convert_ids_to_tokens([0, 1, 2, 3, 4999]) == ["<s>", "<pad>", "</s>", "<unk>",
                                                              "<mask>"]
    assert (tok.template.separators, tok.template.typed_pairs) == (2, False)
    a, b = tok.encode("The bank", False), tok.encode("rose", False)
    out = tok("The bank", "rose", return_offsets_mapping=True)
    assert out["input_ids"] == [0, *a, 2, 2, *b, 2]
    assert out["token_type_ids"] == [0] * len(out["input_ids"])
    assert [out["offset_mapping"][i] for i in (0, len(a) + 1, len(a) + 2, -1)] == [(0, 0)] * 4
    assert tok.encode("The bank") == [0, *a, 2]
    bare = tok("The bank", "rose", add_special_tokens=False)
    assert bare["input_ids"] == a + b and bare["token_type_ids"] == [0] * len(a + b)
    assert len(tok("one two three", "four five six", truncation=True,
                   max_length=6)["input_ids"]) == 6  # 4 special tokens in a pair
    assert tok.decode(tok.encode("Hello world, caf\u00e9!"), skip_special_tokens=True) == \
        "Hello world, caf\u00e9!"
    assert tok.settings.do_lower_case is False  # byte-level BPE reads text as it is


def test_word_starts_are_byte_level_spaces(bbc_bpe, bbc_sentences):
    texts = sample(bbc_sentences, 200, seed=7) + ["", "  two  spaces", "x"]
    for text, (ids, starts) in zip(texts, bbc_bpe.encode_batch_with_word_starts(texts),
                                   strict=True):
        tokens = bbc_bpe.convert_ids_to_tokens(ids.tolist())
        assert ids.tolist() == bbc_bpe.encode(text, add_special_tokens=False)
        assert starts.tolist() == [t.startswith("\u0120") or i == 0
                                   for i, t in enumerate(tokens)]


def test_special_ids_are_never_replacements(bbc_bpe, tmp_path):
    assert np.flatnonzero(bbc_bpe.special_mask).tolist() == [0, 1, 2, 3, 4999]
    assert bbc_bpe.replacement_ids.tolist() == list(range(4, 4999))
    # A vocabulary that holds "[CLS]" as text: not special here, and no special name.
    vocab = json.loads((bbc_bpe.path.parent / "vocab.json").read_text())
    merges = (bbc_bpe.path.parent / "merges.txt").read_text().splitlines()
    pieces = ["[", "C", "L", "S", "]", "[C", "LS", "[CLS", "[CLS]"]
    new_merges = ["[ C", "L S", "[C LS", "[CLS ]"]
    for piece in pieces:
        vocab.setdefault(piece, len(vocab))
    out = tmp_path / "cls"
    out.mkdir()
    (out / "vocab.json").write_text(json.dumps(vocab))
    (out / "merges.txt").write_text("\n".join([*merges, *new_merges]) + "\n")
    tok = Tokenizer.from_pretrained(out)
    assert tok.cls_token_id == 0 and tok.convert_tokens_to_ids("[CLS]") == vocab["[CLS]"]
    assert not tok.special_mask[vocab["[CLS]"]] and vocab["[CLS]"] in tok.replacement_ids
    assert tok.special_mask[4999]  # <mask>: no merge makes it


# ---- files -------------------------------------------------------------------------------------

def test_save_load_and_fingerprint(bbc_bpe, tmp_path):
    saved = bbc_bpe.save_pretrained(tmp_path / "saved")
    assert sorted(p.name for p in saved.iterdir()) == [
        "merges.txt", "tokenizer.json", "tokenizer_config.json", "vocab.json"]
    config = json.loads((saved / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "RobertaTokenizer"
    assert (config["add_prefix_space"], config["trim_offsets"]) == (False, True)
    again = Tokenizer.from_pretrained(saved)
    assert again.fingerprint == bbc_bpe.fingerprint
    only_json = tmp_path / "json"
    only_json.mkdir()
    shutil.copy(saved / "tokenizer.json", only_json)
    from_json = Tokenizer.from_pretrained(only_json)
    assert from_json.kind == "bpe" and from_json.path.name == "tokenizer.json"
    assert from_json.fingerprint == bbc_bpe.fingerprint  # the same vocabulary and merges
    assert Tokenizer.from_file(saved / "tokenizer.json").fingerprint == bbc_bpe.fingerprint
    assert Tokenizer.from_file(saved / "vocab.json").fingerprint == bbc_bpe.fingerprint
    text = "Shares in the firm rose 5% (to \u00a31.20) on Monday."
    assert from_json(text, "And fell.") == bbc_bpe(text, "And fell.")
    merges = (saved / "merges.txt").read_text().splitlines()
    (saved / "merges.txt").write_text("\n".join(merges[:-1]) + "\n")
    assert Tokenizer.from_pretrained(saved).fingerprint != bbc_bpe.fingerprint


def test_directory_detection(bbc_bpe, bbc_sentencepiece, bbc_wordpiece, tmp_path):
    for tok in (bbc_bpe, bbc_sentencepiece, bbc_wordpiece):
        saved = tok.save_pretrained(tmp_path / tok.kind)
        assert Tokenizer.from_pretrained(saved).kind == tok.kind
    mixed = tmp_path / "mixed"
    shutil.copytree(tmp_path / "bpe", mixed)
    shutil.copy(tmp_path / "wordpiece" / "vocab.txt", mixed)
    assert Tokenizer.from_pretrained(mixed).kind == "bpe"  # tokenizer_class RobertaTokenizer
    (mixed / "tokenizer_config.json").write_text('{"tokenizer_class": "BertTokenizerFast"}')
    assert Tokenizer.from_pretrained(mixed).kind == "wordpiece"
    (tmp_path / "empty").mkdir()
    with pytest.raises(TokenizerError, match="spiece.model.*vocab.txt.*vocab.json.*merges.txt"):
        Tokenizer.from_pretrained(tmp_path / "empty")
    unigram = tmp_path / "unigram"  # a tokenizer.json alone, as transformers 5 saves
    unigram.mkdir()
    shutil.copy(tmp_path / "sentencepiece" / "tokenizer.json", unigram)
    from_json = Tokenizer.from_pretrained(unigram)
    assert from_json.kind == "sentencepiece" and from_json.path.name == "tokenizer.json"
    text = "The committee met in London (twice) in 1999."
    assert from_json(text) == bbc_sentencepiece(text)
    (unigram / "tokenizer.json").write_text('{"model": {"type": "WordLevel"}}')
    with pytest.raises(TokenizerError, match="tokenizer.json holds a WordLevel model"):
        Tokenizer.from_pretrained(unigram)


def test_file_errors_name_the_file(bbc_bpe, tmp_path):
    saved = bbc_bpe.save_pretrained(tmp_path / "saved")
    with pytest.raises(TokenizerError, match="takes no text settings"):
        Tokenizer.from_pretrained(saved, do_lower_case=True)
    config = json.loads((saved / "tokenizer_config.json").read_text())
    (saved / "tokenizer_config.json").write_text(json.dumps({**config, "add_prefix_space": True}))
    with pytest.raises(TokenizerError, match="add_prefix_space=True is not supported"):
        Tokenizer.from_pretrained(saved)
    (saved / "tokenizer_config.json").write_text(json.dumps(config))
    (saved / "merges.txt").write_text("#version: 0.2\nĠ t\nbad line here\n")
    with pytest.raises(TokenizerError, match=r"merges.txt, line 3: expected two tokens"):
        Tokenizer.from_pretrained(saved)
    (saved / "merges.txt").unlink()
    (saved / "tokenizer.json").unlink()
    with pytest.raises(TokenizerError, match="no tokenizer files"):
        Tokenizer.from_pretrained(saved)
    with pytest.raises(TokenizerError, match="merges.txt: no such file"):
        Tokenizer.from_file(saved / "vocab.json")
    (saved / "merges.txt").write_text("")
    (saved / "vocab.json").write_text(json.dumps({"a": 0, "b": 1, "[UNK]": 2}))
    with pytest.raises(TokenizerError, match="not a byte-level BPE vocabulary: 254 of the 256"):
        Tokenizer.from_pretrained(saved)
    (saved / "vocab.json").write_text('{"a": 0,')
    with pytest.raises(TokenizerError, match="vocab.json, line 1: invalid JSON"):
        Tokenizer.from_pretrained(saved)


# ---- training and the command line ------------------------------------------------------------

def test_train_bpe_reads_every_input_kind(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    paragraphs = generated_paragraphs(200, seed=8)
    (corpus / "a.txt").write_text("\n".join(paragraphs[:100] + ["Zqxj Zqxj Zqxj"] * 100))
    with gzip.open(corpus / "sub" / "b.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(paragraphs[100:] + ["Vwkp Vwkp Vwkp"] * 100))
    records = [{"text": f"Yrrb Yrrb Yrrb. {p}", "id": i} for i, p in enumerate(paragraphs)]
    (corpus / "c.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    first = train_bpe([corpus], tmp_path / "m1", vocab_size=1000)
    second = train_bpe([corpus], tmp_path / "m2", vocab_size=1000)
    for name in ("vocab.json", "merges.txt", "tokenizer.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes()  # deterministic
    tok = Tokenizer.from_pretrained(first)
    assert len(tok) == 1000 and tok.mask_token_id == 999
    for word in ("\u0120Zqxj", "\u0120Vwkp", "Yrrb"):  # each file was read, case kept
        assert word in tok.convert_ids_to_tokens(list(range(len(tok))))
    assert not [t for t in tok.convert_ids_to_tokens(list(range(len(tok)))) if '"id"' in t]
    with pytest.raises(TokenizerError, match="vocab_size=100"):
        train_bpe([corpus], tmp_path / "m3", vocab_size=100)
    with pytest.raises(TokenizerError, match="no inputs"):
        train_bpe([], tmp_path / "m4")


def test_cli_trains_bpe_that_both_libraries_load(bbc_sentences, tmp_path, capsys):
    from transformers import AutoTokenizer

    corpus = tmp_path / "news.jsonl"
    texts = sample(bbc_sentences, 6000, seed=9)
    corpus.write_text("\n".join(json.dumps({"body": t}) for t in texts) + "\n")
    out = tmp_path / "tok"
    assert main(["tokenizer", "train", "--kind", "bpe", "--vocab-size", "2000",
                 "--text-field", "body", "--out", str(out), str(corpus)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    ours = Tokenizer.from_pretrained(out)
    assert ours.kind == "bpe" and len(ours) == 2000 and ours.mask_token_id == 1999
    for theirs in (AutoTokenizer.from_pretrained(str(out)), roberta(out)):
        assert type(theirs).__name__ == "RobertaTokenizer"
        check = texts[:500]
        assert ours(check)["input_ids"] == theirs(check)["input_ids"]
    assert main(["tokenizer", "train", "--kind", "bpe", "--vocab-size", "50", "--out",
                 str(tmp_path / "bad"), str(corpus)]) == 2
    assert "vocab_size=50" in capsys.readouterr().err
    # The default kind writes a directory AutoTokenizer reads with ALBERT's ids, too.
    assert main(["tokenizer", "train", "--vocab-size", "1500", "--text-field", "body",
                 "--out", str(tmp_path / "spm"), str(corpus)]) == 0
    albert = Tokenizer.from_pretrained(tmp_path / "spm")
    assert albert.kind == "sentencepiece" and len(albert) <= 1500
    theirs = AutoTokenizer.from_pretrained(str(tmp_path / "spm"))
    pairs = (texts[:500], texts[500:1000])
    assert albert(*pairs)["input_ids"] == theirs(*pairs)["input_ids"]
    assert albert(*pairs)["token_type_ids"] == theirs(*pairs)["token_type_ids"]


def test_cli_help_shows_every_default(capsys):
    with pytest.raises(SystemExit):
        main(["tokenizer", "train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for option, default in (("--kind", "default: sentencepiece"),
                            ("--vocab-size", "default: 30000 for sentencepiece, 32000 for "
                                             "xlnet, 50265 for bpe, 50368 for modernbert"),
                            ("--input-sentence-size", "default: 1000000"),
                            ("--min-frequency", "default: 2"), ("--text-field", "default: text"),
                            ("--out", "required")):
        assert option in text and default in text, option
