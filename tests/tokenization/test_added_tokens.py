"""Words added as whole tokens (`data build --add-tokens`): transformers' AutoTokenizer on the
written directory gives litebert's ids, the new ids follow the vocabulary, each records its
former pieces, and the data build's tokenizer/ and cache key carry them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from transformers import AutoTokenizer

from litebert.cli import main
from litebert.tokenization import Tokenizer, TokenizerError
from litebert.tokenization.added_tokens import (
    added_token_pieces,
    extend_tokenizer,
    read_word_list,
)
from tests.data.builds import write_corpus
from tests.fixtures_sp import generated_sentences
from tests.hf_dirs import FAMILIES, TOKENIZER_LAYOUTS

WORDS = ["Ozempic", "blockchains", "covid", "COVID", "the"]  # "the" is one token already
CASES = [(family, layout) for family in FAMILIES for layout in TOKENIZER_LAYOUTS[family]]


def _texts() -> list[str]:
    return [s.replace(" the ", " the covid Ozempic ", 1) + " blockchains, COVID-19." for s in
            generated_sentences(80, seed=8)]


def _auto(directory):
    return AutoTokenizer.from_pretrained(str(directory))


@pytest.mark.parametrize("family, layout", CASES)
def test_autotokenizer_gives_the_extended_ids(hf_tokenizer_dir, family, layout, tmp_path):
    base = Tokenizer.from_pretrained(hf_tokenizer_dir(family, layout))
    extended, skipped = extend_tokenizer(base, WORDS, tmp_path / "ext")
    assert "the" in skipped
    pieces = added_token_pieces(tmp_path / "ext")
    assert sorted(pieces) == list(range(len(base), len(extended)))
    for new_id, old_ids in pieces.items():
        word = extended.convert_ids_to_tokens(new_id)
        assert base.encode(word, add_special_tokens=False) == old_ids and len(old_ids) > 1
    texts = _texts()
    theirs = _auto(tmp_path / "ext")
    assert len(theirs) == len(extended)
    ours = extended(texts)["input_ids"]
    assert ours == theirs(texts)["input_ids"]
    used = {i for row in ours for i in row}
    assert set(pieces) <= used  # every new word is matched in running text
    again = Tokenizer.from_pretrained(extended.save_pretrained(tmp_path / "copy"))
    assert again(texts)["input_ids"] == ours and added_token_pieces(tmp_path / "copy") == pieces
    assert not extended.special_mask[list(pieces)].any()


def test_uncased_wordpiece_adds_lower_case_words(hf_tokenizer_dir, tmp_path):
    base = Tokenizer.from_pretrained(hf_tokenizer_dir("bert", "vocab.txt"))
    extended, _ = extend_tokenizer(base, ["Ozempic", "OZEMPIC"], tmp_path)
    assert extended.convert_ids_to_tokens(len(base)) == "ozempic"
    assert len(extended) == len(base) + 1
    tokens = extended.tokenize("Take OZEMPIC, daily")
    assert tokens[tokens.index("ozempic") + 1] == ","


def test_word_list_file(tmp_path):
    path = tmp_path / "words.txt"
    path.write_text("covid\n\n  Ozempic \ncovid\n", encoding="utf-8")
    assert read_word_list(path) == ["covid", "Ozempic"]
    path.write_text("two words\n", encoding="utf-8")
    with pytest.raises(TokenizerError, match="words.txt: 'two words' holds a space"):
        read_word_list(path)
    with pytest.raises(TokenizerError, match="missing.txt: no such word list"):
        read_word_list(tmp_path / "missing.txt")


def test_data_build_with_added_tokens(hf_tokenizer_dir, tmp_path, capsys):
    corpus = write_corpus(tmp_path / "corpus.txt", docs=30)
    corpus.write_text(corpus.read_text().replace("model", "Ozempic model"), encoding="utf-8")
    words = tmp_path / "words.txt"
    words.write_text("ozempic\nthe\n", encoding="utf-8")
    tok = hf_tokenizer_dir("bert", "vocab.txt")
    common = [str(corpus), "--tokenizer", str(tok), "--format", "bert",
              "--max-seq-length", "64", "--workers", "1"]
    main(["data", "build", *common, "--out", str(tmp_path / "plain")])
    main(["data", "build", *common, "--out", str(tmp_path / "added"), "--add-tokens", str(words)])
    plain, added = (json.loads((tmp_path / name / "manifest.json").read_text())
                    for name in ("plain", "added"))
    assert plain["config_hash"] != added["config_hash"]
    base = Tokenizer.from_pretrained(tok)
    assert added_token_pieces(tmp_path / "added" / "tokenizer") == \
        {len(base): base.encode("ozempic", add_special_tokens=False)}
    assert added["tokenizer"]["vocab_size"] == len(base) + 1
    counts = (tmp_path / "added" / "token_counts.bin").read_bytes()

    assert np.frombuffer(counts, dtype=np.int64)[len(base)] > 0  # the new id is in the data
    theirs = _auto(tmp_path / "added" / "tokenizer")
    assert theirs("an Ozempic model")["input_ids"] == \
        Tokenizer.from_pretrained(tmp_path / "added" / "tokenizer")("an Ozempic model")["input_ids"]
