"""One prepared check of every CUDA path litebert has: each run once, measured, in one table.

GPU time comes a few minutes at a time, so this is the one command to spend it on. It runs,
in order of what says most (a --budget-s of wall time skips what is left, marked so, and the
table names what the budget cut):

    mlm+sop full        albert-base 32 x 512: eager, compiled, CUDA graphs (compile:
                        reduce-overhead); transformers' plain loop
    mlm+sop unpadded    the same, --attention unpadded (varlen FlashAttention), compiled
    modernbert          modernbert-base MLM on packed rows: eager, compiled; unpadded
    electra             electra-small 256 x 128: eager, compiled, CUDA graphs; transformers
    plm                 xlnet-tiny 16 x 512 with memories: eager, compiled; transformers
    finetune sst2       `litebert finetune` on SST-2-like rows (albert-base, random weights,
                        precision auto), eager and compiled: the steady rate off the run's
                        timeline, the whole run's beside it; transformers' plain loop
    finetune squad      the same on SQuAD-like windows of 384 tokens
    fsdp                the mlm+sop full row's step under fully_shard, one process
    checkpoint          a tiny run saved at its middle and resumed, against one straight run
    mlm document        packed rows, --attention document (FlexAttention), tiny, compiled
    lite-vs-bert        the lite-vs-bert study's 7 rows (ALBERT base-xxlarge, BERT base-
                        xlarge), 8 x 512, compiled, LAMB: tok/s, MFU, peak memory

A pre-training row times the step alone, on batches the Trainer's loader built and copied
to the device first, in 3 rounds interleaved with the transformers loop (benchmarks/
gpu_sides.py): tokens/s (examples/s for fine-tuning) of each side with the spread of its
rounds, MFU from the batches' real model FLOPs and HFU from every computed position
(src/litebert/train/flops.py), the padding share, each side's own peak GPU memory, the
loader's ms per batch, the litebert step split into copy / forward + backward / clipping /
optimizer, and compile seconds (the first step's time less a steady step's). The
environment (versions, driver, GPU clocks, host CPU and its load) heads the table, which is
written after every row to OUT/gpu_check.json and OUT/gpu_check.md; the exit status is 1
when any row failed (its error is the row's status), 2 when the budget skipped some, else 0.

It reads only --data, which `make gpu-check-data` (benchmarks/gpu_check_data.py) builds on a
machine with a package index; nothing is fetched. --dry-run runs the same code paths on the
CPU at tiny shapes, compiled with the aot_eager backend (a test runs it, so it cannot rot).

    python benchmarks/gpu_check.py --data gpu-check-data --out runs/gpu-check
        [--only CHECK ...] [--steps 10] [--warmup 3] [--budget-s 420]
        [--peak-tflops X] [--dry-run]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch
from gpu_checks import CHECKS
from gpu_rows import (
    COLUMNS,
    Row,
    Settings,
    environment,
    free,
    header,
    print_row,
    write_table,
)

from litebert.train.compiling import BACKEND_ENV

# ---- running them --------------------------------------------------------------------------

Check = Callable[[Settings], list[Row]]


def run_checks(checks: dict[str, Check], s: Settings, out: Path, budget_s: float) -> list[Row]:
    """Each check in order; an error becomes its row's status (the traceback goes to
    stderr) and the next check runs; once `budget_s` has passed the rest are skipped."""
    rows: list[Row] = []
    start = time.perf_counter()
    environs = "".join(f"\n- {k}: {v}" for k, v in s.environment.items())
    print(header(s) + environs + "\n\n| " + " | ".join(COLUMNS) + " |", flush=True)
    try:
        for name, check in checks.items():
            began = time.perf_counter()
            if began - start > budget_s:
                new = [Row(name, "-", "not run",
                           status=f"skipped: over --budget-s {budget_s:g}")]
            else:
                new = run_check(name, check, s)
            for row in new:
                row.seconds = row.seconds or time.perf_counter() - began
                print_row(row)
            rows += new
            write_table(rows, s, out)
    finally:
        gc.unfreeze()  # the caller's objects in the collector's sight again
    return rows


def run_check(name: str, check: Check, s: Settings) -> list[Row]:
    """The check's rows, or one row whose status is its error; then everything it made is
    let go, and what is left frozen: it lives to the end (modules, compile machinery, the
    table), and every later collection would walk it again, about 0.2 s each (20 s of the
    dry run's 59, in 96 collections)."""
    try:
        new = check(s)
    except Exception as err:  # the table says which check failed and why
        traceback.print_exc()
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        new = [Row(name, "-", "failed", status=f"error: {type(err).__name__}: {first}"[:300])]
    free()
    gc.freeze()
    return new


def exit_status(rows: list[Row]) -> int:
    if any(r.status.startswith("error") for r in rows):
        return 1
    return 2 if any(r.status.startswith("skipped") for r in rows) else 0


def settings(args: argparse.Namespace, work: Path) -> Settings:
    if args.dry_run:
        os.environ.setdefault(BACKEND_ENV, "aot_eager")  # traces as inductor, runs eagerly
        device, precision = torch.device("cpu"), "fp32"
    else:
        if not torch.cuda.is_available():
            raise SystemExit("gpu_check: torch sees no CUDA device; pass --dry-run to run the "
                             "same code paths on the CPU")
        device, precision = torch.device("cuda", 0), "bf16"
        torch.cuda.set_device(device)
    return Settings(data=Path(args.data), work=work, device=device, precision=precision,
                    dry=args.dry_run, steps=args.steps, warmup=args.warmup,
                    environment=environment(), peak_tflops=args.peak_tflops,
                    out=Path(args.out))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True,
                        help="the folder `make gpu-check-data` wrote (required)")
    parser.add_argument("--out", default="runs/gpu-check",
                        help="where gpu_check.json and gpu_check.md go (default: %(default)s)")
    parser.add_argument("--only", nargs="+", choices=list(CHECKS), metavar="CHECK",
                        help=f"run these checks only: {', '.join(CHECKS)} (default: all)")
    parser.add_argument("--steps", type=int, default=10,
                        help="timed steps per side in each of the 3 rounds "
                             "(default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=3,
                        help="untimed steps per side first, compiling included "
                             "(default: %(default)s)")
    parser.add_argument("--budget-s", type=float, default=420.0,
                        help="wall seconds after which the remaining checks are skipped "
                             "(default: %(default)s)")
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="the peak TFLOP/s MFU and HFU divide by (default: the table for "
                             "A100 / H100 / H200 in litebert.train.throughput; none elsewhere)")
    parser.add_argument("--dry-run", action="store_true",
                        help="the same code paths on the CPU at tiny shapes (default: off)")
    args = parser.parse_args()
    if not Path(args.data, "sop", "manifest.json").is_file():
        raise SystemExit(f"--data {args.data}: no gpu-check data there; build it with "
                         f"`make gpu-check-data` (benchmarks/gpu_check_data.py)")
    chosen = {k: v for k, v in CHECKS.items() if not args.only or k in args.only}
    with tempfile.TemporaryDirectory() as work:
        s = settings(args, Path(work))
        rows = run_checks(chosen, s, Path(args.out), args.budget_s)
    print(f"\nwrote {Path(args.out) / 'gpu_check.md'} and gpu_check.json", flush=True)
    return exit_status(rows)


if __name__ == "__main__":
    sys.exit(main())
