"""Tokenizer training reads the corpora `data build` reads: JSON lines, Parquet files and
save_to_disk folders give the same sentences (so the same tokenizer), and a binary file is
refused instead of being trained on as text."""

from __future__ import annotations

import pytest

from litebert.tokenization import train_bpe, train_sentencepiece
from tests.readers.tables import documents, write_all


def test_jsonl_parquet_and_a_saved_dataset_train_the_same_tokenizers(tmp_path):
    paths = write_all(tmp_path / "in", documents(80))
    spm, bpe = {}, {}
    for kind, path in paths.items():
        model = train_sentencepiece([path], tmp_path / f"spm-{kind}", vocab_size=120,
                                    num_threads=1, text_field="text")
        spm[kind] = model.read_bytes()
        out = train_bpe([path], tmp_path / f"bpe-{kind}", vocab_size=400, text_field="text")
        bpe[kind] = ((out / "vocab.json").read_bytes(), (out / "merges.txt").read_bytes())
    assert spm["parquet"] == spm["arrow"] == spm["jsonl"]
    assert bpe["parquet"] == bpe["arrow"] == bpe["jsonl"]
    # Not trained on the records' raw bytes or JSON: no piece holds a quote or a brace.
    assert b'"text"' not in bpe["jsonl"][0] and b"PAR1" not in bpe["parquet"][0]


@pytest.mark.parametrize("train", [train_sentencepiece, train_bpe])
def test_a_binary_file_is_refused_before_training(tmp_path, train):
    blob = tmp_path / "corpus.txt"
    blob.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(ValueError, match=rf"{blob}: not text.*Parquet"):
        train([blob], tmp_path / "tok", vocab_size=300)
