"""Whether data and a model share a vocabulary: checked before pre-training starts, so that a
data directory built with another tokenizer than the model's fails with one sentence instead
of training on ids that mean other tokens (or index past the embedding table).

A vocabulary is its tokens by id and its special ids: the same vocabulary saved as
tokenizer.json or as vocab.txt (spiece.model, vocab.json) is one vocabulary, whatever the
bytes of the files. Text settings are not part of it (Tokenizer.fingerprint, the data
cache's key, has them).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from litebert.tokenization.base import TokenizerError
from litebert.tokenization.tokenizer import Tokenizer

SPECIAL_NAMES = ("pad", "unk", "cls", "sep", "mask")


def special_ids(tokenizer: Tokenizer) -> dict[str, int | None]:
    """{"pad": id, ...} of the tokenizer's special tokens (None where it has none)."""
    return {name: getattr(tokenizer, f"{name}_token_id") for name in SPECIAL_NAMES}


def vocabulary_fingerprint(tokenizer: Tokenizer) -> str:
    """sha256 of the tokens by id and the special ids."""
    tokens = tokenizer.convert_ids_to_tokens(range(len(tokenizer)))
    payload = json.dumps([tokens, special_ids(tokenizer)], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def check_vocabulary(data_tokenizer: Tokenizer, model_tokenizer: Tokenizer | None,
                     vocab_size: int, *, data_where: str, model_where: str,
                     model_special_ids: Mapping[str, int | None] | None = None) -> None:
    """Raise TokenizerError, naming both places, when the data's tokenizer is not the model's
    (`model_tokenizer`, None when the model directory has none), when its ids would not fit
    the model's embedding table of `vocab_size` rows (a larger table is fine: ModernBERT pads
    50,280 tokens to 50,368), or when the model's config names other special ids
    (`model_special_ids`: {"pad": 0, ...}; None values are not checked)."""
    if model_tokenizer is not None:
        difference = _difference(data_tokenizer, model_tokenizer)
        if difference:
            raise TokenizerError(
                f"{data_where} was built with another vocabulary than the model in "
                f"{model_where} ({difference}); build the data again with --tokenizer "
                f"{model_where}")
    if len(data_tokenizer) > vocab_size:
        raise TokenizerError(
            f"{data_where} has ids up to {len(data_tokenizer) - 1} but the model in "
            f"{model_where} has {vocab_size} embedding rows; use a model whose vocab_size "
            f"is at least {len(data_tokenizer)}")
    for name, wanted in (model_special_ids or {}).items():
        have = special_ids(data_tokenizer).get(name)
        if wanted is not None and have != wanted:
            raise TokenizerError(
                f"{data_where} has {name} id {have} but the model in {model_where} has "
                f"{name}_token_id {wanted}; the data and the model use other vocabularies")


def _difference(data: Tokenizer, model: Tokenizer) -> str:
    """What differs between two vocabularies, in words; "" when they are one."""
    if vocabulary_fingerprint(data) == vocabulary_fingerprint(model):
        return ""
    if len(data) != len(model):
        return f"{len(data)} tokens against {len(model)}"
    ours, theirs = (t.convert_ids_to_tokens(range(len(t))) for t in (data, model))
    first = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b),
                 None)
    if first is not None:
        return f"id {first} is {ours[first]!r} against {theirs[first]!r}"
    mine, other = special_ids(data), special_ids(model)
    name = next(n for n in SPECIAL_NAMES if mine[n] != other[n])
    return f"{name} id {mine[name]} against {other[name]}"
