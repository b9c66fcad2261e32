"""Checkpoint save and resume at bert-large's size, per rank: time and peak host memory.

Two layouts of the same state (the model, LAMB's two moments, the schedule):
  full  the earlier one: rank 0 writes model.safetensors + optimizer.pt alone, and on
        resume every rank reads all of it into a second copy, then into its parts;
  DCP   torch.distributed.checkpoint, what every run writes now: each rank writes a share
        (each tensor that all ranks hold alike written once) and on resume reads straight
        into its own parameters and optimizer state;
and --async-save: how long the step is held (a copy into host memory) and how long the write
takes in the background until the checkpoint is committed.

Runs itself under torchrun (--nproc gloo processes on the CPU). Each rank builds the preset's
EncoderForPreTraining (no DDP wrapper: its gradient buckets would cost memory and change
nothing in a checkpoint; the keys are the same) and takes one LAMB step on random gradients,
so both moments exist. Save is checkpoint.write / save_checkpoint whole: the files, their
fsync, every file's sha256 (shared by the ranks) and the rename. Resume is what a run does:
the checksums (shared), then restore_state; the checkpoint's files are first evicted from the
page cache (posix_fadvise), so it reads from the disk (--warm: leave them cached). Peak
memory: each rank's VmHWM, reset before each phase (/proc/self/clear_refs); the table shows
the largest over ranks and its growth over that rank's RSS when the phase began.

    python benchmarks/bench_checkpoint.py [--preset bert-large] [--nproc 2] [--work DIR]
        [--json FILE] [--markdown FILE] [--warm] [--keep]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from litebert.config import ModelConfig
from litebert.distributed import all_gather_objects, barrier, init_distributed
from litebert.model import EncoderForPreTraining
from litebert.train import checkpoint
from litebert.train.optimizers import build_optimizer
from litebert.train.run_config import PretrainConfig
from litebert.train.scheduler import build_scheduler
from litebert.train.state import restore_state, save_checkpoint, start_checkpoint

GB = 1024 ** 3
COLUMNS = "| phase | layout | seconds | peak RSS per rank GB | transient per rank GB |"


# ---- memory ---------------------------------------------------------------------------------

def status_gb(field: str) -> float:
    """A field of /proc/self/status (VmRSS, VmHWM) in GiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024 / GB
    raise RuntimeError(f"/proc/self/status has no {field}")


def trimmed_rss() -> float:
    """RSS in GiB after handing freed heap memory back to the system (glibc malloc_trim):
    what the process holds live, so that a phase's growth is not hidden by memory an
    earlier phase freed and the allocator kept."""
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return status_gb("VmRSS")


def measured(name: str, layout: str, action: Callable[[], Any]) -> dict[str, Any]:
    """Run `action` on every rank from a common start; its time (the slowest rank's), every
    rank's peak RSS (VmHWM, reset first) and its transient memory: the peak over what the
    rank held live before and after."""
    barrier()
    start = trimmed_rss()
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := the current RSS
    began = time.perf_counter()
    action()
    seconds = time.perf_counter() - began
    peak = status_gb("VmHWM")
    ranks = all_gather_objects((seconds, peak, peak - max(start, trimmed_rss())))
    return {"phase": name, "layout": layout, "seconds": max(r[0] for r in ranks),
            "peak_gb": [r[1] for r in ranks], "transient_gb": [r[2] for r in ranks]}


