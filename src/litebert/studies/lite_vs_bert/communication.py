"""Bytes communicated per pre-training step, counted from the collectives DDP and FSDP
actually issue: N gloo processes on this CPU each build a row's model, wrap it as training
does (litebert.distributed.wrap), and run a few LAMB steps on synthetic batches while every
collective is recorded.

Modes:
    ddp            DistributedDataParallel; a comm hook records each gradient bucket, then
                   runs torch's default all-reduce hook on it.
    fsdp-per-use   FSDP2 as litebert wrapped it before shared units were held for the step:
                   a unit ALBERT applies at L depths is gathered once in forward (kept
                   across its uses there), then resharded after each use's backward and
                   gathered again before the next one's: L times a step in all.
    fsdp           litebert.distributed.wrap as training runs it, with `release` after the
                   backward: every unit gathered once per step.

What the counts mean (per step, the last one: the first builds FSDP's buffers lazily and DDP
rebuilds its buckets after it):
    bytes                 each collective's full buffer: the bucket for an all-reduce, the
                          gathered output for an all-gather, the unsharded input for a
                          reduce-scatter.
    sent_per_rank_bytes   what a ring algorithm makes each of N ranks send: an all-reduce is
                          a reduce-scatter then an all-gather, 2 (N-1)/N x bytes; an all-gather
                          or a reduce-scatter alone (N-1)/N x bytes. Summed over every kind,
                          optimizer_all_reduce's included.
    optimizer_all_reduce  DTensor's own all-reduces during the LAMB step (FSDP only: the
                          per-parameter norms of the trust ratio are summed over the shards).
    gathers_per_unit      all-gathers per FSDP unit ("root" and each attention / FFN module
                          by name); scatters_per_unit the same for reduce-scatters. A
                          collective issued outside every unit would show as "unattributed".

Attributing a collective to its unit: each unit's FSDP parameter group has its `unshard` and
`post_backward` wrapped (on the instance) to name the unit while they run, and the patched
torch.distributed functions read that name. Matching by the unit's padded flat size would
not do: BERT's twelve attention modules all have the same size. The parameter groups are
FSDP2's private state (`_get_fsdp_state()._fsdp_param_groups`), so a torch that renames them
stops this module with a sentence, not a wrong count.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import json
import os
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.fsdp import FSDPModule
from torch.distributed.tensor import DTensor
from torch.utils._python_dispatch import TorchDispatchMode

from litebert.distributed import DistInfo, free_port, held_units, release, unwrap, wrap
from litebert.model.heads import EncoderForPreTraining
from litebert.studies.lite_vs_bert.children import child_context
from litebert.studies.lite_vs_bert.rows import BY_NAME, fast_model, row_config, synthetic_batch
from litebert.train.lamb import Lamb, lamb_param_groups

MODES = ("ddp", "fsdp-per-use", "fsdp")
KINDS = ("all_reduce", "all_gather", "reduce_scatter")
LR = 1e-3  # LAMB's rate: large enough that three steps move the weights visibly
TIMEOUT_S = 900.0  # for all the processes of one call, start to finish
POLL_S = 0.2


# ---- recording -----------------------------------------------------------------------------

@dataclass
class Recorder:
    """The collectives issued while `active`: (unit, bytes) per call, per kind."""

    active: bool = False
    unit: str = ""  # the FSDP unit whose unshard or post_backward is running
    calls: dict[str, list[tuple[str, int]]] = field(
        default_factory=lambda: {kind: [] for kind in (*KINDS, "optimizer_all_reduce")})

    def add(self, kind: str, nbytes: int) -> None:
        if self.active:
            self.calls[kind].append((self.unit, nbytes))

    def clear(self) -> None:
        for calls in self.calls.values():
            calls.clear()


def _nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _counted(original: Callable, kind: str, argument: str, recorder: Recorder) -> Callable:
    """`original` (a torch.distributed collective), recording the bytes of its `argument`."""
    signature = inspect.signature(original)

    def collective(*args: Any, **kwargs: Any) -> Any:
        tensor = signature.bind(*args, **kwargs).arguments[argument]
        recorder.add(kind, _nbytes(tensor))
        return original(*args, **kwargs)
    return collective


@contextlib.contextmanager
def recorded_collectives(recorder: Recorder) -> Iterator[None]:
    """torch.distributed's all-gather and reduce-scatter record into `recorder` while
    inside. FSDP2 looks them up on torch.distributed at each call (_fsdp_collectives.py),
    so patching the module's attributes sees every one. (DDP's all-reduces are recorded by
    its comm hook, which calls dist.all_reduce itself: not patched, or each would count
    twice.)"""
    patched = {"all_gather_single": ("all_gather", "output_tensor"),
               "reduce_scatter_single": ("reduce_scatter", "input")}
    originals = {name: getattr(dist, name) for name in patched}
    try:
        for name, (kind, argument) in patched.items():
            setattr(dist, name, _counted(originals[name], kind, argument, recorder))
        yield
    finally:
        for name, original in originals.items():
            setattr(dist, name, original)


class FunctionalCollectives(TorchDispatchMode):
    """Records the functional all-reduces DTensor issues (a norm over shards, say): they go
    from C++ to the process group, past torch.distributed's Python functions."""

    def __init__(self, recorder: Recorder):
        super().__init__()
        self.recorder = recorder

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if any(t is DTensor for t in types):  # let DTensor turn the op into its collectives,
            return NotImplemented  # which come back through here on plain tensors
        if isinstance(func, torch._ops.OpOverload) and func.namespace == "_c10d_functional" \
                and "all_reduce" in func.__name__:
            tensors = args[0] if isinstance(args[0], (list, tuple)) else [args[0]]
            for tensor in tensors:
                self.recorder.add("optimizer_all_reduce", _nbytes(tensor))
        return func(*args, **(kwargs or {}))


