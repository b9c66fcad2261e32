"""Tokenizer: SentencePiece ids equal to the official ALBERT algorithm, WordPiece ids equal to
transformers' BertTokenizer, offsets, pairs, truncation, decoding, files, training, speed."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litebert.files import InputFileError
from litebert.tokenization import (
    ALBERT_USER_SYMBOLS,
    TextSettings,
    Tokenizer,
    TokenizerError,
    preprocess_text,
    train_sentencepiece,
)
from litebert.tokenization import albert_text as albert_spm
from tests.fixtures_sp import (
    EDGE_TEXTS,
    generated_paragraphs,
    generated_sentences,
    reference_ids,
    reference_pieces,
    reference_preprocess,
    sentencepiece_test_models,
    train_official_recipe,
)

TEXTS = EDGE_TEXTS + generated_sentences(120, seed=3)
SP_MODELS = ("trained", "official_recipe", "botchan_en_unigram_1000", "botchan_en_bpe_1000",
             "kyoto_ja_unigram_8000")
VARIANTS = ({}, {"keep_accents": True}, {"do_lower_case": False}, {"remove_space": False})


def _reference_kwargs(variant: dict) -> dict:
    return dict(lower=variant.get("do_lower_case", True),
                remove_space=variant.get("remove_space", True),
                keep_accents=variant.get("keep_accents", False))


@pytest.fixture(scope="session")
def sdist_models():
    return sentencepiece_test_models()


@pytest.fixture(scope="session")
def trained_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("albert-spm")
    train_sentencepiece([], out, vocab_size=600, sentence_iterator=generated_paragraphs(300))
    return out


@pytest.fixture(scope="session")
def albert(trained_dir) -> Tokenizer:
    return Tokenizer.from_pretrained(trained_dir)


@pytest.fixture(scope="session")
def official_recipe(tmp_path_factory) -> Path:
    """The same text, trained as the official ALBERT recipe does: it has "digit," pieces."""
    return train_official_recipe(generated_paragraphs(300), tmp_path_factory.mktemp("official"),
                                 vocab_size=600)


@pytest.fixture(scope="session")
def model_paths(sdist_models, trained_dir, official_recipe):
    return {"trained": trained_dir / "spiece.model", "official_recipe": official_recipe,
            **sdist_models}


@pytest.fixture(scope="session")
def wordpiece_dir(tmp_path_factory):
    from tokenizers.implementations import BertWordPieceTokenizer

    out = tmp_path_factory.mktemp("wordpiece")
    trainer = BertWordPieceTokenizer(lowercase=True)
    trainer.train_from_iterator(generated_paragraphs(300) + EDGE_TEXTS, vocab_size=500,
                                min_frequency=1, show_progress=False)
    trainer.save_model(str(out))
    return out


# ---- preprocessing --------------------------------------------------------------------------

def test_whitespace_regex_is_str_split():
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    assert set(re.findall(r"\s", every)) == {c for c in every if c.isspace()}


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40), st.booleans(), st.booleans(), st.booleans())
def test_preprocessing_equals_the_reference(text, lower, remove_space, keep_accents):
    rules = TextSettings(do_lower_case=lower, remove_space=remove_space,
                         keep_accents=keep_accents)
    expected = reference_preprocess(text, lower=lower, remove_space=remove_space,
                                    keep_accents=keep_accents)
    assert preprocess_text(text, rules) == expected
    assert albert_spm.preprocess_batch([text, "x", text], rules) == [expected, "x", expected]
    normalized, starts, ends = albert_spm.aligned_preprocess(text, rules)
    assert normalized == expected
    assert all(0 <= s < e <= len(text) for s, e in zip(starts, ends, strict=True))
    assert starts == sorted(starts)


# ---- SentencePiece ids: the official ALBERT algorithm -------------------------------------

@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: ",".join(v) or "default")
@pytest.mark.parametrize("name", SP_MODELS)
def test_sentencepiece_ids_equal_the_official_algorithm(model_paths, name, variant):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(model_paths[name]))
    tok = Tokenizer.from_file(model_paths[name], **variant)
    kwargs = _reference_kwargs(variant)
    batch = tok.encode_batch_with_word_starts(TEXTS, num_threads=2)
    for text, (ids, starts) in zip(TEXTS, batch, strict=True):
        expected = reference_ids(sp, text, **kwargs)
        pieces = reference_pieces(sp, text, **kwargs)
        assert ids.dtype == np.int32 and starts.dtype == bool
        assert ids.tolist() == expected, text
        assert tok.encode(text, add_special_tokens=False) == expected, text
        with_offsets = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        assert with_offsets["input_ids"] == expected, text
        word_starts = [p.startswith("\u2581") or i == 0 for i, p in enumerate(pieces)]
        assert starts.tolist() == word_starts, text


def test_digit_comma_resplit_is_applied(official_recipe):
    """A vocabulary trained as the official recipe trains it has "digit," pieces; they are
    re-split as the official code does."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(official_recipe))
    tok = Tokenizer.from_file(official_recipe)
    resplit = 0
    for text in ("in 1990, the", "1,000,000", "costs 5,6,7, and 8,", "from 22, 36, to 57,"):
        raw = sp.encode(reference_preprocess(text), out_type=str)
        resplit += any(albert_spm.is_number_comma(p) for p in raw)
        ours = tok.tokenize(text)
        assert "," in ours and all(not albert_spm.is_number_comma(p) for p in ours)
        assert ours == reference_pieces(sp, text)
        assert len(ours) >= len(raw)
    assert resplit >= 2


