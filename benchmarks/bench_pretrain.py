"""The whole pre-training step, data loading included: litebert vs transformers, one run.

Both sides read the same batches from one `litebert data build` directory (bbc-news, SOP,
length 128, dynamic masking), start from the same weights and use the same optimizer (LAMB
with LayerNorm/bias excluded, warmup + polynomial decay) and gradient clipping. litebert runs
its Trainer's step (accumulation, normalisation, clipping, skip check); transformers runs the
plain loop a user would write around AlbertForPreTraining. Steps alternate, the median step
time is reported as tokens/s (non-padding tokens).

    python benchmarks/bench_pretrain.py [--steps 30] [--batch 32] [--model tiny]
                                        [--device auto|cpu|cuda] [--precision auto|fp32|bf16]
"""

from __future__ import annotations

import argparse
import tempfile

import torch
from common import (
    add_device_options,
    autocast,
    describe,
    interleaved,
    pick_device,
    pick_precision,
    prepare_data,
    to_device,
)

from litebert.data.loader import SLOT_KEYS, PretrainingDataset, RankSampler
from litebert.distributed import DistInfo
from litebert.padding import real_tokens
from litebert.train.lamb import build_optimizer
from litebert.train.pretrain import Trainer, batches
from litebert.train.run_config import PretrainConfig
from litebert.train.schedule import build_scheduler


def transformers_side(trainer: Trainer, cfg: PretrainConfig, device: torch.device):
    """transformers' AlbertForPreTraining with litebert's initial weights, its optimizer,
    schedule, and a loader over the same data."""
    import transformers

    transformers.utils.logging.disable_progress_bar()
    with tempfile.TemporaryDirectory() as tmp:
        trainer.model.save_pretrained(tmp)
        model = transformers.AlbertForPreTraining.from_pretrained(tmp,
                                                                  attn_implementation="sdpa")
    model.to(device).train()
    optimizer = build_optimizer(cfg.optimizer, model, lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = build_scheduler(optimizer, cfg.schedule, warmup_steps=cfg.warmup_steps,
                                total_steps=cfg.max_steps)
    data = PretrainingDataset(cfg.data, seed=cfg.seed)
    stream = batches(data, RankSampler(len(data), 0, 1, seed=cfg.seed), cfg.micro_batch_size,
                     0, {"epoch": 0, "batch": 0})
    amp = autocast(device, cfg.precision)

    def step() -> int:
        batch = to_device(next(stream), device)
        inputs = {k: v for k, v in batch.items() if k not in SLOT_KEYS}  # transformers' API
        with amp:
            loss = model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        return int(real_tokens(batch).sum())
    return step


def litebert_side(trainer: Trainer):
    """The Trainer's step over its own loader (same order and masks as the other side's)."""
    stream = batches(trainer.train_data, RankSampler(len(trainer.train_data), 0, 1,
                                                     seed=trainer.cfg.seed),
                     trainer.cfg.micro_batch_size, 0, trainer.state)
    trainer.model.train()
    return lambda: int(trainer.train_step(stream)["tokens"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--model", default="tiny", help="a litebert preset")
    add_device_options(parser)
    args = parser.parse_args()
    device = pick_device(args.device)
    precision = pick_precision(args.precision, device)
    data = prepare_data("sop", 128)
    with tempfile.TemporaryDirectory() as out:
        cfg = PretrainConfig(model=args.model, data=str(data), out=out, batch_size=args.batch,
                             micro_batch_size=args.batch, max_steps=10_000, warmup_steps=100,
                             lr=0.005, precision=precision, export=False)
        trainer = Trainer(cfg, DistInfo(rank=0, world_size=1, local_rank=0, device=device))
        sides = {"litebert": litebert_side(trainer),
                 "transformers": transformers_side(trainer, cfg, device)}
        rate = interleaved(sides, args.steps, device)
    print(f"{args.model} preset, vocab {trainer.config.vocab_size:,}, batch {args.batch} x 128, "
          f"LAMB, {precision}, {describe(device)}, median of {args.steps} steps\n")
    print("| loop | litebert tok/s | transformers tok/s | ratio |")
    print("|---|---|---|---|")
    print(f"| pre-training step incl. data | {rate['litebert']:,.0f} | "
          f"{rate['transformers']:,.0f} | {rate['litebert'] / rate['transformers']:.2f}x |")


if __name__ == "__main__":
    main()
