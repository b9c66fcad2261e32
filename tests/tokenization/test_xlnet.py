"""XLNet's tokenizer: the official vocabulary layout and preprocessing (zihangdai/xlnet README's
spm_train command, data_utils.special_symbols, prepro_utils), the A <sep> B <sep> <cls>
template with token types 0/1/2, left padding with pad type 3, the export that transformers'
AutoTokenizer loads, and `litebert tokenizer train --kind xlnet`."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from litebert.cli import main
from litebert.tokenization import PairTemplate, Tokenizer, train_sentencepiece
from litebert.tokenization.layouts import LAYOUTS
from litebert.tokenization.spm_proto import USER_DEFINED, read_model
from tests.fixtures_sp import EDGE_TEXTS, generated_sentences, reference_ids
from tests.helpers.tokenizer_agreement import agreement, auto, report, sample

XLNET_SPECIALS = ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"]
XLNET_SYMBOLS = [".", "(", ")", '"', "-", "\u2013", "\u00a3", "\u20ac"]


# ---- the vocabulary layout and the text rules -----------------------------------------------

def test_trained_vocabulary_has_xlnets_ids_and_piece_types(bbc_xlnet):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(bbc_xlnet.path))
    assert bbc_xlnet.convert_ids_to_tokens(list(range(17))) == XLNET_SPECIALS + XLNET_SYMBOLS
    assert sp.is_unknown(0) and (sp.bos_id(), sp.eos_id(), sp.pad_id()) == (1, 2, 5)
    assert [sp.is_control(i) for i in range(9)] == [False] + [True] * 7 + [False]
    pieces = read_model(bbc_xlnet.path.read_bytes(), "xlnet").pieces
    assert pieces[8].type == USER_DEFINED  # <eop> is written in the text at paragraph ends
    assert (bbc_xlnet.cls_token_id, bbc_xlnet.sep_token_id, bbc_xlnet.pad_token_id,
            bbc_xlnet.mask_token_id, bbc_xlnet.unk_token_id, bbc_xlnet.eod_token_id) == (
        3, 4, 5, 6, 0, 7)
    assert bbc_xlnet.tokenize("Para one.<eop>")[-1] == "<eop>"


def test_cased_accents_stripped_and_official_ids(bbc_xlnet, bbc_sentences):
    """prepro_utils.preprocess_text(lower=False) then encode_ids (the "digit," re-split)."""
    import sentencepiece as spm

    settings = bbc_xlnet.settings
    assert (settings.do_lower_case, settings.keep_accents, settings.remove_space) == (
        False, False, True)
    assert bbc_xlnet.tokenize("The") != bbc_xlnet.tokenize("the")
    assert bbc_xlnet.encode("caf\u00e9 Z\u00fcrich") == bbc_xlnet.encode("cafe Zurich")
    sp = spm.SentencePieceProcessor(model_file=str(bbc_xlnet.path))
    texts = EDGE_TEXTS + generated_sentences(200, seed=11) + sample(bbc_sentences, 1000, seed=12)
    texts += ["In 1990, 2,000 and 30,000,000, (x)", "9, 99, 999,"]
    for text, (ids, _) in zip(texts, bbc_xlnet.encode_batch_with_word_starts(texts), strict=True):
        assert ids.tolist() == reference_ids(sp, text, lower=False), text
    assert "," in bbc_xlnet.tokenize("In 1990, 2,000")


def test_an_xlnet_vocabulary_alone_is_read_as_xlnets(bbc_xlnet, tmp_path):
    """A bare spiece.model in XLNet's layout (as the official zips ship it): cased, <cls> last."""
    bare = tmp_path / "spiece.model"
    bare.write_bytes(bbc_xlnet.path.read_bytes())
    alone = Tokenizer.from_file(bare)
    assert alone.settings.do_lower_case is False and alone.template == bbc_xlnet.template
    assert alone.padding_side == "left" and alone.pad_token_type_id == 3
    lowered = Tokenizer.from_file(bare, do_lower_case=True)
    assert lowered.tokenize("The") == alone.tokenize("the")


def test_other_kinds_keep_cls_first_and_have_no_eod(bbc_sentencepiece, bbc_wordpiece, bbc_bpe):
    for tok in (bbc_sentencepiece, bbc_wordpiece, bbc_bpe):
        assert (tok.padding_side, tok.pad_token_type_id, tok.eod_token_id) == ("right", 0, None)
        assert tok.encode("a")[0] == tok.cls_token_id and not tok.template.cls_last
    assert bbc_sentencepiece.settings.do_lower_case is True


