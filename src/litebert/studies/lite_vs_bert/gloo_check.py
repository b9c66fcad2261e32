"""The throughput model checked on this machine: 2 gloo processes (1 thread each) stand in
for 2 ranks. First the link between them (all-reduce times against message size, fitted to
the ring formula), then one row's training step with and without DDP's gradient all-reduce,
and last the model's prediction of the DDP step from the measured compute and link, against
the measured DDP step.

    python -m litebert.studies.lite_vs_bert.gloo_check albert-base bert-base

What this machine cannot show: on CPUs gloo's communication takes cores from the backward
pass, while the model assumes the two run side by side (as a GPU's NIC and SMs do).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

from litebert.distributed import free_port
from litebert.studies.lite_vs_bert.children import child_context, start_method
from litebert.studies.lite_vs_bert.rows import fast_model, meta_model, row_config, synthetic_batch
from litebert.studies.lite_vs_bert.throughput import Interconnect, predict
from litebert.train.lamb import Lamb, lamb_param_groups

KIB = 1024
SIZES = tuple(4 * KIB * 4 ** i for i in range(8))  # bytes: 4 KiB, 16 KiB, ... 64 MiB
FLOAT_BYTES = 4
WARMUP_CALLS = 10
THIS_MACHINE = "2 gloo processes on this CPU"


def _rank_main(rank: int, target: Callable, ranks: int, port: int, queue: Any,
               args: tuple) -> None:
    """One rank (a child process, children.py): join the gloo group on one thread,
    run `target`, send its result."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=ranks, timeout=timedelta(minutes=5))
    try:
        queue.put((rank, target(*args)))
        dist.barrier()  # no rank tears the group down while another is still in a collective
    finally:
        dist.destroy_process_group()


def run_ranks(target: Callable, ranks: int, *args: Any) -> list:
    """`target(*args)` in `ranks` gloo processes (children.py); their results in rank
    order. A rank's exception is raised here (torch's ProcessRaisedException, with its
    traceback)."""
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, got {ranks}")
    queue = child_context(__name__).SimpleQueue()
    context = mp.start_processes(_rank_main, args=(target, ranks, free_port(), queue, args),
                                 nprocs=ranks, join=False, start_method=start_method())
    results: dict[int, Any] = {}
    done = False
    while not done:
        done = context.join(timeout=0.2)  # raises when a rank failed
        while not queue.empty():  # drain as they come: a full pipe would block a rank's put
            rank, value = queue.get()
            results[rank] = value
    return [results[rank] for rank in range(ranks)]


# ---- the link ------------------------------------------------------------------------------

