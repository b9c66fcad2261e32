"""Entity-level scores of tag sequences (token classification), equal to seqeval.

A tag is "O" or PREFIX-TYPE with PREFIX one of B, I, E, S and a non-empty TYPE. Entities
are spans `(type, start, end)` of one sentence, `end` exclusive (a Python slice). Two
ways of reading entities out of tags, the two modes of seqeval (PyPI), the field's
reference, which tests/tasks/test_entities.py compares with on random tag sequences:

- mode="default" (seqeval's default, the rules of the CoNLL conlleval script): lenient.
  Any of B/I/E/S is accepted whatever the scheme. A chunk starts at B- or S-, at I- or E-
  after O, E- or S-, and wherever the type changes; it ends before O, B- or S-, after E-
  or S-, and wherever the type changes. So "O I-PER" is a PER entity and
  "B-PER I-LOC" two entities.
- mode="strict" (seqeval's `mode="strict", scheme=...`): only the transitions `scheme`
  allows make entities; an entity whose start or continuation breaks them is dropped
  (IOB2: "O I-PER" has no entity). A prefix outside the scheme (S- in IOB2) is an error.
  Schemes: IOB1, IOB2 (also called BIO) and BIOES (seqeval's IOBES).

`score_entities` counts an entity correct when its sentence, type, start and end are all
those of a gold entity. Precision, recall and F1 are micro averages over all entities;
per-type figures come with the type's gold support. As in seqeval's default
(zero_division="warn", without the warning), a ratio with a zero denominator is 0.0:
precision with no predicted entities, recall with no gold entities, F1 when both are 0.
Token accuracy counts equal tags over all tokens (0.0 when there are no tokens, where
seqeval divides by zero).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# (type, start, end) of one entity in one sentence; end is exclusive.
Span = tuple[str, int, int]

MODES = ("default", "strict")
_SCHEME_NAMES = {"iob1": "IOB1", "iob2": "IOB2", "bio": "IOB2", "bioes": "BIOES",
                 "iobes": "BIOES"}
_SCHEME_PREFIXES = {"IOB1": "BIO", "IOB2": "BIO", "BIOES": "BIOES"}

# Strict mode: a transition is (prefixes of the previous tag, prefixes of this tag, how
# the two types must compare: "any", "same" or "diff"). These are the transition tables
# of seqeval.scheme, so that strict scores are seqeval's; "*" is any prefix, O included.
_Rule = tuple[str, str, str]
_START: dict[str, tuple[_Rule, ...]] = {
    "IOB1": (("O", "I", "any"), ("I", "I", "diff"), ("B", "I", "any"),
             ("I", "B", "same"), ("B", "B", "same")),
    "IOB2": (("*", "B", "any"),),
    "BIOES": (("*", "B", "any"), ("*", "S", "any")),
}
_INSIDE: dict[str, tuple[_Rule, ...]] = {
    "IOB1": (("B", "I", "same"), ("I", "I", "same")),
    "IOB2": (("B", "I", "same"), ("I", "I", "same")),
    "BIOES": (("B", "I", "same"), ("B", "E", "same"), ("I", "I", "same"),
              ("I", "E", "same")),
}
_END: dict[str, tuple[_Rule, ...]] = {
    "IOB1": (("I", "I", "diff"), ("I", "O", "any"), ("I", "B", "any"), ("B", "O", "any"),
             ("B", "I", "diff"), ("B", "B", "same")),
    "IOB2": (("I", "O", "any"), ("I", "I", "diff"), ("I", "B", "any"), ("B", "O", "any"),
             ("B", "I", "diff"), ("B", "B", "any")),
    "BIOES": (("S", "*", "any"), ("E", "*", "any")),
}

# A parsed tag: (prefix, type); "O" is ("O", "").
_Tag = tuple[str, str]
_OUTSIDE: _Tag = ("O", "")


@dataclass(frozen=True)
class TypeScores:
    """Scores of one entity type; support is its number of gold entities."""
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class EntityScores:
    """Micro precision/recall/F1 over all entities, per-type scores and token accuracy."""
    precision: float
    recall: float
    f1: float
    accuracy: float
    gold: int       # gold entities
    predicted: int  # predicted entities
    correct: int    # predicted entities equal to a gold one
    per_type: dict[str, TypeScores] = field(default_factory=dict)


def normalize_scheme(scheme: str) -> str:
    """'IOB1', 'IOB2' or 'BIOES' for any accepted spelling ('bio', 'IOBES', ...)."""
    name = _SCHEME_NAMES.get(str(scheme).strip().lower())
    if name is None:
        raise ValueError(f"unknown tagging scheme {scheme!r}; expected IOB1, IOB2 (BIO) "
                         "or BIOES (IOBES)")
    return name


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown entity mode {mode!r}; expected one of {', '.join(MODES)}")


def parse_tag(tag: str, prefixes: str = "BIES", labels: frozenset[str] | None = None,
              where: str = "") -> _Tag:
    """(prefix, type) of `tag`; a malformed tag, a prefix outside `prefixes` or a tag
    outside `labels` is a ValueError that says `where` it is."""
    def bad(why: str) -> ValueError:
        return ValueError(f"{where}tag {tag!r}: {why}")

    if labels is not None and tag not in labels:
        raise bad("not in the label set")
    if tag == "O":
        return _OUTSIDE
    prefix, dash, kind = tag.partition("-")
    if not dash or len(prefix) != 1 or prefix not in "BIES":
        raise bad("expected 'O' or B-, I-, E-, S- followed by an entity type")
    if prefix not in prefixes:
        raise bad(f"prefix {prefix}- is not part of this tagging scheme")
    # seqeval reads "B--X" as type "-X" in one mode and "X" in the other; refuse it.
    if not kind or kind != kind.strip("-") or kind != kind.strip():
        raise bad("the entity type is empty or starts or ends with '-' or space")
    return prefix, kind


def _parse_all(tags: Sequence[str], prefixes: str, labels: frozenset[str] | None,
               sentence: int) -> list[_Tag]:
    return [parse_tag(tag, prefixes, labels, f"sentence {sentence}, position {i}: ")
            for i, tag in enumerate(tags)]


def _lenient_spans(parsed: Sequence[_Tag]) -> list[Span]:
    """conlleval's chunking: every non-O tag starts a chunk or continues the open one."""
    spans: list[Span] = []
    prev, begin = _OUTSIDE, 0
    for i, (prefix, kind) in enumerate([*parsed, _OUTSIDE]):
        prev_prefix, prev_kind = prev
        type_changes = prev_kind != kind
        ends = prev_prefix in "ES" or (prev_prefix in "BI" and prefix in "BSO") or (
            prev_prefix != "O" and type_changes)
        if ends:
            spans.append((prev_kind, begin, i))
        starts = prefix in "BS" or (prefix in "IE" and prev_prefix in "ESO") or (
            prefix != "O" and type_changes)
        if starts:
            begin = i
        prev = (prefix, kind)
    return spans