def _recorded_all_reduce(recorder: Recorder, bucket):
    """DDP's comm hook: the bucket's bytes recorded, then torch's default all-reduce. (No
    annotations: DDP compares them with its own classes, and this module's are strings.)"""
    recorder.add("all_reduce", _nbytes(bucket.buffer()))
    return default_hooks.allreduce_hook(None, bucket)  # type: ignore[arg-type]


def _within_unit(recorder: Recorder, unit: str, method: Callable) -> Callable:
    def run(*args: Any, **kwargs: Any) -> Any:
        outer, recorder.unit = recorder.unit, unit
        try:
            return method(*args, **kwargs)
        finally:
            recorder.unit = outer
    return run


def attribute_units(model: nn.Module, recorder: Recorder) -> list[str]:
    """Name each FSDP unit in `recorder` while its parameter groups gather or reduce;
    returns the units' names ("root" for the model itself)."""
    names = []
    for name, module in model.named_modules():
        if not isinstance(module, FSDPModule):
            continue
        unit = name or "root"
        state = getattr(module, "_get_fsdp_state", lambda: None)()
        groups = getattr(state, "_fsdp_param_groups", None)
        if groups is None:
            raise RuntimeError("this torch's FSDP2 keeps no `_fsdp_param_groups` on a unit's "
                               "state: the collectives cannot be attributed to units")
        for group in groups:
            for method in ("unshard", "post_backward"):
                setattr(group, method, _within_unit(recorder, unit, getattr(group, method)))
        names.append(unit)
    return names


# ---- one process ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Job:
    """What every process runs: the row, the modes one after another, where to write."""

    name: str
    modes: tuple[str, ...]
    steps: int
    batch: int
    length: int
    overrides: dict[str, Any]
    world: int
    port: int
    out: str  # a directory: rank-R.json or error-R.txt per process
    weights: bool  # rank 0 also compares the final weights of every mode with the first's
    timeout_s: float


def _wrapped(model: EncoderForPreTraining, mode: str, info: DistInfo,
             recorder: Recorder) -> tuple[nn.Module, list[nn.Module], list[str]]:
    """The model as `mode` trains it, the units to release after the backward, and the
    FSDP units' names."""
    if mode == "ddp":
        ddp = wrap(model, info, fsdp=False)
        assert isinstance(ddp, nn.parallel.DistributedDataParallel)
        ddp.register_comm_hook(recorder, _recorded_all_reduce)
        return ddp, [], []
    units = model.backbone.fsdp_units()
    wrap(model, info, fsdp=True, units=units)
    held = held_units(units)
    if mode == "fsdp-per-use":  # a shared unit resharded after each use's backward
        for module in held:
            cast(FSDPModule, module).set_reshard_after_backward(True, recurse=False)
        held = []
    return model, held, attribute_units(model, recorder)


