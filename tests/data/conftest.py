"""Fixtures of the data tests: one generated corpus and one small SentencePiece tokenizer."""

from __future__ import annotations

import pytest

from litebert.tokenization import train_sentencepiece
from tests.data.builds import write_corpus


@pytest.fixture(scope="session")
def corpus_and_tokenizer(tmp_path_factory):
    root = tmp_path_factory.mktemp("shards")
    corpus = write_corpus(root / "corpus.txt")
    tokenizer = train_sentencepiece([corpus], root / "tok", vocab_size=200)
    return corpus, tokenizer.parent