def test_training_makes_no_digit_comma_piece(albert, official_recipe):
    """The same text, trained by litebert: no piece ends in a digit and a comma, so the
    re-split has nothing to do (and tokenizer.json, which lacks it, gives the same ids)."""
    pieces = [albert.convert_ids_to_tokens(i) for i in range(len(albert))]
    official = Tokenizer.from_file(official_recipe)
    official_pieces = [official.convert_ids_to_tokens(i) for i in range(len(official))]
    assert any(albert_spm.is_number_comma(p) for p in official_pieces)
    assert not [p for p in pieces if albert_spm.is_number_comma(p)]
    assert "," in pieces and any(p.strip("\u2581").isdigit() for p in pieces)


def test_unknown_text_that_changes_ids(tmp_path):
    """A vocabulary without digits and commas: <unk> runs like "1990," get the re-split, and a
    run equal to a control piece ("[CLS]", case kept) maps to it, as in the official code."""
    import random

    import sentencepiece as spm

    rng = random.Random(0)
    lines = [" ".join("".join(rng.choice("abcdefghij") for _ in range(rng.randrange(2, 7)))
                      for _ in range(10)) for _ in range(200)]
    path = train_sentencepiece([], tmp_path, vocab_size=60, sentence_iterator=lines,
                               user_defined_symbols=())
    sp = spm.SentencePieceProcessor(model_file=str(path))
    texts = ["abc 1990, def", "x1,y 22, 3,", "[CLS] abc [SEP]", "ABC [MASK] 1,000,000", ""]
    for variant in ({}, {"do_lower_case": False}):
        tok = Tokenizer.from_file(path, **variant)
        kwargs = _reference_kwargs(variant)
        batch = tok.encode_batch_with_word_starts(texts)
        for text, (ids, starts) in zip(texts, batch, strict=True):
            pieces = reference_pieces(sp, text, **kwargs)
            assert ids.tolist() == reference_ids(sp, text, **kwargs), text
            assert starts.tolist() == [p.startswith("\u2581") or i == 0
                                       for i, p in enumerate(pieces)]
    assert Tokenizer.from_file(path, do_lower_case=False).encode("[CLS]")[2] == 2


def test_fast_path_encodes_no_pieces_for_ordinary_text(albert, monkeypatch):
    """The batch path applies ALBERT's re-split with a per-id table: no per-text piece
    encoding for text with numbers like 1,000 (the slow official loop would need it)."""
    backend = albert._backend
    calls = []

    class Counting:
        def __getattr__(self, name):
            return getattr(sp, name)

        def encode(self, inputs, **kwargs):
            if kwargs.get("out_type") is str:
                calls.append(inputs)
            return sp.encode(inputs, **kwargs)

    sp = backend.sp
    monkeypatch.setattr(backend, "sp", Counting())
    texts = generated_sentences(200, seed=11)
    assert any(re.search(r"\d,\d", t) for t in texts)
    albert.encode_batch_with_word_starts(texts)
    assert calls == []


# ---- special tokens and vocabulary ----------------------------------------------------------

