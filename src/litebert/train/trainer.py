"""The pre-training loop: any objective, LAMB, accumulation, clipping, eval, checkpoints.

What is trained, its loss parts, metrics and export are the objective's (litebert.objectives,
chosen by the run config's `objective`); the loop names none of them. One optimizer step =
`accumulation` micro-batches per rank; every loss part is summed per micro-batch and divided
by its count over the whole global batch, so the gradient is that of one big batch.

Resuming restores model, optimizer, schedule, RNG, the data position (epoch, micro-batch)
and the log window open at the checkpoint, so a run killed at any moment and resumed
continues exactly as if it had never stopped (bit for bit on CPU, log lines included).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from litebert.compat import check_model_reads
from litebert.config import ModelConfig
from litebert.cpus import usable_cpus
from litebert.data.attention_layout import mark_tokens_dynamic
from litebert.data.blend import RunData, data_digest, open_items, open_run_data, parse_data
from litebert.data.integrity import DataError
from litebert.data.loader import SAMPLER_VERSION, open_training_data, sampler_for
from litebert.data.manifest import DataManifest, as_data
from litebert.distributed import (
    DistInfo,
    all_reduce_sum,
    barrier,
    broadcast_object,
    held_units,
    init_distributed,
    release,
    shards,
    wrap,
)
from litebert.files import atomic_directory
from litebert.model.backbone import backbone_class
from litebert.model.checkpointing import set_activation_checkpointing
from litebert.objectives import Objective, resolve
from litebert.padding import real_tokens
from litebert.progress import progress
from litebert.tokenization import Tokenizer
from litebert.tokenization.added_tokens import added_token_pieces
from litebert.train import checkpoint
from litebert.train.compiling import (
    compile_errors,
    compile_in_place,
    compile_mode,
    compile_optimizer,
    compile_units,
    compiles_regions,
    replays_cuda_graphs,
    resolved_compile,
)
from litebert.train.feed import batches
from litebert.train.metrics import MetricsLogger
from litebert.train.optimizers import build_optimizer, optimizer_spec, step_if
from litebert.train.precision import allow_tf32, autocast, resolved_precision
from litebert.train.preemption import Preempted, PreemptionWatch, exit_status, signal_name
from litebert.train.restart import Start, complete, logged_evaluation, plan_start
from litebert.train.run_config import PretrainConfig, check_data_attention
from litebert.train.saver import CheckpointSaver
from litebert.train.scheduler import build_scheduler, resume_at
from litebert.train.skips import SkipCounter
from litebert.train.start_from import (
    Sources,
    check_start_vocabulary,
    finish_export,
    load_start,
    open_sources,
    start_config,
)
from litebert.train.state import (
    TrainState,
    explained_export,
    full_model_state,
    restore_state,
)
from litebert.train.throughput import TimedBatches, peak_tflops, speed_record

log = logging.getLogger("litebert")


class TrainingDiverged(RuntimeError):
    """Too many non-finite losses in a row; the newest checkpoint is still the last good one."""


@dataclass
class LogWindow:
    """Sums over the steps since the last log line, kept on the device until that line reads
    them (the loop's only host syncs are at log, evaluation and checkpoint steps); a
    checkpoint between lines takes the tokens and seconds so far (Trainer._count_window)."""

    losses: torch.Tensor  # (P,) this rank's shares of each part's global mean, finite steps
    kept: torch.Tensor  # () long: finite steps
    tokens: torch.Tensor  # () long: this rank's real tokens
    start: float  # time.perf_counter() when the window opened
    paused: float = 0.0  # seconds of evaluations and checkpoints, not training time

    @classmethod
    def open(cls, parts: int, device: torch.device,
             carried: dict[str, Any] | None = None) -> LogWindow:
        """An empty window, or one holding the sums a checkpoint carried (`carried`: its
        log_window record; one rank holds them, see Trainer._window_record)."""
        zero = torch.zeros((), dtype=torch.long, device=device)
        window = cls(losses=torch.zeros(parts, device=device), kept=zero, tokens=zero.clone(),
                     start=time.perf_counter())
        if carried:
            window.losses += torch.tensor(carried["losses"], device=device)
            window.kept += int(carried["kept"])
        return window


# ---- parts ---------------------------------------------------------------------------------

def model_config(cfg: PretrainConfig, data: DataManifest | Path,
                 sources: Sources | None = None) -> ModelConfig:
    """The preset, with the vocabulary of the data's tokenizer and the recipe's overrides;
    or, starting from a directory, its config with the overrides, the data's vocabulary
    checked to be its own. `data`: the data's manifest as read, or its directory."""
    data = as_data(data)
    data_dir = data.directory
    tok = Tokenizer.from_pretrained(data_dir / "tokenizer")
    if sources:
        source = sources["model"]
        check_start_vocabulary(source, tok, data_dir)
        config = start_config(source, cfg.model_overrides, tok)
        what = f"the model in {source.directory}"
    else:
        # The tokenizer's ids, unless the recipe overrides them (check_model_reads checks).
        ids = dict(vocab_size=len(tok), pad_token_id=tok.pad_token_id or 0,
                   bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id)
        config = ModelConfig.from_preset(cfg.model, **{**ids, **cfg.model_overrides})
        what = f"the model (preset {cfg.model!r} with the recipe's overrides)"
    check_model_reads(config, tok, what, str(data_dir / "tokenizer"),
                      pairs=data.has_pairs, reader=backbone_class(config))
    return config


def resolved_workers(cfg: PretrainConfig, device: torch.device) -> int:
    """num_workers, or its default: 4 on CUDA (at most the CPUs less one), 0 on a CPU."""
    if cfg.num_workers is not None:
        return cfg.num_workers
    return min(4, max(usable_cpus() - 1, 0)) if device.type == "cuda" else 0


# ---- the loop ------------------------------------------------------------------------------

class Trainer:
    """Holds the parts of one run; `run()` trains to max_steps and returns the last eval.
    stop_if_complete: raise RunComplete, before building anything, when the run's
    checkpoint is at its last step and its export (if asked for) is written."""

    carried_window: dict[str, Any] | None = None  # a resume: the checkpoint's open log window
    # Called by train_step at its phase boundaries ("copied", "backward", "clipped",
    # "stepped"), for a benchmark's split of the step; None (the default) calls nothing. It
    # must not sync the device (record CUDA events, read them after the step).
    phase_hook: Callable[[str], None] | None = None

    def __init__(self, cfg: PretrainConfig, info: DistInfo | None = None,
                 stop_if_complete: bool = False, data: RunData | None = None):
        if cfg.data is None:
            raise DataError("no training data: pass --data DIR (built by `litebert data build`)")
        self.cfg, self.info = cfg, info or init_distributed()
        # One directory or a blend, each manifest read once (here, unless `data` is cfg.data
        # as read already); the first is evaluation's.
        data = data or open_run_data(parse_data(cfg.data))
        self.run_dir, data_dir = Path(cfg.out), data.first.directory
        neutral = open_training_data(data.first, cfg.seed)
        objective = resolve(cfg.objective.name)
        check_data_attention(cfg, neutral.config.packed, objective.attentions)
        # Both halves: it trains (TrainingObjective), evaluates and exports (Evaluation...).
        self.objective: Objective = objective(cfg, neutral)
        self.train_data = open_items(data, self.objective, "train", cfg.seed)
        self.weights = torch.tensor(self.objective.weights, device=self.info.device)  # (P,)
        # --from: the model's shape and weights are a directory's (train/start_from.py).
        self.sources = open_sources(cfg.start_from, cfg.generator_from) \
            if cfg.start_from else {}
        self.config = model_config(cfg, data.first, self.sources)
        self.data_digest = data_digest(data, self.train_data)
        self.start = self._plan_start()  # before the model: a resume does not read --from's
        if stop_if_complete and self._complete():
            raise complete(self.run_dir, self.start, cfg.export, self._further())
        torch.manual_seed(cfg.seed)
        model = self._started(self.objective.build(self.config), data_dir).to(self.info.device)
        self.model = self._compiled_and_wrapped(model)
        self.optimizer_spec = optimizer_spec(cfg.optimizer)  # its registry entry
        self.optimizer = build_optimizer(cfg.optimizer, self.model, lr=cfg.lr,
                                         weight_decay=cfg.weight_decay, betas=cfg.betas,
                                         eps=cfg.eps)
        if self.compiled:
            compile_optimizer(self.optimizer, self.optimizer_spec)
        self.scheduler = self._new_scheduler()
        self.amp, self.scaler = autocast(cfg.precision, self.info.device)
        allow_tf32(self.info.device)
        # Speed in model FLOPs: the objective's count at the data's sequence length.
        self.flops_per_token = self.objective.flops_per_token(self.config,
                                                              neutral.config.max_seq_length)
        precision = resolved_precision(cfg.precision, self.info.device)
        self.peak = peak_tflops(self.info.device, precision, cfg.peak_tflops)
        self.accumulation = cfg.accumulation(self.info.world_size)
        self.state = TrainState(sampler_version=SAMPLER_VERSION)  # a resume: the checkpoint's
        if self.start.checkpoint is not None:
            self._restore(self.start.checkpoint)
        self._prepare_run_dir(data_dir)
        # Lines a killed run logged after the step it continues from are dropped (all of
        # them when it starts from step 0): no step is ever logged twice.
        self.logger = MetricsLogger(self.run_dir, enabled=self.info.is_main,
                                    resume_step=self.state.step)
        self.skips = SkipCounter(self.info.device, self.state.nonfinite_in_row)
        self.saved_step = self.state.step if self.start.checkpoint else -1
        self.window = LogWindow.open(len(self.weights), self.info.device)
        self.saver = CheckpointSaver(self.run_dir, cfg, self.info)

    def _compiled_and_wrapped(self, model: nn.Module) -> nn.Module:
        """The model as the steps run it: its encoders checkpointing their layers when asked
        (a training choice: no checkpoint or export carries it), compiled in place (the
        state-dict keys stay; one graph, or one per encoder module under FSDP or `compile:
        regional`) before DDP or FSDP wraps it, as torch advises."""
        cfg = self.cfg
        set_activation_checkpointing(model, cfg.activation_checkpointing)
        self.compiled = resolved_compile(cfg.compile, self.info.device)
        units = self.objective.fsdp_units(model)
        mode = compile_mode(cfg.compile)
        self.cuda_graphs = self.compiled and replays_cuda_graphs(mode)
        if self.compiled and (shards(self.info, cfg.fsdp) or compiles_regions(cfg.compile)):
            compile_units(units, mode)
        elif self.compiled:
            compile_in_place(model, mode)
        # FSDP keeps a unit used at several depths gathered through the step; train_step
        # reshards these after its last backward (litebert.distributed.release).
        self.held = held_units(units) if shards(self.info, cfg.fsdp) else []
        return wrap(model, self.info, cfg.fsdp, units)

    def _started(self, model: nn.Module, data_dir: Path) -> nn.Module:
        """The model just built, with the weights of the directories of --from when the run
        starts afresh (a resume restores its checkpoint instead)."""
        if self.sources and self.start.checkpoint is None:
            start = self.objective.start_state(self.config, self.sources)
            load_start(model, start, self.sources, self.cfg.model_overrides,
                       added_token_pieces(data_dir / "tokenizer"))
        return model

    def _complete(self) -> bool:
        """Whether the run has nothing left to do: its checkpoint at max_steps and its
        export, when asked for, written (whole: _finish writes it as one directory)."""
        if self.start.checkpoint is None or self.start.step < self.cfg.max_steps:
            return False
        return not self.cfg.export or broadcast_object((self.run_dir / "export").is_dir())

    def _further(self) -> str:
        """How to train a complete run further (a run in phases says otherwise)."""
        return f"add --resume {self.start.checkpoint} --max-steps MORE"

    def _new_scheduler(self) -> torch.optim.lr_scheduler.LambdaLR:
        """The learning-rate schedule over the run's steps (a phase's: phased_run)."""
        cfg = self.cfg
        return build_scheduler(self.optimizer, cfg.schedule, warmup_steps=cfg.warmup_steps,
                               total_steps=cfg.max_steps, power=cfg.power,
                               decay_steps=cfg.decay_steps)

    def _plan_start(self) -> Start:
        """Where the run starts, checked against the checkpoint it continues (restart.py)."""
        return plan_start(self.cfg, self.config, self.data_digest)

    def _record(self) -> dict[str, Any]:
        """What a checkpoint's state.json says beside the config: the counters, the model,
        which run wrote it and on what data."""
        return {**self.state.to_record(), "model_config": self.config.to_dict(),
                "run_id": self.start.run_id, "adopts_unnamed": self.start.adopts_unnamed,
                "data_digest": self.data_digest, "log_window": self._window_record()}

    def _window_record(self) -> dict[str, Any]:
        """The log window open at a checkpoint: its loss sums over ranks and its finite
        steps, so that the run continued from there logs the line the uninterrupted run
        logs, not the mean of the steps since the resume (a collective: at every save)."""
        losses = all_reduce_sum(self.window.losses)
        return {"losses": losses.tolist(), "kept": int(self.window.kept)}

    def _restore(self, path: Path) -> None:
        """Model, optimizer, schedule, RNG, data position and the objective's state of
        checkpoint `path` (plan_start chose it and checked that it is this run's)."""
        saved = restore_state(self.model, self.optimizer, self.scheduler, self.cfg, self.info,
                              path)
        self.state = TrainState.from_saved(saved)
        # Rank 0 holds the window's sums over ranks, the others add their own from here.
        self.carried_window = saved.get("log_window") if self.info.is_main else None
        resume_at(self.scheduler, self.cfg.lr)  # --resume PATH's lr and schedule, if others
        self.objective.load_state_dict(saved["objective_state"])
        if self.info.is_main:
            log.info("continuing from %s (step %d)", path, self.state.step)

    def _prepare_run_dir(self, data_dir: Path) -> None:
        if not self.info.is_main:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if not (self.run_dir / "tokenizer").exists():
            shutil.copytree(data_dir / "tokenizer", self.run_dir / "tokenizer")
        (self.run_dir / "config.json").write_text(json.dumps(
            {"pretrain": self.cfg.to_dict(), "model": self.config.to_dict()}, indent=2) + "\n")

    def train_step(self, data) -> dict[str, Any]:
        """Accumulate one global batch, clip, step (or skip a non-finite one, on the device).

        Each loss part is summed per micro-batch and divided by its count over the whole
        global batch (all micro-batches, all ranks; what it counts is the objective's), so
        the gradient equals that of one big batch however it is split; DDP averages
        gradients over ranks, hence the factor world_size. Nothing here reads a value back
        from the device: finiteness, the skip and the token count stay there (skips.py).
        """
        device, world = self.info.device, self.info.world_size
        if self.cuda_graphs:  # this step's replays may overwrite the last step's outputs
            torch.compiler.cudagraph_mark_step_begin()
        self.objective.begin_step(self.state.step)
        micro = [{k: v.to(device, non_blocking=True) for k, v in next(data).items()}
                 for _ in range(self.accumulation)]
        self._phase("copied")
        if self.compiled:  # one graph for every unpadded N (data/attention_layout.py)
            micro = [mark_tokens_dynamic(b) for b in micro]
        # Each part's denominator, kept on the device (no host sync): (A, P) -> (P,) global.
        counts = torch.stack([self.objective.counts(b) for b in micro])
        totals = all_reduce_sum(counts.sum(0)).clamp(min=1)
        losses = torch.zeros_like(totals)  # (P,) this rank's share of each part's global mean
        for i, batch in enumerate(micro):
            with self._sync(i == len(micro) - 1):
                with self.amp:
                    sums = self.objective.loss_sums(self.model, batch)  # (P,)
                share = sums / totals  # (P,)
                loss = (share * self.weights).sum() * world
                (self.scaler.scale(loss) if self.scaler else loss).backward()
            losses += share.detach().float()
        release(self.held)  # before clipping and the update read the shards
        self._phase("backward")
        if self.scaler:
            self.scaler.unscale_(self.optimizer)
        # A clip of 0 would scale every gradient to 0: it means "no clipping" (norm logged).
        clip = self.cfg.max_grad_norm or math.inf
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip)
        norm = norm.full_tensor() if hasattr(norm, "full_tensor") else norm  # FSDP: a DTensor
        self._phase("clipped")
        total = all_reduce_sum((losses * self.weights).sum()[None])  # (1,) the global loss
        finite = torch.isfinite(total).all() & torch.isfinite(norm)  # () on the device
        lr = self.optimizer.param_groups[0]["lr"]  # the rate this step uses
        self._apply(finite)
        self._phase("stepped")
        tokens = torch.stack([real_tokens(b).sum() for b in micro]).sum()  # () on the device
        return {"losses": losses, "grad_norm": norm.detach().float(), "tokens": tokens,
                "finite": finite, "lr": lr}

    def _phase(self, boundary: str) -> None:
        if self.phase_hook is not None:
            self.phase_hook(boundary)

    def _sync(self, last: bool) -> contextlib.AbstractContextManager[Any]:
        """DDP all-reduces gradients on the last micro-batch only; FSDP and a single
        process have no no_sync (FSDP reduces its shards on every backward)."""
        if isinstance(self.model, DistributedDataParallel) and not last:
            return self.model.no_sync()
        return contextlib.nullcontext()

    def _apply(self, finite: torch.Tensor) -> None:
        """The update, unless `finite` is false on the device; the step counts either way
        (skips.py says why)."""
        if self.scaler:  # the grad scaler skips non-finite steps itself (and syncs for it)
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            step_if(self.optimizer_spec, self.optimizer, finite)
            self.skips.add(finite)
        self.scheduler.step()
        self.state.step += 1
        self.optimizer.zero_grad(set_to_none=True)

    def _settle(self) -> None:
        """Read the skip counters (one host sync, at log, evaluation and checkpoint steps);
        a run with max_nonfinite non-finite steps in a row since the last read stops here."""
        skipped, in_row, longest = self.skips.read()
        self.state.skipped_steps += skipped
        self.state.nonfinite_in_row = in_row
        if longest >= self.cfg.max_nonfinite:
            self.wait_for_checkpoint()  # every rank read the same counters: all stop here
            last = checkpoint.latest(self.run_dir)
            raise TrainingDiverged(
                f"{longest} non-finite losses in a row by step {self.state.step} (skipped, "
                f"the weights left as they were); stopped. The last good checkpoint is {last} "
                f"(continue from it with `--resume {last} --lr LOWER`, or check the data)")

    def run(self) -> dict[str, float]:
        cfg, state = self.cfg, self.state
        sampler = sampler_for(self.objective.sampling, len(self.train_data), self.info.rank,
                              self.info.world_size, cfg.micro_batch_size, self.accumulation,
                              cfg.seed, version=state.sampler_version)
        device = self.info.device
        data = TimedBatches(batches(self.train_data, sampler, cfg.micro_batch_size,
                                    resolved_workers(cfg, device), state.position,
                                    pin=device.type == "cuda"))
        self.window = LogWindow.open(len(self.weights), device, self.carried_window)
        bar = progress(total=cfg.max_steps, initial=state.step, desc="pre-training",
                       unit="step", disable=not self.info.is_main)
        self.model.train()
        last_eval: dict[str, float] = {}
        first = state.step
        try:  # compiling happens at the first step and evaluation
            with compile_errors(self.compiled), PreemptionWatch(self.info) as watch:
                while state.step < cfg.max_steps:
                    last_eval = self._one_step(data, bar) or last_eval
                    signum = watch.stop_now()
                    if signum:
                        bar.close()
                        self._stop_for(signum)
        except BaseException:
            self.saver.stop_after_error()
            raise
        self.wait_for_checkpoint()
        bar.close()
        if state.step == first:  # nothing was left to train (a finished run, its export
            # missing): the evaluation it logged at its last step, not another
            last_eval = logged_evaluation(self.run_dir, state.step)
        self._finish()
        return last_eval

    def _one_step(self, data: TimedBatches, bar) -> dict[str, float]:
        """One step, then what falls on it: the log line, evaluation, checkpoint (the skip
        counters read before any of them). Returns the evaluation's metrics, if any."""
        cfg, window = self.cfg, self.window
        result = self.train_step(data)
        finite = result["finite"]
        # A skipped step's losses are not finite: the window averages the others (device).
        window.losses += torch.where(finite, result["losses"], 0.0)
        window.kept += finite
        window.tokens += result["tokens"]
        bar.update(1)
        step = self.state.step
        due = [step % every == 0 or step == cfg.max_steps
               for every in (cfg.log_every, cfg.eval_every, cfg.save_every)]
        if any(due):
            self._settle()
            self.saver.commit_if_written()  # an async checkpoint, once every rank wrote it
        if due[0]:
            self._log(data, result, bar)  # opens the next window
        elif due[2]:
            self._count_window()  # the checkpoint holds every token trained so far
        paused = time.perf_counter()  # evaluations and checkpoints are not training time
        metrics = self._evaluate() if due[1] else {}
        if due[2]:
            self._save()
        self.window.paused += time.perf_counter() - paused
        return metrics

    def _save(self) -> None:
        """A checkpoint at this step, which says which run wrote it and on what data."""
        self.saver.save(self.model, self.optimizer, self.scheduler, self._record(),
                        self.objective.state_dict())
        self.saved_step = self.state.step

    def wait_for_checkpoint(self) -> Path | None:
        """Make the checkpoint still being written (--async-save) visible once written: a
        collective, every rank calls it at the same point (a stop all ranks take together);
        returns its path, None when none was in flight. A process that exits without it
        leaves that checkpoint uncommitted, the one before intact."""
        return self.saver.wait()

    def _stop_for(self, signum: int) -> None:
        """Preempted: a checkpoint at this step (unless one was just written), committed,
        then out with the status a scheduler reads."""
        self._settle()
        if self.saved_step != self.state.step:
            self._count_window()
            self._save()
        self.wait_for_checkpoint()
        self.logger.close()
        name = signal_name(signum)
        raise Preempted(f"stopped by {name} after step {self.state.step}, saved in "
                        f"{checkpoint.latest(self.run_dir)}; the same command continues from "
                        f"there (exit status {exit_status(signum)})", exit_status(signum))

    def _log(self, data: TimedBatches, last: dict[str, Any], bar) -> None:
        """The window's log line; then a new window opens."""
        # Shares summed over ranks are the global means; then averaged over the window's
        # finite steps (the same count on every rank); NaN when every step was skipped.
        window, state = self.window, self.state
        losses = all_reduce_sum(window.losses) / window.kept  # (P,)
        tokens, elapsed = self._count_window()
        parts = dict(zip(self.objective.parts, losses.tolist(), strict=True))
        speed = speed_record(tokens, elapsed, data.take_waited(),
                             self.info.world_size, self.flops_per_token, self.peak)
        record = {"step": state.step, "loss": float((losses * self.weights).sum()),
                  **{f"{name}_loss": value for name, value in parts.items()},
                  "lr": last["lr"], **speed, "grad_norm": float(last["grad_norm"]),
                  "skipped_steps": state.skipped_steps, "tokens": state.tokens,
                  "train_seconds": state.seconds}
        self.logger.log(record)
        shown = {"mfu": f"{speed['mfu']:.1%}"} if "mfu" in speed else {}
        bar.set_postfix(loss=f"{record['loss']:.3f}", tok_s=f"{record['tokens_per_s']:,.0f}",
                        **shown)
        self.window = LogWindow.open(len(self.weights), self.info.device)

    def _count_window(self) -> tuple[int, float]:
        """Add the tokens (summed over ranks) and training seconds counted since the window
        opened, or since the last count, to the run's totals, and count anew; returns them.
        At every log line and before every checkpoint: a checkpoint between log lines (a
        preemption's, or save_every off the log steps) then holds every token trained, not
        the totals of the last line, so a resumed run counts them all."""
        window, state = self.window, self.state
        tokens = int(all_reduce_sum(window.tokens))
        now = time.perf_counter()
        elapsed = now - window.start - window.paused
        state.tokens += tokens
        state.seconds += elapsed
        window.tokens = torch.zeros_like(window.tokens)
        window.start, window.paused = now, 0.0
        return tokens, elapsed

    def _evaluate(self) -> dict[str, float]:
        """The objective's held-out metrics, logged at this step (nothing when it has none)."""
        result = self.objective.evaluate(self.model, self.info, self.amp)
        if result:
            self.logger.log({"step": self.state.step, **result})
        return result

    def _finish(self) -> None:
        if self.cfg.export:
            model_state = full_model_state(self.model)  # a collective under FSDP
            export = self.run_dir / "export"
            with explained_export(self.run_dir, export, model_state, together=True):
                if self.info.is_main:  # whole or not at all: _complete reads its presence
                    with atomic_directory(export) as written:
                        self.objective.export(model_state, self.config, self.run_dir, written)
                        finish_export(written, self.run_dir, self.cfg, self.sources)
        self.logger.close()
        barrier()
