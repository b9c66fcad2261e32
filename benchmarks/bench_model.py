"""litebert vs transformers on the same ALBERT: training step and inference, one run.

Both models hold the same weights (litebert's are saved and loaded into transformers), see
the same batches and use the same torch.optim.AdamW. Steps are interleaved (litebert,
transformers, litebert, ...) so drift in machine speed hits both alike; the median step time
is reported. Peak memory is the peak RSS of a fresh child process per model during three
training steps (the high-water mark is reset after the model is built).

    python benchmarks/bench_model.py [--presets tiny albert-base] [--steps 10]
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import statistics
import tempfile
import time

import torch

import litebert
from litebert.smoke import random_batch as make_batch


def build_pair(preset: str):
    """A litebert model and a transformers model with identical weights."""
    import transformers

    transformers.utils.logging.disable_progress_bar()
    config = litebert.AlbertConfig.from_preset(preset)
    torch.manual_seed(0)
    ours = litebert.AlbertForPreTraining(config)
    with tempfile.TemporaryDirectory() as tmp:
        ours.save_pretrained(tmp)
        theirs = transformers.AlbertForPreTraining.from_pretrained(tmp, attn_implementation="sdpa")
    return ours, theirs


def train_step(model, optimizer, batch) -> float:
    optimizer.zero_grad(set_to_none=True)
    loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    return loss.item()


def infer_step(model, batch) -> None:
    with torch.inference_mode():
        inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
        model(**inputs)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def compare(preset: str, steps: int, batch: int, seq: int) -> dict[str, float]:
    ours, theirs = build_pair(preset)
    data = make_batch(ours.config, batch, seq)
    opts = {id(m): torch.optim.AdamW(m.parameters(), lr=1e-4) for m in (ours, theirs)}
    times: dict[str, list[float]] = {k: [] for k in ("train_ours", "train_hf", "inf_ours",
                                                      "inf_hf")}
    for m in (ours, theirs):  # warm-up: allocator, kernels, optimizer state
        m.train()
        train_step(m, opts[id(m)], data)
    for _ in range(steps):
        for key, m in (("train_ours", ours), ("train_hf", theirs)):
            times[key].append(timed(lambda m=m: train_step(m, opts[id(m)], data)))
    for m in (ours, theirs):
        m.eval()
        infer_step(m, data)
    for _ in range(steps):
        for key, m in (("inf_ours", ours), ("inf_hf", theirs)):
            times[key].append(timed(lambda m=m: infer_step(m, data)))
    tokens = batch * seq
    return {k: tokens / statistics.median(v) for k, v in times.items()}


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def _peak_rss(preset: str, impl: str, batch: int, seq: int, queue) -> None:
    ours, theirs = build_pair(preset)  # both children hold the same libraries and data
    model = ours if impl == "litebert" else theirs
    del ours, theirs
    gc.collect()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = make_batch(model.config, batch, seq)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak-RSS mark: measure the training steps alone
    for _ in range(3):
        train_step(model, opt, data)
    queue.put(_status_kib("VmHWM"))


def peak_memory_mb(preset: str, impl: str, batch: int, seq: int) -> float:
    """Peak resident memory (VmHWM) of a fresh process during three training steps."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_peak_rss, args=(preset, impl, batch, seq, queue))
    proc.start()
    peak = queue.get()
    proc.join()
    return peak / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--presets", nargs="+", default=["tiny", "albert-base"])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, fp32 CPU, "
          f"batch {args.batch} x seq {args.seq}, AdamW, median of {args.steps} steps\n")
    print("| preset | train tok/s litebert | transformers | ratio | infer tok/s litebert "
          "| transformers | ratio | peak RSS MB litebert | transformers |")
    print("|---|---|---|---|---|---|---|---|---|")
    for preset in args.presets:
        r = compare(preset, args.steps, args.batch, args.seq)
        mem = ("-", "-")
        if not args.no_memory:
            mem = tuple(f"{peak_memory_mb(preset, impl, args.batch, args.seq):,.0f}"
                        for impl in ("litebert", "transformers"))
        print(f"| {preset} | {r['train_ours']:,.0f} | {r['train_hf']:,.0f} | "
              f"{r['train_ours'] / r['train_hf']:.2f}x | {r['inf_ours']:,.0f} | "
              f"{r['inf_hf']:,.0f} | {r['inf_ours'] / r['inf_hf']:.2f}x | {mem[0]} | {mem[1]} |",
              flush=True)


if __name__ == "__main__":
    main()
