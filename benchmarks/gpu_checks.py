"""The checks of benchmarks/gpu_check.py, one function each: what it builds, what it times.

The litebert sides are the benchmarks' own (bench_pretrain, bench_electra, bench_xlnet: the
Trainer's step on the data's batches), and so are the transformers sides (the plain loop a
user writes, from litebert's initial weights). In a pre-training check the transformers side
is built once and timed in rounds interleaved with each litebert variant in turn
(gpu_sides.py), so each row's comparison comes from the same minutes as its figure.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import bench_electra
import bench_pretrain
import bench_xlnet
import numpy as np
import torch
import torch.distributed as dist
import transformers
from common import (
    autocast,
    export_initial,
    loader_stream,
    peak_mb,
    reset_peak,
    trainer_side,
    trainer_stream,
)
from gpu_lite_vs_bert import lite_vs_bert_check
from gpu_memory import max_batch
from gpu_micro import micro_check
from gpu_profile import profile_check
from gpu_rows import Row, Settings, free, side_row
from gpu_sides import (
    PhaseTimer,
    Side,
    interleaved_rounds,
    prepared,
    ready,
    restart,
    timing,
)

from litebert.distributed import free_port
from litebert.model import EncoderForPreTraining
from litebert.padding import pad_batch
from litebert.tasks.base import finetune_config
from litebert.tasks.finetune import adapter_for, finetune
from litebert.tokenization import Tokenizer
from litebert.train import checkpoint
from litebert.train.flops import batch_flops
from litebert.train.pretrain import model_config, pretrain, resolved_workers
from litebert.train.run_config import PretrainConfig, load_run_config
from litebert.train.state import is_fsdp, load_model_state

Batch = dict[str, torch.Tensor]


def shape_args(preset: str, batch: int) -> argparse.Namespace:
    """What the benchmarks' run_config functions read of their command line."""
    return argparse.Namespace(preset=preset, batch=batch)


# ---- MLM + SOP: full, unpadded, document, FSDP ---------------------------------------------

def mlm_config(s: Settings, data: str, preset: str, batch: int, out: str, compiled,
               **fields) -> PretrainConfig:
    """bench_pretrain's run (LAMB, warm-up, clipping) at a shape and compile; `fields` set
    any other field (attention, fsdp, ...)."""
    run = dict(model=preset, data=str(s.data / data), out=str(s.work / out), batch_size=batch,
               micro_batch_size=batch, max_steps=10_000, warmup_steps=100, lr=0.005,
               precision=s.precision, export=False, compile=compiled,
               model_overrides=s.shrink)
    return PretrainConfig(**{**run, **fields})


def litebert_side(cfg: PretrainConfig, s: Settings, count_flops: bool) -> Side:
    """The Trainer's step (the side's owner) on batches of its own loader, its phases timed
    (Trainer.phase_hook); count_flops: each MLM batch's FLOPs counted (flops.py)."""
    trainer, step = trainer_side(cfg, s.device)
    work, data_ms = prepared(trainer_stream(trainer), s.warmup + s.steps, s.device)
    timer = trainer.phase_hook = PhaseTimer(s.device)
    flops = [batch_flops(trainer.config, b) for b in work] if count_flops else None
    return Side(step, work, data_ms, flops=flops, timer=timer, owner=trainer)


def transformers_mlm(initial: Path, cfg: PretrainConfig, s: Settings) -> Side:
    """The transformers loop on the data's padded batches, from the same kind of loader."""
    data, sampler = bench_pretrain.transformers_data(cfg)
    stream = loader_stream(data, sampler, cfg.micro_batch_size,
                           resolved_workers(cfg, s.device), s.device)
    work, data_ms = prepared(stream, s.warmup + s.steps, s.device)
    return Side(bench_pretrain.transformers_step(initial, cfg, s.device), work, data_ms)


def mlm_rows(s: Settings, check: str, variants: dict[str, object], attention: str = "full",
             data: str = "sop", preset: str | None = None, compare: bool = True,
             **fields) -> list[Row]:
    """One row per variant (name -> compile setting) of the MLM objective's Trainer step;
    `compare`: the transformers loop (EncoderForPreTraining) at the same shape, built once
    and timed interleaved with each variant."""
    preset = preset or s.size("albert-base", "tiny")
    batch = s.size(32, 2)
    rows, initial, theirs = [], s.work / f"initial-{data}-{preset}", None
    for variant, compiled in variants.items():
        cfg = mlm_config(s, data, preset, batch, f"{check}-{variant}", compiled,
                         attention=attention, **fields)
        ours = ready(lambda c=cfg: litebert_side(c, s, True), s.warmup, s.device)
        trainer = ours.owner
        if cfg.fsdp and not is_fsdp(trainer.model):
            raise RuntimeError("fsdp: the Trainer's model is not sharded")
        if compare and theirs is None:
            if not initial.exists():
                export_initial(trainer, initial)  # the weights both sides start from
            theirs = ready(lambda c=cfg: transformers_mlm(initial, c, s), s.warmup, s.device)
        what = (f"{preset} {batch} x {trainer.train_data.config.max_seq_length}, "
                f"attention {attention}, {trainer.cfg.optimizer}")
        if theirs is not None:
            restart(theirs)
        interleaved_rounds([ours] + ([theirs] if theirs else []), s.warmup, s.device)
        rows.append(side_row(check, variant, what, ours, theirs, s))
        del trainer, ours
        free()
    return rows


