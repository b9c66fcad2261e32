"""One XLNet permutation-LM step: litebert's Trainer vs the plain transformers loop, one run.

Every side starts from the same weights (litebert's initial ones, exported as a transformers
XLNet directory and loaded as XLNetLMHeadModel) and trains on the same batches: the items of
litebert's PLMDataset (bbc-news built with `--packing streams` at --seq, default 128, half of
each window reused; or --data), read in stream order, one stream per batch row. Each side
builds, inside its step, the factorisation order with litebert's `perm_mask` (B, T, T).
litebert runs its Trainer's step (objective plm: the query stream and the logits at the
targets only), eager and/or compiled (--compile); transformers runs the loop a user would
write around XLNetLMHeadModel: `target_mapping` = one-hot rows of the target positions
(B, P, T), labels = the target ids with -100 in the padding slots. The xlnet-tiny-cpu
recipe's fields, scaled to the window: memories of the data's reuse length (64 at 128;
both sides start from zeros and feed each step's new memories to the next, transformers
through `mems=` and `use_mems=True`) and permutation blocks of that length. Same AdamW (the
recipe's: lr 1e-3, eps 1e-6, weight decay 0.01 off LayerNorm and biases), warm-up and linear
decay, clipping at 1.0. Steps alternate after --warmup untimed rounds (compilation happens
there); the median step time is reported as tokens/s, with model TFLOP/s from the
objective's flops_per_token (the query stream at its targets) and MFU when the device's peak
is known. Peak memory is measured per side in a fresh process over three steps after the
warm-up: torch's allocated CUDA memory on a GPU, the peak RSS on CPU (libraries and the
interpreter included, alike on every side).

    python benchmarks/bench_xlnet.py [--preset xlnet-tiny] [--seq 128] [--batch 16]
        [--steps 10] [--compile auto|true|false|both] [--device auto|cpu|cuda]
        [--precision auto|fp32|bf16] [--peak-tflops X] [--no-memory] [--data DIR]
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
    COMPILED,
    THEIRS,
    add_step_options,
    autocast,
    data_directory,
    export_initial,
    feeding,
    interleaved,
    litebert_sides,
    memory_per_side,
    parse_step_args,
    peak_for_mfu,
    peak_over,
    pick_device,
    pick_precision,
    print_sides,
    step_header,
    to_device,
    trainer_side,
)

from litebert.data.integrity import open_manifest
from litebert.data.loader import sampler_for
from litebert.data.manifest import open_data
from litebert.objectives.plm import PLMObjective
from litebert.objectives.plm_data import PLMDataset, perm_mask
from litebert.train.feed import DataPosition, batches
from litebert.train.optimizers import build_optimizer
from litebert.train.run_config import PretrainConfig, load_run_config
from litebert.train.scheduler import build_scheduler

Batch = dict[str, torch.Tensor]
Step = Callable[[Batch], int]
IGNORE = -100  # label of a slot that is not predicted (both libraries)


def run_config(args: argparse.Namespace, data: Path, out: str, precision: str,
               compiled: bool) -> PretrainConfig:
    """The xlnet-tiny-cpu recipe at the benchmark's preset, batch, precision and compile,
    its memory and permutation blocks as long as the data's reused part (the recipe's 64 of
    128)."""
    config = open_manifest(data)["config"]
    reuse = config.get("reuse_len") or config["max_seq_length"] // 2  # the build's default
    return load_run_config("xlnet-tiny-cpu", {
        "model": args.preset, "data": str(data), "out": out, "batch_size": args.batch,
        "micro_batch_size": args.batch, "max_steps": 10_000, "precision": precision,
        "export": False, "compile": compiled, "objective.perm_size": 0,  # 0: the reuse length
        "model_overrides": {"mem_len": reuse, "hidden_dropout_prob": 0.0,
                            "attention_probs_dropout_prob": 0.0}})


def load_batches(dataset: PLMDataset, cfg: PretrainConfig, count: int) -> list[Batch]:
    """The first `count` batches of the training order (each row the next window of its
    stream, as the Trainer reads them), collated on the CPU: each side moves its batch to
    the device inside its step, as a training loop does."""
    sampler = sampler_for("streams", len(dataset), 0, 1, cfg.micro_batch_size, 1, cfg.seed)
    stream = batches(dataset, sampler, cfg.micro_batch_size, 0, DataPosition())
    return [next(stream) for _ in range(count)]


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
    """One side's peak memory (peak_over), run in a fresh process (in_fresh_process)."""
    device = pick_device(args.device)
    precision = pick_precision(args.precision, device)
    with tempfile.TemporaryDirectory() as out:
        cfg = run_config(args, data, out, precision, side == COMPILED)
        if side == THEIRS:
            dataset = PLMObjective(cfg).dataset(open_data(data), "train", cfg.seed)  # same items
            step = transformers_side(export, cfg, dataset.reuse_len, device, precision)
        else:
            trainer, step = trainer_side(cfg, device)
            dataset = trainer.train_data
        work = load_batches(dataset, cfg, args.warmup + 3)
        return peak_over(feeding(step, work), args.warmup, device)


def speed(args: argparse.Namespace, data: Path, device: torch.device, precision: str,
          out: Path) -> tuple[dict[str, float], float]:
    """Every side's tokens/s, steps interleaved, and the objective's FLOPs per token;
    `out / "initial"` receives the initial weights. The models are freed on return, before
    the memory children need the machine's memory."""
    sides, trainer = {}, None
    for side, compiled in litebert_sides(args.compile, device).items():
        cfg = run_config(args, data, str(out / side.replace(" ", "-")), precision, compiled)
        trainer, sides[side] = trainer_side(cfg, device)
    assert trainer is not None
    dataset = trainer.train_data
    work = load_batches(dataset, trainer.cfg, args.warmup + args.steps)
    export_initial(trainer, out / "initial")
    sides[THEIRS] = transformers_side(out / "initial", trainer.cfg, dataset.reuse_len, device,
                                      precision)
    rate = interleaved({side: feeding(step, work) for side, step in sides.items()},
                       args.steps, device, args.warmup)
    return rate, trainer.flops_per_token


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_step_options(parser, preset="xlnet-tiny", batch=16, steps=10)
    args = parse_step_args(parser)
    device = pick_device(args.device)
    precision = pick_precision(args.precision, device)
    data = data_directory(args, "none", packing="streams")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        rate, flops = speed(args, data, device, precision, out)
        memory = memory_per_side(args, side_peak_mb, rate, data, out / "initial")
        model = transformers.XLNetConfig.from_pretrained(out / "initial")
    peak = peak_for_mfu(args, device, precision)
    details = (f"{model.n_layer} x {model.d_model}, vocab {model.vocab_size:,}, mem_len "
               f"{model.mem_len}, reuse {model.reuse_len}, AdamW, transformers "
               f"{transformers.__version__}")
    print_sides(step_header(args, precision, device, details, peak), "xlnet", rate, flops,
                peak, memory, device)


if __name__ == "__main__":
    main()