def _bytes_held(model: nn.Module) -> int:
    """Bytes of the parameters this rank stores. FSDP: the storage under each DTensor's
    local shard, which holds the padding that makes every rank's shard of a tensor equal
    (the shard itself is a view without it); otherwise the full parameters."""
    total, seen = 0, set()
    for p in model.parameters():
        if not isinstance(p, DTensor):
            total += _nbytes(p)
            continue
        storage = p.to_local().untyped_storage()
        if storage.nbytes() and storage.data_ptr() not in seen:
            seen.add(storage.data_ptr())
            total += storage.nbytes()
    return total


def _full_weights(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter in full (FSDP: gathered, a collective every rank joins)."""
    return {name: (p.full_tensor() if isinstance(p, DTensor) else p).detach().clone()
            for name, p in unwrap(model).named_parameters()}


def _one_step(model: nn.Module, optimizer: Lamb, batch: dict[str, torch.Tensor],
              held: list[nn.Module], recorder: Recorder) -> torch.Tensor:
    """forward, backward, release the held units, LAMB step, zero_grad; the rank's loss."""
    loss = model(**batch).loss
    loss.backward()
    release(held)
    with FunctionalCollectives(recorder):
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


def _run_mode(job: Job, mode: str, info: DistInfo) -> tuple[dict[str, Any], nn.Module]:
    """`job.steps` steps of `mode`; the last step's counts, every step's global loss and
    seconds, and the trained model."""
    config = row_config(job.name, **job.overrides)
    built = fast_model(config, seed=0)  # the same on every rank
    param_bytes = sum(_nbytes(p) for p in built.parameters())  # shared tensors once
    recorder = Recorder()
    model, held, units = _wrapped(built, mode, info, recorder)
    optimizer = Lamb(lamb_param_groups(unwrap(model)), lr=LR)
    losses, seconds = [], []
    with recorded_collectives(recorder):
        for step in range(job.steps):
            seed = info.rank * 1000 + step
            batch = synthetic_batch(config, job.batch, job.length, seed=seed)
            torch.manual_seed(seed)  # dropout draws the same masks in every mode
            recorder.clear()  # only the last step's collectives are kept
            recorder.active = True
            start = time.perf_counter()
            losses.append(_one_step(model, optimizer, batch, held, recorder))
            seconds.append(time.perf_counter() - start)
            recorder.active = False
    summed = torch.stack(losses)  # (steps,)
    dist.all_reduce(summed)  # over ranks, outside the recording
    result = {**summarize(recorder, job.world, units),
              "shard_bytes_per_rank": _bytes_held(model), "param_bytes": param_bytes,
              "losses": (summed / job.world).tolist(), "seconds": seconds}
    return result, model


def summarize(recorder: Recorder, world: int, units: Sequence[str]) -> dict[str, Any]:
    """Calls and bytes per kind, what a ring makes each rank send, and the FSDP units'
    gathers and reduce-scatters (`units`: every unit, so one never gathered shows 0)."""
    out: dict[str, Any] = {}
    for kind, calls in recorder.calls.items():
        out[kind] = {"calls": len(calls), "bytes": sum(nbytes for _, nbytes in calls)}
    share = (world - 1) / world
    out["sent_per_rank_bytes"] = round(
        2 * share * (out["all_reduce"]["bytes"] + out["optimizer_all_reduce"]["bytes"])
        + share * (out["all_gather"]["bytes"] + out["reduce_scatter"]["bytes"]))
    for key, kind in (("gathers_per_unit", "all_gather"), ("scatters_per_unit",
                                                          "reduce_scatter")):
        counts = Counter(unit for unit, _ in recorder.calls[kind])
        out[key] = {unit: counts[unit] for unit in units}
        if counts[""]:  # none expected: FSDP gathers and reduces inside a unit's methods
            out[key]["unattributed"] = counts[""]
    return out


def _child(rank: int, job: Job) -> None:
    """One process: every mode of `job`, its results (or its error) written to job.out."""
    torch.set_num_threads(1)
    out = Path(job.out)
    status = 0
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{job.port}", rank=rank,
                                world_size=job.world, timeout=timedelta(seconds=job.timeout_s))
        info = DistInfo(rank=rank, world_size=job.world, local_rank=rank,
                        device=torch.device("cpu"))
        results = _run_modes(job, info)
        (out / f"rank-{rank}.json").write_text(json.dumps(results))
        dist.barrier()
    except BaseException as err:  # the parent turns it into a sentence
        lines = traceback.format_exception(err)
        (out / f"error-{rank}.txt").write_text(f"{type(err).__name__}: {err}\n" + "".join(lines))
        status = 1
    # As litebert.distributed.shutdown: gloo's threads may still hold tensors when the
    # interpreter finalises, which can abort the process; nothing is left to do here.
    os._exit(status)