def evict(path: Path) -> None:
    """Drop the checkpoint's files from the page cache (they were fsynced: clean pages), so
    a resume reads them from the disk."""
    barrier()
    for file in sorted(p for p in path.iterdir() if p.is_file()):
        fd = os.open(file, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    barrier()


# ---- the state ------------------------------------------------------------------------------

def build_parts(preset: str) -> tuple[torch.nn.Module, Any, Any, int]:
    """The preset's model, LAMB after one step on random gradients (moments materialised),
    its schedule; the same on every rank (the same seed), as DDP's replicas are."""
    torch.manual_seed(0)
    model = EncoderForPreTraining(ModelConfig.from_preset(preset))
    optimizer = build_optimizer("lamb", model, lr=1e-4)
    scheduler = build_scheduler(optimizer, "polynomial", warmup_steps=10, total_steps=1000)
    for p in model.parameters():
        p.grad = torch.randn_like(p) * 1e-3
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return model, optimizer, scheduler, sum(p.numel() for p in model.parameters())


def write_full(run_dir: Path, step: int, cfg: PretrainConfig, record: dict[str, Any],
               model, optimizer, scheduler) -> Path:
    """The earlier layout as the Trainer wrote it: rank 0 alone, everything whole."""
    def fill(directory: Path) -> None:
        if dist.get_rank() == 0:
            checkpoint.save_full(directory, model.state_dict(),
                                 {"optimizer": optimizer.state_dict(),
                                  "scheduler": scheduler.state_dict()})
    return checkpoint.write(run_dir, step, fill, {**record, "step": step, "format": "full"},
                            keep_last=cfg.keep_last)


def resume(path: Path, parts: dict[str, Any], cfg, info, warm: bool) -> Callable:
    """What a run does on --resume PATH: checksums (shared), then restore_state into a model
    (its weights zeroed, so a load that did nothing would show) and a fresh optimizer and
    schedule, as a resuming run builds them (the old ones dropped first)."""
    if not warm:
        evict(path)
    with torch.no_grad():
        for p in parts["model"].parameters():
            p.zero_()
    parts["optimizer"] = build_optimizer("lamb", parts["model"], lr=1e-4)
    parts["scheduler"] = build_scheduler(parts["optimizer"], "polynomial", warmup_steps=10,
                                         total_steps=1000)

    def action() -> None:
        checkpoint.verify(path, checksums=True)
        restore_state(parts["model"], parts["optimizer"], parts["scheduler"], cfg, info, path)
    return action


def digest(model, optimizer) -> list[float]:
    """A few sums that a load which missed anything (or loaded the wrong rank's) changes."""
    params = list(model.parameters())
    moments = optimizer.state[params[0]]
    return [float(p.detach().double().sum()) for p in params[:3] + params[-2:]] + [
        float(moments[k].double().sum()) for k in sorted(moments) if moments[k].dim()]


# ---- the run on every rank ------------------------------------------------------------------

def worker(args: argparse.Namespace) -> None:
    info = init_distributed()
    run_dir = args.work / "run"
    cfg = PretrainConfig(model=args.preset, out=str(run_dir), keep_last=10)
    model, optimizer, scheduler, params = build_parts(args.preset)
    parts = {"model": model, "optimizer": optimizer, "scheduler": scheduler}
    del optimizer, scheduler  # held by `parts` alone: a resume replaces them
    before = digest(model, parts["optimizer"])
    record = {"epoch": 0, "batch": 1, "model_config": {}, "config": cfg.to_dict(),
              "world_size": info.world_size}
    path = checkpoint.checkpoint_dir(run_dir) / "step-00000001"
    rows = [measured("save", "full", lambda: write_full(run_dir, 1, cfg, record, **parts))]
    rows.append(measured("resume", "full", resume(path, parts, cfg, info, args.warm)))
    assert digest(model, parts["optimizer"]) == before, "the full layout's resume lost something"
    rows.append(measured("save", "DCP", lambda: save_checkpoint(
        run_dir, cfg=cfg, info=info, state={**record, "step": 2}, **parts)))
    path = checkpoint.checkpoint_dir(run_dir) / "step-00000002"
    rows.append(measured("resume", "DCP", resume(path, parts, cfg, info, args.warm)))
    assert digest(model, parts["optimizer"]) == before, "the DCP resume lost something"
    rows += async_rows(run_dir, parts, cfg, info, record)
    sizes = {layout: sum(p.stat().st_size for p in (checkpoint.checkpoint_dir(run_dir) /
                                                    f"step-0000000{step}").iterdir()) / GB
             for layout, step in (("full", 1), ("DCP", 2))}
    if info.is_main:
        (args.work / "result.json").write_text(json.dumps(
            {"preset": args.preset, "nproc": info.world_size, "params": params,
             "state_gb": params * 3 * 4 / GB,  # fp32 weights and LAMB's two moments
             "checkpoint_gb": sizes, "warm": args.warm, "torch": torch.__version__,
             "rows": rows}, indent=2))
    dist.barrier()
    dist.destroy_process_group()


def async_rows(run_dir: Path, parts: dict[str, Any], cfg, info,
               record: dict[str, Any]) -> list[dict[str, Any]]:
    """--async-save: the time the step is held (the copy into host memory, the small files),
    then the whole save until committed, the main thread idle meanwhile."""
    group = dist.new_group(backend="gloo")  # as CheckpointSaver makes one
    held: dict[str, Any] = {}

    def start() -> None:
        held["pending"] = start_checkpoint(run_dir, cfg=cfg, info=info,
                                           state={**record, "step": 3}, background=True,
                                           group=group, **parts)

    def whole() -> None:
        held["row"] = measured("async save: the step held", "DCP", start)
        checkpoint.commit(held.pop("pending"))
    total = measured("async save: until committed", "DCP", whole)
    return [held["row"], total]


# ---- the table ------------------------------------------------------------------------------

def table(result: dict[str, Any]) -> str:
    lines = [COLUMNS, "|---|---|---|---|---|"]
    for row in result["rows"]:
        lines.append(f"| {row['phase']} | {row['layout']} | {row['seconds']:.1f} | "
                     f"{max(row['peak_gb']):.1f} | {max(row['transient_gb']):.1f} |")
    return "\n".join(lines)


def header(result: dict[str, Any]) -> str:
    sizes = ", ".join(f"{k} {v:.2f} GB" for k, v in result["checkpoint_gb"].items())
    cache = "page cache warm" if result["warm"] else "files evicted from the page cache"
    return (f"{result['preset']}: {result['params'] / 1e6:.0f}M parameters, "
            f"{result['state_gb']:.2f} GB of fp32 state with LAMB's moments; "
            f"{result['nproc']} processes (gloo, CPU), torch {result['torch']}; "
            f"checkpoints on disk: {sizes}; resumes read with the {cache}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="bert-large")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--work", type=Path, default=None,
                        help="where the checkpoints go (default: a temporary directory, removed "
                             "afterwards); needs about 3 x the state's size free")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--markdown", type=Path, default=None, help="write the table here")
    parser.add_argument("--warm", action="store_true",
                        help="resume from the page cache instead of the disk")
    parser.add_argument("--keep", action="store_true", help="keep the checkpoints")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-checkpoint-"))
    shutil.rmtree(work / "run", ignore_errors=True)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
           str(args.nproc), __file__, "--worker", "--preset", args.preset, "--work", str(work),
           *(["--warm"] if args.warm else [])]
    try:
        subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        result = json.loads((work / "result.json").read_text())
    finally:
        if not args.keep:
            shutil.rmtree(work if args.work is None else work / "run", ignore_errors=True)
    print(header(result) + "\n")
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if args.markdown:
        args.markdown.write_text(header(result) + "\n\n" + table(result) + "\n")


if __name__ == "__main__":
    main()
