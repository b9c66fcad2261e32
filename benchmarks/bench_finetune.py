"""Fine-tuning throughput: litebert's length-bucketed loop vs a plain transformers loop.

Same model (albert-base shape, random weights, saved once and loaded by both), same AdamW,
same examples: SST-2-like single sentences (5-60 words, mostly short, as in SST-2) and
SQuAD-like question + paragraph pairs cut to 384 tokens. litebert batches by length
(little padding); the plain loop pads every batch to the longest in a shuffled batch, as a
user of transformers typically does with a padding collator. Training and evaluation
examples/s, steps interleaved, median of N.

    python benchmarks/bench_finetune.py [--steps 8] [--preset albert-base]
                                        [--device auto|cpu|cuda] [--precision auto|fp32|bf16]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from typing import Any

import numpy as np
import torch
from common import (
    add_device_options,
    autocast,
    describe,
    pick_device,
    pick_precision,
    synchronize,
    to_device,
)

import litebert
from litebert.tasks.batching import length_batches, pad

INPUTS = ("input_ids", "token_type_ids", "attention_mask")


def fake_rows(kind: str, n: int, vocab: int, rng) -> list[dict]:
    """Token rows with the length profile of SST-2 or SQuAD inputs."""
    if kind == "sst2":
        lengths = np.clip(rng.lognormal(3.0, 0.6, n).astype(int) + 4, 6, 66)
    else:
        lengths = np.clip(rng.normal(300, 80, n).astype(int), 120, 384)
    rows = []
    for length in lengths:
        ids = rng.integers(5, vocab, length).tolist()
        row = {"input_ids": ids, "token_type_ids": [0] * length, "attention_mask": [1] * length}
        row.update({"labels": int(rng.integers(0, 2))} if kind == "sst2" else
                   {"start_positions": int(rng.integers(0, length)),
                    "end_positions": int(rng.integers(0, length))})
        rows.append(row)
    return rows


def models(kind: str, preset: str, device: torch.device):
    import transformers

    transformers.utils.logging.disable_progress_bar()
    config = litebert.ModelConfig.from_preset(preset)
    task = "SequenceClassification" if kind == "sst2" else "QuestionAnswering"
    torch.manual_seed(0)
    ours = getattr(litebert, f"EncoderFor{task}")(config)
    with tempfile.TemporaryDirectory() as tmp:
        ours.save_pretrained(tmp)
        theirs = getattr(transformers, f"AlbertFor{task}").from_pretrained(
            tmp, attn_implementation="sdpa")
    return ours.to(device), theirs.to(device)


def train_step(model, optimizer, rows: list[dict], multiple_of: int, device: torch.device,
               amp: contextlib.AbstractContextManager[Any], update: bool = True) -> None:
    model.train()
    inputs = to_device(pad(rows, multiple_of=multiple_of), device)
    with amp:
        loss = model(**inputs).loss
    loss.backward()
    if update:
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def evaluate(model, rows: list[dict], order: list[list[int]], multiple_of: int,
             device: torch.device, amp: contextlib.AbstractContextManager[Any]) -> None:
    model.eval()
    with torch.inference_mode(), amp:
        for ids in order:
            model(**to_device(pad([{k: rows[j][k] for k in INPUTS} for j in ids],
                                  multiple_of=multiple_of), device))


def run(kind: str, args: argparse.Namespace, batch: int) -> dict[str, float]:
    steps, device = args.steps, pick_device(args.device)
    amp = autocast(device, pick_precision(args.precision, device))
    rng = np.random.default_rng(0)
    rows = fake_rows(kind, batch * (steps + 2) * 2, 30000, rng)
    ours, theirs = models(kind, args.preset, device)
    opts = {id(m): torch.optim.AdamW(m.parameters(), lr=1e-5) for m in (ours, theirs)}
    bucketed = length_batches([len(r["input_ids"]) for r in rows], batch, rng)
    plain = [list(b) for b in np.array_split(rng.permutation(len(rows)), len(rows) // batch)]
    evaluation = rows[:batch * steps]
    # (model, its training batches, its eval order, the padding multiple): litebert batches
    # by length, the plain loop pads a shuffled batch to its longest.
    sides = {"ours": (ours, bucketed[:steps + 2],
                      length_batches([len(r["input_ids"]) for r in evaluation], batch, None), 8),
             "hf": (theirs, plain[:steps + 2],
                    [list(range(i, min(i + batch, len(evaluation))))
                     for i in range(0, len(evaluation), batch)], 1)}
    if device.type == "cuda":
        # cuDNN builds an attention plan per new shape (tens of ms); a long run meets each
        # length again and again, so every shape is seen once before timing.
        for model, train, order, multiple in sides.values():
            for ids in train:
                train_step(model, opts[id(model)], [rows[j] for j in ids], multiple, device,
                           amp, update=False)
            evaluate(model, evaluation, order, multiple, device, amp)
    times: dict[str, list[float]] = {k: [] for k in ("train_ours", "train_hf", "eval_ours",
                                                      "eval_hf")}
    for i in range(steps + 2):
        for name, (model, train, _, multiple) in sides.items():
            batch_rows = [rows[j] for j in train[i]]
            synchronize(device)
            start = time.perf_counter()
            train_step(model, opts[id(model)], batch_rows, multiple, device, amp)
            synchronize(device)
            if i >= 2:
                times[f"train_{name}"].append(len(batch_rows) / (time.perf_counter() - start))
    for name, (model, _, order, multiple) in sides.items():
        synchronize(device)
        start = time.perf_counter()
        evaluate(model, evaluation, order, multiple, device, amp)
        synchronize(device)
        times[f"eval_{name}"] = [len(evaluation) / (time.perf_counter() - start)]
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--preset", default="albert-base")
    add_device_options(parser)
    args = parser.parse_args()
    device = pick_device(args.device)
    print(f"{args.preset}, {pick_precision(args.precision, device)}, {describe(device)}, "
          f"AdamW; examples/s\n")
    print("| inputs | train litebert | train transformers | ratio | eval litebert "
          "| eval transformers | ratio |")
    print("|---|---|---|---|---|---|---|")
    for kind, batch in (("sst2", 32), ("squad", 8)):
        r = run(kind, args, batch)
        print(f"| {kind}-like, batch {batch} | {r['train_ours']:.1f} | {r['train_hf']:.1f} | "
              f"{r['train_ours'] / r['train_hf']:.2f}x | {r['eval_ours']:.1f} | "
              f"{r['eval_hf']:.1f} | {r['eval_ours'] / r['eval_hf']:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
