"""ModernBERT's flavour of byte-level BPE: [UNK] [CLS] [SEP] [PAD] [MASK] after the merges,
[CLS] A [SEP] (B [SEP]) with one token type; recognised from the vocabulary when read back,
and the ids of transformers' AutoTokenizer on the directory it saves. Trained on generated
text (tests/fixtures_sp.py), no downloads."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from litebert.cli import main
from litebert.tokenization import Tokenizer, TokenizerError, train_bpe, train_tokenizer
from litebert.tokenization.bpe_flavours import FLAVOURS, MODERNBERT, ROBERTA, flavour_of
from tests.fixtures_sp import EDGE_TEXTS, generated_paragraphs, generated_sentences

SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]  # ModernBERT's order of ids


def auto(directory):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(directory))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A ModernBERT-flavour vocabulary of 600 tokens trained on 300 generated paragraphs."""
    root = tmp_path_factory.mktemp("modernbert")
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(generated_paragraphs(300, seed=3)) + "\n", encoding="utf-8")
    return train_bpe([corpus], root / "tok", flavour="modernbert", vocab_size=600)


@pytest.fixture(scope="module")
def texts() -> list[str]:
    """Sentences the vocabulary was not trained on, and edge cases (spaces, accents, emoji)."""
    extra = ["Ünïcödé naïve café, 3.14% — “quoted” 😀", "  two  spaces ", "x\ty\nz"]
    return [t for t in EDGE_TEXTS if t.strip()][:7] + generated_sentences(10, seed=11) + extra


def test_training_puts_the_specials_after_the_merges(trained):
    tok = Tokenizer.from_pretrained(trained)
    assert tok.kind == "bpe" and len(tok) == 600
    assert tok.convert_ids_to_tokens(list(range(595, 600))) == SPECIALS
    ids = [tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.pad_token_id,
           tok.mask_token_id]
    assert ids == [595, 596, 597, 598, 599]
    vocab = json.loads((trained / "vocab.json").read_text(encoding="utf-8"))
    assert not {"<s>", "</s>", "<pad>", "<unk>", "<mask>"} & set(vocab)
    assert tok.special_mask[595:].all() and not tok.special_mask[:595].any()
    assert not np.isin(ids, tok.replacement_ids).any()
    pieces = tok.convert_ids_to_tokens(list(range(len(tok))))
    assert tok.word_start_ids.tolist() == [p.startswith("\u0120") for p in pieces]


def test_single_and_pair_templates(trained):
    tok = Tokenizer.from_pretrained(trained)
    cls, sep = tok.cls_token_id, tok.sep_token_id
    a, b = "The committee met in 1999.", "It agreed."
    ids_a, ids_b = tok.encode(a, add_special_tokens=False), tok.encode(b, add_special_tokens=False)
    assert tok.encode(a) == [cls, *ids_a, sep]
    pair = tok(a, b, return_offsets_mapping=True)
    assert pair["input_ids"] == [cls, *ids_a, sep, *ids_b, sep]  # one [SEP] between them
    assert pair["token_type_ids"] == [0] * len(pair["input_ids"])
    spans = pair["offset_mapping"]
    assert spans[0] == spans[len(ids_a) + 1] == spans[-1] == (0, 0)
    assert b[slice(*spans[len(ids_a) + 2])] == "It"
    assert tok(a, b, add_special_tokens=False)["token_type_ids"] == [0] * (len(ids_a) + len(ids_b))
    assert (tok.template.num_special(False), tok.template.num_special(True)) == (2, 3)
    assert tok.padding_side == "right" and tok.pad_token_type_id == 0
    batch = tok.pad([tok(a), tok(b)], multiple_of=1)
    assert batch["input_ids"][1, -1].item() == tok.pad_token_id
    assert batch["token_type_ids"].sum().item() == 0


