"""The rows of benchmarks/gpu_check.py: what a check measured, how a side is timed, and the
table (Markdown and JSON) the check writes after every row."""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from common import describe, peak_mb, reset_peak, synchronize

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
    out: Path | None = None  # where checks write files of their own (profile, micro)

    def size(self, full, dry):
        return dry if self.dry else full

    @property
    def shrink(self) -> dict[str, int]:
        """model_overrides of a dry run: one layer, so that compiling takes seconds."""
        return {"num_hidden_layers": 1, "num_hidden_groups": 1} if self.dry else {}

    def peak(self) -> float | None:
        return peak_tflops(self.device, self.precision)


@dataclass
class Measured:
    per_s: float  # tokens (or examples) a second, median step
    compile_s: float  # the first step less a steady one: compiling and first-use set-up
    peak_mb: float  # over the timed steps


def timed(step: Callable[[], int], s: Settings) -> Measured:
    """`warmup` untimed steps (the first timed alone, for compile_s), then `steps` timed."""
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
    the next side's peak memory and graph count are its own."""
    gc.collect()
    torch._dynamo.reset()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def measured_row(check: str, variant: str, what: str, m: Measured, flops: float,
                 s: Settings, baseline: float | None) -> Row:
    peak = s.peak()
    mfu = m.per_s * flops / 1e12 / peak if peak else None
    return Row(check, variant, what, litebert=m.per_s, mfu=mfu, peak_mb=m.peak_mb,
               transformers=baseline, compile_s=m.compile_s)


# ---- the table -------------------------------------------------------------------------------

COLUMNS = ("check", "variant", "litebert", "MFU", "peak MB", "transformers",
           "vs transformers", "compile s", "seconds", "status")


def cells(row: Row) -> list[str]:
    def number(x: float | None, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    ours = "-" if row.litebert is None else f"{row.litebert:,.0f} {row.unit}"
    return [row.check, row.variant, ours,
            number(row.mfu, ".1%"), number(row.peak_mb, ",.0f"),
            number(row.transformers, ",.0f"), "-" if row.ratio is None else f"{row.ratio:.2f}x",
            number(row.compile_s, ".1f"), f"{row.seconds:.0f}", row.status]


def header(s: Settings) -> str:
    mode = "dry run (tiny shapes, CPU, aot_eager)" if s.dry else "full shapes"
    return (f"{describe(s.device)}, {s.precision}, {mode}, median of {s.steps} steps after "
            f"{s.warmup} warm-up, {time.strftime('%Y-%m-%d')}")


def write_table(rows: list[Row], s: Settings, out: Path) -> None:
    """OUT/gpu_check.json and OUT/gpu_check.md, rewritten after every row."""
    out.mkdir(parents=True, exist_ok=True)
    record = {"header": header(s), "device": describe(s.device), "torch": torch.__version__,
              "precision": s.precision, "dry_run": s.dry, "date": time.strftime("%Y-%m-%d"),
              "rows": [{**asdict(r), "ratio": r.ratio} for r in rows]}
    (out / "gpu_check.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = [header(s), "", "| " + " | ".join(COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in rows]
    lines += ["", "what each check ran:", *(f"- {r.check} {r.variant}: {r.what}" for r in rows)]
    (out / "gpu_check.md").write_text("\n".join(lines) + "\n")


def print_row(row: Row) -> None:
    print("| " + " | ".join(cells(row)) + " |", flush=True)