def _run_modes(job: Job, info: DistInfo) -> dict[str, Any]:
    """Each mode in turn on a fresh model; with job.weights, rank 0 also reports the largest
    |w - w_first| over every parameter after the steps (key "weights_max_abs_diff")."""
    results: dict[str, Any] = {}
    first: dict[str, torch.Tensor] | None = None
    diffs = []
    for mode in job.modes:
        results[mode], model = _run_mode(job, mode, info)
        if job.weights:
            weights = _full_weights(model)
            if first is None:
                first = weights
            else:
                diffs.append(max(float((weights[k] - first[k]).abs().max()) for k in first))
        del model
        gc.collect()
    if job.weights:
        results["weights_max_abs_diff"] = max(diffs, default=0.0)
    return results


# ---- the parent ----------------------------------------------------------------------------

def _check(name: str, modes: Sequence[str], ranks: int, steps: int, batch: int,
           length: int, overrides: dict[str, Any]) -> None:
    """The arguments as sentences, before any process starts."""
    if name not in BY_NAME:
        raise ValueError(f"unknown row {name!r}: choose one of {', '.join(BY_NAME)}")
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown:
        raise ValueError(f"unknown mode {unknown[0]!r}: choose one of {', '.join(MODES)}")
    if ranks < 2:
        raise ValueError(f"ranks must be at least 2 to communicate anything, got {ranks}")
    if steps < 2:
        raise ValueError(f"steps must be at least 2 (the first step's lazy set-up is not "
                         f"counted), got {steps}")
    if batch < 1 or length < 2:
        raise ValueError(f"batch must be at least 1 and length at least 2, got batch "
                         f"{batch} and length {length}")
    try:
        positions = row_config(name, **overrides).max_position_embeddings
    except TypeError as err:  # a field ModelConfig does not have
        raise ValueError(f"overrides {sorted(overrides)} do not fit {name}'s model "
                         f"config: {err}") from None
    if length > positions:
        raise ValueError(f"length {length} is longer than the {positions} positions of "
                         f"{name}'s model")


def _wait(procs: list, timeout_s: float, out: Path, what: str) -> None:
    """Until every process is done; a failed one stops the others (a collective would wait
    on it forever) and becomes a sentence, and so does running past `timeout_s`."""
    deadline, late, failed = time.monotonic() + timeout_s, False, []
    while any(p.is_alive() for p in procs):
        late = time.monotonic() > deadline
        failed = [rank for rank, p in enumerate(procs) if p.exitcode not in (None, 0)]
        if late or failed:
            _stop(procs)
            break
        time.sleep(POLL_S)
    errors = sorted(out.glob("error-*.txt"))
    if errors:
        rank, first = errors[0].stem.split("-")[1], errors[0].read_text().splitlines()[0]
        raise RuntimeError(f"{what}: process {rank} failed: {first}")
    if late:
        raise RuntimeError(f"{what}: the {len(procs)} processes did not finish within "
                           f"{timeout_s:.0f} s and were stopped (a larger row needs a larger "
                           f"timeout_s)")
    failed = failed or [rank for rank, p in enumerate(procs) if p.exitcode != 0]
    if failed:
        raise RuntimeError(f"{what}: process {failed[0]} ended with status "
                           f"{procs[failed[0]].exitcode} without a word (its output says why; "
                           f"killed for memory?)")


