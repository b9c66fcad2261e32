"""tokenizer.json: transformers' AutoTokenizer, loading what Tokenizer.save_pretrained wrote,
gives litebert's ids (token types too, with and without special tokens) on real English text,
for every backend; the SentencePiece pipeline against the official algorithm on edge texts,
other models and settings; what still differs, and why."""

from __future__ import annotations

import json
import struct
import sys
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litebert.tokenization import TextSettings, Tokenizer, preprocess_text
from litebert.tokenization.spm_proto import USER_DEFINED, read_model
from tests.fixtures_sp import EDGE_TEXTS, generated_sentences, sentencepiece_test_models
from tests.helpers.tokenizer_agreement import agreement, auto, report, sample

THRESHOLD = 0.999  # share of encodings with identical ids that each backend must reach


# ---- real text, every backend -----------------------------------------------------------------

def test_sentencepiece_export_on_bbc_sample(bbc_sentencepiece, bbc_sentences, tmp_path,
                                            record_property):
    saved = bbc_sentencepiece.save_pretrained(tmp_path / "albert")
    texts = sample(bbc_sentences, 2000, seed=1)
    fraction = report(record_property, "sentencepiece", *agreement(bbc_sentencepiece,
                                                                     auto(saved), texts))
    assert fraction >= THRESHOLD


@pytest.mark.slow
def test_sentencepiece_export_on_all_of_bbc(bbc_sentencepiece, bbc_sentences, tmp_path,
                                            record_property):
    saved = bbc_sentencepiece.save_pretrained(tmp_path / "albert")
    fraction = report(record_property, "sentencepiece_all", *agreement(
        bbc_sentencepiece, auto(saved), bbc_sentences))
    assert fraction >= THRESHOLD


def test_wordpiece_export_on_bbc(bbc_wordpiece, bbc_sentences, tmp_path, record_property):
    saved = bbc_wordpiece.save_pretrained(tmp_path / "bert")
    fraction = report(record_property, "wordpiece", *agreement(
        bbc_wordpiece, auto(saved), sample(bbc_sentences, 4000, seed=2)))
    assert fraction >= THRESHOLD


def test_bpe_export_on_bbc(bbc_bpe, bbc_sentences, tmp_path, record_property):
    saved = bbc_bpe.save_pretrained(tmp_path / "roberta")
    fraction = report(record_property, "bpe", *agreement(
        bbc_bpe, auto(saved), sample(bbc_sentences, 4000, seed=3)))
    assert fraction >= THRESHOLD


def test_transformers_own_albert_conversion_disagrees(bbc_sentencepiece, bbc_sentences,
                                                      tmp_path, record_property):
    """Why tokenizer.json exists: transformers converting spiece.model itself makes the user
    symbols ( ) " - . added tokens, which drops the "▁" piece before them."""
    pytest.importorskip("google.protobuf")
    from transformers import AlbertTokenizer

    (tmp_path / "spiece.model").write_bytes(bbc_sentencepiece.path.read_bytes())
    converted = AlbertTokenizer.from_pretrained(str(tmp_path))
    texts = sample(bbc_sentences, 1000, seed=4)
    same = sum(converted(t)["input_ids"] == bbc_sentencepiece(t)["input_ids"] for t in texts)
    record_property("albert_converter_agreement", same / len(texts))
    print(f"\ntransformers' AlbertTokenizer from spiece.model alone: {same}/{len(texts)} "
          "sentences with litebert's ids")
    assert converted("a (b)")["input_ids"] != bbc_sentencepiece("a (b)")["input_ids"]
    assert same < 0.9 * len(texts)


def test_user_symbols_keep_the_space_piece_before_them(bbc_sentencepiece, tmp_path):
    theirs = auto(bbc_sentencepiece.save_pretrained(tmp_path / "albert"))
    text = 'He said (twice) "yes" - in £5.50 or €6 \u2013 done.'
    pieces = bbc_sentencepiece.tokenize(text)
    assert pieces[pieces.index("(") - 1] == "\u2581"  # the space before "(" is its own piece
    assert theirs.convert_ids_to_tokens(theirs(text)["input_ids"]) == ["[CLS]", *pieces, "[SEP]"]


# ---- the SentencePiece pipeline: other models, settings, edge texts -----------------------

VARIANTS = ({}, {"keep_accents": True}, {"do_lower_case": False}, {"remove_space": False})
EDGES = EDGE_TEXTS + generated_sentences(300, seed=6) + [
    "\u2581lead and trail\u2581", "mid\u2581dle \u2581 x", "tab\tand\nnew\n\nlines  ", "ΟΔΟΣ Σ",
    "ΑΣ' ΑΣΑ", "[cls] in the text", "a  (  b  )  c", "(((x)))", "\u00a8 \u00b4 x\u0301"]


