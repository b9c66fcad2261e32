"""The lite-vs-bert throughput model (ring formulas, overlap, speed-ups) and its check on this
machine with 2 gloo processes (a tiny link measurement and a tiny row's step)."""

import math

import pytest

from litebert.studies.lite_vs_bert.gloo_check import (
    fit_line,
    link_of_this_machine,
    measured_step,
    ring_fit,
)
from litebert.studies.lite_vs_bert.throughput import (
    DDP_BUCKET_BYTES,
    INTERCONNECTS,
    MIB,
    Interconnect,
    bandwidth_sweep,
    bucket_sizes,
    log_spaced,
    predict,
    ring_all_reduce_s,
    ring_collective_s,
    speedups,
)

GB = 1e9
TINY = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128,
            embedding_size=32)


def link(bandwidth, ranks=2, latency_s=0.0):
    return Interconnect("test", ranks, bandwidth, latency_s, "hand-made")


def test_ring_formulas_match_hand_arithmetic():
    # 2 ranks, 100 MB at 1 GB/s: each rank sends half the tensor twice, 2 * 1/2 * 0.1 s.
    assert ring_all_reduce_s(100e6, 2, GB, 0.0) == pytest.approx(0.1)
    # plus 2(N-1) = 2 latencies
    assert ring_all_reduce_s(100e6, 2, GB, 1e-3) == pytest.approx(0.102)
    # 8 ranks: 2 * 7/8 * 0.1 s + 14 latencies
    assert ring_all_reduce_s(100e6, 8, GB, 1e-5) == pytest.approx(0.175 + 14e-5)
    # all-gather / reduce-scatter: half of that
    assert ring_collective_s(100e6, 8, GB, 1e-5) == pytest.approx(0.0875 + 7e-5)
    assert ring_all_reduce_s(100e6, 1, GB, 1e-3) == 0.0  # one rank sends nothing


def test_ddp_communication_sums_the_buckets():
    grads = 60 * MIB  # 25 + 25 + 10 MiB
    assert bucket_sizes(grads) == [DDP_BUCKET_BYTES, DDP_BUCKET_BYTES, 10 * MIB]
    assert bucket_sizes(50 * MIB) == [DDP_BUCKET_BYTES] * 2
    two = link(GB, ranks=2, latency_s=1e-3)
    out = predict(0.0, grads, two)
    assert out["comm_s"] == pytest.approx(60 * MIB / GB + 3 * 2e-3)
    assert out["last_comm_s"] == pytest.approx(10 * MIB / GB + 2e-3)
    assert out["overlap_s"] == 0.0  # no backward to hide behind
    assert out["step_s"] == pytest.approx(out["comm_s"])


@pytest.mark.parametrize("compute_s", [0.0, 0.01, 0.05, 0.3, 10.0])
@pytest.mark.parametrize("grads", [MIB, 25 * MIB, 60 * MIB, 400 * MIB])
def test_overlap_is_bounded_by_the_backward_and_all_but_the_last_bucket(compute_s, grads):
    out = predict(compute_s, grads, link(GB, ranks=4, latency_s=1e-5), optimizer_s=0.01)
    assert out["backward_s"] == pytest.approx(2 / 3 * compute_s)
    assert 0 <= out["overlap_s"] <= out["backward_s"] + 1e-12
    assert out["overlap_s"] <= out["comm_s"] - out["last_comm_s"] + 1e-12
    assert out["overlap_s"] == pytest.approx(min(out["backward_s"],
                                                 out["comm_s"] - out["last_comm_s"]))
    assert out["step_s"] >= compute_s + 0.01 + out["last_comm_s"] - 1e-12
    assert out["step_s"] == pytest.approx(compute_s + 0.01 + out["comm_s"] - out["overlap_s"])


def test_fsdp_needs_its_bytes_and_counts_each_collective():
    with pytest.raises(ValueError, match="gather_bytes"):
        predict(1.0, 100, link(GB), mode="fsdp")
    with pytest.raises(ValueError, match="mode"):
        predict(1.0, 100, link(GB), mode="zero")
    out = predict(0.0, 0, link(GB, ranks=4, latency_s=1e-3), mode="fsdp",
                  gather_bytes=int(2e9), scatter_bytes=int(1e9), collectives=6)
    assert out["comm_s"] == pytest.approx(3 / 4 * 3.0 + 6 * 3e-3)
    assert out["last_comm_s"] == pytest.approx(out["comm_s"] / 6)


