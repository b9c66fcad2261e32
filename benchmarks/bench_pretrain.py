"""The whole pre-training step, data loading included: litebert vs transformers, one run.

Every side reads the same batches from one `litebert data build` directory (bbc-news, SOP,
dynamic masking, at --seq; or --data), starts from the same weights and uses the same
optimizer (LAMB with LayerNorm/bias excluded, warmup + polynomial decay) and gradient
clipping. litebert runs its Trainer's step (accumulation, normalisation, clipping, skip
check), eager and/or compiled (PretrainConfig.compile; LITEBERT_COMPILE_BACKEND picks another
backend than inductor); transformers runs the plain loop a user would write around the
family's class for the model the Trainer built: EncoderForPreTraining for the default tiny
preset and its SOP data; with `--pair-task none` (MLM alone, data of full sentences without
pairs) the family's masked LM, e.g. ModernBertForMaskedLM for `--preset modernbert-tiny`.
Steps alternate after --warmup untimed rounds (compilation happens there); the median step
time is reported as tokens/s (non-padding tokens), with model TFLOP/s from the objective's
flops_per_token, MFU when the device's peak is known, and peak memory per side measured in a
fresh process: torch's allocated CUDA memory on a GPU, the peak RSS on CPU.

    python benchmarks/bench_pretrain.py [--preset tiny] [--pair-task sop|none] [--seq 128]
        [--batch 32] [--steps 30]
        [--compile auto|true|false|both] [--device auto|cpu|cuda] [--precision auto|fp32|bf16]
        [--peak-tflops X] [--no-memory] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch
import transformers  # imported here so every memory child loads the same libraries
from common import (
    COMPILED,
    THEIRS,
    add_step_options,
    autocast,
    data_directory,
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
)

from litebert.data.loader import SLOT_KEYS, PretrainingDataset, RankSampler
from litebert.distributed import DistInfo
from litebert.padding import real_tokens
from litebert.train.feed import DataPosition, batches
from litebert.train.optimizers import build_optimizer
from litebert.train.pretrain import Trainer
from litebert.train.run_config import PretrainConfig
from litebert.train.scheduler import build_scheduler


def run_config(args: argparse.Namespace, data: Path, out: str, precision: str,
               compiled: bool) -> PretrainConfig:
    return PretrainConfig(model=args.preset, data=str(data), out=out, batch_size=args.batch,
                          micro_batch_size=args.batch, max_steps=10_000, warmup_steps=100,
                          lr=0.005, precision=precision, export=False, compile=compiled)


def transformers_class(initial: Path) -> type:
    """The transformers class of the model saved in `initial` (its config's architectures,
    written by litebert in the family's names)."""
    architectures = json.loads((initial / "config.json").read_text())["architectures"]
    return getattr(transformers, architectures[0])


def transformers_step(initial: Path, cfg: PretrainConfig, device: torch.device):
    """transformers' class of the same model (EncoderForPreTraining, ModernBertForMaskedLM,
    ...) with litebert's initial weights (`initial`, a save_pretrained directory) and its
    optimizer and schedule: a step on one given batch (moved to the device if it is not
    there), returning its real tokens."""
    transformers.utils.logging.disable_progress_bar()
    model = transformers_class(initial).from_pretrained(initial, attn_implementation="sdpa")
    model.to(device).train()
    optimizer = build_optimizer(cfg.optimizer, model, lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = build_scheduler(optimizer, cfg.schedule, warmup_steps=cfg.warmup_steps,
                                total_steps=cfg.max_steps)
    amp = autocast(device, cfg.precision)

    def step(batch: dict[str, torch.Tensor]) -> int:
        batch = to_device(batch, device)
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


def transformers_data(cfg: PretrainConfig) -> tuple[PretrainingDataset, RankSampler]:
    """The padded batches the transformers loop reads: the data's order, its masks."""
    data = PretrainingDataset(cfg.data, seed=cfg.seed)
    return data, RankSampler(len(data), 0, 1, seed=cfg.seed)


def transformers_side(initial: Path, cfg: PretrainConfig, device: torch.device):
    """transformers_step over a loader of the same data (same order and masks as the other
    sides'), the loading in the step."""
    step = transformers_step(initial, cfg, device)
    data, sampler = transformers_data(cfg)
    stream = batches(data, sampler, cfg.micro_batch_size, 0, DataPosition())
    return lambda: step(next(stream))


def litebert_side(cfg: PretrainConfig, device: torch.device):
    """(Trainer, step): the Trainer's step over its own loader (same order and masks as the
    other sides'); compiled when cfg.compile, at the first step."""
    from litebert.train.compiling import compile_errors

    trainer = Trainer(cfg, DistInfo(rank=0, world_size=1, local_rank=0, device=device))
    stream = batches(trainer.train_data, RankSampler(len(trainer.train_data), 0, 1,
                                                     seed=trainer.cfg.seed),
                     trainer.cfg.micro_batch_size, 0, trainer.state.position)
    trainer.model.train()

    def step() -> int:
        with compile_errors(trainer.compiled):
            return int(trainer.train_step(stream)["tokens"])
    return trainer, step


# ---- measurement ---------------------------------------------------------------------------

def side_peak_mb(side: str, args: argparse.Namespace, data: Path, initial: Path) -> float:
    """One side's peak memory (peak_over), run in a fresh process (in_fresh_process)."""
    device = pick_device(args.device)
    precision = pick_precision(args.precision, device)
    with tempfile.TemporaryDirectory() as out:
        cfg = run_config(args, data, out, precision, side == COMPILED)
        if side == THEIRS:
            step = transformers_side(initial, cfg, device)
        else:
            _, step = litebert_side(cfg, device)
        return peak_over(step, args.warmup, device)


def speed(args: argparse.Namespace, data: Path, device: torch.device, precision: str,
          out: Path) -> tuple[dict[str, float], Trainer]:
    """Every side's tokens/s, steps interleaved, and the last litebert side's Trainer (for
    its FLOPs per token and vocabulary); `out / "initial"` receives the initial weights."""
    sides, trainer = {}, None
    for side, compiled in litebert_sides(args.compile, device).items():
        cfg = run_config(args, data, str(out / side.replace(" ", "-")), precision, compiled)
        trainer, sides[side] = litebert_side(cfg, device)
    assert trainer is not None
    trainer.model.save_pretrained(out / "initial")  # the seeded weights every side starts from
    sides[THEIRS] = transformers_side(out / "initial", trainer.cfg, device)
    return interleaved(sides, args.steps, device, args.warmup), trainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_step_options(parser, preset="tiny", batch=32, steps=30)
    parser.add_argument("--pair-task", choices=("sop", "none"), default="sop",
                        help="the data's pair task: sop (the model is the family's "
                             "pre-training class) or none (MLM alone: its masked LM; "
                             "ModernBERT, which has no pooler, needs none) (default sop)")
    args = parse_step_args(parser)
    device = pick_device(args.device)
    precision = pick_precision(args.precision, device)
    # MLM alone reads full sentences packed to the length, as ModernBERT's recipe does.
    packing = "pairs" if args.pair_task == "sop" else "full-sentences"
    data = data_directory(args, args.pair_task, packing)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        rate, trainer = speed(args, data, device, precision, out)
        flops, vocab = trainer.flops_per_token, trainer.config.vocab_size
        del trainer  # its model, before the memory children need the machine's memory
        memory = memory_per_side(args, side_peak_mb, rate, data, out / "initial")
    peak = peak_for_mfu(args, device, precision)
    details = f"vocab {vocab:,}, LAMB, transformers {transformers.__version__}"
    print_sides(step_header(args, precision, device, details, peak),
                "pretrain", rate, flops, peak, memory, device)


if __name__ == "__main__":
    main()
