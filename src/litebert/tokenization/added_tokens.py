"""Words added to a vocabulary as whole tokens (`litebert data build --add-tokens FILE`), as
transformers' `add_tokens` adds them: matched in the text before the model splits it, with
ids from the vocabulary's size upward.

The extended tokenizer is a tokenizer.json (no vocabulary file holds added tokens), so that
transformers' AutoTokenizer gives the same ids, with litebert_added_tokens.json beside it:
for each new id, the ids of the pieces the word had before, from which pre-training builds
the new embedding rows (`added_token_pieces`). A SentencePiece vocabulary is then run by its
tokenizer.json pipeline (hf_json.py), which gives the official ids on all but rare texts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, normalizers
from tokenizers import Tokenizer as HFTokenizer

from litebert.files import atomic_write
from litebert.tokenization.albert_text import preprocess_text
from litebert.tokenization.base import ADDED_TOKENS_NAME, TokenizerError
from litebert.tokenization.hf_json import TOKENIZER_JSON
from litebert.tokenization.tokenizer import Tokenizer

__all__ = ["ADDED_TOKENS_NAME", "added_token_pieces", "extend_tokenizer", "read_word_list"]


def read_word_list(path: str | Path) -> list[str]:
    """The words of a text file, one a line; blank lines and repeats are dropped."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise TokenizerError(f"{path}: no such word list") from None
    except UnicodeDecodeError as err:
        raise TokenizerError(f"{path}: not UTF-8 text (byte {err.start})") from None
    words = [line.strip() for line in lines if line.strip()]
    spaced = next((word for word in words if any(c.isspace() for c in word)), None)
    if spaced is not None:
        raise TokenizerError(f"{path}: {spaced!r} holds a space; write one word a line")
    return list(dict.fromkeys(words))


def extend_tokenizer(tokenizer: Tokenizer, words: list[str], out_dir: str | Path
                     ) -> tuple[Tokenizer, list[str]]:
    """Write `tokenizer` with `words` added into out_dir; returns the tokenizer read back and
    the words skipped because the vocabulary has them already as one token."""
    out_dir = Path(out_dir)
    added: list[dict[str, Any]] = []
    skipped: list[str] = []
    for word in dict.fromkeys(_as_normalized(tokenizer, w) for w in words):
        pieces = tokenizer.encode(word, add_special_tokens=False)
        if len(pieces) == 1 or tokenizer.has_token(word) or _in_running_text(tokenizer, word):
            skipped.append(word)
        else:
            added.append({"token": word, "id": len(tokenizer) + len(added), "pieces": pieces})
    tokenizer.save_pretrained(out_dir)
    if added:
        _write_added(out_dir, added)
    extended = Tokenizer.from_pretrained(out_dir)
    extended.save_pretrained(out_dir)  # tokenizer_config.json for the added words
    for record in added:
        if extended.convert_tokens_to_ids(str(record["token"])) != record["id"]:
            raise TokenizerError(f"{out_dir / TOKENIZER_JSON}: {record['token']!r} did not get "
                                 f"id {record['id']}")
    return extended, skipped


def added_token_pieces(tokenizer_dir: str | Path) -> dict[int, list[int]]:
    """{new id: ids of the pieces the word had before it was added} of a tokenizer directory
    written by extend_tokenizer; {} when no words were added."""
    path = Path(tokenizer_dir) / ADDED_TOKENS_NAME
    if not path.is_file():
        return {}
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
        return {int(r["id"]): [int(i) for i in r["pieces"]] for r in records}
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        raise TokenizerError(f"{path}: expected a JSON list of {{token, id, pieces}} "
                             "objects") from None


def _in_running_text(tokenizer: Tokenizer, word: str) -> bool:
    """Byte-level BPE: the word after a space is one token ("Ġthe")."""
    prefix = tokenizer.continuation_prefix
    return bool(prefix) and len(tokenizer.encode(prefix + word, add_special_tokens=False)) == 1


def _as_normalized(tokenizer: Tokenizer, word: str) -> str:
    """The word as the normaliser writes it, since added tokens are matched in normalised
    text: lower-cased (accents stripped) for uncased WordPiece and SentencePiece."""
    settings = tokenizer.settings
    if tokenizer.kind == "wordpiece":
        return normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=settings.tokenize_chinese_chars,
            strip_accents=settings.strip_accents,
            lowercase=settings.do_lower_case).normalize_str(word)
    if tokenizer.kind == "sentencepiece":
        return preprocess_text(word, settings)
    return word


def _write_added(out_dir: Path, added: list[dict[str, Any]]) -> None:
    """tokenizer.json with the words as added tokens (read before the vocabulary files, which
    cannot hold them), and the record of their pieces."""
    hf_path = out_dir / TOKENIZER_JSON
    if not hf_path.is_file():
        raise TokenizerError(f"{out_dir}: this vocabulary has no {TOKENIZER_JSON} equivalent, "
                             "so words cannot be added to it")
    hf = HFTokenizer.from_str(json.dumps(_prefix_in_pre_tokenizer(
        json.loads(hf_path.read_text(encoding="utf-8")))))
    hf.add_tokens([AddedToken(r["token"], special=False, normalized=True) for r in added])
    atomic_write(hf_path, hf.to_str(pretty=True) + "\n")
    atomic_write(out_dir / ADDED_TOKENS_NAME, json.dumps(added, indent=1, ensure_ascii=False))


def _prefix_in_pre_tokenizer(data: dict[str, Any]) -> dict[str, Any]:
    """A SentencePiece pipeline of hf_json.py with its "▁" prepended by the pre-tokenizer
    (Metaspace's "first" scheme) instead of the normalizer: tokenizers normalises an added
    word too before matching it, and "▁word" would match only at the start of a text."""
    normalizer, pre = data.get("normalizer") or {}, data.get("pre_tokenizer") or {}
    steps = normalizer.get("normalizers") or []
    if normalizer.get("type") != "Sequence" or pre.get("type") != "Metaspace" \
            or not steps or steps[-1].get("type") != "Prepend":
        return data
    return {**data, "normalizer": {**normalizer, "normalizers": steps[:-1]},
            "pre_tokenizer": {**pre, "prepend_scheme": "first"}}
