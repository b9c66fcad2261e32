"""Generated SQuAD text: syllable words, sentences, contexts and answers within them."""

from __future__ import annotations

import random

SYLLABLES = ["ka", "lo", "mi", "ren", "tu", "sa", "vor", "ne", "pil", "do", "gra", "zen"]


def _word(rng: random.Random) -> str:
    word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))
    return word.capitalize() if rng.random() < 0.15 else word


def _sentence(rng: random.Random) -> str:
    words = [_word(rng) for _ in range(rng.randint(5, 12))]
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), str(rng.randint(1, 2000)))
    return " ".join(words) + rng.choice([".", ".", "!", "?"])


def _context(rng: random.Random, sentences: int) -> str:
    return "  ".join(_sentence(rng) for _ in range(sentences)) if sentences else ""


def _answer_in(rng: random.Random, context: str) -> dict:
    """A run of 1-3 whole words of the context (never touching punctuation)."""
    words = [(m, m + len(w)) for m, w in _word_spans(context) if w.isalnum()]
    i = rng.randrange(len(words) - 3)
    end = words[i + rng.randint(0, 2)][1]
    text = context[words[i][0]:end]
    if not all(w.isalnum() for w in text.split()):
        text = context[words[i][0]:words[i][1]]
    return {"text": text, "answer_start": words[i][0]}


def _word_spans(text: str) -> list[tuple[int, str]]:
    spans, position = [], 0
    for word in text.split(" "):
        if word:
            spans.append((position, word))
        position += len(word) + 1
    return spans
