"""SQuAD 2.0 answers from XLNet's beam head: hand-made windows and beams, each built so
that a rule of the official XLNet run_squad.py decides the answer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from litebert.tasks.metrics import squad_v2_official
from litebert.tasks.squad import SquadError, SquadExample, SquadFeature, apply_null_threshold
from litebert.tasks.squad_beam import FeatureBeam, beam_p_mask, beam_postprocess, feature_beams

CONTEXT = "Alpha beta gamma delta epsilon."
WORDS = [(0, 5), (6, 10), (11, 16), (17, 22), (23, 31)]  # character spans of the 5 words
QUESTION_LEN = 2


def example(qid: str = "q1", impossible: bool = False) -> SquadExample:
    answers = [] if impossible else [{"text": "delta epsilon.", "answer_start": 17}]
    return SquadExample(qid=qid, question="Which?", context=CONTEXT, answers=answers,
                        is_impossible=impossible)


def feature(index: int = 0, words: range = range(5), best: list[bool] | None = None
            ) -> SquadFeature:
    """XLNet's layout: the window's words, <sep>, a 2-token question, <sep>, <cls> last."""
    n = len(words)
    offsets = [WORDS[w] for w in words] + [None] * (QUESTION_LEN + 3)
    best = [True] * n if best is None else best
    T = len(offsets)
    return SquadFeature(example_index=index, input_ids=list(range(10, 10 + T)),
                        token_type_ids=[0] * T, attention_mask=[1] * T, offsets=offsets,
                        max_context=best + [False] * (QUESTION_LEN + 3),
                        start_position=0, end_position=0)


def beam(starts, start_lp, ends, end_lp, cls: float = 0.0) -> FeatureBeam:
    return FeatureBeam(start_log_probs=np.array(start_lp), start_index=np.array(starts),
                       end_log_probs=np.array(end_lp), end_index=np.array(ends), cls_logit=cls)


# Three starts x two ends, start-major: ends [2i, 2i + 1] belong to start i. Token 6 is the
# question, 9 is <cls>. Valid pairs: (1, 2) scores -1.4 and (3, 4) -1.0; the others break a
# rule (start in the question, end before start, end on <cls>) and score higher.
RULES = beam(starts=[6, 1, 3], start_lp=[-0.1, -0.5, -0.7],
             ends=[7, 2, 0, 2, 4, 9], end_lp=[-0.1, -0.2, -0.05, -0.9, -0.3, -0.01], cls=1.5)


def test_only_valid_spans_count_best_score_first():
    spans, odds, nbest = beam_postprocess([example()], [feature()], [RULES])
    assert spans == {"q1": "delta epsilon."}
    assert [e["text"] for e in nbest["q1"]] == ["delta epsilon.", "beta gamma"]
    first = nbest["q1"][0]
    assert (first["start_log_prob"], first["end_log_prob"]) == (-0.7, -0.3)
    probs = [e["probability"] for e in nbest["q1"]]
    assert probs[0] > probs[1] and math.isclose(sum(probs), 1.0)
    assert math.isclose(probs[0], 1 / (1 + math.exp(-0.4)))  # softmax of -1.0 and -1.4
    assert odds == {"q1": 1.5}  # the answer-class logit, not a span score


def test_end_beam_is_read_start_major():
    """The pairs of RULES written end-major (entry j * S + i, transformers' layout) and read
    as this function reads them, start-major, pair start 1 with ends 4 and 2: another best
    span. So the layout is what decides, and model/beam_qa.py writes start-major."""
    end_major = beam(starts=[6, 1, 3], start_lp=[-0.1, -0.5, -0.7],
                     ends=[7, 0, 4, 2, 2, 9], end_lp=[-0.1, -0.05, -0.3, -0.2, -0.9, -0.01])
    spans, _, nbest = beam_postprocess([example()], [feature()], [end_major])
    assert spans == {"q1": "beta gamma"}
    assert [e["text"] for e in nbest["q1"]] == ["beta gamma", "beta gamma delta epsilon."]


def test_max_answer_length_and_no_valid_span():
    spans, odds, nbest = beam_postprocess([example()], [feature()], [RULES],
                                          max_answer_length=1)
    assert spans == {"q1": ""}  # both valid pairs are 2 tokens long
    assert nbest["q1"] == [{"text": "", "probability": 1.0, "start_log_prob": -1e6,
                            "end_log_prob": -1e6}]
    assert odds == {"q1": 1.5}


def test_windows_pool_candidates_and_the_null_odds_are_the_lowest_cls_logit():
    """Two windows of one question: the first holds the top pair but its start is not in its
    max-context window there, so the second window's span wins; a second question has its
    own window. Null odds: the lowest answer-class logit of each question's windows."""
    first = feature(0, range(0, 4), best=[True, True, False, False])
    second = feature(0, range(2, 5), best=[True, True, True])
    other = feature(1)
    beams = [beam([2], [-0.01], [3], [-0.01], cls=2.0),  # gamma delta: start not max context
             beam([1], [-0.3], [2], [-0.3], cls=-0.5),  # tokens 1-2 here: delta epsilon.
             beam([0], [-0.2], [0], [-0.2], cls=0.7)]
    spans, odds, _ = beam_postprocess([example(), example("q2", impossible=True)],
                                      [first, second, other], beams)
    assert spans == {"q1": "delta epsilon.", "q2": "Alpha"}
    assert odds == {"q1": -0.5, "q2": 0.7}


def test_duplicate_texts_once_and_at_most_n_best():
    starts, ends = [1, 1], [2, 2, 1, 3]  # (1, 2) twice, then (1, 1) and (1, 3)
    dup = beam(starts, [-0.1, -0.2], ends, [-0.1, -0.2, -0.3, -0.4])
    _, _, nbest = beam_postprocess([example()], [feature()], [dup], n_best_size=2)
    assert [e["text"] for e in nbest["q1"]] == ["beta gamma", "beta"]  # -0.2, then -0.5
    _, _, one = beam_postprocess([example()], [feature()], [dup], n_best_size=1)
    assert [e["text"] for e in one["q1"]] == ["beta gamma"]


def test_indices_outside_the_window_are_skipped():
    """Left padding shifted back gives negative indices, a stale one may exceed the window:
    neither is a span."""
    out = beam([-2, 1], [-0.01, -0.5], [0, 1, 20, 2], [-0.01, -0.01, -0.01, -0.5])
    spans, _, nbest = beam_postprocess([example()], [feature()], [out])
    assert spans == {"q1": "beta gamma"} and len(nbest["q1"]) == 1


def test_feature_beams_shift_left_padding_back():
    beams = feature_beams(np.array([[-0.1], [-0.2]]), np.array([[4], [1]]),
                          np.array([[-0.3], [-0.4]]), np.array([[5], [2]]),
                          np.array([0.5, -0.5]), left_padding=[3, 0])
    assert [b.start_index.tolist() for b in beams] == [[1], [1]]
    assert [b.end_index.tolist() for b in beams] == [[2], [2]]
    assert [b.cls_logit for b in beams] == [0.5, -0.5]


def test_p_mask_opens_the_context_and_the_cls_token():
    f = feature()
    assert beam_p_mask(f, cls_index=len(f.input_ids) - 1) == [0] * 5 + [1] * 4 + [0]


def test_answers_flow_through_the_threshold_and_the_official_metric():
    """The null odds feed apply_null_threshold as BERT's do: q2's cls logit is above the
    threshold, so it is answered "", and both questions score."""
    examples = [example(), example("q2", impossible=True)]
    features = [feature(0), feature(1)]
    beams = [RULES, beam([0], [-0.1], [0], [-0.1], cls=3.0)]
    spans, odds, _ = beam_postprocess(examples, features, beams)
    predictions, shifted = apply_null_threshold(spans, odds, threshold=2.0)
    assert predictions == {"q1": "delta epsilon.", "q2": ""}
    assert shifted == {"q1": -0.5, "q2": 1.0}
    data = {"data": [{"paragraphs": [{"context": CONTEXT, "qas": [
        {"id": "q1", "question": "Which?", "is_impossible": False,
         "answers": [{"text": "delta epsilon.", "answer_start": 17}]},
        {"id": "q2", "question": "Which?", "is_impossible": True, "answers": []}]}]}]}
    scores = squad_v2_official(data, predictions, shifted)
    assert scores["exact"] == 100.0 and scores["f1"] == 100.0


def test_mismatched_inputs_are_errors():
    with pytest.raises(SquadError, match="1 features but 2 beams"):
        beam_postprocess([example()], [feature()], [RULES, RULES])
    with pytest.raises(SquadError, match="do not divide"):
        beam_postprocess([example()], [feature()], [beam([1, 2], [0, 0], [1, 2, 3], [0] * 3)])
    with pytest.raises(SquadError, match="example_index 3"):
        beam_postprocess([example()], [feature(3)], [RULES])
