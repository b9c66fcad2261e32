"""Helpers for tests that build data directories: a generated corpus and a small build."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np

from litebert.data.builder import FORMAT, VERSION, BuildConfig, build

WORDS = ("the a model learns from text every layer shares its weights with all others while "
         "embeddings stay small and training runs fast on two cores of this machine so people "
         "can pretrain their own encoders on news about sport politics business and music").split()


def write_corpus(path, docs=120, seed=0):
    """BERT format: one sentence per line, a blank line between documents."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(docs):
        for _ in range(rng.integers(1, 12)):
            words = rng.choice(WORDS, rng.integers(3, 25))
            lines.append(" ".join(words).capitalize() + ".")
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def small_build(tmp_path, corpus_and_tokenizer, name="data", workers=1, **cfg):
    corpus, tok = corpus_and_tokenizer
    config = BuildConfig(**{"max_seq_length": 64, "format": "bert", "heldout_fraction": 0.1,
                            **cfg})
    return build([corpus], tok, tmp_path / name, config, workers=workers), tmp_path / name


def key_before_pairs_and_packing(corpus, tokenizer_fingerprint: str) -> str:
    """The cache key of a default build computed without the `pairs`, `sop_single_sentence`,
    `packing` and `reuse_len` fields: at their defaults they must stay out of the key, so
    that adding a field changes no existing key."""
    old = {k: v for k, v in dataclasses.asdict(BuildConfig()).items()
           if k not in ("pairs", "sop_single_sentence", "packing", "reuse_len")}
    h = hashlib.sha256(json.dumps(old, sort_keys=True).encode())
    h.update(tokenizer_fingerprint.encode())
    digest = hashlib.sha256(corpus.read_bytes()).hexdigest()
    h.update(f"{corpus.stat().st_size}\0{digest}\n".encode())
    h.update(f"{FORMAT}-{VERSION}".encode())
    return h.hexdigest()[:16]
