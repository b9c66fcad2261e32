"""Sentence splitting by rule (no model), shared by every reader that gets running text:
the paragraphs format, and the text field of JSON lines, Parquet and Arrow records
(`record_documents`: one record's text -> its documents)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from litebert.readers.base import CorpusStats, Document, split_document

_CANDIDATE = re.compile(r"([.!?\u2026]+)[\"'\u201d\u2019)\]]*\s+")
_OPENERS = "\"'\u201c\u2018(["
_CLOSERS = "\"'\u201d\u2019)]"
_DOTTED = re.compile(r"(?:[^\W\d_]{1,3}\.)+[^\W\d_]{1,3}")  # U.S  e.g  Ph.D  a.m
# Capitalised ones match as written ("no." and "mar." end sentences); the lower-case ones
# match in any case ("Etc.", "VS.").
_ABBREVIATIONS = frozenset("""
    Mr Mrs Ms Dr Prof St Jr Sr Sen Rep Gen Gov Rev Fr Capt Col Lt Sgt Mt Messrs Mme Mlle
    No Nos Fig Figs Vol Vols Ch Sec Art Ed Eds Inc Ltd Co Corp
    Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec
    MR MRS DR ST NO INC LTD CO
""".split())
_ABBREVIATIONS_ANY_CASE = frozenset("e.g i.e etc vs cf al viz approx ca est p pp".split())


def split_sentences(text: str) -> list[str]:
    """Split running text into sentences by rule (English-oriented, no model).

    A boundary is a run of . ! ? or ... (then any closing quotes/brackets "'”’)]) followed by
    whitespace, then optional opening quotes/brackets "'“‘([, then an uppercase or caseless
    letter or a digit. A candidate is NOT a boundary when the run is:
    - an ellipsis (two or more dots, or …) without ! or ?: an ellipsis continues a sentence;
    - a single "." after a known abbreviation (Mr. Mrs. Dr. St. e.g. i.e. etc. vs. Fig. Jan.
      Inc. ..., see _ABBREVIATIONS; "No." but not "no."), after a dotted abbreviation
      of 1-3 letter groups (U.S. Ph.D. a.m.), or after a single uppercase letter (initials as
      in "J. K. Rowling").
    Decimals ("3.14") and "?!" need no rule: a dot inside a number has no whitespace after
    it, and "?!" is one run. Limits: a sentence really ending in an abbreviation ("... in the
    U.S. The next") is not split. Sentences are stripped; empty ones dropped.
    """
    out: list[str] = []
    start = 0
    for m in _CANDIDATE.finditer(text):
        if _ends_sentence(text, m):
            sentence = text[start:m.end()].strip()
            if sentence:
                out.append(sentence)
            start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def _ends_sentence(text: str, m: re.Match) -> bool:
    following = text[m.end():m.end() + 8].lstrip(_OPENERS)
    if not following or not (following[0].isdigit()
                             or (following[0].isalpha() and not following[0].islower())):
        return False
    marks = m.group(1)
    if "!" in marks or "?" in marks:
        return True
    if marks != ".":
        return False  # ellipsis
    dot = m.start(1)
    if dot == 0 or text[dot - 1].isspace():
        return True  # a lone " ." as in tokenized text
    word = text[max(0, dot - 40):dot].split()[-1].strip(_OPENERS + _CLOSERS)
    if len(word) == 1 and word.isupper():
        return False  # an initial
    return not (word in _ABBREVIATIONS or word.lower() in _ABBREVIATIONS_ANY_CASE
                or _DOTTED.fullmatch(word))


def cut_text(text: str, max_chars: int) -> list[str]:
    """Cut text into pieces of at most max_chars, at the last whitespace that fits."""
    pieces = []
    while len(text) > max_chars:
        text = text.lstrip()  # leading whitespace is no place to cut
        if len(text) <= max_chars:
            break
        at = max(text.rfind(c, 0, max_chars + 1) for c in " \t\u3000\xa0")
        at = at if at > 0 else max_chars
        pieces.append(text[:at])
        text = text[at:].lstrip()
    pieces.append(text)
    return pieces


_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")


def text_to_sentences(text: str, max_chars: int = 100_000,
                      stats: CorpusStats | None = None, where: str = "") -> list[str]:
    """A document's text -> sentences: paragraphs on blank lines (a paragraph's lines joined by
    a space), each split by `split_sentences`; a paragraph over max_chars is first cut at
    whitespace (counted in `stats` as long_lines_split at `where`)."""
    sentences: list[str] = []
    for block in _BLANK_LINE.split(text):
        paragraph = " ".join(line.strip() for line in block.splitlines() if line.strip())
        if len(paragraph) > max_chars and stats is not None:
            stats.note("long_lines_split", where, f"a paragraph over {max_chars:,} characters")
        for piece in cut_text(paragraph, max_chars):
            sentences.extend(split_sentences(piece))
    return sentences


def record_documents(text: str, label: object, where: str, stats: CorpusStats, max_chars: int,
                     text_field: str, label_field: str | None) -> Iterator[Document]:
    """The documents of one record (a JSON line, a table row) whose text field holds `text`
    and whose label field `label` (None: absent, counted when a label field was asked for);
    labels are kept as their text (3 -> "3"), the same from every format."""
    if label_field is not None and label is None:
        stats.note("missing_label", where, f"no field {label_field!r}")
    sentences = text_to_sentences(text, max_chars, stats, where)
    if not sentences:
        stats.note("empty_documents", where, f"field {text_field!r} has no text")
        return
    yield from split_document(sentences, where, stats, None if label is None else str(label))
