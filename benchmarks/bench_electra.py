"""One ELECTRA pre-training step: litebert's Trainer vs the plain transformers loop, one run.

Every side starts from the same weights (litebert's initial ones, exported as transformers
ELECTRA directories), trains generator + discriminator with tied embeddings on the same
batches (bbc-news built with `--objective none` at --seq, default 128; or --data) with the
same AdamW (the electra-small recipe's: lr 5e-4, weight decay 0.01 off LayerNorm and biases,
eps 1e-6), linear warm-up and decay, and gradient clipping at 1.0; loss = generator MLM + 50 x
replaced-token detection. litebert runs its Trainer's step (objective electra), eager and/or
compiled (--compile); transformers runs the loop a user would write around
ElectraForMaskedLM + ElectraForPreTraining: mask 15% of the non-special tokens (85% of them
shown as [MASK]), generator forward with labels, one sample per masked token from its
softmax, discriminator forward on the result. Steps alternate after --warmup untimed rounds
(compilation happens there); the median step time is reported as tokens/s (non-padding
tokens), with model TFLOP/s from the objective's flops_per_token (generator and
discriminator) and MFU when the device's peak is known. Peak memory is measured per side in
a fresh process over three steps after the warm-up: torch's allocated CUDA memory on a GPU,
the peak RSS on CPU (libraries and the interpreter included, alike on every side).

    python benchmarks/bench_electra.py [--preset electra-small] [--seq 128] [--batch 32]
        [--steps 20] [--compile auto|true|false|both] [--device auto|cpu|cuda]
        [--precision auto|fp32|bf16] [--peak-tflops X] [--no-memory] [--data DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
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

from litebert.data.loader import PretrainingDataset, RankSampler
from litebert.tokenization import Tokenizer
from litebert.train.feed import DataPosition, batches
from litebert.train.run_config import PretrainConfig, load_run_config

Batch = dict[str, torch.Tensor]
Step = Callable[[Batch], int]
IGNORE = -100  # label of a token that is not predicted (both libraries)


def run_config(args: argparse.Namespace, data: Path, out: str, precision: str,
               compiled: bool) -> PretrainConfig:
    """The electra-small recipe at the benchmark's preset, batch, precision and compile."""
    return load_run_config("electra-small", {
        "model": args.preset, "data": str(data), "out": out, "batch_size": args.batch,
        "micro_batch_size": args.batch, "max_steps": 10_000, "precision": precision,
        "export": False, "compile": compiled})


def load_batches(data: Path, cfg: PretrainConfig, count: int) -> list[Batch]:
    """The first `count` batches of the training order, collated on the CPU: each side moves
    its batch to the device inside its step, as a training loop does."""
    dataset = PretrainingDataset(data, "train", seed=cfg.seed)
    stream = batches(dataset, RankSampler(len(dataset), 0, 1, seed=cfg.seed),
                     cfg.micro_batch_size, 0, DataPosition())
    return [next(stream) for _ in range(count)]


# ---- transformers: the plain user loop -----------------------------------------------------

def tied_models(export: Path, device: torch.device):
    """ElectraForMaskedLM (generator) and ElectraForPreTraining (discriminator) sharing the
    discriminator's embeddings, the way transformers users tie them."""
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    generator = transformers.ElectraForMaskedLM.from_pretrained(
        export / "generator", attn_implementation="sdpa")
    discriminator = transformers.ElectraForPreTraining.from_pretrained(
        export / "discriminator", attn_implementation="sdpa")
    generator.electra.embeddings = discriminator.electra.embeddings
    # The MLM decoder was tied to the generator's own (now unused) word embeddings.
    generator.generator_lm_head.weight = discriminator.electra.embeddings.word_embeddings.weight
    return generator.to(device).train(), discriminator.to(device).train()


def adamw(models, cfg: PretrainConfig) -> torch.optim.AdamW:
    """AdamW over both models' parameters, each once, no decay on biases and LayerNorm."""
    params = {id(p): (name, p) for m in models for name, p in m.named_parameters()}
    no_decay = [p for name, p in params.values() if "bias" in name or "LayerNorm" in name]
    decay = [p for name, p in params.values() if not ("bias" in name or "LayerNorm" in name)]
    return torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=cfg.lr, betas=cfg.betas, eps=cfg.eps)


def mask_tokens(ids: torch.Tensor, special: torch.Tensor, mask_id: int, prob: float):
    """15% of the non-special tokens chosen; 85% of those shown as [MASK], the rest kept."""
    chosen = torch.bernoulli(torch.full(ids.shape, prob, device=ids.device)).bool()
    chosen &= ~torch.isin(ids, special)
    shown = chosen & (torch.rand(ids.shape, device=ids.device) < 0.85)
    return ids.masked_fill(shown, mask_id), ids.masked_fill(~chosen, IGNORE), chosen


