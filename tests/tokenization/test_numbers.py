"""Numbers: every kind of tokenizer gives, on 10,000 bbc-news sentences that hold digits
("£190,329", "2005,", "0.8%", "1,532"), the ids that transformers' AutoTokenizer gives on the
directory litebert writes. SentencePiece vocabularies that litebert trains hold no piece ending
in a digit and a comma, so the official ALBERT re-split of such pieces, which the tokenizer.json
model cannot express, never fires; a vocabulary trained as the official recipe trains it has
such pieces, and there the two differ (transformers' converter has no re-split either)."""

from __future__ import annotations

import random

import pytest

from litebert.tokenization import Tokenizer, train_sentencepiece, train_tokenizer
from litebert.tokenization.albert_text import is_number_comma
from tests.fixtures_sp import train_official_recipe
from tests.helpers.tokenizer_agreement import auto, sample

SENTENCES = 10_000
# Per kind: the vocabulary size trained on the number sentences. 10,000 SentencePiece pieces
# is where the official recipe, on this text, makes "digit," pieces that change ids.
SIZES = {"sentencepiece": 10_000, "xlnet": 10_000, "bpe": 5_000, "modernbert": 5_000}


@pytest.fixture(scope="module")
def number_sentences(bbc_sentences) -> list[str]:
    """10,000 of the bbc-news sentences that hold a digit, a fixed draw."""
    with_digits = [s for s in bbc_sentences if any(c.isdigit() for c in s)]
    assert len(with_digits) >= SENTENCES
    return sample(with_digits, SENTENCES, seed=11)


@pytest.fixture(scope="module")
def digit_commas(number_sentences) -> list[str]:
    """Those with a digit right before a comma ("1,532", "in 2005,"): the only texts in which
    a "digit," piece, and so the re-split, can occur."""
    return [s for s in number_sentences if any(
        a.isdigit() and b == "," for a, b in zip(s, s[1:], strict=False))]


@pytest.fixture(scope="module")
def trained(number_sentences, tmp_path_factory):
    """kind -> a Tokenizer of that kind trained on the number sentences, trained once."""
    made: dict[str, Tokenizer] = {}

    def get(kind: str) -> Tokenizer:
        if kind not in made:
            out = tmp_path_factory.mktemp(f"numbers-{kind}")
            train_tokenizer(kind, [], out, vocab_size=SIZES[kind],
                            sentence_iterator=number_sentences)
            made[kind] = Tokenizer.from_pretrained(out)
        return made[kind]

    return get


def differing(ours: Tokenizer, directory, texts: list[str]) -> list[str]:
    """The texts whose ids or token types differ between ours and AutoTokenizer(directory)."""
    theirs = auto(directory)
    mine = ours(texts)
    their = theirs(texts, return_token_type_ids=True)
    return [t for i, t in enumerate(texts)
            if (mine["input_ids"][i], mine["token_type_ids"][i])
            != (their["input_ids"][i], their["token_type_ids"][i])]


@pytest.mark.parametrize("kind", SIZES)
def test_trained_tokenizers_equal_autotokenizer_on_digit_commas(kind, trained, digit_commas,
                                                                tmp_path, record_property):
    ours = trained(kind)
    assert len(digit_commas) > 1000
    wrong = differing(ours, ours.save_pretrained(tmp_path / kind), digit_commas)
    record_property(f"{kind}_digit_comma_agreement", 1 - len(wrong) / len(digit_commas))
    assert not wrong, (len(wrong), wrong[:3])
    pieces = ours.convert_ids_to_tokens(list(range(len(ours))))
    assert not [p for p in pieces if is_number_comma(p)]
    assert any("," in p and len(p) > 1 for p in pieces)  # ",000": commas join other pieces


@pytest.mark.slow
@pytest.mark.parametrize("kind", SIZES)
def test_trained_tokenizers_equal_autotokenizer_on_numbers(kind, trained, number_sentences,
                                                           tmp_path, record_property):
    ours = trained(kind)
    wrong = differing(ours, ours.save_pretrained(tmp_path / kind), number_sentences)
    record_property(f"{kind}_numbers_agreement", 1 - len(wrong) / len(number_sentences))
    assert not wrong, (len(wrong), wrong[:3])


@pytest.mark.parametrize("slow", [pytest.param(True, marks=pytest.mark.slow), False],
                         ids=["all", "digit_commas"])
def test_wordpiece_equals_autotokenizer_on_numbers(slow, bbc_wordpiece, number_sentences,
                                                   digit_commas, tmp_path):
    texts = number_sentences if slow else digit_commas
    wrong = differing(bbc_wordpiece, bbc_wordpiece.save_pretrained(tmp_path / "bert"), texts)
    assert not wrong, (len(wrong), wrong[:3])


def test_the_official_recipe_makes_pieces_transformers_splits_otherwise(number_sentences,
                                                                        digit_commas, tmp_path):
    """The same text and size, trained as the official ALBERT recipe does: "digit," pieces,
    the official re-split, and sentences on which AutoTokenizer gives other ids."""
    model = train_official_recipe(number_sentences, tmp_path / "official",
                                  vocab_size=SIZES["sentencepiece"])
    ours = Tokenizer.from_file(model)
    pieces = ours.convert_ids_to_tokens(list(range(len(ours))))
    assert any(is_number_comma(p) and not p.startswith("\u2581") for p in pieces)
    wrong = differing(ours, ours.save_pretrained(tmp_path / "saved"), digit_commas)
    assert wrong
    assert len(wrong) < len(digit_commas) // 20  # rare: the known difference, nothing else


def test_no_digit_comma_piece_from_text_the_normalizer_makes_one_of(tmp_path):
    """With keep_accents (no NFKD first), fullwidth "１２，３４５" reaches SentencePiece as is,
    and "57\\x07," with a control character: its normalizer makes both "digit,"; still no
    piece ends in a digit and a comma."""
    rng = random.Random(0)
    fullwidth = str.maketrans("0123456789,", "０１２３４５６７８９，")
    lines = [f"{rng.randrange(1000, 10**6):,}".translate(fullwidth)
             + f" and {rng.randrange(10, 99)}\x07, units" for _ in range(500)]
    path = train_sentencepiece([], tmp_path, vocab_size=300, keep_accents=True,
                               sentence_iterator=lines, num_threads=1)
    ours = Tokenizer.from_pretrained(path.parent)
    pieces = ours.convert_ids_to_tokens(list(range(len(ours))))
    assert "," in pieces and any(len(p.strip("\u2581")) > 1 and p[-1].isdigit() for p in pieces)
    assert not [p for p in pieces if is_number_comma(p)]
