"""Fine-tuning inputs in the official formats (SST-2, SQuAD, RACE), generated from good and
bad words, a short schedule, the micro model's sizes, and the losses a run logs."""

from __future__ import annotations

import json
import re

import numpy as np

GOOD = "great fine lovely superb wonderful".split()


BAD = "awful poor dreadful terrible boring".split()


FILLER = "the film was and plot actors story it a really".split()


MICRO = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
             embedding_size=16, max_position_embeddings=128)


def sentence(rng, positive: bool) -> str:
    words = list(rng.choice(FILLER, 6)) + [rng.choice(GOOD if positive else BAD)]
    rng.shuffle(words)
    return " ".join(words)


def write_tsv(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (["\t".join(header)] if header else []) + ["\t".join(map(str, r)) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def sst2_dir(root, n_train=200, n_dev=40):
    rng = np.random.default_rng(1)
    for split, n in (("train", n_train), ("dev", n_dev)):
        rows = [(sentence(rng, bool(i % 2)), i % 2) for i in range(n)]
        write_tsv(root / f"{split}.tsv", ["sentence", "label"], rows)
    write_tsv(root / "test.tsv", ["index", "sentence"],
              [(i, sentence(rng, bool(i % 2))) for i in range(10)])
    return root


def fast(**kw) -> dict:
    """A short schedule; warm-up is 1/15 of the steps (10 of 150) unless given."""
    steps = kw.get("max_steps", 150)
    return {**dict(lr=2e-3, batch_size=16, max_steps=steps, warmup_steps=max(steps // 15, 0),
                   max_seq_length=32, eval_every=75), **kw}


def squad_json(version_2: bool, n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    paragraphs = []
    for i in range(n):
        word = str(rng.choice(GOOD))
        context = f"the film was {word} and the story was long . it played in a town"
        qa = {"id": f"q{i}", "question": "what was the film ?",
              "answers": [{"text": word, "answer_start": context.index(word)}]}
        qa["is_impossible"] = False  # as converted copies of SQuAD 1.1 write it too
        if version_2:
            paragraphs.append({"context": context, "qas": [qa, {
                "id": f"n{i}", "question": "who was the actor ?", "answers": [],
                "is_impossible": True}]})
        else:
            paragraphs.append({"context": context, "qas": [qa]})
    return {"version": "v2.0" if version_2 else "1.1",
            "data": [{"title": "t", "paragraphs": paragraphs}]}


def race_dir(root, train: tuple[int, int] = (16, 16), dev: tuple[int, int] = (6, 6),
             seed: int = 7):
    """A RACE folder: `train` and `dev` questions per level (middle, high), one good option
    among three bad ones, the question's blank to fill."""
    rng = np.random.default_rng(seed)
    for split, counts in (("train", train), ("dev", dev)):
        for level, n in zip(("middle", "high"), counts, strict=True):
            folder = root / split / level
            folder.mkdir(parents=True)
            for i in range(n):
                answer = int(rng.integers(0, 4))
                options = [str(rng.choice(BAD)) for _ in range(4)]
                options[answer] = str(rng.choice(GOOD))
                (folder / f"{i}.txt").write_text(json.dumps({
                    "id": f"{level}{i}.txt", "article": sentence(rng, True),
                    "questions": ["the film was _ ."], "options": [options],
                    "answers": ["ABCD"[answer]]}))
    return root


def logged_losses(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"step \d+: loss ([0-9.]+)", text)]