def test_albert_layout_and_special_ids(albert):
    assert (albert.pad_token_id, albert.unk_token_id, albert.cls_token_id,
            albert.sep_token_id, albert.mask_token_id) == (0, 1, 2, 3, 4)
    assert albert.all_special_ids == [0, 1, 2, 3, 4]
    assert albert.convert_ids_to_tokens(list(range(5))) == [
        "<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    assert albert.convert_ids_to_tokens(list(range(5, 5 + len(ALBERT_USER_SYMBOLS)))) == list(
        ALBERT_USER_SYMBOLS)
    assert len(albert) == albert.vocab_size <= 600
    assert albert.convert_tokens_to_ids("[MASK]") == 4
    assert albert.convert_tokens_to_ids(["no-such-piece", "[SEP]"]) == [1, 3]
    tokens = albert.tokenize('x (a) "b" - c. \u2013 \u00a35 \u20ac6')
    for symbol in ALBERT_USER_SYMBOLS:
        assert symbol in tokens  # user-defined symbols are always pieces of their own


def test_models_without_albert_specials(sdist_models):
    tok = Tokenizer.from_file(sdist_models["botchan_en_unigram_1000"])
    assert (tok.unk_token_id, tok.cls_token_id, tok.sep_token_id) == (0, 1, 2)
    assert tok.pad_token_id is None and tok.mask_token_id is None
    assert tok.encode("hello")[0] == 1 and tok.encode("hello")[-1] == 2


# ---- pairs, truncation, batches -------------------------------------------------------------

def test_pair_encoding(albert):
    a = albert.encode("the council opened", add_special_tokens=False)
    b = albert.encode("a new market in 1990, again", add_special_tokens=False)
    out = albert("the council opened", "a new market in 1990, again")
    assert out["input_ids"] == [2, *a, 3, *b, 3]
    assert out["token_type_ids"] == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    assert out["attention_mask"] == [1] * (len(a) + len(b) + 3)
    assert albert("the council opened")["input_ids"] == albert.encode("the council opened")
    batch = albert(["x y", "z"], ["w", "v u"])
    assert batch["input_ids"] == [albert("x y", "w")["input_ids"],
                                  albert("z", "v u")["input_ids"]]
    bare = albert("x y", "w", add_special_tokens=False)
    assert bare["input_ids"] == albert.encode("x y", False) + albert.encode("w", False)


def test_longest_first_truncation_equals_transformers(albert, tmp_path):
    """transformers (its tokenizers library) keeps half the budget on each side when both must
    be cut, the odd token going to the longer side (B on a tie); the official BERT/ALBERT
    loop (one token at a time from the longer side) gives it to A instead."""
    from transformers import AutoTokenizer

    theirs = AutoTokenizer.from_pretrained(str(albert.save_pretrained(tmp_path / "t")))
    words = "one two three four five six seven eight nine ten eleven twelve".split()
    for n_a in (1, 3, 7, 12):
        for n_b in (1, 2, 5, 12):
            a, b = " ".join(words[:n_a]), " ".join(words[:n_b])
            for max_length in (3, 4, 8, 13, 40):
                out = albert(a, b, truncation=True, max_length=max_length)
                assert out == {k: v for k, v in theirs(a, b, truncation=True,
                                                       max_length=max_length).items()}, \
                    (a, b, max_length)
                assert len(out["input_ids"]) <= max_length
    single = albert(" ".join(words), truncation=True, max_length=5)["input_ids"]
    assert single == albert.encode(" ".join(words))[:4] + [3]
    same = albert.encode(" ".join(words), False)  # a tie, odd budget 5: B keeps 3, A 2
    assert albert(" ".join(words), " ".join(words), truncation=True,
                  max_length=8)["input_ids"] == [2, *same[:2], 3, *same[:3], 3]


