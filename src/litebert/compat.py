"""Can a model read what a tokenizer makes? One check for pre-training, evaluation and
fine-tuning, run before any step, so a RoBERTa model on ALBERT data (or the reverse) stops
with a sentence naming both files instead of an index error deep in an embedding.

What must agree:
- every id the tokenizer makes is a row of the model's word embeddings (vocab_size),
- the padding id (the model's embeddings, and RoBERTa's positions, treat it specially),
- the token types, for a backbone that embeds them (one row per type id): ALBERT's and
  BERT's pairs give B type 1, which a model with one token type (RoBERTa's type_vocab_size 1)
  has no row for; XLNet's template gives <cls> type 2 and padding type 3, which an ALBERT
  backbone (2 types) has none for. XLNet's backbone only asks whether two types are equal;
- for fine-tuning, where the summary is read: the token the backbone reads it from
  (`summary_position`) must be the tokenizer's classification token in every row, [CLS]
  first with right padding, or XLNet's <cls> last with left padding.
The backbone's side comes from its class (model/backbone.py's Backbone: summary_position,
embeds_token_types), which callers pass, since this module sits below the model package.
A model with more rows than the tokenizer has ids can read it (vocabularies padded to a
multiple of 8 do this); that is only a warning.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from litebert.config import ConfigError, ModelConfig

if TYPE_CHECKING:
    from litebert.tokenization import Tokenizer

log = logging.getLogger("litebert")


class Reader(Protocol):
    """What a backbone class says about the inputs it reads (model/backbone.py)."""

    summary_position: int  # 0: the first token, -1: the last
    embeds_token_types: bool  # one embedding row per token type id


def model_tokenizer_mismatch(config: ModelConfig, tokenizer: Tokenizer, pairs: bool = True,
                             reader: Reader | None = None, summary: bool = False) -> str | None:
    """Why a model of `config` cannot read the tokenizer's inputs (None when it can).
    pairs: whether the inputs hold segment pairs (fine-tuning on pairs, pairs data); reader:
    the backbone class (None: one that embeds token types); summary: whether heads read the
    summary token (fine-tuning)."""
    if len(tokenizer) > config.vocab_size:
        return (f"the tokenizer ({tokenizer.kind}) has {len(tokenizer)} ids but the model's "
                f"vocab_size is {config.vocab_size}")
    pad = tokenizer.pad_token_id
    if pad is not None and pad != config.pad_token_id:
        return (f"the tokenizer's padding id is {pad} ({tokenizer.kind}) but the model's "
                f"pad_token_id is {config.pad_token_id}")
    embeds = reader is None or reader.embeds_token_types
    template = tokenizer.template
    if embeds and pairs and template.typed_pairs and config.type_vocab_size < 2:
        return (f"the tokenizer ({tokenizer.kind}) gives the second segment of a pair token "
                f"type 1, but the model has type_vocab_size {config.type_vocab_size}")
    highest = max(template.pad_type_id, 2 if template.cls_last else 0)
    if embeds and highest >= config.type_vocab_size:
        return (f"the tokenizer ({tokenizer.kind}) makes token type {highest} (<cls> last "
                f"has type 2, padding type {template.pad_type_id}), but the model embeds "
                f"{config.type_vocab_size} token types")
    if summary and reader is not None:
        return summary_mismatch(reader.summary_position, tokenizer)
    return None


def summary_mismatch(position: int, tokenizer: Tokenizer) -> str | None:
    """Why the backbone's summary token is not the tokenizer's classification token."""
    last = tokenizer.template.cls_last
    if position == -1 and not last:
        return (f"the model reads its sequence summary from the last token (XLNet's <cls>, "
                f"with padding on the left), but the tokenizer ({tokenizer.kind}) puts its "
                f"classification token first and pads on the right")
    if position == 0 and last:
        return (f"the model reads its sequence summary from the first token ([CLS]), but the "
                f"tokenizer ({tokenizer.kind}) puts <cls> last and pads on the left")
    return None


def check_model_reads(config: ModelConfig, tokenizer: Tokenizer, model_source: str,
                      tokenizer_source: str, pairs: bool = True, reader: Reader | None = None,
                      summary: bool = False) -> None:
    """ConfigError naming both sources when the model cannot read the tokenizer's inputs
    (see model_tokenizer_mismatch); a warning when the model has more embedding rows than
    the tokenizer has ids."""
    why = model_tokenizer_mismatch(config, tokenizer, pairs, reader, summary)
    if why is not None:
        raise ConfigError(f"{model_source} and {tokenizer_source} disagree: {why}. Use the "
                          "model with the tokenizer it was trained with (and data built with "
                          "that tokenizer)")
    if config.vocab_size > len(tokenizer):
        log.warning("%s has %d embedding rows but %s has %d ids: the extra rows are never "
                    "used", model_source, config.vocab_size, tokenizer_source, len(tokenizer))
