"""The throughput model (throughput.py) applied to what the study measured: each row's
predicted speed over BERT-large on each named interconnect, under DDP and under FSDP, at
the paper's global batch (4,096 sequences of 512 tokens), and the sweep over bandwidth.

Inputs per row:
- FLOPs per sequence at 512 tokens (timing.flops_per_sequence: the encoder's and the MLM
  head's training FLOPs), computed;
- the bytes a step communicates: DDP's all-reduced gradient buckets and FSDP's all-gathers,
  reduce-scatters and the optimizer's all-reduces, as counted by the communication part at 2
  processes (the bytes of a step do not depend on the number of ranks; only the ring's share
  (N-1)/N does), or computed from the model's tensors where a row was too large to count;
- one rank's achieved FLOP/s: MEASURED_RATE, the one GPU figure this project has measured
  for a pre-training step (an H200, albert-base compiled, bf16), used for every row and every
  interconnect. That every size reaches albert-base's rate is an assumption (larger matrices
  usually run closer to the peak), and so is giving a TPU v3 chip the same rate (its bf16
  peak, 123 TFLOP/s, is about this rate).
"""

from __future__ import annotations

from typing import Any

from litebert.studies.lite_vs_bert.rows import REFERENCE, ROWS, flops_per_sequence
from litebert.studies.lite_vs_bert.throughput import (
    GLOBAL_BATCH,
    INTERCONNECTS,
    SEQUENCE_LENGTH,
    bandwidth_sweep,
    predict,
    speedups,
)

# docs/results/gpu/2026-11-27-h200.md, row "mlm+sop full, compiled": albert-base 32 x 512,
# bf16, LAMB, the Trainer's step: 227,045 tokens/s (13.1% MFU) on one H200.
MEASURED_RATE: dict[str, Any] = {
    "row": "albert-base", "tokens_per_s": 227_045.0, "card": "NVIDIA H200",
    "date": "2026-11-27", "what": "mlm+sop full, compiled, 32 x 512, bf16"}
SWEEP_RANKS = 128  # 16 nodes of 8


def achieved_rate() -> float:
    """FLOP/s of one rank: the measured tokens/s x the row's FLOPs per token at 512."""
    per_token = flops_per_sequence(str(MEASURED_RATE["row"]), SEQUENCE_LENGTH) / SEQUENCE_LENGTH
    return float(MEASURED_RATE["tokens_per_s"]) * per_token


def model_inputs(parts: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{row: flops_per_sequence, grad_bytes, fsdp bytes and collectives, how}."""
    rows = {}
    for name, held in parts["footprint"].items():
        counted = parts.get("communication", {}).get(name)
        fsdp = counted["fsdp"] if counted else held["fsdp_step"]
        rows[name] = {
            "flops_per_sequence": held["flops_per_sequence"][str(SEQUENCE_LENGTH)],
            "grad_bytes": (counted["ddp"]["all_reduce"]["bytes"] if counted
                           else held["ddp"]["grads"]),
            "gather_bytes": fsdp["all_gather"]["bytes"],
            "scatter_bytes": fsdp["reduce_scatter"]["bytes"],
            "collectives": sum(fsdp[k]["calls"] for k in
                               ("all_gather", "reduce_scatter", "optimizer_all_reduce")),
            "how": "counted at 2 processes" if counted else "computed from the tensors"}
    return rows


def fsdp_speedups(rows: dict[str, dict], link, rate: float) -> dict[str, float]:
    steps = {}
    for name, row in rows.items():
        compute = row["flops_per_sequence"] * (GLOBAL_BATCH / link.ranks) / rate
        steps[name] = predict(compute, row["grad_bytes"], link, "fsdp",
                              gather_bytes=row["gather_bytes"],
                              scatter_bytes=row["scatter_bytes"],
                              collectives=row["collectives"])["step_s"]
    return {name: steps[REFERENCE] / step for name, step in steps.items()}


def predictions(parts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """{rate, inputs, flops_only, links: {link: {note, ranks, ddp, fsdp}}, sweep}."""
    if "footprint" not in parts or REFERENCE not in parts["footprint"]:
        return {}
    rate = achieved_rate()
    rows = model_inputs(parts)
    flops_only = {name: rows[REFERENCE]["flops_per_sequence"] / row["flops_per_sequence"]
                  for name, row in rows.items()}
    links = {}
    for link in INTERCONNECTS.values():
        links[link.name] = {"note": link.note, "ranks": link.ranks,
                            "bandwidth": link.bandwidth, "latency_s": link.latency_s,
                            "ddp": speedups(rows, link, rate, REFERENCE),
                            "fsdp": fsdp_speedups(rows, link, rate)}
    sweep = bandwidth_sweep(rows, SWEEP_RANKS, rate)
    order = [row.name for row in ROWS if row.name in rows]
    return {"rate_flops_per_s": rate, "measured_rate": MEASURED_RATE, "inputs": rows,
            "order": order, "flops_only": flops_only, "links": links,
            "sweep": {"title": f"{SWEEP_RANKS} ranks, DDP, batch {GLOBAL_BATCH} x "
                               f"{SEQUENCE_LENGTH}, {rate / 1e12:.0f} TFLOP/s a rank",
                      "bandwidths": sweep["bandwidth"], "curves": sweep["albert_over_bert"],
                      "marks": {"25 Gb/s": 25.0, "100 Gb/s": 100.0, "400 Gb/s": 400.0,
                                "TPU v3 ICI": INTERCONNECTS["tpu-v3-128"].bandwidth * 8 / 1e9,
                                "NVLink 4": INTERCONNECTS["nvlink-8xh100"].bandwidth
                                * 8 / 1e9}}}
