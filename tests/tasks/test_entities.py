"""Tests for litebert.tasks.entities: entity spans and scores equal seqeval's."""

from __future__ import annotations

import random
import warnings

import pytest
from seqeval.metrics import accuracy_score
from seqeval.metrics.sequence_labeling import get_entities, precision_recall_fscore_support
from seqeval.metrics.v1 import precision_recall_fscore_support as strict_prfs
from seqeval.scheme import IOB1, IOB2, IOBES, Tokens

from litebert.tasks.entities import entity_spans, normalize_scheme, score_entities

SEQEVAL_SCHEMES = {"IOB1": IOB1, "IOB2": IOB2, "BIOES": IOBES}
TYPES = ("PER", "LOC", "MISC")


def _random_tags(rng: random.Random, prefixes: str, n: int) -> list[str]:
    # Few types and many non-O tags, so that type switches, I- after O, E- without B- and
    # S- inside runs are common.
    choices = ["O"] + [f"{p}-{t}" for p in prefixes for t in TYPES]
    return [rng.choice(choices) for _ in range(n)]


def _random_corpus(rng: random.Random, prefixes: str) -> tuple[list[list[str]], list[list[str]]]:
    lengths = [rng.randint(0, 12) for _ in range(rng.randint(1, 6))]
    gold = [_random_tags(rng, prefixes, n) for n in lengths]
    # Predictions: gold with some tags changed, so that many entities match.
    pred = [[t if rng.random() < 0.7 else _random_tags(rng, prefixes, 1)[0] for t in s]
            for s in gold]
    return gold, pred