@pytest.fixture(scope="module")
def spm_models(bbc_sentencepiece):
    return {"bbc": bbc_sentencepiece.path, **sentencepiece_test_models()}


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: ",".join(v) or "default")
@pytest.mark.parametrize("name", ["bbc", "botchan_en_unigram_1000", "botchan_en_bpe_1000",
                                  "kyoto_ja_unigram_8000"])
def test_sentencepiece_pipeline_on_edge_texts(spm_models, name, variant, tmp_path):
    """tokenizer.json read by the tokenizers library gives the official ids, except where two
    segmentations of a word score exactly the same (float rounding picks one: kyoto's "555")."""
    from tokenizers import Tokenizer as HFTokenizer

    ours = Tokenizer.from_file(spm_models[name], **variant)
    hf = HFTokenizer.from_file(str(ours.save_pretrained(tmp_path) / "tokenizer.json"))
    texts = EDGES  # none spells a special token: see test_literal_special_tokens...
    theirs = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    model = read_model(spm_models[name].read_bytes(), name)
    for text, (ids, _), other in zip(texts, ours.encode_batch_with_word_starts(texts), theirs,
                                     strict=True):
        if ids.tolist() != other:
            assert model.model_type == "unigram", text
            assert _score(model, ids.tolist()) == pytest.approx(_score(model, other), abs=1e-4), \
                (text, ours.convert_ids_to_tokens(ids.tolist()), ours.convert_ids_to_tokens(other))


def _score(model, ids: list[int]) -> float:
    pieces = model.pieces
    return sum(0.0 if pieces[i].type == USER_DEFINED else pieces[i].score for i in ids)


def test_literal_special_tokens_are_where_transformers_differs(bbc_sentencepiece, tmp_path):
    """Known difference: transformers matches special tokens written in raw text before
    normalizing; litebert (like the official ALBERT code) reads them as text."""
    cased = Tokenizer.from_pretrained(bbc_sentencepiece.path.parent, do_lower_case=False)
    theirs = auto(cased.save_pretrained(tmp_path / "cased"))
    text = "a [MASK] b"
    assert theirs(text)["input_ids"][2] == cased.mask_token_id
    assert cased.mask_token_id not in cased(text)["input_ids"]


def _with_piece(model_bytes: bytes, piece: str, score: float) -> bytes:
    """A SentencePiece model with one more normal piece at the end (a repeated field 1)."""
    text = piece.encode("utf-8")
    body = b"\x0a" + bytes([len(text)]) + text + b"\x15" + struct.pack("<f", score) + b"\x18\x01"
    return model_bytes + b"\x0a" + bytes([len(body)]) + body


def test_digit_comma_pieces_never_come_out(bbc_sentencepiece, tmp_path):
    """A vocabulary with "▁1990," (ALBERT re-splits it into "▁1990" ","), and "0,000", as an
    official vocabulary may have them (litebert trains neither): the export renames the first
    so that no word matches it, and "in 1990, the" gets the official ids."""
    path = tmp_path / "spiece.model"
    with_thousands = _with_piece(bbc_sentencepiece.path.read_bytes(), "0,000", -10.0)
    path.write_bytes(_with_piece(with_thousands, "\u25811990,", -1.0))
    ours = Tokenizer.from_file(path)
    hf_dir = ours.save_pretrained(tmp_path / "out")
    new_id = len(ours) - 1
    assert ours.convert_ids_to_tokens(new_id) == "\u25811990,"
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(path))
    assert sp.encode("in 1990, the", out_type=str)[1] == "\u25811990,"  # the raw model uses it
    theirs = auto(hf_dir)
    for text in ("in 1990, the", "1990,", "(1990,1990, and 1990,)"):
        assert theirs(text)["input_ids"] == ours(text)["input_ids"], text
        assert new_id not in theirs(text)["input_ids"]
    # Known difference: the official path takes "▁1990," then re-encodes "1990"; without the
    # piece, the best path here ends in "0,000".
    assert "0,000" in theirs.convert_ids_to_tokens(theirs("1990,000")["input_ids"])
    assert ours.tokenize("1990,000")[-3:] == [",", "0", "00"]


def test_keep_accents_compatibility_character_with_a_mark(bbc_sentencepiece, tmp_path):
    """Known difference, keep_accents only: tokenizers' Precompiled normalizer maps the grapheme
    "ǌ́" as a whole ("nj") and drops the accent, which SentencePiece keeps (an <unk> here).
    By default ALBERT's NFKD and mark removal come first, and both agree."""
    from tokenizers import Tokenizer as HFTokenizer

    text = "\u01cc\u0301 x"
    for keep_accents, agree in ((False, True), (True, False)):
        ours = Tokenizer.from_pretrained(bbc_sentencepiece.path.parent, keep_accents=keep_accents)
        hf = HFTokenizer.from_file(str(ours.save_pretrained(tmp_path / str(keep_accents)) /
                                       "tokenizer.json"))
        theirs = hf.encode(text, add_special_tokens=False).ids
        assert (theirs == ours.encode(text, add_special_tokens=False)) is agree


