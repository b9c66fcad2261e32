"""Can a model read what a tokenizer makes? One check for pre-training, evaluation and
fine-tuning, run before any step, so a RoBERTa model on ALBERT data (or the reverse) stops
with a sentence naming both files instead of an index error deep in an embedding.

What must agree:
- every id the tokenizer makes is a row of the model's word embeddings (vocab_size),
- the padding id (the model's embeddings, and RoBERTa's positions, treat it specially),
- the pair template: ALBERT's and BERT's give B token type 1, which a model with one token
  type (RoBERTa's type_vocab_size 1) has no embedding for.
A model with more rows than the tokenizer has ids can read it (vocabularies padded to a
multiple of 8 do this); that is only a warning.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from litebert.config import AlbertConfig, ConfigError

if TYPE_CHECKING:
    from litebert.tokenization import Tokenizer

log = logging.getLogger("litebert")


def model_tokenizer_mismatch(config: AlbertConfig, tokenizer: Tokenizer,
                             pairs: bool = True) -> str | None:
    """Why a model of `config` cannot read the tokenizer's inputs (None when it can).
    pairs: whether the inputs hold segment pairs (fine-tuning on pairs, pairs data)."""
    if len(tokenizer) > config.vocab_size:
        return (f"the tokenizer ({tokenizer.kind}) has {len(tokenizer)} ids but the model's "
                f"vocab_size is {config.vocab_size}")
    pad = tokenizer.pad_token_id
    if pad is not None and pad != config.pad_token_id:
        return (f"the tokenizer's padding id is {pad} ({tokenizer.kind}) but the model's "
                f"pad_token_id is {config.pad_token_id}")
    if pairs and tokenizer.template.typed_pairs and config.type_vocab_size < 2:
        return (f"the tokenizer ({tokenizer.kind}) gives the second segment of a pair token "
                f"type 1, but the model has type_vocab_size {config.type_vocab_size}")
    return None


def check_model_reads(config: AlbertConfig, tokenizer: Tokenizer, model_source: str,
                      tokenizer_source: str, pairs: bool = True) -> None:
    """ConfigError naming both sources when the model cannot read the tokenizer's inputs;
    a warning when the model has more embedding rows than the tokenizer has ids."""
    why = model_tokenizer_mismatch(config, tokenizer, pairs)
    if why is not None:
        raise ConfigError(f"{model_source} and {tokenizer_source} disagree: {why}. Use the "
                          "model with the tokenizer it was trained with (and data built with "
                          "that tokenizer)")
    if config.vocab_size > len(tokenizer):
        log.warning("%s has %d embedding rows but %s has %d ids: the extra rows are never "
                    "used", model_source, config.vocab_size, tokenizer_source, len(tokenizer))
