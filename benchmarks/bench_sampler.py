"""The shuffled sampler at corpus scale: time and memory to the first micro-batch of an epoch
and of a resume, per rank, the previous sampler against the current one.

previous  every rank draws torch.randperm of all N instances each epoch, makes a Python list
          of its share, and the feed listed it again (`order = list(sampler)`): 8 bytes per
          instance in the permutation plus ~40 bytes per index of the rank's share in lists;
current   a keyed Feistel permutation evaluated only at the positions asked for
          (litebert.data.permutation); the feed (train/feed.EpochChunks) asks for its first
          block of micro-batches.

Ranks are simulated one after another in this process; each measurement runs in a forked
child, so every one starts from the same memory: its time from building the sampler to the
first micro-batch's (epoch, index) pairs, and its peak RSS growth (VmHWM, reset at the start,
less the RSS then). "epoch start" is micro-batch 0 of epoch 3; "resume" the micro-batch half
way into epoch 3. The previous sampler runs at --old-instances (by default 30M, a tenth of
--instances: at 300M it takes seconds and ~4 GB per rank, per measurement); pass
--old-instances 300000000 to measure it at full size where the memory allows.

    python benchmarks/bench_sampler.py [--instances 300000000] [--ranks 8] [--micro 32]
        [--old-instances 30000000] [--measured K] [--per-rank] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from litebert.data.loader import RankSampler
from litebert.train.feed import DataPosition, EpochChunks

MB = 1024 ** 2
EPOCH = 3


def status_mb(field: str) -> float:
    """A field of /proc/self/status (VmRSS, VmHWM) in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def previous_first_batch(n: int, rank: int, world: int, micro: int,
                         batch: int) -> list[tuple[int, int]]:
    """The previous release's path: RankSampler.__iter__ (randperm, share as a list), then
    EpochChunks' `order = list(sampler)` and its slice."""
    g = torch.Generator().manual_seed(1234 + EPOCH)
    order = torch.randperm(n, generator=g)
    usable = n // world * world
    share = iter(order[:usable][rank::world].tolist())
    listed = list(share)
    return [(EPOCH, int(j)) for j in listed[batch * micro:(batch + 1) * micro]]


def current_first_batch(n: int, rank: int, world: int, micro: int,
                        batch: int) -> list[tuple[int, int]]:
    sampler = RankSampler(n, rank, world, seed=1234)
    return next(iter(EpochChunks(sampler, micro, DataPosition(EPOCH, batch))))


def _child(action: Callable[[], Any], out: Any) -> None:
    start = status_mb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := the current RSS
    began = time.perf_counter()
    first = action()
    seconds = time.perf_counter() - began
    out.put((seconds, status_mb("VmHWM") - start, len(first)))


def measured(action: Callable[[], Any]) -> tuple[float, float]:
    """(seconds, peak RSS growth in MiB) of `action` in a forked child."""
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child, args=(action, out))
    child.start()
    seconds, grown, _ = out.get()
    child.join()
    return seconds, grown


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    sides = (("previous", previous_first_batch, args.old_instances),
             ("current", current_first_batch, args.instances))
    for name, first_batch, n in sides:
        per_epoch = n // args.ranks // args.micro
        for phase, batch in (("epoch start", 0), ("resume", per_epoch // 2)):
            for rank in range(args.measured or args.ranks):
                def action(first_batch=first_batch, n=n, rank=rank, batch=batch):
                    return first_batch(n, rank, args.ranks, args.micro, batch)
                seconds, grown = measured(action)
                rows.append({"sampler": name, "instances": n, "phase": phase, "rank": rank,
                             "seconds": seconds, "peak_mb": grown})
                print(f"# {name} N={n:,} {phase} rank {rank}: {seconds:.3f} s, "
                      f"{grown:.1f} MiB", flush=True)
    return rows


def table(rows: list[dict[str, Any]], per_rank: bool) -> str:
    """Markdown: per (sampler, phase) the median and slowest rank and the largest peak
    growth; with per_rank every measurement."""
    lines = ["| sampler | instances | ranks measured | first micro-batch of | "
             "seconds (median rank) | seconds (slowest rank) | "
             "peak RSS growth per rank MiB (largest) |",
             "|---|---:|---:|---|---:|---:|---:|"]
    groups: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["sampler"], row["instances"], row["phase"]), []).append(row)
    for (name, n, phase), group in groups.items():
        seconds = [r["seconds"] for r in group]
        lines.append(f"| {name} | {n:,} | {len(group)} | {phase} | "
                     f"{statistics.median(seconds):.4f} | {max(seconds):.4f} | "
                     f"{max(r['peak_mb'] for r in group):.1f} |")
    if per_rank:
        lines += ["", "| sampler | phase | rank | seconds | peak RSS growth MiB |",
                  "|---|---|---:|---:|---:|"]
        lines += [f"| {r['sampler']} | {r['phase']} | {r['rank']} | {r['seconds']:.4f} | "
                  f"{r['peak_mb']:.1f} |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=300_000_000)
    parser.add_argument("--old-instances", type=int, default=30_000_000,
                        help="N of the previous sampler (default 30M: see the docstring)")
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--measured", type=int, default=None,
                        help="measure only the first K ranks (default: all of them)")
    parser.add_argument("--micro", type=int, default=32, help="micro-batch size per rank")
    parser.add_argument("--per-rank", action="store_true", help="a row per measurement too")
    parser.add_argument("--json", type=Path, help="write the measurements here as well")
    args = parser.parse_args()
    rows = run(args)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    print(table(rows, args.per_rank))


if __name__ == "__main__":
    main()