def test_bad_links_and_rows_are_sentences():
    with pytest.raises(ValueError, match="bandwidth"):
        predict(1.0, 100, link(0.0))
    with pytest.raises(ValueError, match="reference"):
        speedups({"a": {"flops_per_sequence": 1, "grad_bytes": 1}}, link(GB), 1e12)
    with pytest.raises(ValueError, match="flops_per_sequence"):
        speedups({"bert-large": {"grad_bytes": 1}}, link(GB), 1e12)


ROWS = {"bert-large": {"flops_per_sequence": 1e12, "grad_bytes": 1_000_000_000},
        "albert-large": {"flops_per_sequence": 1e12, "grad_bytes": 500_000_000}}


def test_half_the_gradients_is_faster_on_a_slow_link_and_equal_on_a_fast_one():
    slow = speedups(ROWS, Interconnect("slow", 16, 1e8, 2e-5, ""), rate=1e14)
    fast = speedups(ROWS, Interconnect("fast", 16, 1e13, 0.0, ""), rate=1e14)
    assert slow["bert-large"] == fast["bert-large"] == 1.0
    assert slow["albert-large"] > 1.5  # comm-bound: close to the 2x fewer bytes
    assert fast["albert-large"] == pytest.approx(1.0, rel=1e-3)


def test_the_sweep_climbs_from_the_fast_end_to_the_slow_end():
    sweep = bandwidth_sweep(ROWS, ranks=16, rate=1e14, bandwidths=log_spaced(1e8, 1e12, 25))
    ratio = sweep["albert_over_bert"]["albert-large"]
    assert len(sweep["bandwidth"]) == len(ratio) == 25
    assert sweep["speedup"]["bert-large"] == [1.0] * 25
    assert all(a >= b - 1e-12 for a, b in zip(ratio, ratio[1:], strict=False))  # slower link
    assert ratio[0] > 1.5 and ratio[-1] == pytest.approx(1.0, rel=1e-2)


def test_the_named_interconnects():
    nvlink = INTERCONNECTS["nvlink-8xh100"]
    assert (nvlink.ranks, nvlink.bandwidth) == (8, 450e9)
    assert INTERCONNECTS["ib100-16x8"].ranks == 128
    assert INTERCONNECTS["ib100-2x8"].bandwidth == pytest.approx(12.5e9)
    assert INTERCONNECTS["eth25-2x8"].bandwidth == pytest.approx(3.125e9)
    assert INTERCONNECTS["tpu-v3-128"].ranks == 128
    assert all(x.note and x.latency_s > 0 for x in INTERCONNECTS.values())


def test_the_relative_fit_recovers_a_line():
    xs = [1e3, 1e4, 1e5, 1e6]
    a, b = fit_line(xs, [2e-4 + 1e-9 * x for x in xs])
    assert a == pytest.approx(2e-4) and b == pytest.approx(1e-9)


def test_the_link_of_this_machine_has_a_positive_bandwidth_and_latency():
    # Up to 16 MiB, as the quick study fits: at 1 MiB the time is a few milliseconds of
    # overhead on a loaded machine, flat in the size, and no bandwidth can be fitted.
    fit = link_of_this_machine(sizes=(4096, 1 << 20, 1 << 24), repeats=3)
    assert fit["bandwidth"] > 0 and fit["latency_s"] > 0
    assert [p["bytes"] for p in fit["points"]] == [4096, 1 << 20, 1 << 24]
    assert all(p["seconds"] > 0 for p in fit["points"])
    assert fit["link"].ranks == 2 and fit["link"].bandwidth == fit["bandwidth"]


def test_a_tiny_rows_step_with_and_without_the_all_reduce():
    out = measured_step("albert-base", batch=2, length=16, steps=2, overrides=TINY)
    for key in ("forward_backward_s", "optimizer_s", "compute_step_s", "ddp_step_s"):
        assert math.isfinite(out[key]) and out[key] > 0, key
    assert out["ddp_step_s"] >= 0.5 * out["compute_step_s"]
    assert out["compute_step_s"] >= out["forward_backward_s"]
    assert out["grad_bytes"] == 4 * out["params"]  # float32, every parameter trained


def test_the_link_fit_drops_a_negative_latency_and_refuses_times_that_do_not_grow():
    sizes = [1_000, 10_000, 100_000]
    latency, bandwidth = ring_fit(sizes, [1e-6 + s / 1e9 for s in sizes], ranks=2)
    assert bandwidth == pytest.approx(1e9, rel=1e-3) and latency > 0
    latency, bandwidth = ring_fit(sizes, [s / 1e9 - 1e-7 for s in sizes], ranks=2)
    assert latency == 0.0 and bandwidth > 0  # an intercept below 0 is noise, refitted
    with pytest.raises(ValueError, match="did not grow with the message size"):
        ring_fit(sizes, [3e-4, 2e-4, 1e-4], ranks=2)