def test_models_without_an_equivalent_write_no_tokenizer_json(tmp_path, caplog):
    import io

    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(generated_sentences(100)),
                                   model_writer=buf, model_type="char", minloglevel=2)
    (tmp_path / "spiece.model").write_bytes(buf.getvalue())
    (tmp_path / "tokenizer.json").write_text("{}")  # a stale one goes
    Tokenizer.from_file(tmp_path / "spiece.model").save_pretrained(tmp_path)
    assert not (tmp_path / "tokenizer.json").exists()
    assert "char model has no tokenizer.json equivalent" in caplog.text
    assert Tokenizer.from_pretrained(tmp_path).kind == "sentencepiece"


# ---- the normalizer is ALBERT's preprocess_text ---------------------------------------------

def _version_gaps() -> set[str]:
    """Characters whose NFKD or lower case differ between Python's Unicode database and the
    tokenizers library's tables (newer or older Unicode): a known difference."""
    from tokenizers import normalizers

    chars = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000 and c != 10]
    joined = "\n".join(chars)  # one call each; "\n" stops canonical reordering between chars
    nfkd = normalizers.NFKD().normalize_str(joined).split("\n")
    lower = normalizers.Lowercase().normalize_str(joined).split("\n")
    return {c for c, d, low in zip(chars, nfkd, lower, strict=True)
            if d != unicodedata.normalize("NFKD", c) or low != c.lower()}


GAPS = _version_gaps()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30) |
       st.text(alphabet=" \t\n\u00a0\u3000`'\u03a3\u03c3AaB\u0301\u0130\u1e9b\u2581.", max_size=20),
       st.booleans(), st.booleans(), st.booleans())
def test_albert_normalizer_steps_equal_preprocess_text(text, lower, keep_accents, remove_space):
    from tokenizers import normalizers

    from litebert.tokenization.hf_json import _albert_steps

    if GAPS.intersection(text):
        return
    rules = TextSettings(do_lower_case=lower, keep_accents=keep_accents,
                         remove_space=remove_space)
    steps = normalizers.Sequence(_albert_steps(rules))
    assert steps.normalize_str(text) == preprocess_text(text, rules)


def test_unicode_version_gaps_are_few():
    """The characters skipped above: rare ones, new in Unicode 12-16 (e.g. U+1C89, U+32FF,
    U+A7F2-4, U+10781-107BA, Garay U+10D50-), none in Latin, Greek, Cyrillic (U+0000-052F) or
    the CJK ideographs."""
    print(f"\n{len(GAPS)} characters differ between Python's Unicode {unicodedata.unidata_version}"
          f" and tokenizers' NFKD / lower case: {sorted(hex(ord(c)) for c in GAPS)[:12]} ...")
    assert len(GAPS) < 300
    assert not [c for c in GAPS if ord(c) < 0x530 or 0x4E00 <= ord(c) < 0xA000]


def test_tokenizer_json_files_are_complete(bbc_sentencepiece, bbc_wordpiece, bbc_bpe, tmp_path):
    for tok, cls_token in ((bbc_sentencepiece, "[CLS]"), (bbc_wordpiece, "[CLS]"),
                           (bbc_bpe, "<s>")):
        saved = tok.save_pretrained(tmp_path / tok.kind)
        data = json.loads((saved / "tokenizer.json").read_text())
        added = {t["content"]: t["id"] for t in data["added_tokens"]}
        assert added[cls_token] == tok.cls_token_id and all(t["special"]
                                                            for t in data["added_tokens"])
        assert data["post_processor"] is not None
        theirs = auto(saved)
        assert (theirs.cls_token_id, theirs.sep_token_id, theirs.pad_token_id,
                theirs.mask_token_id) == (tok.cls_token_id, tok.sep_token_id, tok.pad_token_id,
                                          tok.mask_token_id)
        assert len(theirs) == len(tok)
        assert np.array_equal(Tokenizer.from_pretrained(saved).special_mask, tok.special_mask)


@pytest.mark.parametrize("kind, model_type", [("sentencepiece", "albert"), ("wordpiece", "bert"),
                                              ("wordpiece", "electra"), ("bpe", "roberta")])
def test_model_directories_load_the_same_ids(bbc_sentencepiece, bbc_wordpiece, bbc_bpe,
                                             bbc_sentences, kind, model_type, tmp_path):
    """A model directory (config.json beside the tokenizer files, as fine-tuning writes it):
    AutoTokenizer also consults the model type there."""
    tok = {"sentencepiece": bbc_sentencepiece, "wordpiece": bbc_wordpiece, "bpe": bbc_bpe}[kind]
    saved = tok.save_pretrained(tmp_path / "model")
    (saved / "config.json").write_text(json.dumps({"model_type": model_type,
                                                   "vocab_size": len(tok)}))
    texts = sample(bbc_sentences, 300, seed=8)
    same, total, differing = agreement(tok, auto(saved), texts)
    assert same == total, differing[:3]