def _all_reduce_times(sizes: Sequence[int], repeats: int) -> list[float]:
    """Median seconds of one all-reduce of float32 tensors of each size (after warm-ups)."""
    first = torch.ones(1)
    for _ in range(WARMUP_CALLS):  # gloo's first collectives after joining are slow
        dist.all_reduce(first)
    medians = []
    for size in sizes:
        tensor = torch.ones(max(1, size // FLOAT_BYTES))
        dist.all_reduce(tensor)  # warm-up: gloo's buffers for this size
        times = []
        for _ in range(repeats):
            dist.barrier()  # start together: the clock is not measuring the other's lag
            start = time.perf_counter()
            dist.all_reduce(tensor)
            times.append(time.perf_counter() - start)
        medians.append(statistics.median(times))
    return medians


def fit_line(xs: Sequence[float], ts: Sequence[float]) -> tuple[float, float]:
    """(a, b) of t = a + b x by least squares on relative residuals (a + b x - t) / t:
    plain least squares is ruled by the largest messages, whose error alone exceeds the
    latency of the small ones."""
    weights = [1 / t ** 2 for t in ts]
    s0 = sum(weights)
    s1 = sum(w * x for w, x in zip(weights, xs, strict=True))
    s2 = sum(w * x * x for w, x in zip(weights, xs, strict=True))
    r0 = sum(w * t for w, t in zip(weights, ts, strict=True))
    r1 = sum(w * x * t for w, x, t in zip(weights, xs, ts, strict=True))
    det = s0 * s2 - s1 * s1
    if det <= 0:
        raise ValueError("fit_line needs at least two different message sizes")
    return (r0 * s2 - r1 * s1) / det, (s0 * r1 - s1 * r0) / det


def ring_fit(sizes: Sequence[int], seconds: Sequence[float], ranks: int) -> tuple[float, float]:
    """(latency per ring step, bandwidth) from all-reduce times: t = a + b * 2(N-1)/N * bytes.
    A negative intercept (latency lost in the noise) is refitted through the origin; times
    that do not grow with the size cannot give a bandwidth, which is a sentence."""
    moved = [2 * (ranks - 1) / ranks * size for size in sizes]  # bytes through each link
    a, b = fit_line(moved, seconds)
    if a < 0:
        weights = [1 / t ** 2 for t in seconds]
        a = 0.0
        b = (sum(w * x * t for w, x, t in zip(weights, moved, seconds, strict=True))
             / sum(w * x * x for w, x in zip(weights, moved, strict=True)))
    if b <= 0:
        raise ValueError(f"this machine's all-reduce times did not grow with the message "
                         f"size (sizes {list(sizes)} bytes took {[f'{t:.2e}' for t in seconds]} "
                         f"s): too noisy to fit a bandwidth; use larger sizes or a quieter "
                         f"machine")
    return a / (2 * (ranks - 1)), 1 / b


def link_of_this_machine(sizes: Sequence[int] = SIZES, repeats: int = 5,
                         ranks: int = 2) -> dict:
    """All-reduce times between `ranks` gloo processes, fitted to the ring formula
    t = a + b * 2(N-1)/N * bytes: {"latency_s": a / (2(N-1)), "bandwidth": 1 / b (bytes/s),
    "points": [{"bytes", "seconds", "fit_s"}], "fit_error": the largest |fit - t| / t,
    "seconds": wall time, "link": this machine's Interconnect}."""
    if ranks < 2 or repeats < 1 or len(set(sizes)) < 2 or min(sizes) < FLOAT_BYTES:
        raise ValueError(f"the link needs ranks >= 2, repeats >= 1 and two or more sizes of "
                         f">= {FLOAT_BYTES} bytes; got ranks={ranks}, repeats={repeats}, "
                         f"sizes={list(sizes)}")
    wall = time.perf_counter()
    per_rank = run_ranks(_all_reduce_times, ranks, list(sizes), repeats)
    seconds = [max(column) for column in zip(*per_rank, strict=True)]  # the slower rank's
    latency, bandwidth = ring_fit(sizes, seconds, ranks)
    moved = [2 * (ranks - 1) / ranks * size for size in sizes]  # bytes through each link
    fits = [2 * (ranks - 1) * latency + x / bandwidth for x in moved]
    points = [{"bytes": size, "seconds": t, "fit_s": f}
              for size, t, f in zip(sizes, seconds, fits, strict=True)]
    note = (f"measured: {len(sizes)} sizes {min(sizes)}..{max(sizes)} bytes, median of "
            f"{repeats}, fitted to the ring all-reduce formula")
    return {"latency_s": latency, "bandwidth": bandwidth, "points": points,
            "fit_error": max(abs(f - t) / t for f, t in zip(fits, seconds, strict=True)),
            "seconds": time.perf_counter() - wall,
            "link": Interconnect(THIS_MACHINE, ranks, bandwidth, latency, note)}


# ---- one training step -----------------------------------------------------------------------

def _timed_step(model: DistributedDataParallel, optimizer: Lamb, batch: dict,
                sync: bool) -> tuple[float, float]:
    """(forward + backward seconds, optimizer seconds) of one step; sync=False runs the
    backward under no_sync, so DDP all-reduces nothing."""
    dist.barrier()
    start = time.perf_counter()
    with contextlib.nullcontext() if sync else model.no_sync():
        model(**batch).loss.backward()  # a synced backward returns once its buckets reduced
    middle = time.perf_counter()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return middle - start, time.perf_counter() - middle


def _step_times(name: str, batch: int, length: int, steps: int,
                overrides: dict) -> dict[str, list[tuple[float, float]]]:
    """This rank's (forward + backward, optimizer) seconds of `steps` steps without and
    `steps` with the all-reduce, in turns on the same batches (so other jobs on the machine
    slow both alike), after one warm-up step of each (Lamb's state, DDP's buckets)."""
    rank = dist.get_rank()
    config = row_config(name, **overrides)
    model = DistributedDataParallel(fast_model(config))
    optimizer = Lamb(lamb_param_groups(model.module))
    batches = [synthetic_batch(config, batch, length, seed=rank * 1000 + step)
               for step in range(steps + 1)]
    times: dict[str, list[tuple[float, float]]] = {"compute": [], "ddp": []}
    for b in batches:
        times["compute"].append(_timed_step(model, optimizer, b, sync=False))
        times["ddp"].append(_timed_step(model, optimizer, b, sync=True))
    return {mode: pairs[1:] for mode, pairs in times.items()}


def _slowest(per_rank: list[list[tuple[float, float]]], part: Callable) -> float:
    """Median over steps of the slowest rank's `part` of each step: a synchronous step ends
    when its last rank does."""
    per_step = zip(*per_rank, strict=True)
    return statistics.median(max(part(times) for times in step) for step in per_step)


def measured_step(name: str, batch: int, length: int, ranks: int = 2, steps: int = 4,
                  overrides: dict | None = None) -> dict:
    """A row's training step (forward, backward, LAMB) in `ranks` gloo processes, medians
    over `steps`: {"forward_backward_s", "optimizer_s", "compute_step_s"} with DDP's
    no_sync (no communication), {"ddp_forward_backward_s", "ddp_optimizer_s",
    "ddp_step_s"} with it, "comm_cost_s" (median over steps of the DDP step's seconds
    minus the local step's on the same batch), "grad_bytes", "params", the arguments."""
    if batch < 1 or length < 2 or steps < 1:
        raise ValueError(f"need batch >= 1, length >= 2 and steps >= 1, got batch={batch}, "
                         f"length={length}, steps={steps}")
    overrides = dict(overrides or {})
    params = list(meta_model(row_config(name, **overrides)).parameters())
    wall = time.perf_counter()
    per_rank = run_ranks(_step_times, ranks, name, batch, length, steps, overrides)
    compute = [times["compute"] for times in per_rank]
    ddp = [times["ddp"] for times in per_rank]
    out: dict[str, Any] = {
        "name": name, "batch": batch, "length": length, "ranks": ranks, "steps": steps,
        "overrides": overrides, "params": sum(p.numel() for p in params),
        "grad_bytes": sum(p.numel() * p.element_size() for p in params if p.requires_grad),
        "forward_backward_s": _slowest(compute, lambda t: t[0]),
        "optimizer_s": _slowest(compute, lambda t: t[1]),
        "compute_step_s": _slowest(compute, sum),
        "ddp_forward_backward_s": _slowest(ddp, lambda t: t[0]),
        "ddp_optimizer_s": _slowest(ddp, lambda t: t[1]),
        "ddp_step_s": _slowest(ddp, sum)}
    out["comm_cost_s"] = statistics.median(  # step by step: a busy moment slows both
        max(map(sum, synced)) - max(map(sum, local))
        for synced, local in zip(zip(*ddp, strict=True), zip(*compute, strict=True),
                                 strict=True))
    out["seconds"] = time.perf_counter() - wall
    return out


# ---- predicted against measured --------------------------------------------------------------

def validate(name: str, batch: int, length: int, link: Interconnect, steps: int = 4,
             overrides: dict | None = None) -> dict:
    """The model's DDP step (measured compute and optimizer times, this machine's link)
    against the measured DDP step: {"predicted_s", "measured_s", "error": (pred - meas) /
    meas, the predicted parts (comm_s, last_comm_s, backward_s, overlap_s, and
    predicted_comm_cost_s = comm_s - overlap_s), the measured ones (forward_backward_s,
    optimizer_s, compute_step_s, comm_cost_s: what DDP added), grad_bytes}."""
    measured = measured_step(name, batch, length, link.ranks, steps, overrides)
    model = predict(measured["forward_backward_s"], measured["grad_bytes"], link, "ddp",
                    optimizer_s=measured["optimizer_s"])
    actual = measured["ddp_step_s"]
    return {"name": name, "batch": batch, "length": length, "link": link.name,
            "predicted_s": model["step_s"], "measured_s": actual,
            "error": (model["step_s"] - actual) / actual,
            "predicted_comm_cost_s": model["comm_s"] - model["overlap_s"],
            **{key: model[key] for key in ("comm_s", "last_comm_s", "backward_s",
                                           "overlap_s")},
            **{key: measured[key] for key in ("forward_backward_s", "optimizer_s",
                                              "compute_step_s", "comm_cost_s",
                                              "ddp_forward_backward_s", "grad_bytes",
                                              "params", "seconds")}}


def validate_rows(names: Sequence[str], batch: int = 2, length: int = 128, steps: int = 4,
                  sizes: Sequence[int] = SIZES, repeats: int = 5) -> dict:
    """This machine's link once, then `validate` for each row: {"link": the fit (its
    Interconnect as a dict), "rows": {name: validate's dict}, "seconds": wall time}."""
    wall = time.perf_counter()
    fit = link_of_this_machine(sizes, repeats)
    rows = {name: validate(name, batch, length, fit["link"], steps) for name in names}
    return {"link": {**fit, "link": asdict(fit["link"])}, "rows": rows,
            "seconds": time.perf_counter() - wall}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The throughput model against 2 gloo "
                                     "processes on this machine.")
    parser.add_argument("rows", nargs="+", help="row names, e.g. albert-base bert-base")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args(argv)
    report = validate_rows(args.rows, args.batch, args.length, args.steps)
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
