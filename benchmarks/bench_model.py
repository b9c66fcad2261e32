"""litebert vs transformers on the same ALBERT: training step and inference, one run.

Both models hold the same weights (litebert's are saved and loaded into transformers), see
the same batches and use the same torch.optim.AdamW. Steps are interleaved (litebert,
transformers, litebert, ...) so drift in machine speed hits both alike; the median step time
is reported. Peak memory is that of a fresh child process per model during three training
steps, the high-water mark reset after the model is built: peak RSS on CPU, torch's
allocated memory on CUDA.

    python benchmarks/bench_model.py [--presets tiny albert-base] [--steps 10]
                                     [--device auto|cpu|cuda] [--precision auto|fp32|bf16]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import tempfile
from typing import Any

import torch
from common import (
    add_device_options,
    autocast,
    describe,
    in_fresh_process,
    interleaved,
    peak_mb,
    pick_device,
    pick_precision,
    reset_peak,
    to_device,
)

import litebert
from litebert.smoke import random_batch as make_batch


def build_pair(preset: str, device: torch.device):
    """A litebert model and a transformers model with identical weights."""
    import transformers

    transformers.utils.logging.disable_progress_bar()
    config = litebert.ModelConfig.from_preset(preset)
    torch.manual_seed(0)
    ours = litebert.EncoderForPreTraining(config)
    with tempfile.TemporaryDirectory() as tmp:
        ours.save_pretrained(tmp)
        theirs = transformers.AlbertForPreTraining.from_pretrained(tmp, attn_implementation="sdpa")
    return ours.to(device), theirs.to(device)


def train_step(model, optimizer, batch, amp: contextlib.AbstractContextManager[Any]) -> int:
    optimizer.zero_grad(set_to_none=True)
    with amp:
        loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    return batch["input_ids"].numel()


def infer_step(model, batch, amp: contextlib.AbstractContextManager[Any]) -> int:
    with torch.inference_mode(), amp:
        inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
        model(**inputs)
    return batch["input_ids"].numel()


def compare(preset: str, args: argparse.Namespace) -> dict[str, float]:
    device = pick_device(args.device)
    amp = autocast(device, pick_precision(args.precision, device))
    ours, theirs = build_pair(preset, device)
    data = to_device(make_batch(ours.config, args.batch, args.seq), device)
    pair = {"ours": ours, "hf": theirs}
    opts = {k: torch.optim.AdamW(m.parameters(), lr=1e-4) for k, m in pair.items()}
    for m in pair.values():
        m.train()
    rates = interleaved({f"train_{k}": (lambda k=k: train_step(pair[k], opts[k], data, amp))
                         for k in pair}, args.steps, device, warmup=1)
    for m in pair.values():
        m.eval()
    rates.update(interleaved({f"inf_{k}": (lambda k=k: infer_step(pair[k], data, amp))
                              for k in pair}, args.steps, device, warmup=1))
    return rates


def side_peak_mb(preset: str, impl: str, args: argparse.Namespace) -> float:
    """Peak memory of three training steps of one model (run in a fresh process)."""
    device = pick_device(args.device)
    amp = autocast(device, pick_precision(args.precision, device))
    ours, theirs = build_pair(preset, device)  # both children hold the same libraries and data
    model = ours if impl == "litebert" else theirs
    del ours, theirs
    gc.collect()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = to_device(make_batch(model.config, args.batch, args.seq), device)
    reset_peak(device)  # measure the training steps alone
    for _ in range(3):
        train_step(model, opt, data, amp)
    return peak_mb(device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--presets", nargs="+", default=["tiny", "albert-base"])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--no-memory", action="store_true")
    add_device_options(parser)
    args = parser.parse_args()
    device = pick_device(args.device)
    kind = "CUDA allocated" if device.type == "cuda" else "RSS"
    print(f"{describe(device)}, {pick_precision(args.precision, device)}, "
          f"batch {args.batch} x seq {args.seq}, AdamW, median of {args.steps} steps\n")
    print("| preset | train tok/s litebert | transformers | ratio | infer tok/s litebert "
          f"| transformers | ratio | peak {kind} MB litebert | transformers |")
    print("|---|---|---|---|---|---|---|---|---|")
    for preset in args.presets:
        r = compare(preset, args)
        mem = ("-", "-")
        if not args.no_memory:
            mem = tuple(f"{in_fresh_process(side_peak_mb, preset, impl, args):,.0f}"
                        for impl in ("litebert", "transformers"))
        print(f"| {preset} | {r['train_ours']:,.0f} | {r['train_hf']:,.0f} | "
              f"{r['train_ours'] / r['train_hf']:.2f}x | {r['inf_ours']:,.0f} | "
              f"{r['inf_hf']:,.0f} | {r['inf_ours'] / r['inf_hf']:.2f}x | {mem[0]} | {mem[1]} |",
              flush=True)


if __name__ == "__main__":
    main()
