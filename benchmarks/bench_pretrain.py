"""The whole pre-training step, data loading included: litebert vs transformers, one run.

Both sides read the same batches from one `litebert data build` directory (bbc-news, SOP,
length 128, dynamic masking), start from the same weights and use the same optimizer (LAMB
with LayerNorm/bias excluded, warmup + polynomial decay) and gradient clipping. litebert runs
its Trainer's step (accumulation, normalisation, clipping, skip check); transformers runs the
plain loop a user would write around AlbertForPreTraining. Steps alternate, the median step
time is reported as tokens/s (non-padding tokens).

    python benchmarks/bench_pretrain.py [--steps 30] [--batch 32]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from litebert.data.builder import BuildConfig, build
from litebert.data.corpus import fetch
from litebert.data.loader import PretrainingDataset, RankSampler
from litebert.tokenization import train_sentencepiece
from litebert.train.lamb import build_optimizer
from litebert.train.pretrain import Trainer, batches
from litebert.train.run_config import PretrainConfig
from litebert.train.schedule import build_scheduler

WORK = Path(os.environ.get("LITEBERT_DATA", Path.home() / ".cache" / "litebert")) / "bench"


def prepare_data() -> Path:
    corpus = fetch("bbc-news", WORK / "bbc-news")
    tokenizer = WORK / "tokenizer-pretrain"
    if not (tokenizer / "spiece.model").exists():
        train_sentencepiece([corpus], tokenizer, vocab_size=30000)
    out = WORK / "data-pretrain-128"
    build([corpus], tokenizer, out, BuildConfig(max_seq_length=128, format="jsonl", seed=1),
          workers=os.cpu_count() or 1)
    return out


def transformers_side(trainer: Trainer, cfg: PretrainConfig):
    """transformers' AlbertForPreTraining with litebert's initial weights, its optimizer,
    schedule, and a loader over the same data."""
    import transformers

    transformers.utils.logging.disable_progress_bar()
    with tempfile.TemporaryDirectory() as tmp:
        trainer.model.save_pretrained(tmp)
        model = transformers.AlbertForPreTraining.from_pretrained(tmp,
                                                                  attn_implementation="sdpa")
    model.train()
    optimizer = build_optimizer(cfg.optimizer, model, lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = build_scheduler(optimizer, cfg.schedule, warmup_steps=cfg.warmup_steps,
                                total_steps=cfg.max_steps)
    data = PretrainingDataset(cfg.data, seed=cfg.seed)
    stream = batches(data, RankSampler(len(data), 0, 1, seed=cfg.seed), cfg.micro_batch_size,
                     0, {"epoch": 0, "batch": 0})

    def step() -> int:
        batch = next(stream)
        loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        return int(batch["attention_mask"].sum())
    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    data = prepare_data()
    with tempfile.TemporaryDirectory() as out:
        cfg = PretrainConfig(model="tiny", data=str(data), out=out, batch_size=args.batch,
                             micro_batch_size=args.batch, max_steps=10_000, warmup_steps=100,
                             lr=0.005, export=False)
        trainer = Trainer(cfg)
        theirs = transformers_side(trainer, cfg)
        stream = batches(trainer.train_data, RankSampler(len(trainer.train_data), 0, 1,
                                                         seed=cfg.seed),
                         cfg.micro_batch_size, 0, trainer.state)
        trainer.model.train()
        times: dict[str, list[float]] = {"litebert": [], "transformers": []}
        tokens: dict[str, list[int]] = {"litebert": [], "transformers": []}
        for i in range(args.steps + 2):  # the first two are warm-up
            for name, fn in (("litebert", lambda: trainer.train_step(stream)["tokens"]),
                             ("transformers", theirs)):
                start = time.perf_counter()
                n = fn()
                if i >= 2:
                    times[name].append(time.perf_counter() - start)
                    tokens[name].append(n)
    rate = {k: statistics.mean(tokens[k]) / statistics.median(times[k]) for k in times}
    print(f"tiny preset, vocab 30000, batch {args.batch} x 128, LAMB, fp32, "
          f"{torch.get_num_threads()} threads, median of {args.steps} steps\n")
    print("| loop | litebert tok/s | transformers tok/s | ratio |")
    print("|---|---|---|---|")
    print(f"| pre-training step incl. data | {rate['litebert']:,.0f} | "
          f"{rate['transformers']:,.0f} | {rate['litebert'] / rate['transformers']:.2f}x |")


if __name__ == "__main__":
    main()