def mlm_full(s: Settings) -> list[Row]:
    """Eager; one full graph; one graph per distinct encoder module (`compile: regional`:
    ALBERT's shared layer once for its 12 positions); the full graph as CUDA graphs."""
    return mlm_rows(s, "mlm+sop full", {"eager": False, "compiled": True,
                                         "regional": "regional",
                                         "cuda graphs": "reduce-overhead"})


def mlm_unpadded(s: Settings) -> list[Row]:
    return mlm_rows(s, "mlm+sop unpadded", {"compiled": True}, attention="unpadded")


def mlm_document(s: Settings) -> list[Row]:
    """Packed rows (no pair task), FlexAttention within documents; transformers has no such
    attention, so no comparison."""
    return mlm_rows(s, "mlm document", {"compiled": True}, attention="document",
                    data="packed", preset="tiny", compare=False)


def modernbert(s: Settings) -> list[Row]:
    """ModernBERT's MLM step (no pair task: it has no pooler) on full-sentences rows of 1,024
    tokens (the data's full/), against the loop around transformers' ModernBertForMaskedLM:
    padded SDPA with the window as a mask, eager and compiled, then unpadded rows (varlen
    with FlashAttention's window_size)."""
    preset = s.size("modernbert-base", "modernbert-tiny")
    rows = mlm_rows(s, "modernbert", {"eager": False, "compiled": True}, data="full",
                    preset=preset)
    return rows + mlm_rows(s, "modernbert unpadded", {"compiled": True}, data="full",
                           preset=preset, attention="unpadded")


def one_process_group(device: torch.device) -> None:
    """A process group of one rank (NCCL on CUDA), so fully_shard has something to shard
    over; litebert.distributed.wrap then shards (one process counts there)."""
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                            init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)


def fsdp(s: Settings) -> list[Row]:
    """The mlm+sop full row's eager step with every layer and the root under fully_shard."""
    one_process_group(s.device)
    try:
        return mlm_rows(s, "fsdp", {"eager, 1 process": False}, fsdp=True)
    finally:
        dist.destroy_process_group()


# ---- ELECTRA and PLM -----------------------------------------------------------------------

def trainer_rows(s: Settings, check: str, variants: dict[str, object], config,
                 theirs_batches, theirs_step) -> list[Row]:
    """Rows of a Trainer step (ELECTRA, PLM) on batches of its own loader: `config(out,
    compiled)` is the run, `theirs_batches(trainer)` the transformers loop's loader,
    `theirs_step(export, trainer)` its step from the exported initial weights, built once
    and timed interleaved with each variant. FLOPs: the objective's per-token count x real
    tokens (not counted batch by batch)."""
    rows, initial, theirs = [], s.work / f"initial-{check}", None
    for variant, compiled in variants.items():
        cfg = config(str(s.work / f"{check}-{variant}"), compiled)
        ours = ready(lambda c=cfg: litebert_side(c, s, False), s.warmup, s.device)
        trainer = ours.owner
        if theirs is None:
            export_initial(trainer, initial)
            theirs = ready(lambda t=trainer: Side(
                theirs_step(initial, t), *prepared(theirs_batches(t), s.warmup + s.steps,
                                                   s.device)), s.warmup, s.device)
        what = (f"{trainer.cfg.model} {trainer.cfg.micro_batch_size} x "
                f"{ours.batches[0]['input_ids'].shape[1]}, {trainer.cfg.optimizer}; FLOPs: "
                f"the per-token count x real tokens")
        restart(theirs)
        interleaved_rounds([ours, theirs], s.warmup, s.device)
        rows.append(side_row(check, variant, what, ours, theirs, s,
                             flops_per_token=trainer.flops_per_token))
        del trainer, ours
        free()
    return rows


