"""The checks of benchmarks/gpu_check.py, one function each: what it builds, what it times.

The litebert sides are the benchmarks' own (bench_pretrain, bench_electra, bench_xlnet: the
Trainer's step on the data's batches), and so are the transformers sides (the plain loop a
user writes, from litebert's initial weights). A transformers figure is measured once per
data, preset and batch (Settings.baselines) and shared by the rows of that shape.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import shutil
import socket
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
    feeding,
    peak_mb,
    reset_peak,
    to_device,
    trainer_side,
)
from gpu_micro import micro_check
from gpu_profile import profile_check
from gpu_rows import Measured, Row, Settings, free, measured_row, timed

from litebert.model import EncoderForPreTraining
from litebert.padding import pad_batch
from litebert.tasks.base import finetune_config
from litebert.tasks.finetune import adapter_for, finetune
from litebert.tokenization import Tokenizer
from litebert.train import checkpoint
from litebert.train.pretrain import model_config, pretrain
from litebert.train.run_config import PretrainConfig, load_run_config
from litebert.train.state import is_fsdp, load_model_state

Batch = dict[str, torch.Tensor]


def shape_args(preset: str, batch: int) -> argparse.Namespace:
    """What the benchmarks' run_config functions read of their command line."""
    return argparse.Namespace(preset=preset, batch=batch)


def baseline(s: Settings, key: tuple, measure: Callable[[], Measured]) -> float:
    """The transformers figure of shape `key`, measured on first use."""
    if key not in s.baselines:
        s.baselines[key] = measure().per_s
        free()
    return s.baselines[key]


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


def mlm_rows(s: Settings, check: str, variants: dict[str, object], attention: str = "full",
             data: str = "sop", preset: str | None = None, compare: bool = True,
             **fields) -> list[Row]:
    """One row per variant (name -> compile setting) of the MLM objective's Trainer step;
    `compare`: the transformers loop (EncoderForPreTraining) at the same shape."""
    preset = preset or s.size("albert-base", "tiny")
    batch = s.size(32, 2)
    rows, initial = [], s.work / f"initial-{data}-{preset}"
    for variant, compiled in variants.items():
        cfg = mlm_config(s, data, preset, batch, f"{check}-{variant}", compiled,
                         attention=attention, **fields)
        trainer, step = bench_pretrain.litebert_side(cfg, s.device)
        if cfg.fsdp and not is_fsdp(trainer.model):
            raise RuntimeError("fsdp: the Trainer's model is not sharded")
        if compare and not initial.exists():
            export_initial(trainer, initial)  # the weights both sides start from
        what = (f"{preset} {batch} x {trainer.train_data.config.max_seq_length}, "
                f"attention {attention}, {trainer.cfg.optimizer}")
        flops = trainer.flops_per_token
        measured = timed(step, s)
        del trainer, step
        free()
        theirs = baseline(s, ("mlm", data, preset, batch), lambda c=cfg: timed(
            bench_pretrain.transformers_side(initial, c, s.device), s)) if compare else None
        rows.append(measured_row(check, variant, what, measured, flops, s, theirs))
    return rows


def mlm_full(s: Settings) -> list[Row]:
    return mlm_rows(s, "mlm+sop full", {"eager": False, "compiled": True})


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
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                            init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)


def fsdp(s: Settings) -> list[Row]:
    """The mlm+sop full row's eager step with every layer and the root under fully_shard."""
    one_process_group(s.device)
    try:
        return mlm_rows(s, "fsdp", {"eager, 1 process": False}, fsdp=True)
    finally:
        dist.destroy_process_group()


# ---- ELECTRA and PLM -----------------------------------------------------------------------