def test_layout_errors_are_sentences(tmp_path):
    from litebert.tokenization import TokenizerError

    with pytest.raises(TokenizerError, match="unknown SentencePiece layout 'gpt'"):
        train_sentencepiece([], tmp_path, layout="gpt", sentence_iterator=["a"])
    with pytest.raises(TokenizerError, match="vocab_size=12 must exceed the 9 special pieces"):
        train_sentencepiece([], tmp_path, layout="xlnet", vocab_size=12, sentence_iterator=["a"])
    with pytest.raises(TokenizerError, match="<mask> is already defined"):
        train_sentencepiece([], tmp_path, layout="xlnet", vocab_size=200,
                            sentence_iterator=generated_sentences(300),
                            user_defined_symbols=["<mask>"])


# ---- the template ---------------------------------------------------------------------------

def test_template_layouts_of_every_kind():
    albert, roberta = PairTemplate(2, 3), PairTemplate(0, 2, separators=2, typed_pairs=False)
    xlnet = PairTemplate(3, 4, cls_last=True, pad_type_id=3)
    a, b = np.array([10, 11, 12]), np.array([20, 21])
    expected = {  # (template, pair): (ids, types, special flags)
        (albert, False): ([2, 10, 11, 12, 3], [0] * 5, [1, 0, 0, 0, 1]),
        (albert, True): ([2, 10, 11, 12, 3, 20, 21, 3], [0] * 5 + [1] * 3,
                         [1, 0, 0, 0, 1, 0, 0, 1]),
        (roberta, True): ([0, 10, 11, 12, 2, 2, 20, 21, 2], [0] * 9, [1, 0, 0, 0, 1, 1, 0, 0, 1]),
        (xlnet, False): ([10, 11, 12, 4, 3], [0, 0, 0, 0, 2], [0, 0, 0, 1, 1]),
        (xlnet, True): ([10, 11, 12, 4, 20, 21, 4, 3], [0, 0, 0, 0, 1, 1, 1, 2],
                        [0, 0, 0, 1, 0, 0, 1, 1])}
    for (template, pair), (ids, types, special) in expected.items():
        built = template.build(a, b if pair else None)
        assert [x.tolist() for x in built] == [ids, types, [bool(s) for s in special]]
        assert built[0].dtype == np.int64 and built[2].dtype == bool
        assert template.num_special(pair) == sum(special)
        if pair:
            start = template.b_offset(len(a))
            assert built[0][start:start + len(b)].tolist() == b.tolist()
        start = template.a_offset()
        assert built[0][start:start + len(a)].tolist() == a.tolist()
    assert (albert.padding_side, xlnet.padding_side) == ("right", "left")


def test_tokenizer_encodes_with_cls_last(bbc_xlnet):
    text, pair = "Shares rose sharply.", "Analysts were surprised."
    a = bbc_xlnet.encode(text, add_special_tokens=False)
    b = bbc_xlnet.encode(pair, add_special_tokens=False)
    out = bbc_xlnet(text, pair, return_offsets_mapping=True)
    assert out["input_ids"] == [*a, 4, *b, 4, 3]
    assert out["token_type_ids"] == [0] * (len(a) + 1) + [1] * (len(b) + 1) + [2]
    assert out["offset_mapping"][len(a)] == (0, 0) and out["offset_mapping"][-1] == (0, 0)
    assert out["offset_mapping"][0][0] == 0 and out["offset_mapping"][len(a) - 1][1] == len(text)
    b_spans = out["offset_mapping"][len(a) + 1:len(a) + 1 + len(b)]
    assert b_spans[0][0] == 0 and b_spans[-1][1] == len(pair)
    assert bbc_xlnet.encode(text) == [*a, 4, 3]
    cut = bbc_xlnet(text, pair, truncation=True, max_length=7)
    assert len(cut["input_ids"]) == 7 and cut["input_ids"][-2:] == [4, 3]
    assert cut["token_type_ids"][-3:] == [1, 1, 2]
    assert bbc_xlnet.decode(bbc_xlnet.encode(text), skip_special_tokens=True) == text


# ---- transformers' AutoTokenizer ------------------------------------------------------------