def _stop(procs: list) -> None:
    """Terminate the processes still running (only these, which this module started)."""
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(10)


def _launch(job_args: dict[str, Any], ranks: int, timeout_s: float,
            what: str) -> list[dict[str, Any]]:
    """`ranks` child processes (children.py) running one Job; each rank's results,
    in rank order."""
    ctx = child_context(__name__)
    with tempfile.TemporaryDirectory(prefix="lvb-comm-") as tmp:
        job = Job(**job_args, world=ranks, port=free_port(), out=tmp, timeout_s=timeout_s)
        procs = [ctx.Process(target=_child, args=(rank, job), daemon=True)
                 for rank in range(ranks)]
        for p in procs:
            p.start()
        _wait(procs, timeout_s, Path(tmp), what)
        return [json.loads((Path(tmp) / f"rank-{r}.json").read_text()) for r in range(ranks)]


def count_modes(name: str, modes: Sequence[str] = MODES, ranks: int = 2, steps: int = 2,
                batch: int = 1, length: int = 32, overrides: dict[str, Any] | None = None,
                timeout_s: float = TIMEOUT_S) -> dict[str, dict[str, Any]]:
    """count_collectives for several modes in one launch of the processes (one after
    another, each on a fresh model): {mode: its dict}."""
    _check(name, modes, ranks, steps, batch, length, overrides or {})
    args = dict(name=name, modes=tuple(modes), steps=steps, batch=batch, length=length,
                overrides=dict(overrides or {}), weights=False)
    per_rank = _launch(args, ranks, timeout_s, f"counting {name}'s collectives")
    return _merged(per_rank, modes)


def _merged(per_rank: list[dict[str, Any]], modes: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Rank 0's counts (every rank issues the same collectives) with each step's seconds
    the slowest rank's."""
    merged = {}
    for mode in modes:
        result = dict(per_rank[0][mode])
        result["seconds"] = [max(times) for times in
                             zip(*(r[mode]["seconds"] for r in per_rank), strict=True)]
        merged[mode] = result
    return merged


def count_collectives(name: str, mode: str, ranks: int = 2, steps: int = 2, batch: int = 1,
                      length: int = 32, overrides: dict[str, Any] | None = None,
                      timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
    """The collectives one training step of row `name` issues under `mode` (MODES) at
    `ranks` gloo processes, counted at the last of `steps` steps of `batch` x `length`
    tokens per rank. Keys: all_reduce, all_gather, reduce_scatter, optimizer_all_reduce
    ({calls, bytes} each), sent_per_rank_bytes, gathers_per_unit, scatters_per_unit
    ({unit: count}; empty under ddp), shard_bytes_per_rank, param_bytes, losses (each
    step's loss averaged over ranks), seconds (each step's, the slowest rank's). See the
    module docstring for what each count means."""
    return count_modes(name, (mode,), ranks, steps, batch, length, overrides, timeout_s)[mode]


def compare_losses(name: str, steps: int = 3, overrides: dict[str, Any] | None = None,
                   ranks: int = 2, batch: int = 1, length: int = 32,
                   timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
    """DDP against FSDP (as training runs it) over `steps` identical steps: {"ddp": losses,
    "fsdp": losses, "max_rel_diff": the largest |l_fsdp - l_ddp| / |l_ddp|,
    "weights_max_abs_diff": the largest |w_ddp - w_fsdp| over every parameter after the
    steps (FSDP's gathered in full)}."""
    modes = ("ddp", "fsdp")
    _check(name, modes, ranks, steps, batch, length, overrides or {})
    args = dict(name=name, modes=modes, steps=steps, batch=batch, length=length,
                overrides=dict(overrides or {}), weights=True)
    rank0 = _launch(args, ranks, timeout_s, f"comparing {name}'s DDP and FSDP losses")[0]
    ddp, fsdp = rank0["ddp"]["losses"], rank0["fsdp"]["losses"]
    rel = max(abs(b - a) / abs(a) for a, b in zip(ddp, fsdp, strict=True))
    return {"ddp": ddp, "fsdp": fsdp, "max_rel_diff": rel,
            "weights_max_abs_diff": rank0["weights_max_abs_diff"]}