def trainer_rows(s: Settings, check: str, variants: dict[str, object], config, batches,
                 theirs_side, key: tuple) -> list[Row]:
    """Rows of a Trainer step fed fixed batches (ELECTRA, PLM): `config(out, compiled)` is
    the run, `batches(trainer, n)` its first n batches, `theirs_side(export, trainer)` the
    transformers loop from the exported initial weights."""
    rows, initial = [], s.work / f"initial-{check}"
    for variant, compiled in variants.items():
        trainer, step = trainer_side(config(str(s.work / f"{check}-{variant}"), compiled),
                                     s.device)
        work = batches(trainer, s.warmup + s.steps)
        first = not initial.exists()
        if first:
            export_initial(trainer, initial)
        what = (f"{trainer.cfg.model} {trainer.cfg.micro_batch_size} x "
                f"{work[0]['input_ids'].shape[1]}, {trainer.cfg.optimizer}")
        flops, measured = trainer.flops_per_token, timed(feeding(step, work), s)
        theirs_step = theirs_side(initial, trainer) if first else None
        del trainer, step
        free()
        theirs = baseline(s, key, lambda t=theirs_step, w=work: timed(feeding(t, w), s))
        rows.append(measured_row(check, variant, what, measured, flops, s, theirs))
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
        config, lambda t, n: bench_electra.load_batches(data, t.cfg, n),
        lambda export, t: bench_electra.transformers_side(export, data, t.cfg, s.device,
                                                           s.precision),
        ("electra", preset, batch))


def plm(s: Settings) -> list[Row]:
    preset, batch = "xlnet-tiny", s.size(16, 2)
    data = s.data / "xlnet"
    args = shape_args(preset, batch)

    def config(out: str, compiled) -> PretrainConfig:
        cfg = bench_xlnet.run_config(args, data, out, s.precision, compiled)
        cfg.model_overrides.update(s.shrink)
        return cfg

    return trainer_rows(
        s, "plm", {"eager": False, "compiled": True}, config,
        lambda t, n: bench_xlnet.load_batches(t.train_data, t.cfg, n),
        lambda export, t: bench_xlnet.transformers_side(export, t.cfg, t.train_data.reuse_len,
                                                         s.device, s.precision),
        ("plm", preset, batch))


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
        cfg = PretrainConfig(model=preset, data=str(s.data / "sop"))
        torch.manual_seed(0)
        EncoderForPreTraining(model_config(cfg, s.data / "sop")).save_pretrained(out)
        Tokenizer.from_pretrained(s.data / "sop" / "tokenizer").save_pretrained(out)
    return out


def plain_loop(model, rows: list[dict], batch: int, s: Settings,
               keep: tuple[str, ...] = ()) -> Callable[[], int]:
    """transformers' side of a fine-tuning row: AdamW, shuffled batches padded to their
    longest, clipping at 1.0; `keep` names the inputs the model takes."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    order = np.random.default_rng(0).permutation(len(rows))
    amp = autocast(s.device, s.precision)
    feed = itertools.count()

    def step() -> int:
        i = next(feed) % max(1, len(rows) // batch)
        chosen = [{k: rows[j][k] for k in keep} for j in order[i * batch:(i + 1) * batch]]
        inputs = to_device(pad_batch(chosen, 0), s.device)  # ALBERT's <pad> is 0
        with amp:
            loss = model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return len(chosen)
    return step


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
    theirs = head.from_pretrained(model, attn_implementation="sdpa").to(s.device).train()
    keep = ("input_ids", "token_type_ids", "attention_mask",
            *(("labels",) if task == "sst2" else ("start_positions", "end_positions")))
    train_rows = adapter_for(cfg).train_rows
    measured = timed(plain_loop(theirs, train_rows, batch, s, keep), s)
    for row in rows:
        row.transformers = measured.per_s
    return rows


def finetune_sst2(s: Settings) -> list[Row]:
    return finetune_row(s, "sst2", "sst2", s.size(32, 4), s.size(128, 64))


def finetune_squad(s: Settings) -> list[Row]:
    return finetune_row(s, "squad1", "squad", s.size(16, 2), s.size(384, 64))


CHECKS: dict[str, Callable[[Settings], list[Row]]] = {
    "mlm-full": mlm_full, "mlm-unpadded": mlm_unpadded,
    "profile": functools.partial(profile_check, mlm_config=mlm_config), "micro": micro_check,
    "electra": electra, "plm": plm,
    "mlm-document": mlm_document, "fsdp": fsdp, "checkpoint": checkpoint_check,
    # Before fine-tuning: two loans have measured fine-tuning, none ModernBERT yet.
    "modernbert": modernbert, "finetune-sst2": finetune_sst2,
    "finetune-squad": finetune_squad}