def test_xlnet_export_on_bbc(bbc_xlnet, bbc_sentences, tmp_path, record_property):
    """>= 99.9% of 2,000 real sentences and 1,000 pairs, with and without special tokens,
    give the same ids and token types; transformers pads XLNet's directory on the left."""
    saved = bbc_xlnet.save_pretrained(tmp_path / "xlnet")
    config = json.loads((saved / "tokenizer_config.json").read_text())
    assert (config["padding_side"], config["bos_token"], config["cls_token"]) == (
        "left", "<s>", "<cls>")
    assert config["do_lower_case"] is False
    theirs = auto(saved)
    assert theirs.padding_side == "left"
    assert (theirs.cls_token_id, theirs.sep_token_id, theirs.pad_token_id, theirs.mask_token_id,
            theirs.unk_token_id) == (3, 4, 5, 6, 0)
    fraction = report(record_property, "xlnet", *agreement(
        bbc_xlnet, theirs, sample(bbc_sentences, 2000, seed=13)))
    assert fraction >= 0.999
    assert Tokenizer.from_pretrained(saved).template == bbc_xlnet.template


def test_left_padding_matches_autotokenizer(bbc_xlnet, bbc_sentences, tmp_path):
    """Ours: padding first, attention_mask 0 there, token type 3 (XLNet's pad type). transformers
    5.x pads the same ids and mask on the same side, but its token type of padding is 0 in every
    directory, its own XLNetTokenizer's too (it sets 3, then its base class resets it). The model
    never reads a pad's type: XLNetModel gives the same states at the tokens either way."""
    from transformers import XLNetConfig, XLNetModel, XLNetTokenizer

    theirs = auto(bbc_xlnet.save_pretrained(tmp_path / "xlnet"))
    texts = sample(bbc_sentences, 64, seed=14)
    a, b = texts[:32], texts[32:]
    ours = bbc_xlnet.pad([bbc_xlnet(x, y) for x, y in zip(a, b, strict=True)], multiple_of=1)
    their = theirs(a, b, padding=True, return_token_type_ids=True, return_tensors="pt")
    assert torch.equal(ours["input_ids"], their["input_ids"])
    assert torch.equal(ours["attention_mask"], their["attention_mask"])
    real = ours["attention_mask"].bool()
    assert (~real).any() and not ours["attention_mask"][:, -1].eq(0).any()
    assert ours["input_ids"][:, -1].eq(3).all() and ours["input_ids"][~real].eq(5).all()
    assert torch.equal(ours["token_type_ids"][real], their["token_type_ids"][real])
    assert ours["token_type_ids"][~real].eq(3).all()
    assert their["token_type_ids"][~real].eq(theirs.pad_token_type_id).all()
    assert theirs.pad_token_type_id == XLNetTokenizer().pad_token_type_id == 0

    config = XLNetConfig(vocab_size=len(bbc_xlnet), d_model=32, n_layer=2, n_head=2, d_inner=64)
    model = XLNetModel(config).eval()
    with torch.no_grad():
        states = [model(input_ids=ours["input_ids"], attention_mask=ours["attention_mask"],
                        token_type_ids=types).last_hidden_state
                  for types in (ours["token_type_ids"], their["token_type_ids"])]
    assert torch.allclose(states[0][real], states[1][real], atol=1e-6)


# ---- the command line -----------------------------------------------------------------------

def test_cli_trains_xlnet_and_help_shows_its_default(bbc_sentences, tmp_path, capsys,
                                                     monkeypatch):
    corpus = tmp_path / "news.txt"
    corpus.write_text("\n".join(sample(bbc_sentences, 6000, seed=15)) + "\n")
    out = tmp_path / "tok"
    assert main(["tokenizer", "train", "--kind", "xlnet", "--vocab-size", "1500",
                 "--out", str(out), str(corpus)]) == 0
    assert "wrote" in capsys.readouterr().out
    tok = Tokenizer.from_pretrained(out)
    assert tok.convert_ids_to_tokens(list(range(9))) == XLNET_SPECIALS and len(tok) <= 1500
    assert tok.template.cls_last and tok.padding_side == "left"
    with pytest.raises(SystemExit):
        main(["tokenizer", "train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "{sentencepiece,xlnet,bpe,modernbert}" in text and "32000 for xlnet" in text
    # Without --vocab-size the layout's default (32000) is trained.
    import litebert.tokenization.train

    seen = {}
    monkeypatch.setattr(litebert.tokenization.train, "train_sentencepiece",
                        lambda inputs, out, **kw: seen.update(kw) or out)
    assert main(["tokenizer", "train", "--kind", "xlnet", "--out", str(out), str(corpus)]) == 0
    assert seen["layout"] == "xlnet" and "vocab_size" not in seen
    assert LAYOUTS["xlnet"].vocab_size == 32000 and LAYOUTS["albert"].vocab_size == 30000
