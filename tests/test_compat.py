"""A model and a tokenizer that disagree stop before training, naming both files."""

from __future__ import annotations

import logging

import pytest

from litebert import ModelConfig, Tokenizer
from litebert.compat import check_model_reads, model_tokenizer_mismatch
from litebert.config import ConfigError
from litebert.data.build_config import BuildConfig
from litebert.data.manifest import DataManifest
from litebert.train.pretrain import model_config
from litebert.train.run_config import PretrainConfig

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s", "on"]


@pytest.fixture
def wordpiece(tmp_path) -> Tokenizer:
    directory = tmp_path / "tokenizer"
    directory.mkdir()
    (directory / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    return Tokenizer.from_pretrained(directory)


def config(**overrides) -> ModelConfig:
    values = dict(vocab_size=len(WORDS), hidden_size=32, num_attention_heads=2,
                  intermediate_size=64, num_hidden_layers=1, pad_token_id=0)
    return ModelConfig(**{**values, **overrides})


def test_a_model_that_fits_passes(wordpiece):
    assert model_tokenizer_mismatch(config(), wordpiece) is None
    check_model_reads(config(), wordpiece, "model/config.json", "tokenizer/vocab.txt")


def test_more_ids_than_embedding_rows_is_an_error_naming_both(wordpiece):
    with pytest.raises(ConfigError, match=r"model/config.json and tok/vocab.txt disagree: "
                       r"the tokenizer \(wordpiece\) has 10 ids but the model's vocab_size "
                       r"is 8"):
        check_model_reads(config(vocab_size=8), wordpiece, "model/config.json", "tok/vocab.txt")


def test_another_padding_id_is_an_error(wordpiece):
    why = model_tokenizer_mismatch(config(pad_token_id=1), wordpiece)
    assert why == "the tokenizer's padding id is 0 (wordpiece) but the model's pad_token_id is 1"


def test_typed_pairs_need_two_token_types_but_single_segments_do_not(wordpiece):
    one_type = config(type_vocab_size=1)
    assert "token type 1" in model_tokenizer_mismatch(one_type, wordpiece, pairs=True)
    assert model_tokenizer_mismatch(one_type, wordpiece, pairs=False) is None


def test_spare_embedding_rows_only_warn(wordpiece, caplog):
    with caplog.at_level(logging.WARNING, logger="litebert"):
        check_model_reads(config(vocab_size=16), wordpiece, "m", "t")
    assert "16 embedding rows but t has 10 ids" in caplog.text


def _data_dir(tmp_path, wordpiece, objective: str) -> DataManifest:
    """A data directory's manifest as read: only what the model's config reads of it (the
    objective); the directory holds tokenizer/ from the fixture."""
    return DataManifest(tmp_path, {}, BuildConfig(objective=objective), digest="")


def test_pretraining_takes_the_data_tokenizers_ids(tmp_path, wordpiece):
    data = _data_dir(tmp_path, wordpiece, "sop")
    cfg = model_config(PretrainConfig(model="tiny"), data)
    assert (cfg.vocab_size, cfg.pad_token_id, cfg.bos_token_id, cfg.eos_token_id) == (10, 0, 2, 3)


def test_pretraining_overrides_that_break_the_data_stop_at_start(tmp_path, wordpiece):
    data = _data_dir(tmp_path, wordpiece, "sop")
    recipe = PretrainConfig(model="tiny", model_overrides={"type_vocab_size": 1})
    with pytest.raises(ConfigError, match=r"preset 'tiny'.*disagree.*type_vocab_size 1"):
        model_config(recipe, data)
    # Without pairs (objective none) one token type is all the data uses.
    data = _data_dir(tmp_path, wordpiece, "none")
    assert model_config(recipe, data).type_vocab_size == 1