def electra(s: Settings) -> list[Row]:
    preset, batch = "electra-small", s.size(256, 2)
    data = s.data / "none"

    def config(out: str, compiled) -> PretrainConfig:
        return load_run_config("electra-small", {
            "model": preset, "data": str(data), "out": out, "batch_size": batch,
            "micro_batch_size": batch, "max_steps": 10_000, "precision": s.precision,
            "export": False, "compile": compiled, "model_overrides": s.shrink})

    return trainer_rows(
        s, "electra", {"eager": False, "compiled": True, "cuda graphs": "reduce-overhead"},
        config, lambda t: loader_stream(*bench_pretrain.transformers_data(t.cfg),
                                        t.cfg.micro_batch_size,
                                        resolved_workers(t.cfg, s.device), s.device),
        lambda export, t: bench_electra.transformers_side(export, data, t.cfg, s.device,
                                                           s.precision))


def plm(s: Settings) -> list[Row]:
    preset, batch = "xlnet-tiny", s.size(16, 2)
    data = s.data / "xlnet"
    args = shape_args(preset, batch)

    def config(out: str, compiled) -> PretrainConfig:
        cfg = bench_xlnet.run_config(args, data, out, s.precision, compiled)
        cfg.model_overrides.update(s.shrink)
        return cfg

    return trainer_rows(
        s, "plm", {"eager": False, "compiled": True}, config, trainer_stream,
        lambda export, t: bench_xlnet.transformers_side(export, t.cfg, t.train_data.reuse_len,
                                                         s.device, s.precision))


# ---- checkpoints ---------------------------------------------------------------------------

def checkpoint_run(s: Settings, out: Path, resume: str | None = None) -> None:
    """A tiny run of 6 steps, saved every 3, evaluated at 3 and 6."""
    pretrain(mlm_config(s, "sop", "tiny", s.size(8, 2), str(out), False, save_every=3,
                        log_every=3, eval_every=3, eval_instances=s.size(64, 4),
                        warmup_steps=2, max_steps=6, resume=resume))


def checkpoint_check(s: Settings) -> list[Row]:
    """A tiny run of 6 steps; a copy of it without its last checkpoint, as a run killed
    after step 3's save leaves it, resumed: the weights' largest difference from the
    straight run's (0 on a CPU, where the resume is exact; kernels may differ on a GPU) and
    the resumed run's logged speed."""
    straight, resumed = s.work / "ckpt-straight", s.work / "ckpt-resumed"
    checkpoint_run(s, straight)
    shutil.copytree(straight, resumed)
    shutil.rmtree(checkpoint.latest(resumed))
    checkpoint_run(s, resumed, resume="auto")
    weights = [load_model_state(checkpoint.latest(run))[0] for run in (resumed, straight)]
    diff = max(float((weights[0][k].float() - weights[1][k].float()).abs().max())
               for k in weights[0])
    lines = [json.loads(x) for x in (resumed / "metrics.jsonl").read_text().splitlines()]
    steps = [x["step"] for x in lines if "loss" in x]
    if steps != [3, 6]:
        raise RuntimeError(f"the resumed run logged steps {steps}, not [3, 6]")
    speed = [x["tokens_per_s"] for x in lines if "tokens_per_s" in x][-1]
    return [Row("checkpoint", "save, resume", f"tiny, a copy of a 6-step run without its step-6 "
                f"checkpoint resumed: max |w - straight run's w| = {diff:.2g}; held-out "
                f"evaluation at 3 and 6", litebert=speed)]


# ---- fine-tuning ---------------------------------------------------------------------------

def random_model(s: Settings, preset: str) -> Path:
    """A randomly initialised model directory of `preset` with the data's tokenizer: what
    fine-tuning starts from here (no pre-trained weights travel)."""
    out = s.work / f"model-{preset}"
    if not out.exists():
        cfg = PretrainConfig(model=preset, data=str(s.data / "sop"), model_overrides=s.shrink)
        torch.manual_seed(0)
        EncoderForPreTraining(model_config(cfg, s.data / "sop")).save_pretrained(out)
        Tokenizer.from_pretrained(s.data / "sop" / "tokenizer").save_pretrained(out)
    return out


