"""One XLNet permutation-LM step: litebert's Trainer vs the plain transformers loop, one run.

Both sides start from the same weights (litebert's initial ones, exported as a transformers
XLNet directory and loaded as XLNetLMHeadModel) and train on the same batches: the items of
litebert's PLMDataset (bbc-news built with `--packing xlnet`, length 128, 64 tokens reused),
read in stream order, one stream per batch row. Each side builds, inside its step, the
factorisation order with litebert's `perm_mask` (B, T, T). litebert runs its Trainer's step
(objective plm: the query stream and the logits at the targets only); transformers runs the
loop a user would write around XLNetLMHeadModel: `target_mapping` = one-hot rows of the
target positions (B, P, T), labels = the target ids with -100 in the padding slots. Memories
as the xlnet-tiny-cpu recipe's (mem_len 64): both sides start from zeros and feed each
step's new memories to the next (transformers: `mems=`, `use_mems=True`). Same AdamW (the
recipe's: lr 1e-3, eps 1e-6, weight decay 0.01 off LayerNorm and biases), warm-up and
linear decay, clipping at 1.0. Steps alternate; the median step time is reported as tokens/s.
Peak memory is measured per side in a fresh process over three steps: torch's allocated CUDA
memory on a GPU, the peak RSS on CPU (libraries and the interpreter included, alike on both
sides).

    python benchmarks/bench_xlnet.py [--steps 10] [--batch 16] [--model xlnet-tiny]
                                     [--device auto|cpu|cuda] [--precision auto|fp32|bf16]
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
import transformers  # imported here so both memory children load the same libraries
from common import (
    add_device_options,
    autocast,
    describe,
    export_initial,
    feeding,
    in_fresh_process,
    interleaved,
    peak_mb,
    pick_device,
    pick_precision,
    prepare_data,
    print_step_table,
    reset_peak,
    to_device,
    trainer_side,
)

from litebert.data.loader import sampler_for
from litebert.objectives.plm import PLMObjective
from litebert.objectives.plm_data import PLMDataset, perm_mask
from litebert.train.lamb import build_optimizer
from litebert.train.pretrain import batches
from litebert.train.run_config import PretrainConfig, load_run_config
from litebert.train.schedule import build_scheduler

Batch = dict[str, torch.Tensor]
Step = Callable[[Batch], int]
IGNORE = -100  # label of a slot that is not predicted (both libraries)
SEQ = 128


def run_config(args: argparse.Namespace, data: Path, out: str, precision: str) -> PretrainConfig:
    """The xlnet-tiny-cpu recipe (memories on) at the benchmark's model, batch, precision."""
    return load_run_config("xlnet-tiny-cpu", {
        "model": args.model, "data": str(data), "out": out, "batch_size": args.batch,
        "micro_batch_size": args.batch, "max_steps": 10_000, "precision": precision,
        "export": False})


def load_batches(dataset: PLMDataset, cfg: PretrainConfig, count: int) -> list[Batch]:
    """The first `count` batches of the training order (each row the next window of its
    stream, as the Trainer reads them), collated on the CPU: each side moves its batch to
    the device inside its step, as a training loop does."""
    sampler = sampler_for("streams", len(dataset), 0, 1, cfg.micro_batch_size, 1, cfg.seed)
    stream = batches(dataset, sampler, cfg.micro_batch_size, 0, {"epoch": 0, "batch": 0})
    return [next(stream) for _ in range(count)]


# ---- litebert ------------------------------------------------------------------------------

# ---- transformers: the plain user loop -----------------------------------------------------

