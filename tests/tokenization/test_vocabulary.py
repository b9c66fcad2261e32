"""check_vocabulary: one vocabulary whichever files hold it; another vocabulary, ids past the
embedding table, or other special ids fail with one sentence naming both places."""

from __future__ import annotations

import shutil

import pytest

from litebert.tokenization import Tokenizer, TokenizerError
from litebert.tokenization.vocabulary import check_vocabulary, vocabulary_fingerprint

WHERE = dict(data_where="data/bbc", model_where="models/albert")


@pytest.mark.parametrize("family", ["albert", "bert", "roberta", "xlnet"])
def test_one_vocabulary_in_two_layouts(hf_tokenizer_dir, family):
    fast, slow = (Tokenizer.from_pretrained(hf_tokenizer_dir(family, layout))
                  for layout in ("tokenizer.json", {"albert": "spiece.model",
                                                    "xlnet": "spiece.model",
                                                    "bert": "vocab.txt",
                                                    "roberta": "vocab.json"}[family]))
    assert vocabulary_fingerprint(fast) == vocabulary_fingerprint(slow)
    check_vocabulary(fast, slow, len(slow), **WHERE)


def test_another_vocabulary_names_both_places(hf_tokenizer_dir):
    bert = Tokenizer.from_pretrained(hf_tokenizer_dir("bert"))
    albert = Tokenizer.from_pretrained(hf_tokenizer_dir("albert"))
    with pytest.raises(TokenizerError, match=r"data/bbc was built with another vocabulary "
                                             r"than the model in models/albert \(id 0 is "):
        check_vocabulary(bert, albert, 10_000, **WHERE)


def test_another_size_or_special_id(hf_tokenizer_dir, tmp_path):
    bert = Tokenizer.from_pretrained(hf_tokenizer_dir("bert", "vocab.txt"))
    longer = tmp_path / "longer"
    shutil.copytree(hf_tokenizer_dir("bert", "vocab.txt"), longer)
    with open(longer / "vocab.txt", "a", encoding="utf-8") as f:
        f.write("zzzextra\n")
    with pytest.raises(TokenizerError, match=f"{len(bert)} tokens against {len(bert) + 1}"):
        check_vocabulary(bert, Tokenizer.from_pretrained(longer), 10_000, **WHERE)
    with pytest.raises(TokenizerError, match="has pad id 0 but the model in models/albert "
                                             "has pad_token_id 1"):
        check_vocabulary(bert, None, len(bert), **WHERE,
                         model_special_ids={"pad": 1, "cls": None})


def test_ids_must_fit_the_embedding_table(hf_tokenizer_dir):
    """ModernBERT's config pads the table beyond the tokenizer: fine; smaller: not."""
    modern = Tokenizer.from_pretrained(hf_tokenizer_dir("modernbert"))
    check_vocabulary(modern, modern, len(modern) + 40, **WHERE)
    with pytest.raises(TokenizerError, match=rf"data/bbc has ids up to {len(modern) - 1} but "
                                             r"the model in models/albert has 512 embedding"):
        check_vocabulary(modern, None, 512, **WHERE)
