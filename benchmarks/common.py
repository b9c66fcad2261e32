"""What the benchmarks share: the bbc-news data, device and precision options, interleaved
timing, and peak memory measured in a fresh process.

Interleaving (side A, side B, side A, ...) makes drift in the machine's speed (other jobs,
thermal limits) hit every side alike; the median step then ignores the odd slow one.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import platform
import queue as queue_module
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

WORK = Path(os.environ.get("LITEBERT_DATA", Path.home() / ".cache" / "litebert")) / "bench"
PRECISIONS = ("auto", "fp32", "bf16")


# ---- data ----------------------------------------------------------------------------------

def prepare_data(objective: str = "sop", seq: int = 128, packing: str = "pairs") -> Path:
    """A `litebert data build` directory of bbc-news (dynamic masking, a SentencePiece
    vocabulary of up to 30k pieces); built once, then found in the cache. packing "xlnet":
    XLNet's streams (objective none) with an XLNet-layout tokenizer of up to 32k pieces."""
    from litebert.data.builder import BuildConfig, build
    from litebert.data.sources import fetch
    from litebert.tokenization import train_tokenizer

    corpus = WORK / "bbc-news" / "bbc-news.jsonl"
    if not corpus.exists():  # fetch rewrites it, and a new mtime misses the build's cache
        corpus = fetch("bbc-news", WORK / "bbc-news")
    kind, vocab = ("xlnet", 32000) if packing == "xlnet" else ("sentencepiece", 30000)
    tokenizer = WORK / ("tokenizer-xlnet" if kind == "xlnet" else "tokenizer-pretrain")
    if not (tokenizer / "spiece.model").exists():
        train_tokenizer(kind, [corpus], tokenizer, vocab_size=vocab)
    name = f"data-pretrain-{objective}-{seq}" + ("" if packing == "pairs" else f"-{packing}")
    out = WORK / name
    build([corpus], tokenizer, out, BuildConfig(max_seq_length=seq, format="jsonl", seed=1,
                                                objective=objective, packing=packing),
          workers=os.cpu_count() or 1)
    return out


# ---- device and precision ------------------------------------------------------------------

def add_device_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="auto: cuda when available")
    parser.add_argument("--precision", choices=PRECISIONS, default="auto",
                        help="auto: bf16 autocast on CUDA, fp32 on CPU; both sides alike")


def pick_device(name: str) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device")
    if name == "cuda":
        torch.cuda.set_device(0)
        return torch.device("cuda", 0)
    return torch.device("cpu")


def pick_precision(name: str, device: torch.device) -> str:
    """"fp32" or "bf16"; the names PretrainConfig.precision takes."""
    if name == "auto":
        return "bf16" if device.type == "cuda" else "fp32"
    return name


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager[Any]:
    """The same mixed precision the Trainer applies (litebert.train.pretrain.autocast)."""
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def describe(device: torch.device) -> str:
    """Device, threads and torch version for a benchmark's header."""
    if device.type == "cuda":
        where = torch.cuda.get_device_name(device)
    else:
        where = f"{cpu_name()}, {torch.get_num_threads()} threads"
    return f"{where}, torch {torch.__version__}"


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def synchronize(device: torch.device) -> None:
    """Wait for queued kernels: without it a CUDA step's time is only its launch time."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device) for k, v in batch.items()}


# ---- timing --------------------------------------------------------------------------------

def interleaved(sides: dict[str, Callable[[], int]], steps: int, device: torch.device,
                warmup: int = 2) -> dict[str, float]:
    """Each side's tokens/s: mean tokens per step over its median step time. A side is a
    step function returning the tokens it processed; the sides take turns, `warmup` rounds
    first (allocator, kernels, optimizer state) that are not counted."""
    times: dict[str, list[float]] = {name: [] for name in sides}
    tokens: dict[str, list[int]] = {name: [] for name in sides}
    for i in range(warmup + steps):
        for name, step in sides.items():
            synchronize(device)
            start = time.perf_counter()
            n = step()
            synchronize(device)
            if i >= warmup:
                times[name].append(time.perf_counter() - start)
                tokens[name].append(n)
    return {name: statistics.mean(tokens[name]) / statistics.median(times[name])
            for name in sides}


# ---- litebert's Trainer as one side ---------------------------------------------------------

def trainer_side(cfg, device: torch.device):
    """(Trainer, step): litebert's pre-training step on one given batch at a time, in one
    process; the step returns the tokens it trained."""
    from litebert.distributed import DistInfo
    from litebert.train.pretrain import Trainer

    trainer = Trainer(cfg, DistInfo(rank=0, world_size=1, local_rank=0, device=device))
    trainer.model.train()

    def step(batch: dict[str, torch.Tensor]) -> int:
        return int(trainer.train_step(iter([batch]))["tokens"])
    return trainer, step


def export_initial(trainer, out: Path) -> Path:
    """The Trainer's initial weights exported as its objective exports them (transformers'
    directories), for the transformers side to start from."""
    state = {k: v.detach().cpu() for k, v in trainer.model.state_dict().items()}
    return trainer.objective.export(state, trainer.config, trainer.run_dir, out)


def feeding(step: Callable[[dict[str, torch.Tensor]], int],
            work: list[dict[str, torch.Tensor]]) -> Callable[[], int]:
    """A step that takes the next of `work` each time it is called."""
    feed = iter(work)
    return lambda: step(next(feed))


def print_step_table(heading: str, row: str, name: str, rate: dict[str, float],
                     memory: dict[str, str], device: torch.device) -> None:
    """The litebert / transformers table of one step and the last line `NAME step speed
    ratio N.NNx` that `make bench` reads."""
    kind = "CUDA allocated" if device.type == "cuda" else "RSS"
    ratio = rate["litebert"] / rate["transformers"]
    print(heading + "\n")
    print(f"| loop | litebert tok/s | transformers tok/s | ratio | peak {kind} MB litebert "
          f"| transformers |")
    print("|---|---|---|---|---|---|")
    print(f"| {row} | {rate['litebert']:,.0f} | {rate['transformers']:,.0f} | {ratio:.2f}x | "
          f"{memory['litebert']} | {memory['transformers']} |\n")
    print(f"{name} step speed ratio {ratio:.2f}x")


# ---- peak memory ---------------------------------------------------------------------------

def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def reset_peak(device: torch.device) -> None:
    """Forget the high-water mark so far (model building, warm-up): the steps' own peak is
    measured from here."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    else:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS (Linux)


def peak_mb(device: torch.device) -> float:
    """Since reset_peak: CUDA memory allocated by torch, or the process's peak RSS on CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) / 2**20
    return _status_kib("VmHWM") / 1024


def _child(target: Callable[..., float], args: tuple, queue: Any) -> None:
    try:
        queue.put(target(*args))
    except BaseException as err:  # the parent reports it instead of waiting forever
        queue.put(err)
        raise


def in_fresh_process(target: Callable[..., float], *args: Any) -> float:
    """target(*args) in a new interpreter (spawn: no CUDA context or heap inherited), so one
    side's peak memory is not mixed with another's; `target` must be a module-level
    function of an importable module (a benchmark script is)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(target, args, queue))
    proc.start()
    while True:
        try:
            result = queue.get(timeout=5)
            break
        except queue_module.Empty:
            if not proc.is_alive():  # killed (out of memory, say) before it could answer
                raise RuntimeError(f"the memory measurement's process ended with exit code "
                                   f"{proc.exitcode} and no result") from None
    proc.join()
    if isinstance(result, BaseException):
        raise RuntimeError(f"memory measurement failed in the child process: {result!r}")
    return result