def test_other_truncation_strategies_and_errors(albert):
    a, b = "one two three four five six", "seven eight nine"
    ids_a, ids_b = albert.encode(a, False), albert.encode(b, False)
    out = albert(a, b, truncation="only_first", max_length=len(ids_b) + 5)
    assert out["input_ids"] == [2, *ids_a[:2], 3, *ids_b, 3]
    out = albert(a, b, truncation="only_second", max_length=len(ids_a) + 5)
    assert out["input_ids"] == [2, *ids_a, 3, *ids_b[:2], 3]
    assert len(albert(a, b, max_length=4)["input_ids"]) > 4  # no truncation unless asked
    with pytest.raises(TokenizerError, match="needs max_length"):
        albert(a, truncation=True)
    with pytest.raises(TokenizerError, match="leaves no room"):
        albert(a, b, truncation=True, max_length=2)
    with pytest.raises(TokenizerError, match="truncation='sideways'"):
        albert(a, truncation="sideways", max_length=5)
    with pytest.raises(TokenizerError, match="only the second"):
        albert(a, b, truncation="only_second", max_length=4)
    with pytest.raises(TokenizerError, match="only the first"):  # as transformers: keep one
        albert(a, b, truncation="only_first", max_length=len(ids_b) + 3)
    with pytest.raises(TokenizerError, match="needs a text pair"):
        albert(a, truncation="only_second", max_length=4)


def test_batch_with_word_starts_edges(albert):
    assert albert.encode_batch_with_word_starts([]) == []
    (ids0, s0), (ids1, s1) = albert.encode_batch_with_word_starts(["", "   "])
    assert ids0.size == ids1.size == 0 and s0.dtype == bool
    ids, starts, lengths = albert.encode_batch_flat(["a b", "", "(c)"])
    assert lengths.tolist() == [len(albert.encode("a b", False)), 0,
                                len(albert.encode("(c)", False))]
    assert starts[0] and starts[lengths[0]]  # every text's first token starts a word
    with pytest.raises(TokenizerError, match="list of texts"):
        albert.encode_batch_with_word_starts("one text")
    with pytest.raises(TokenizerError, match=r"texts\[1\] is a int"):
        albert.encode_batch_with_word_starts(["a", 3])


# ---- offsets --------------------------------------------------------------------------------

ASCII_TEXTS = [t for t in TEXTS if t.isascii() and "\x00" not in t and "\x07" not in t] + [
    "  Hello,   World!  In 1990, ``we'' paid 1,000,000 (or so).", "UPPER lower MiXeD"]


@pytest.mark.parametrize("name", SP_MODELS)
def test_offsets_point_at_the_token_text(model_paths, name):
    tok = Tokenizer.from_file(model_paths[name])
    for text in ASCII_TEXTS:
        out = tok(text, return_offsets_mapping=True)
        pieces = tok.convert_ids_to_tokens(out["input_ids"])
        assert out["offset_mapping"][0] == out["offset_mapping"][-1] == (0, 0)
        for piece, i, (s, e) in zip(pieces[1:-1], out["input_ids"][1:-1],
                                    out["offset_mapping"][1:-1], strict=True):
            if i != tok.unk_token_id:
                assert preprocess_text(text[s:e], tok.settings) == piece.replace(
                    "\u2581", ""), (text, piece, text[s:e])


def test_offsets_cover_the_original_accented_characters(albert):
    text = "Café   Zürich, naïve FAÇADE and cafe\u0301"
    out = albert(text, return_offsets_mapping=True, add_special_tokens=False)
    spans = out["offset_mapping"]
    assert "".join(preprocess_text(text[s:e], albert.settings) for s, e in spans) == \
        preprocess_text(text, albert.settings).replace(" ", "")
    for word in re.finditer(r"\S+", text):
        inside = [(s, e) for s, e in spans if word.start() <= s < word.end()]
        assert min(s for s, _ in inside) == word.start()
        assert max(e for _, e in inside) == word.end()
    assert max(e for _, e in spans) == len(text)  # the combining accent belongs to the "e"


def test_offsets_on_every_edge_text_are_ordered_spans(albert):
    for text in TEXTS:
        out = albert(text, "and B", return_offsets_mapping=True)
        for s, e in out["offset_mapping"]:
            assert 0 <= s <= e <= max(len(text), 5)


# ---- decoding -------------------------------------------------------------------------------

def test_decode_round_trip(albert):
    for text in generated_sentences(60, seed=4):
        normal = preprocess_text(text, albert.settings)
        ids = albert.encode(normal)
        if albert.unk_token_id in ids:
            continue
        assert albert.decode(ids, skip_special_tokens=True) == normal
        assert albert.decode(ids) == f"[CLS] {normal} [SEP]"
    assert albert.decode(np.array(albert.encode("a b"))) == albert.decode(albert.encode("a b"))
    with pytest.raises(TokenizerError, match="outside the vocabulary"):
        albert.decode([5, 10**6])


