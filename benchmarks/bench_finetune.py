"""Fine-tuning throughput: litebert's length-bucketed loop vs a plain transformers loop.

Same model (albert-base shape, random weights, saved once and loaded by both), same AdamW,
same examples: SST-2-like single sentences (5-60 words, mostly short, as in SST-2) and
SQuAD-like question + paragraph pairs cut to 384 tokens. litebert batches by length
(little padding); the plain loop pads every batch to the longest in a shuffled batch, as a
user of transformers typically does with a padding collator. Training and evaluation
examples/s, steps interleaved, median of N.

    python benchmarks/bench_finetune.py [--steps 8] [--preset albert-base]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np
import torch

import litebert
from litebert.tasks.batching import length_batches, pad


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


def models(kind: str, preset: str):
    import transformers

    transformers.utils.logging.disable_progress_bar()
    config = litebert.AlbertConfig.from_preset(preset)
    cls = "AlbertForSequenceClassification" if kind == "sst2" else "AlbertForQuestionAnswering"
    torch.manual_seed(0)
    ours = getattr(litebert, cls)(config)
    with tempfile.TemporaryDirectory() as tmp:
        ours.save_pretrained(tmp)
        theirs = getattr(transformers, cls).from_pretrained(tmp, attn_implementation="sdpa")
    return ours, theirs


def run(kind: str, preset: str, steps: int, batch: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    rows = fake_rows(kind, batch * (steps + 2) * 2, 30000, rng)
    ours, theirs = models(kind, preset)
    opts = {id(m): torch.optim.AdamW(m.parameters(), lr=1e-5) for m in (ours, theirs)}
    lengths = [len(r["input_ids"]) for r in rows]
    ours_batches = iter(length_batches(lengths, batch, rng))  # bucketed
    plain = iter([list(b) for b in np.array_split(rng.permutation(len(rows)),
                                                  len(rows) // batch)])
    times = {"train_ours": [], "train_hf": [], "eval_ours": [], "eval_hf": []}
    for i in range(steps + 2):
        for key, model, it in (("train_ours", ours, ours_batches), ("train_hf", theirs, plain)):
            batch_rows = [rows[j] for j in next(it)]
            start = time.perf_counter()
            model.train()
            model(**pad(batch_rows, multiple_of=1 if key == "train_hf" else 8)).loss.backward()
            opts[id(model)].step()
            opts[id(model)].zero_grad(set_to_none=True)
            if i >= 2:
                times[key].append(len(batch_rows) / (time.perf_counter() - start))
    evaluation = rows[:batch * steps]
    for key, model, order in (("eval_ours", ours, length_batches(
            [len(r["input_ids"]) for r in evaluation], batch, None)),
            ("eval_hf", theirs, [list(range(i, min(i + batch, len(evaluation))))
                                 for i in range(0, len(evaluation), batch)])):
        model.eval()
        start = time.perf_counter()
        with torch.inference_mode():
            for ids in order:
                model(**pad([{k: v for k, v in evaluation[j].items()
                              if k in ("input_ids", "token_type_ids", "attention_mask")}
                             for j in ids], multiple_of=1 if key == "eval_hf" else 8))
        times[key] = [len(evaluation) / (time.perf_counter() - start)]
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--preset", default="albert-base")
    args = parser.parse_args()
    print(f"{args.preset}, fp32, {torch.get_num_threads()} threads, AdamW; examples/s\n")
    print("| inputs | train litebert | train transformers | ratio | eval litebert "
          "| eval transformers | ratio |")
    print("|---|---|---|---|---|---|---|")
    for kind, batch in (("sst2", 32), ("squad", 8)):
        r = run(kind, args.preset, args.steps, batch)
        print(f"| {kind}-like, batch {batch} | {r['train_ours']:.1f} | {r['train_hf']:.1f} | "
              f"{r['train_ours'] / r['train_hf']:.2f}x | {r['eval_ours']:.1f} | "
              f"{r['eval_hf']:.1f} | {r['eval_ours'] / r['eval_hf']:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