def transformers_side(export: Path, cfg: PretrainConfig, reuse_len: int,
                      device: torch.device, precision: str) -> Step:
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    model = transformers.XLNetLMHeadModel.from_pretrained(export).to(device).train()
    mem_len, layers = model.config.mem_len, model.config.n_layer
    # The recipe's AdamW and schedule, its split of decayed and excluded parameters.
    optimizer = build_optimizer(cfg.optimizer, model, lr=cfg.lr, weight_decay=cfg.weight_decay,
                                betas=cfg.betas, eps=cfg.eps)
    scheduler = build_scheduler(optimizer, cfg.schedule, warmup_steps=cfg.warmup_steps,
                                total_steps=cfg.max_steps, power=cfg.power)
    amp = autocast(device, precision)
    mems: list[torch.Tensor | None] = [None]

    def step(batch: Batch) -> int:
        batch = to_device(batch, device)
        B, T = batch["input_ids"].shape
        if mems[0] is None:  # zeros before the first window, as litebert's objective
            mems[0] = [torch.zeros(mem_len, B, model.config.d_model, device=device)
                       for _ in range(layers)]
        order = perm_mask(batch["perm_rank"], batch["is_target"], batch["is_functional"],
                          reuse_len).float()  # (B, T, T), 1 = i cannot see j
        slots = batch["target_weights"][..., None]  # (B, P, 1), 0 = padding slot
        mapping = F.one_hot(batch["target_positions"], T).float() * slots  # (B, P, T)
        labels = batch["target_ids"].masked_fill(batch["target_weights"] == 0, IGNORE)
        with amp:
            out = model(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                        perm_mask=order, target_mapping=mapping, labels=labels, mems=mems[0],
                        use_mems=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        mems[0] = list(out.mems)  # detached by transformers' cache_mem
        return B * T
    return step


# ---- measurement ---------------------------------------------------------------------------

def side_peak_mb(side: str, args: argparse.Namespace, data: Path, export: Path) -> float:
    """One side's peak memory over three steps, run in a fresh process (in_fresh_process)."""
    device = pick_device(args.device)
    precision = pick_precision(args.precision, device)
    with tempfile.TemporaryDirectory() as out:
        cfg = run_config(args, data, out, precision)
        if side == "litebert":
            trainer, step = trainer_side(cfg, device)
            dataset = trainer.train_data
        else:
            dataset = PLMObjective(cfg).dataset(data, "train", cfg.seed)  # the same items
            step = transformers_side(export, cfg, dataset.reuse_len, device, precision)
        work = load_batches(dataset, cfg, 3)
        reset_peak(device)
        for batch in work:
            step(batch)
        return peak_mb(device)


def speed(args: argparse.Namespace, cfg: PretrainConfig, device: torch.device,
          export: Path) -> dict[str, float]:
    """Both sides' tokens/s, steps interleaved; `export` receives the initial weights. The
    models are freed on return, before the memory children need the machine's memory."""
    trainer, ours = trainer_side(cfg, device)
    dataset = trainer.train_data
    work = load_batches(dataset, cfg, args.steps + 2)
    export_initial(trainer, export)
    theirs = transformers_side(export, cfg, dataset.reuse_len, device, cfg.precision)
    return interleaved({"litebert": feeding(ours, work), "transformers": feeding(theirs, work)},
                       args.steps, device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--model", default="xlnet-tiny", help="a litebert XLNet preset")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs")
    add_device_options(parser)
    args = parser.parse_args()
    device = pick_device(args.device)
    precision = pick_precision(args.precision, device)
    data = prepare_data("none", SEQ, packing="xlnet")
    with tempfile.TemporaryDirectory() as out:
        cfg = run_config(args, data, out, precision)
        export = Path(out) / "initial"
        rate = speed(args, cfg, device, export)
        memory = {side: "-" for side in rate}
        if not args.no_memory:
            memory = {side: f"{in_fresh_process(side_peak_mb, side, args, data, export):,.0f}"
                      for side in rate}
        model = transformers.XLNetConfig.from_pretrained(export)
    print_step_table(
        f"{args.model} ({model.n_layer} x {model.d_model}), vocab {model.vocab_size:,}, "
        f"mem_len {model.mem_len}, reuse {model.reuse_len}, batch {args.batch} x {SEQ}, "
        f"AdamW, {precision}, {describe(device)}, transformers {transformers.__version__}, "
        f"median of {args.steps} steps", "XLNet PLM step (two streams, memories)", "xlnet",
        rate, memory, device)


if __name__ == "__main__":
    main()
