"""Comparing litebert's tokenizers with transformers': samples, pairs, agreement counts and
their report."""

from __future__ import annotations

import random

from litebert.tokenization import Tokenizer


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
