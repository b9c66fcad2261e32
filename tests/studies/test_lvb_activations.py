"""Activation memory of the lite-vs-bert rows (studies/lite_vs_bert/activations.py): real
measurements in spawned children on a tiny albert-base (H 64, 6 layers), the extrapolation's
arithmetic, the micro-batch arithmetic and a failing child's sentence.

Each child imports torch and litebert (~3-4 s on 2 cores), so the real measurements are
shared: one module fixture measures the tiny row at 512 tokens at its full depth and at 2 and
3 layers (six children); the length test adds two at 128 tokens.
"""

from __future__ import annotations

import pytest

from litebert.studies.lite_vs_bert import activations
from litebert.studies.lite_vs_bert.activations import (
    activation_memory,
    activation_plan,
    depth_overrides,
    full_depth,
    largest_micro_batch,
)
from litebert.studies.lite_vs_bert.rows import meta_model, row_config

MB = 2 ** 20
# Small enough for a child to build and step in about a second; the FFN is wide (1024) so
# the layers' share of the activations (~5 MB a layer and sequence at 512 tokens) stands
# well above the RSS noise (~0.1 MB a point); the vocabulary's MLM logits give ~35 MB more.
TINY = dict(num_hidden_layers=6, hidden_size=64, num_attention_heads=2,
            intermediate_size=1024, embedding_size=32)


@pytest.fixture(scope="module")
def at_512():
    """The tiny row at 512 tokens: measured at its 6 layers, and extrapolated from 2 and 3."""
    measured = activation_memory("albert-base", 512, (1, 2), overrides=TINY)
    extrapolated = full_depth("albert-base", 512, batches=(1, 2), overrides=TINY)
    return measured, extrapolated


def test_a_measurement_has_positive_bytes_per_sequence_that_grow_with_length(at_512):
    measured, extrapolated = at_512
    assert measured["row"] == "albert-base" and measured["layers"] == 6
    assert [p["batch"] for p in measured["points"]] == [1, 2]
    for point in measured["points"]:
        assert point["peak"] in ("VmHWM after clear_refs", "ru_maxrss")
        assert point["peak_bytes"] - point["baseline_bytes"] == point["activation_bytes"]
        assert point["layers_peak_bytes"] <= point["peak_bytes"]
        assert point["saved_bytes"] > 0 and point["seconds"] > 0
    assert measured["per_sequence_bytes"] > 10 * MB
    assert measured["saved_per_sequence_bytes"] > 10 * MB
    two_layers_512 = extrapolated["measured"][0]
    assert two_layers_512["layers"] == 2
    two_layers_128 = activation_memory("albert-base", 128, (1, 2), layers=2, overrides=TINY)
    assert two_layers_128["layers"] == 2 and two_layers_128["length"] == 128
    assert 0 < two_layers_128["per_sequence_bytes"] < two_layers_512["per_sequence_bytes"] / 2


def test_the_shallow_extrapolation_agrees_with_the_full_depth_measurement(at_512):
    """Measured on 2 cores: -0.2% and -0.6% in two runs, whose points differed by at most
    0.15 MB. The extrapolation multiplies the difference between the 2- and 3-layer points
    by L - 2 = 4, so ~1 MB of ~64 MB at worst: 5% allowed."""
    measured, extrapolated = at_512
    assert extrapolated["layers"] == 6 and extrapolated["method"] == "extrapolated from L=2,3"
    assert [m["layers"] for m in extrapolated["measured"]] == [2, 3]
    assert extrapolated["per_layer_bytes"] > 2 * MB  # the wide FFN: ~5 MB
    error = extrapolated["per_sequence_bytes"] / measured["per_sequence_bytes"] - 1
    assert abs(error) < 0.05, error


def test_full_depth_extrapolates_a_line_in_depth_and_keeps_the_tail(monkeypatch):
    """Children replaced by an exact model: the layers' phase is (7 + L) + B (3 + 2 L) above
    the baseline, the step's peak the larger of that and a tail of 40. Extrapolated to the
    full depth (12) it is exact, and the tail is kept apart."""
    def fake(name, length, batch, layers=None, overrides=None):
        depth = 12 if layers is None else layers
        phase = (7 + depth) + batch * (3 + 2 * depth)
        step = max(phase, 40)
        return {"layers_activation_bytes": phase, "activation_bytes": step,
                "layers_peak_bytes": 1000 + phase, "peak_bytes": 1000 + step,
                "saved_bytes": batch * (1 + depth), "layers": depth}

    monkeypatch.setattr(activations, "measure_once", fake)
    found = full_depth("albert-base", 128, shallow=(2, 5), batches=(1, 3))
    assert found["layers"] == 12 and found["method"] == "extrapolated from L=2,5"
    assert found["per_sequence_bytes"] == pytest.approx(3 + 2 * 12)
    assert found["fixed_bytes"] == pytest.approx(7 + 12)
    assert found["per_layer_bytes"] == pytest.approx(2)
    assert found["saved_per_sequence_bytes"] == pytest.approx(13)
    assert found["tail_bytes"] == 40
    assert [p["activation_bytes"] for p in found["points"]] == pytest.approx([46, 100])
    shallow = found["measured"][0]  # 2 layers: the tail is the step's peak at both batches
    assert shallow["step_per_sequence_bytes"] == 0 and shallow["per_sequence_bytes"] == 7
    with pytest.raises(ValueError, match="two different shallow depths"):
        full_depth("albert-base", 128, shallow=(2, 2))
    with pytest.raises(ValueError, match="two different batch sizes"):
        activation_memory("albert-base", 128, batches=(4,))


def test_largest_micro_batch():
    GB = 2 ** 30
    assert largest_micro_batch(24 * GB, 4 * GB, 1 * GB, 2 * GB) == 18
    assert largest_micro_batch(80 * GB, 4 * GB, 1.5 * GB, 2 * GB) == 49  # 74 / 1.5 = 49.3
    assert largest_micro_batch(10, 4, 2, 0) == 3  # exactly full fits
    assert largest_micro_batch(10, 4, 2, 1) == 2
    assert largest_micro_batch(10, 8, 3, 0) == 0  # not even one sequence
    assert largest_micro_batch(10, 12, 1, 0) == 0  # the weights alone overflow
    assert largest_micro_batch(10, 4, 2, 0, tail_bytes=6) == 3  # the tail just fits
    assert largest_micro_batch(10, 4, 2, 0, tail_bytes=7) == 0  # backward's end does not
    with pytest.raises(ValueError, match="per_sequence_bytes must be positive"):
        largest_micro_batch(10, 1, 0, 0)


def test_plans_and_depth_overrides():
    assert [activation_plan(n) for n in ("albert-base", "bert-large", "albert-xxlarge")] == [
        "full", "full", "shallow"]
    with pytest.raises(ValueError, match="'gpt-2' has no activation plan"):
        activation_plan("gpt-2")
    for name, modules in (("albert-large", [1, 1]), ("bert-large", [2, 2])):
        encoder = meta_model(row_config(name, **depth_overrides(name, 2))).backbone.encoder
        assert len(encoder.attention_index) == 2  # two layer positions
        assert [len(encoder.attentions), len(encoder.ffns)] == modules  # shared or not
    assert depth_overrides("bert-large", None) == {}


def test_a_failing_child_is_a_sentence_naming_the_row():
    with pytest.raises(ValueError) as caught:
        activation_memory("albert-huge", 128)
    message = str(caught.value)
    assert "row 'albert-huge' at 128 tokens, batch 1, its full depth failed" in message
    assert "unknown preset" in message