# ---- files ----------------------------------------------------------------------------------

def test_save_and_load_round_trip(albert, tmp_path):
    saved = albert.save_pretrained(tmp_path / "copy")
    config = json.loads((saved / "tokenizer_config.json").read_text())
    # tokenizer.json as it is: transformers' AlbertTokenizer would rebuild its own pipeline.
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert (config["do_lower_case"], config["remove_space"], config["keep_accents"]) == (
        True, True, False)
    assert (saved / "tokenizer.json").is_file()
    assert (config["cls_token"], config["mask_token"], config["pad_token"]) == (
        "[CLS]", "[MASK]", "<pad>")
    again = Tokenizer.from_pretrained(saved)
    assert again.fingerprint == albert.fingerprint and len(again.fingerprint) == 64
    assert again(TEXTS[3], TEXTS[4]) == albert(TEXTS[3], TEXTS[4])
    cased = Tokenizer.from_pretrained(saved, do_lower_case=False)
    assert cased.fingerprint != albert.fingerprint
    cased.save_pretrained(tmp_path / "cased")
    assert Tokenizer.from_pretrained(tmp_path / "cased").settings.do_lower_case is False
    assert Tokenizer.from_file(saved / "spiece.model").fingerprint == albert.fingerprint


def test_file_errors_name_the_file(tmp_path, albert, wordpiece_dir):
    with pytest.raises(TokenizerError, match="spiece.model.*vocab.txt.*vocab.json"):
        Tokenizer.from_pretrained(tmp_path)
    with pytest.raises(TokenizerError, match="not a directory"):
        Tokenizer.from_pretrained(tmp_path / "missing")
    with pytest.raises(TokenizerError, match="no such tokenizer file"):
        Tokenizer.from_file(tmp_path / "missing.model")
    bad = albert.save_pretrained(tmp_path / "bad")
    (bad / "tokenizer_config.json").write_text('{\n  "do_lower_case": true,\n  oops\n}')
    with pytest.raises(TokenizerError, match=r"tokenizer_config.json, line 3: invalid JSON"):
        Tokenizer.from_pretrained(bad)
    (bad / "tokenizer_config.json").write_text('{"keep_accents": "yes"}')
    with pytest.raises(TokenizerError, match="keep_accents must be true or false"):
        Tokenizer.from_pretrained(bad)
    with pytest.raises(TokenizerError, match="unknown tokenizer setting"):
        Tokenizer.from_pretrained(wordpiece_dir, lowercase=True)
    (tmp_path / "junk.model").write_bytes(b"not a model")
    with pytest.raises(TokenizerError, match="junk.model: not a SentencePiece model"):
        Tokenizer.from_file(tmp_path / "junk.model")
    (tmp_path / "vocab.txt").write_text("a\nb\n")
    with pytest.raises(TokenizerError, match=r"vocab.txt: .*\[UNK\]"):
        Tokenizer.from_file(tmp_path / "vocab.txt")
    with pytest.raises(TokenizerError, match="expected text as a str"):
        albert.encode(None)


# ---- WordPiece ------------------------------------------------------------------------------

WORDPIECE_VARIANTS = ({}, {"do_lower_case": False}, {"strip_accents": False},
                      {"do_lower_case": False, "strip_accents": True},
                      {"tokenize_chinese_chars": False})


@pytest.mark.parametrize("variant", WORDPIECE_VARIANTS, ids=lambda v: ",".join(v) or "default")
def test_wordpiece_equals_transformers_bert(wordpiece_dir, variant):
    from transformers import BertTokenizer
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

    ours = Tokenizer.from_pretrained(wordpiece_dir, **variant)
    fast = BertTokenizer.from_pretrained(str(wordpiece_dir), **variant)
    slow = BertTokenizerLegacy(vocab_file=str(wordpiece_dir / "vocab.txt"), **variant)
    # (transformers' fast tokenizer drops an empty text_pair; its slow one and we keep it.)
    for text, pair in zip(TEXTS, TEXTS[2:] + TEXTS[:2], strict=True):
        mine = ours(text, pair, return_offsets_mapping=True)
        theirs = fast(text, pair or None, return_offsets_mapping=True)
        if pair:
            assert mine["input_ids"] == theirs["input_ids"], text
            assert mine["token_type_ids"] == theirs["token_type_ids"]
            assert mine["offset_mapping"] == [tuple(x) for x in theirs["offset_mapping"]]
        assert ours(text)["input_ids"] == fast(text)["input_ids"], text
        # Python's str.lower() writes a final sigma (ς) where tokenizers writes σ.
        if "\u03a3" not in text + pair:
            assert mine["input_ids"] == slow(text, pair)["input_ids"], text


