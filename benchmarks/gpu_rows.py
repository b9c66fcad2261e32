"""The rows of benchmarks/gpu_check.py: what a check measured, the environment it ran in, and
the table (Markdown and JSON) the check writes after every row. How the pre-training sides
are timed is benchmarks/gpu_sides.py's."""

from __future__ import annotations

import gc
import json
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from common import cpu_name, describe, peak_mb, reset_peak, synchronize
from gpu_sides import PHASES, Side, timing

from litebert.train.throughput import peak_tflops


@dataclass
class Row:
    """One line of the table: a check's litebert figure and what it is compared with."""

    check: str
    variant: str
    what: str
    unit: str = "tok/s"
    litebert: float | None = None
    mfu: float | None = None
    peak_mb: float | None = None
    transformers: float | None = None
    compile_s: float | None = None
    seconds: float = 0.0
    status: str = "ok"
    hfu: float | None = None  # hardware FLOPs (every computed position) over the peak
    padding: float | None = None  # share of the computed positions that hold no real token
    spread: float | None = None  # range of the 3 rounds' medians over the median, litebert
    transformers_spread: float | None = None
    transformers_peak_mb: float | None = None
    data_ms: float | None = None  # the loader alone, ms per batch (litebert's batches)
    split_ms: dict[str, float] | None = None  # the litebert step's phases (gpu_sides.PHASES)
    step_ms: float | None = None  # the step the split is of: the median (low) litebert step

    @property
    def ratio(self) -> float | None:
        if self.litebert is None or not self.transformers:
            return None
        return self.litebert / self.transformers


@dataclass
class Settings:
    """Where and how the checks run; `dry` shrinks every shape to a CPU's seconds."""

    data: Path
    work: Path
    device: torch.device
    precision: str
    dry: bool
    steps: int
    warmup: int
    baselines: dict[tuple, float] = field(default_factory=dict)  # transformers, by shape
    environment: dict[str, str] = field(default_factory=dict)  # environment(): versions, clocks
    peak_tflops: float | None = None  # --peak-tflops: the peak MFU divides by, any device
    out: Path | None = None  # where checks write files of their own (profile, micro)

    def size(self, full, dry):
        return dry if self.dry else full

    @property
    def shrink(self) -> dict[str, int]:
        """model_overrides of a dry run: one layer, so that compiling takes seconds."""
        return {"num_hidden_layers": 1, "num_hidden_groups": 1} if self.dry else {}

    def peak(self) -> float | None:
        return peak_tflops(self.device, self.precision, self.peak_tflops)


@dataclass
class Measured:
    per_s: float  # tokens (or examples) a second, median step
    compile_s: float  # the first step less a steady one: compiling and first-use set-up
    peak_mb: float  # over the timed steps


def timed(step: Callable[[], int], s: Settings) -> Measured:
    """`warmup` untimed steps (the first timed alone, for compile_s), then `steps` timed: one
    side alone, for checks that time a plain callable (the pre-training rows' sides are timed
    by gpu_sides, on prepared batches, in interleaved rounds)."""
    synchronize(s.device)
    start = time.perf_counter()
    step()
    synchronize(s.device)
    first = time.perf_counter() - start
    for _ in range(s.warmup - 1):
        step()
    reset_peak(s.device)
    times, counts = [], []
    for _ in range(s.steps):
        synchronize(s.device)
        start = time.perf_counter()
        counts.append(step())
        synchronize(s.device)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    return Measured(statistics.mean(counts) / median, max(first - median, 0.0),
                    peak_mb(s.device))


def free() -> None:
    """Between sides and checks: every model and compiled graph of the last one let go, so
    the next side's peak memory and graph count are its own (dynamo's caches first: the
    graphs they drop are then collected too)."""
    torch._dynamo.reset()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def side_row(check: str, variant: str, what: str, ours: Side, theirs: Side | None,
             s: Settings, flops_per_token: float | None = None) -> Row:
    """A row of a side timed in rounds (gpu_sides), against `theirs` when given: MFU and
    HFU from its batches' FLOPs (flops.py), else MFU from `flops_per_token` x real tokens."""
    mine = timing(ours, s.warmup)
    model, hardware = mine.model_flops_s, mine.hardware_flops_s
    if model is None and flops_per_token is not None:
        model = mine.per_s * flops_per_token
    peak = s.peak()
    row = Row(check, variant, what, litebert=mine.per_s, peak_mb=ours.peak_mb,
              compile_s=mine.compile_s, spread=mine.spread, padding=mine.padding,
              data_ms=ours.data_ms, split_ms=mine.split,
              step_ms=mine.split_step_ms if mine.split else None)
    if peak:
        row.mfu = None if model is None else model / 1e12 / peak
        row.hfu = None if hardware is None else hardware / 1e12 / peak
    if theirs is not None:
        other = timing(theirs, s.warmup)
        row.transformers, row.transformers_spread = other.per_s, other.spread
        row.transformers_peak_mb = theirs.peak_mb
    return row


# ---- the environment -------------------------------------------------------------------------

SMI_FIELDS = ("driver_version", "clocks.sm", "clocks.max.sm", "clocks.mem", "clocks.max.mem")


