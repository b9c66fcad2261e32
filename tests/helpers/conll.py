"""Generated CoNLL sentences and folders (names, places, tags) for token classification."""

from __future__ import annotations

import random
from pathlib import Path

# Words every test tokenizer (tests/hf_dirs.py) keeps whole after a space, so that a word's
# first piece names it and a tiny model learns the tags in a few steps.
FIRST = ["Anna", "Wei", "Ngozi", "José"]


LAST = ["Müller", "Dvořák"]


PLACES = ["river", "bridge", "museum"]


FILLER = ["the", "a", "festival", "team", "report", "market", "budget", "quiet"]


def tagged(rng: random.Random, parts: int) -> tuple[list[str], list[str]]:
    """A sentence of `parts` pieces: a person (B-PER I-PER), a place (B-LOC) or a filler."""
    words: list[str] = []
    tags: list[str] = []
    for _ in range(parts):
        roll = rng.random()
        if roll < 0.2:
            words += [rng.choice(FIRST), rng.choice(LAST)]
            tags += ["B-PER", "I-PER"]
        elif roll < 0.4:
            words.append(rng.choice(PLACES))
            tags.append("B-LOC")
        else:
            words.append(rng.choice(FILLER))
            tags.append("O")
    return words, tags


def sentences(n: int, seed: int, long: int = 0) -> list[tuple[list[str], list[str]]]:
    """n sentences of 3-8 parts, the last `long` of them 30-40 parts (several windows)."""
    rng = random.Random(seed)
    return [tagged(rng, rng.randint(30, 40) if i >= n - long else rng.randint(3, 8))
            for i in range(n)]


def write_conll(path: Path, rows, pos: bool = False) -> Path:
    """CoNLL-2003's layout: -DOCSTART- lines, a blank line after each sentence; with `pos`
    a second column before the tag."""
    lines = ["-DOCSTART- -X- O" if pos else "-DOCSTART- O", ""]
    for words, tags in rows:
        lines += [f"{w} NN {t}" if pos else f"{w} {t}" for w, t in zip(words, tags, strict=True)]
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def conll_dir(root: Path, n_train: int = 60, n_dev: int = 15, n_test: int = 7,
              long: int = 2) -> Path:
    write_conll(root / "train.txt", sentences(n_train, 1))
    write_conll(root / "dev.txt", sentences(n_dev, 2, long))
    if n_test:
        write_conll(root / "test.txt", sentences(n_test, 3, long))
    return root