def test_wordpiece_word_starts_and_files(wordpiece_dir, tmp_path):
    tok = Tokenizer.from_pretrained(wordpiece_dir)
    assert tok.kind == "wordpiece"
    assert (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id,
            tok.mask_token_id) == (0, 1, 2, 3, 4)
    for text, (ids, starts) in zip(TEXTS, tok.encode_batch_with_word_starts(TEXTS),
                                   strict=True):
        tokens = tok.convert_ids_to_tokens(ids.tolist())
        assert ids.tolist() == tok.encode(text, add_special_tokens=False)
        assert starts.tolist() == [not t.startswith("##") or i == 0
                                   for i, t in enumerate(tokens)]
    saved = tok.save_pretrained(tmp_path / "wp")
    config = json.loads((saved / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "BertTokenizer" and config["do_lower_case"] is True
    assert Tokenizer.from_pretrained(saved).fingerprint == tok.fingerprint
    assert tok.decode(tok.encode("the market opened"), skip_special_tokens=True) == \
        "the market opened"


# ---- training -------------------------------------------------------------------------------

def test_training_writes_albert_files(trained_dir, albert):
    import sentencepiece as spm

    assert (trained_dir / "spiece.model").is_file()
    assert json.loads((trained_dir / "tokenizer_config.json").read_text())[
        "tokenizer_class"] == "PreTrainedTokenizerFast"
    assert (trained_dir / "tokenizer.json").is_file()
    sp = spm.SentencePieceProcessor(model_file=str(trained_dir / "spiece.model"))
    assert [sp.is_control(i) for i in range(5)] == [True, False, True, True, True]
    assert sp.is_unknown(1) and sp.bos_id() == -1 and sp.eos_id() == -1
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    assert not any(p != p.lower() for p in pieces[5:])  # trained on lower-cased text
    assert "\u00e9" not in "".join(pieces)  # accents stripped


def test_training_reads_files_directories_and_compressed_text(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    paragraphs = generated_paragraphs(120, seed=7)
    # Each file has a letter no other file has: the model knows it only if the file was read.
    marked = {"a.txt": "\u0436", "sub/b.txt.gz": "\u03bb", "c.bz2": "\u05e9"}
    openers = {".txt": open, ".gz": gzip.open, ".bz2": bz2.open}
    for k, (name, letter) in enumerate(marked.items()):
        with openers[(corpus / name).suffix](corpus / name, "wt", encoding="utf-8") as f:
            f.write("\n".join(paragraphs[40 * k:40 * k + 40] + [f"{letter}a {letter}o"] * 30))
    with lzma.open(tmp_path / "extra.xz", "wt", encoding="utf-8") as f:
        f.write("\n".join(["\u0b95i \u0b95u"] * 30))
    first = train_sentencepiece([corpus, tmp_path / "extra.xz"], tmp_path / "m1",
                                vocab_size=400, num_threads=2)
    second = train_sentencepiece([corpus, tmp_path / "extra.xz"], tmp_path / "m2",
                                 vocab_size=400, num_threads=2)
    assert first.read_bytes() == second.read_bytes()  # deterministic
    tok = Tokenizer.from_file(first)
    for letter in [*marked.values(), "\u0b95"]:
        assert tok.unk_token_id not in tok.encode(f"{letter}a", add_special_tokens=False)
    assert tok.unk_token_id in tok.encode("\u0915", add_special_tokens=False)  # never seen


def test_training_errors(tmp_path):
    with pytest.raises(InputFileError, match="missing.txt: no such file"):
        train_sentencepiece([tmp_path / "missing.txt"], tmp_path / "out")
    with pytest.raises(TokenizerError, match="vocab_size=10"):
        train_sentencepiece([], tmp_path / "out", vocab_size=10, sentence_iterator=["a b"])
    with pytest.raises(TokenizerError, match="no inputs"):
        train_sentencepiece([], tmp_path / "out")


# ---- transformers' AlbertTokenizer ----------------------------------------------------------

def _has_protobuf() -> bool:
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        return False
    return True


def _transformers_albert(albert: Tokenizer):
    """transformers reads spiece.model only with protobuf; without it, build the same
    Unigram from our pieces and scores (no SentencePiece normalizer then)."""
    from transformers import AlbertTokenizer

    if _has_protobuf():
        return AlbertTokenizer.from_pretrained(str(albert.path.parent)), "from_pretrained"
    sp = albert._backend.sp
    vocab = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    return AlbertTokenizer(vocab=vocab), "pieces and scores (protobuf missing)"


PLAIN = [" ".join(s.lower().split()[:8]) for s in generated_sentences(60, seed=8)]
PLAIN = [re.sub(r"[^a-z ]", "", s) for s in PLAIN]


@pytest.mark.skipif(not _has_protobuf(), reason="protobuf is not installed: transformers 5 "
                    "cannot read spiece.model without it (it falls back to tiktoken and fails)")
def test_trained_model_loads_in_transformers(albert):
    from transformers import AlbertTokenizer

    theirs = AlbertTokenizer.from_pretrained(str(albert.path.parent))
    for text in PLAIN:
        assert theirs(text)["input_ids"] == albert(text)["input_ids"], text


def test_transformers_albert_agreement(albert, record_property):
    """How often transformers' AlbertTokenizer gives the official ids (it lacks the "digit,"
    re-split and treats user-defined symbols differently); ours always does."""
    import sentencepiece as spm

    theirs, how = _transformers_albert(albert)
    sp = spm.SentencePieceProcessor(model_file=str(albert.path))
    sentences = generated_sentences(200, seed=5)
    ours_ok = sum(albert(s)["input_ids"][1:-1] == reference_ids(sp, s) for s in sentences)
    agree = sum(theirs(s)["input_ids"] == albert(s)["input_ids"] for s in sentences)
    fraction = agree / len(sentences)
    record_property("transformers_albert_agreement", fraction)
    print(f"\ntransformers AlbertTokenizer ({how}) agrees on {agree}/{len(sentences)} "
          f"= {fraction:.1%} of generated sentences; litebert on {ours_ok}/{len(sentences)}")
    assert ours_ok == len(sentences)
    for text in PLAIN:  # plain lower-case words: the models must agree
        assert theirs(text)["input_ids"] == albert(text)["input_ids"], text


# ---- speed ----------------------------------------------------------------------------------

def test_encode_speed(albert, record_property):
    paragraphs = generated_paragraphs(3000, seed=9)
    megabytes = sum(len(p.encode()) for p in paragraphs) / 1e6
    for threads in (1, 2):
        albert.encode_batch_with_word_starts(paragraphs[:50], num_threads=threads)
        start = time.perf_counter()
        albert.encode_batch_with_word_starts(paragraphs, num_threads=threads)
        speed = megabytes / (time.perf_counter() - start)
        record_property(f"encode_mb_per_s_{threads}_threads", round(speed, 2))
        print(f"\nencode_batch_with_word_starts, {threads} thread(s): {speed:.1f} MB/s")
        assert speed > 0.5  # a floor far below the ~5-8 MB/s measured; catches a slow path


def test_json_lines_train_on_their_text_not_their_json(tmp_path):
    """`litebert tokenizer train corpus.jsonl` learned pieces of the JSON syntax and keys."""
    import json

    words = "the model learns from text every layer shares weights with all others".split()
    rng = np.random.default_rng(0)
    with open(tmp_path / "c.jsonl", "w") as f:
        for i in range(200):
            text = ". ".join(" ".join(rng.choice(words, 8)) for _ in range(3)) + "."
            f.write(json.dumps({"id": f"doc-{i}", "text": text, "label": "news"}) + "\n")
    tok = Tokenizer.from_pretrained(train_sentencepiece([tmp_path / "c.jsonl"], tmp_path / "t",
                                                        vocab_size=60).parent)
    pieces = [tok.convert_ids_to_tokens(i) for i in range(len(tok))]
    assert not [p for p in pieces if any(c in p for c in '{}:"') and p != '"'], pieces
    assert not [p for p in pieces if "news" in p or "doc" in p]