def test_autotokenizer_gives_our_ids(trained, texts):
    ours, theirs = Tokenizer.from_pretrained(trained), auto(trained)
    assert type(theirs).__name__ in ("PreTrainedTokenizerFast", "TokenizersBackend")
    for name in ("cls", "sep", "pad", "mask", "unk"):
        assert getattr(theirs, f"{name}_token_id") == getattr(ours, f"{name}_token_id"), name
    assert theirs.model_input_names == ["input_ids", "attention_mask"]  # as ModernBERT's
    pairs = (texts[:10], texts[10:20])
    for args in ((texts,), pairs):
        for add in (True, False):
            mine = ours(*args, add_special_tokens=add, return_offsets_mapping=True)
            their = theirs(*args, add_special_tokens=add, truncation=False,
                           return_offsets_mapping=True, return_token_type_ids=True)
            assert mine["input_ids"] == their["input_ids"]
            assert mine["token_type_ids"] == their["token_type_ids"]
            assert mine["offset_mapping"] == [[tuple(s) for s in row]
                                              for row in their["offset_mapping"]]
    padded = theirs(texts[:3], padding=True)["input_ids"]
    assert padded[0][-1] in (ours.sep_token_id, ours.pad_token_id)
    assert ours.pad_token_id in {i for row in padded for i in row}


def test_round_trip_and_the_flavour_is_read_from_the_vocabulary(trained, texts, tmp_path):
    tok = Tokenizer.from_pretrained(trained)
    saved = tok.save_pretrained(tmp_path / "saved")
    # Every way of reading it: the saved directory, vocab.json + merges.txt alone (no
    # tokenizer_config.json to say which flavour), and the bare tokenizer.json.
    (tmp_path / "bare").mkdir()
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(saved / name, tmp_path / "bare" / name)
    for again in (Tokenizer.from_pretrained(saved), Tokenizer.from_pretrained(tmp_path / "bare"),
                  Tokenizer.from_file(saved / "tokenizer.json")):
        assert again.fingerprint == tok.fingerprint
        assert again.template == tok.template and again.template.separators == 1
        assert again.mask_token_id == tok.mask_token_id
        pairs = (texts[:5], texts[5:10])
        assert again(*pairs)["input_ids"] == tok(*pairs)["input_ids"]
    config = json.loads((saved / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert "bos_token" not in config and config["cls_token"] == "[CLS]"


def test_flavour_of_looks_at_cls_and_sep():
    assert flavour_of({"[CLS]", "[SEP]"}.__contains__) is MODERNBERT
    assert flavour_of({"<s>", "</s>"}.__contains__) is ROBERTA
    assert flavour_of({"[CLS]"}.__contains__) is ROBERTA  # any other: RoBERTa's, as before
    assert set(FLAVOURS) == {"roberta", "modernbert"}


def test_roberta_flavour_keeps_its_ids_and_template(tmp_path):
    lines = generated_paragraphs(100, seed=4)
    tok = Tokenizer.from_pretrained(train_bpe([], tmp_path / "rb", vocab_size=400,
                                              sentence_iterator=lines))
    assert tok.convert_ids_to_tokens([0, 1, 2, 3, len(tok) - 1]) == [
        "<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    a, b = tok.encode("one", add_special_tokens=False), tok.encode("two", add_special_tokens=False)
    assert tok("one", "two")["input_ids"] == [0, *a, 2, 2, *b, 2]


def test_cli_kind_modernbert(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(generated_paragraphs(200, seed=5)) + "\n", encoding="utf-8")
    out = tmp_path / "tok"
    assert main(["tokenizer", "train", "--kind", "modernbert", "--vocab-size", "500",
                 "--min-frequency", "1", "--out", str(out), str(corpus)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    tok = Tokenizer.from_pretrained(out)
    assert len(tok) == 500 and tok.mask_token_id == 499 and tok.cls_token_id == 496
    assert train_tokenizer("modernbert", [corpus], tmp_path / "again", vocab_size=500,
                           min_frequency=1) == tmp_path / "again"
    assert (out / "merges.txt").read_bytes() == (tmp_path / "again" / "merges.txt").read_bytes()
    with pytest.raises(TokenizerError, match=r"vocab_size=261 must exceed .* plus 5 special"):
        train_bpe([corpus], tmp_path / "small", flavour="modernbert", vocab_size=261)
    with pytest.raises(TokenizerError, match="unknown byte-level BPE flavour 'gpt2'"):
        train_bpe([corpus], tmp_path / "odd", flavour="gpt2")
