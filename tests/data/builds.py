"""Helpers for tests that build data directories: a generated corpus and a small build."""

from __future__ import annotations

import numpy as np

from litebert.data.builder import BuildConfig, build

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