def _seqeval_scores(gold, pred, scheme: str | None):
    """(micro (p, r, f, support), {type: (p, r, f, support)}) from seqeval."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seqeval warns on undefined ratios (zero_division)
        if scheme is None:
            micro = precision_recall_fscore_support(gold, pred, average="micro")
            per = precision_recall_fscore_support(gold, pred, average=None)
            kinds = sorted({e[0] for s in (gold, pred) for e in get_entities(s)})
        else:
            cls = SEQEVAL_SCHEMES[scheme]
            micro = strict_prfs(gold, pred, average="micro", scheme=cls)
            per = strict_prfs(gold, pred, average=None, scheme=cls)
            kinds = sorted({e.tag for s in (*gold, *pred) for e in Tokens(s, cls).entities})
    return micro, {k: tuple(x[i] for x in per) for i, k in enumerate(kinds)}


def _assert_equal_scores(ours, micro, per_type) -> None:
    assert ours.precision == pytest.approx(micro[0], abs=1e-12, rel=0)
    assert ours.recall == pytest.approx(micro[1], abs=1e-12, rel=0)
    assert ours.f1 == pytest.approx(micro[2], abs=1e-12, rel=0)
    assert ours.gold == micro[3]
    assert sorted(ours.per_type) == sorted(per_type)
    for kind, (p, r, f, support) in per_type.items():
        got = ours.per_type[kind]
        assert (got.precision, got.recall, got.f1) == pytest.approx((p, r, f), abs=1e-12, rel=0)
        assert got.support == support


@pytest.mark.parametrize("prefixes", ["BI", "BIES"])
def test_default_mode_equals_seqeval(prefixes: str) -> None:
    rng = random.Random(f"default-{prefixes}")
    for _ in range(150):
        gold, pred = _random_corpus(rng, prefixes)
        ours = score_entities(gold, pred, mode="default")
        micro, per_type = _seqeval_scores(gold, pred, None)
        _assert_equal_scores(ours, micro, per_type)
        if sum(map(len, gold)):
            assert ours.accuracy == pytest.approx(accuracy_score(gold, pred), abs=1e-12)


@pytest.mark.parametrize("scheme,prefixes", [("IOB1", "BI"), ("IOB2", "BI"), ("BIOES", "BIES")])
def test_strict_mode_equals_seqeval(scheme: str, prefixes: str) -> None:
    rng = random.Random(f"strict-{scheme}")
    for _ in range(150):
        gold, pred = _random_corpus(rng, prefixes)
        ours = score_entities(gold, pred, mode="strict", scheme=scheme)
        micro, per_type = _seqeval_scores(gold, pred, scheme)
        _assert_equal_scores(ours, micro, per_type)


@pytest.mark.parametrize("prefixes", ["BI", "BIES"])
def test_default_spans_equal_get_entities(prefixes: str) -> None:
    rng = random.Random(f"spans-{prefixes}")
    for _ in range(300):
        tags = _random_tags(rng, prefixes, rng.randint(0, 10))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = [(k, start, end + 1) for k, start, end in get_entities(tags)]
        assert entity_spans(tags) == theirs


@pytest.mark.parametrize("scheme,prefixes", [("IOB1", "BI"), ("IOB2", "BI"), ("BIOES", "BIES")])
def test_strict_spans_equal_seqeval(scheme: str, prefixes: str) -> None:
    rng = random.Random(f"strict-spans-{scheme}")
    for _ in range(300):
        tags = _random_tags(rng, prefixes, rng.randint(0, 10))
        theirs = [(e.tag, e.start, e.end) for e in Tokens(tags, SEQEVAL_SCHEMES[scheme]).entities]
        assert entity_spans(tags, mode="strict", scheme=scheme) == theirs


@pytest.mark.parametrize("tags,default,strict_iob2", [
    # I- after O: conlleval starts a chunk; strict IOB2 has no entity.
    (["O", "I-PER", "I-PER"], [("PER", 1, 3)], []),
    # A type switch inside a chunk splits it; strict drops the run broken by the switch.
    (["B-PER", "I-LOC", "I-LOC"], [("PER", 0, 1), ("LOC", 1, 3)], [("PER", 0, 1)]),
    # B- after B- of the same type: two entities in both modes.
    (["B-PER", "B-PER"], [("PER", 0, 1), ("PER", 1, 2)], [("PER", 0, 1), ("PER", 1, 2)]),
])
def test_hand_read_spans(tags, default, strict_iob2) -> None:
    assert entity_spans(tags) == default
    assert entity_spans(tags, mode="strict", scheme="BIO") == strict_iob2


def test_e_and_s_in_default_mode() -> None:
    # E- without B- opens and closes a chunk; S- in IOB2 data is a one-token entity.
    assert entity_spans(["O", "E-PER", "I-PER"]) == [("PER", 1, 2), ("PER", 2, 3)]
    assert entity_spans(["B-LOC", "S-LOC", "I-LOC"]) == [("LOC", 0, 1), ("LOC", 1, 2),
                                                         ("LOC", 2, 3)]
    assert entity_spans(["B-PER", "E-PER", "O", "S-LOC"], mode="strict",
                        scheme="IOBES") == [("PER", 0, 2), ("LOC", 3, 4)]


def test_hand_counted_scores() -> None:
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-MISC", "O"]]
    pred = [["B-PER", "I-PER", "O", "B-PER"], ["B-MISC", "I-MISC"]]
    # Gold: PER 0-2, LOC 3, MISC 0 of sentence 1. Predicted: PER 0-2, PER 3, MISC 0-2.
    # Correct: only PER 0-2. P = 1/3, R = 1/3; tokens equal: 4 of 6.
    got = score_entities(gold, pred)
    assert (got.correct, got.predicted, got.gold) == (1, 3, 3)
    assert (got.precision, got.recall, got.f1) == pytest.approx((1 / 3, 1 / 3, 1 / 3))
    assert got.accuracy == pytest.approx(4 / 6)
    assert got.per_type["PER"].precision == pytest.approx(0.5)
    assert got.per_type["PER"].recall == 1.0
    assert got.per_type["LOC"].support == 1 and got.per_type["LOC"].precision == 0.0
    assert got.per_type["MISC"].f1 == 0.0


def test_no_entities_scores_zero() -> None:
    # seqeval's default zero_division: undefined ratios are 0.0.
    none = score_entities([["O", "O"]], [["O", "O"]])
    assert (none.precision, none.recall, none.f1, none.accuracy) == (0.0, 0.0, 0.0, 1.0)
    no_pred = score_entities([["B-PER", "O"]], [["O", "O"]])
    assert (no_pred.precision, no_pred.recall, no_pred.gold) == (0.0, 0.0, 1)
    no_gold = score_entities([["O", "O"]], [["B-PER", "O"]])
    assert (no_gold.precision, no_gold.recall, no_gold.per_type["PER"].support) == (0.0, 0.0, 0)
    assert score_entities([], []).accuracy == 0.0


@pytest.mark.parametrize("tag,why", [
    ("X-PER", "expected 'O'"), ("B-", "the entity type is empty"), ("BPER", "expected 'O'"),
    ("o", "expected 'O'"),
])
def test_bad_tag_names_sentence_and_position(tag: str, why: str) -> None:
    with pytest.raises(ValueError, match=rf"sentence 1, position 2: tag '{tag}': {why}"):
        score_entities([["O"], ["O", "O", "O"]], [["O"], ["O", "O", tag]])


def test_tag_outside_label_set_and_scheme() -> None:
    with pytest.raises(ValueError, match=r"sentence 0, position 1: tag 'B-ORG': not in the"):
        score_entities([["O", "B-ORG"]], [["O", "O"]], labels=["O", "B-PER", "I-PER"])
    with pytest.raises(ValueError, match=r"position 0: tag 'S-PER': prefix S- is not part"):
        entity_spans(["S-PER"], mode="strict", scheme="IOB2")
    # Default mode reads S- whatever the scheme, as seqeval does.
    assert entity_spans(["S-PER"], scheme="IOB2") == [("PER", 0, 1)]


def test_bad_arguments() -> None:
    assert normalize_scheme("iobes") == "BIOES" and normalize_scheme("bio") == "IOB2"
    with pytest.raises(ValueError, match="unknown tagging scheme 'IOE2'"):
        entity_spans(["O"], mode="strict", scheme="IOE2")
    with pytest.raises(ValueError, match="unknown entity mode 'lenient'"):
        entity_spans(["O"], mode="lenient")
    with pytest.raises(ValueError, match="sentence 0: 2 gold tags but 1 predicted"):
        score_entities([["O", "O"]], [["O"]])