def plain_loop(model, rows: list[dict], batch: int, s: Settings,
               keep: tuple[str, ...] = ()) -> Side:
    """transformers' side of a fine-tuning row: AdamW, shuffled batches padded to their
    longest (padded and moved to the device before the timer starts), clipping at 1.0;
    `keep` names the inputs the model takes."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    order = np.random.default_rng(0).permutation(len(rows))
    amp = autocast(s.device, s.precision)
    per_epoch = max(1, len(rows) // batch)

    def padded():
        for i in itertools.count():
            i %= per_epoch
            # ALBERT's <pad> is 0
            yield pad_batch([{k: rows[j][k] for k in keep}
                             for j in order[i * batch:(i + 1) * batch]], 0)

    def step(inputs: Batch) -> int:
        with amp:
            loss = model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return len(inputs["input_ids"])
    return Side(step, *prepared(padded(), s.warmup + s.steps, s.device))


def steady_rate(timeline: list, batch: int) -> tuple[float, float]:
    """(examples/s, compile seconds) off a run's timeline of (step, seconds) at its loss
    lines: the rate from the first line at or past a third of the steps to the last (past
    the compiles of the first widths), and the time the steps before it took beyond that
    rate."""
    last_step, last_t = timeline[-1]
    first_step, first_t = next((st, t) for st, t in timeline if st >= last_step / 3)
    if last_step == first_step:
        first_step, first_t = 0, 0.0
    per_step = (last_t - first_t) / (last_step - first_step)
    return batch / per_step, max(0.0, first_t - first_step * per_step)


def finetune_row(s: Settings, task: str, data: str, batch: int, seq: int) -> list[Row]:
    """`litebert finetune` (precision auto) eager and compiled, `steps` steps and one dev
    evaluation each: training examples a second at a steady step (off the run's timeline),
    the whole run's rate beside it; transformers' plain loop on the same rows."""
    preset, steps = s.size("albert-base", "tiny"), s.size(30, 3)
    model = random_model(s, preset)
    rows: list[Row] = []
    # SQuAD's own options (tasks/registry.py); a GLUE task takes none of them.
    own = (dict(max_query_length=s.size(64, 16), doc_stride=s.size(128, 16))
           if task.startswith("squad") else {})
    for variant, compiled in (("eager", False), ("compiled", True)):
        cfg = finetune_config(task=task, data=str(s.data / data), model=str(model),
                              out=str(s.work / f"ft-{task}-{variant}"), max_steps=steps,
                              warmup_steps=1, batch_size=batch, max_seq_length=seq,
                              eval_every=steps, log_every=s.size(5, 1), compile=compiled,
                              **own)
        reset_peak(s.device)
        result = finetune(cfg)
        steady, compile_s = steady_rate(result["timeline"], batch)
        whole = steps * batch / result["seconds"]
        rows.append(Row(f"finetune {task}", variant,
                        f"{preset}, batch {batch}, up to {seq} tokens, {steps} steps + a dev "
                        f"evaluation; whole run {whole:,.0f} ex/s", unit="ex/s",
                        litebert=steady, peak_mb=peak_mb(s.device),
                        compile_s=compile_s if compiled else None))
        free()
    head = (transformers.AlbertForSequenceClassification if task == "sst2"
            else transformers.AlbertForQuestionAnswering)
    keep = ("input_ids", "token_type_ids", "attention_mask",
            *(("labels",) if task == "sst2" else ("start_positions", "end_positions")))
    train_rows = adapter_for(cfg).train_rows
    side = ready(lambda: plain_loop(  # the model built inside: its memory is the side's
        head.from_pretrained(model, attn_implementation="sdpa").to(s.device).train(),
        train_rows, batch, s, keep), s.warmup, s.device)
    interleaved_rounds([side], s.warmup, s.device)
    loop = timing(side, s.warmup)
    for row in rows:
        row.transformers, row.transformers_spread = loop.per_s, loop.spread
        row.transformers_peak_mb = side.peak_mb
    return rows


def finetune_sst2(s: Settings) -> list[Row]:
    return finetune_row(s, "sst2", "sst2", s.size(32, 4), s.size(128, 64))


def finetune_squad(s: Settings) -> list[Row]:
    return finetune_row(s, "squad1", "squad", s.size(16, 2), s.size(384, 64))


# What says most first (the --budget-s cut takes the end): MLM pre-training padded and
# unpadded, ModernBERT, ELECTRA, PLM, fine-tuning, the largest micro-batch, then FSDP,
# checkpoints, documents, and the lite-vs-bert study's rows (7 models compiled: run it with
# --only lite-vs-bert on a loan of its own).
CHECKS: dict[str, Callable[[Settings], list[Row]]] = {
    "mlm-full": mlm_full, "mlm-unpadded": mlm_unpadded,
    "profile": functools.partial(profile_check, mlm_config=mlm_config), "micro": micro_check,
    "modernbert": modernbert, "electra": electra, "plm": plm, "finetune-sst2": finetune_sst2,
    "finetune-squad": finetune_squad, "max-batch": max_batch, "fsdp": fsdp,
    "checkpoint": checkpoint_check, "mlm-document": mlm_document,
    "lite-vs-bert": lite_vs_bert_check}