def transformers_side(export: Path, data: Path, cfg: PretrainConfig,
                      device: torch.device, precision: str) -> Step:
    generator, discriminator = tied_models(export, device)
    params = list({id(p): p for m in (generator, discriminator) for p in m.parameters()}.values())
    optimizer = adamw((generator, discriminator), cfg)
    scheduler = transformers.get_linear_schedule_with_warmup(optimizer, cfg.warmup_steps,
                                                             cfg.max_steps)
    tok = Tokenizer.from_pretrained(data / "tokenizer")
    special = torch.tensor([tok.cls_token_id, tok.sep_token_id, tok.pad_token_id,
                            tok.mask_token_id], device=device)
    amp = autocast(device, precision)

    def step(batch: Batch) -> int:
        batch = to_device(batch, device)
        # The data directory carries BERT-style masks; the user's ELECTRA data has none.
        ids = torch.where(batch["labels"] != IGNORE, batch["labels"], batch["input_ids"])
        inputs = {"attention_mask": batch["attention_mask"],
                  "token_type_ids": batch["token_type_ids"]}
        masked, labels, chosen = mask_tokens(ids, special, tok.mask_token_id,
                                             cfg.objective.mask_prob)
        with amp:
            gen = generator(input_ids=masked, labels=labels, **inputs)
            with torch.no_grad():
                heat = cfg.objective.temperature
                probs = torch.softmax(gen.logits[chosen].float() / heat, dim=-1)
                fake = ids.masked_scatter(chosen, torch.multinomial(probs, 1).squeeze(-1))
            disc = discriminator(input_ids=fake, labels=(fake != ids).float(), **inputs)
            loss = cfg.objective.gen_weight * gen.loss + cfg.objective.disc_weight * disc.loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        return int(batch["attention_mask"].sum())
    return step


# ---- measurement ---------------------------------------------------------------------------

def side_peak_mb(side: str, args: argparse.Namespace, data: Path, export: Path) -> float:
    """One side's peak memory (peak_over), run in a fresh process (in_fresh_process)."""
    device = pick_device(args.device)
    precision = pick_precision(args.precision, device)
    with tempfile.TemporaryDirectory() as out:
        cfg = run_config(args, data, out, precision, side == COMPILED)
        work = load_batches(data, cfg, args.warmup + 3)
        if side == THEIRS:
            step = transformers_side(export, data, cfg, device, precision)
        else:
            _, step = trainer_side(cfg, device)
        return peak_over(feeding(step, work), args.warmup, device)


def speed(args: argparse.Namespace, data: Path, device: torch.device, precision: str,
          out: Path) -> tuple[dict[str, float], PretrainConfig, float]:
    """Every side's tokens/s, steps interleaved, the run's config and the objective's FLOPs
    per token; `out / "initial"` receives the initial weights. The models are freed on
    return, before the memory children need the machine's memory."""
    sides, trainer = {}, None
    for side, compiled in litebert_sides(args.compile, device).items():
        cfg = run_config(args, data, str(out / side.replace(" ", "-")), precision, compiled)
        trainer, sides[side] = trainer_side(cfg, device)
    assert trainer is not None
    work = load_batches(data, trainer.cfg, args.warmup + args.steps)
    export_initial(trainer, out / "initial")
    sides[THEIRS] = transformers_side(out / "initial", data, trainer.cfg, device, precision)
    rate = interleaved({side: feeding(step, work) for side, step in sides.items()},
                       args.steps, device, args.warmup)
    return rate, trainer.cfg, trainer.flops_per_token


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_step_options(parser, preset="electra-small", batch=32, steps=20)
    args = parse_step_args(parser)
    device = pick_device(args.device)
    precision = pick_precision(args.precision, device)
    data = data_directory(args, "none")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        rate, cfg, flops = speed(args, data, device, precision, out)
        memory = memory_per_side(args, side_peak_mb, rate, data, out / "initial")
    vocab = len(Tokenizer.from_pretrained(data / "tokenizer"))
    peak = peak_for_mfu(args, device, precision)
    details = (f"generator {cfg.objective.generator_size:g} of its width, vocab {vocab:,}, "
               f"AdamW, transformers {transformers.__version__}")
    print_sides(step_header(args, precision, device, details, peak), "electra", rate, flops,
                peak, memory, device)


if __name__ == "__main__":
    main()