def _matches(rules: Iterable[_Rule], prev: _Tag, tag: _Tag) -> bool:
    for before, now, types in rules:
        if before != "*" and prev[0] not in before:
            continue
        if now != "*" and tag[0] not in now:
            continue
        if types == "any" or (types == "same") == (prev[1] == tag[1]):
            return True
    return False


def _strict_spans(parsed: Sequence[_Tag], scheme: str) -> list[Span]:
    """seqeval's strict reading: from each start, follow inside-transitions; the run is an
    entity only if what follows it ends it by the scheme's rules. Scanning resumes at the
    first tag after the run, whether or not the run was an entity."""
    tags = [*parsed, _OUTSIDE]
    spans: list[Span] = []
    i, prev = 0, _OUTSIDE
    while i < len(tags):
        if _matches(_START[scheme], prev, tags[i]):
            end = i + 1
            while _matches(_INSIDE[scheme], tags[end - 1], tags[end]):
                end += 1
            if _matches(_END[scheme], tags[end - 1], tags[end]):
                spans.append((tags[i][1], i, end))
            i = end
        else:
            i += 1
        prev = tags[i - 1]
    return spans


def entity_spans(tags: Sequence[str], mode: str = "default", scheme: str = "IOB2",
                 labels: Iterable[str] | None = None, sentence: int = 0) -> list[Span]:
    """The entities of one sentence's tags, in order; `sentence` only names it in errors.
    `scheme` matters only in strict mode."""
    _check_mode(mode)
    name = normalize_scheme(scheme)
    label_set = None if labels is None else frozenset(labels)
    if mode == "default":
        return _lenient_spans(_parse_all(tags, "BIES", label_set, sentence))
    return _strict_spans(_parse_all(tags, _SCHEME_PREFIXES[name], label_set, sentence), name)


def _ratio(numerator: int, denominator: int) -> float:
    # seqeval's default zero_division: an undefined ratio is 0.0.
    return numerator / denominator if denominator else 0.0


def _f1(precision: float, recall: float) -> float:
    # From the float precision and recall, as seqeval does, so figures agree to the bit.
    total = precision + recall
    return 2 * precision * recall / total if total else 0.0


def _type_scores(correct: int, predicted: int, gold: int) -> TypeScores:
    precision, recall = _ratio(correct, predicted), _ratio(correct, gold)
    return TypeScores(precision, recall, _f1(precision, recall), gold)


def _sentence_spans(sequences: Sequence[Sequence[str]], mode: str, scheme: str,
                    labels: Iterable[str] | None) -> set[tuple[int, Span]]:
    return {(n, span) for n, tags in enumerate(sequences)
            for span in entity_spans(tags, mode, scheme, labels, sentence=n)}


def _check_lengths(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> None:
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    for n, (g, p) in enumerate(zip(gold, predicted, strict=True)):
        if len(g) != len(p):
            raise ValueError(f"sentence {n}: {len(g)} gold tags but {len(p)} predicted")


def score_entities(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]],
                   mode: str = "default", scheme: str = "IOB2",
                   labels: Iterable[str] | None = None) -> EntityScores:
    """Entity scores of `predicted` against `gold` (lists of sentences of tags, equal
    lengths). `labels`, when given, is the full label set: any other tag is an error."""
    _check_lengths(gold, predicted)
    label_list = None if labels is None else list(labels)
    gold_set = _sentence_spans(gold, mode, scheme, label_list)
    pred_set = _sentence_spans(predicted, mode, scheme, label_list)
    hits = gold_set & pred_set
    by_gold = Counter(span[0] for _, span in gold_set)
    by_pred = Counter(span[0] for _, span in pred_set)
    by_hit = Counter(span[0] for _, span in hits)
    per_type = {kind: _type_scores(by_hit[kind], by_pred[kind], by_gold[kind])
                for kind in sorted(by_gold.keys() | by_pred.keys())}
    precision, recall = _ratio(len(hits), len(pred_set)), _ratio(len(hits), len(gold_set))
    tokens = sum(len(tags) for tags in gold)
    same = sum(g == p for gs, ps in zip(gold, predicted, strict=True)
               for g, p in zip(gs, ps, strict=True))
    return EntityScores(precision=precision, recall=recall, f1=_f1(precision, recall),
                        accuracy=_ratio(same, tokens), gold=len(gold_set),
                        predicted=len(pred_set), correct=len(hits), per_type=per_type)
