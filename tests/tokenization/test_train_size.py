"""`litebert tokenizer train` says the size of the vocabulary it made and, when that is short
of --vocab-size (the text holds too little for more), why and what to do."""

from __future__ import annotations

import pytest

from litebert.cli import main
from litebert.tokenization import TOKENIZER_KINDS, Tokenizer
from tests.fixtures_sp import generated_paragraphs

# Per trainer: words of the reason the report gives for a short vocabulary.
REASONS = {"sentencepiece": "strings that occur at least twice",
           "bpe": "pairs that occur at least --min-frequency times"}


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    """200 generated paragraphs: a few hundred distinct words, too few for 5,000 tokens."""
    path = tmp_path_factory.mktemp("corpus") / "c.txt"
    path.write_text("\n".join(generated_paragraphs(200)) + "\n")
    return path


def train(corpus, out, kind: str, size: int, capsys) -> tuple[Tokenizer, str]:
    assert main(["tokenizer", "train", str(corpus), "--kind", kind, "--vocab-size", str(size),
                 "--out", str(out)]) == 0
    return Tokenizer.from_pretrained(out), capsys.readouterr().out


@pytest.mark.parametrize("kind", TOKENIZER_KINDS)
def test_a_short_vocabulary_says_its_size_and_why(kind, small_corpus, tmp_path, capsys):
    tok, printed = train(small_corpus, tmp_path / kind, kind, 5000, capsys)
    made = len(tok)
    assert made < 5000
    assert (f"vocabulary: {made:,} tokens, {5000 - made:,} short of the 5,000 asked for"
            in printed), printed
    assert REASONS[TOKENIZER_KINDS[kind].trainer] in printed
    assert "train on more text" in printed and "smaller --vocab-size" in printed


@pytest.mark.parametrize("kind, size", [("sentencepiece", 300), ("bpe", 400)])
def test_a_full_vocabulary_says_only_its_size(kind, size, small_corpus, tmp_path, capsys):
    tok, printed = train(small_corpus, tmp_path / kind, kind, size, capsys)
    assert len(tok) == size
    assert f"vocabulary: {size:,} tokens, as asked" in printed
    assert "short" not in printed