def nvidia_smi() -> dict[str, str]:
    """The driver and the GPU's clocks now and at most, by nvidia-smi; {} where it is absent
    or fails (never an error)."""
    if shutil.which("nvidia-smi") is None:
        return {}
    try:
        run = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}",
                              "--format=csv,noheader", "--id=0"], capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return {}
    values = [v.strip() for v in run.stdout.strip().split(",")]
    return dict(zip(SMI_FIELDS, values, strict=True)) if run.returncode == 0 and len(
        values) == len(SMI_FIELDS) else {}


def commit() -> str:
    """The litebert commit the check runs (git's short hash, "+ changes" when the tree
    differs from it), or $LITEBERT_COMMIT where the copy has no .git; "n/a" otherwise."""
    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=20)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain"],
                               capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("LITEBERT_COMMIT", "n/a")
    if head.returncode != 0:
        return os.environ.get("LITEBERT_COMMIT", "n/a")
    return head.stdout.strip() + (" + changes" if dirty.stdout.strip() else "")


def environment() -> dict[str, str]:
    """What the figures depend on beside the code: versions, the driver, the GPU's clocks,
    the host CPU, its cores and its load ("n/a" for what this machine cannot say)."""
    smi = nvidia_smi()
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    clocks = (f"SM {smi['clocks.sm']} (max {smi['clocks.max.sm']}), memory "
              f"{smi['clocks.mem']} (max {smi['clocks.max.mem']})") if smi else "n/a"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") \
        else "n/a"
    return {"litebert commit": commit(), "torch": torch.__version__,
            "cuda": torch.version.cuda or "n/a",
            "cudnn": str(cudnn or "n/a"), "driver": smi.get("driver_version", "n/a"),
            "gpu clocks": clocks, "cpu": cpu_name(), "cpu cores": str(os.cpu_count() or "n/a"),
            "load average (1, 5, 15 min)": load}


# ---- the table -------------------------------------------------------------------------------

COLUMNS = ("check", "variant", "litebert", "MFU", "HFU", "padding", "spread", "peak MB",
           "transformers", "vs transformers", "data ms", "split ms", "compile s", "seconds",
           "status")


def number(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def pair(ours: float | None, theirs: float | None, fmt: str) -> str:
    """"ours / theirs", or ours alone when there is no transformers side."""
    return number(ours, fmt) + ("" if theirs is None else f" / {number(theirs, fmt)}")


def cells(row: Row) -> list[str]:
    ours = "-" if row.litebert is None else f"{row.litebert:,.0f} {row.unit}"
    split = "-" if row.split_ms is None else " / ".join(
        f"{row.split_ms[name]:.1f}" for name in PHASES.values()) + f" of {row.step_ms:.1f}"
    return [row.check, row.variant, ours,
            number(row.mfu, ".1%"), number(row.hfu, ".1%"), number(row.padding, ".0%"),
            pair(row.spread, row.transformers_spread, ".1%"),
            pair(row.peak_mb, row.transformers_peak_mb, ",.0f"),
            number(row.transformers, ",.0f"), "-" if row.ratio is None else f"{row.ratio:.2f}x",
            number(row.data_ms, ".1f"), split,
            number(row.compile_s, ".1f"), f"{row.seconds:.0f}", row.status]


def header(s: Settings) -> str:
    mode = "dry run (tiny shapes, CPU, aot_eager)" if s.dry else "full shapes"
    return (f"{describe(s.device)}, {s.precision}, {mode}, median of {s.steps} steps x 3 "
            f"interleaved rounds after {s.warmup} warm-up, {time.strftime('%Y-%m-%d')}")


LEGEND = ("MFU: the batches' model FLOPs (real rows, real MLM targets; train/flops.py) a "
          "second over the device's peak; HFU: the FLOPs of every computed position (padding "
          "and filler included); padding: the share of computed positions without a real "
          "token; spread: the range of the 3 rounds' medians over the median, litebert / "
          "transformers; peak MB: litebert / transformers, each its own (gpu_sides.py); data "
          "ms: the loader alone per batch, with the Trainer's workers; split ms: the litebert "
          "step's " + " / ".join(PHASES.values()) + " of the median step's time")


def write_table(rows: list[Row], s: Settings, out: Path) -> None:
    """OUT/gpu_check.json and OUT/gpu_check.md, rewritten after every row."""
    out.mkdir(parents=True, exist_ok=True)
    record = {"header": header(s), "device": describe(s.device), "torch": torch.__version__,
              "precision": s.precision, "dry_run": s.dry, "date": time.strftime("%Y-%m-%d"),
              "environment": s.environment,
              "rows": [{**asdict(r), "ratio": r.ratio} for r in rows]}
    (out / "gpu_check.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = [header(s), "", *(f"- {k}: {v}" for k, v in s.environment.items()), "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in rows]
    cut = [r.check for r in rows if r.status.startswith("skipped")]
    if cut:
        lines += ["", f"cut by the time budget (not run): {', '.join(cut)}"]
    lines += ["", LEGEND, "", "what each check ran:",
              *(f"- {r.check} {r.variant}: {r.what}" for r in rows)]
    (out / "gpu_check.md").write_text("\n".join(lines) + "\n")


def print_row(row: Row) -> None:
    print("| " + " | ".join(cells(row)) + " |", flush=True)
