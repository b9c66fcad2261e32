"""torchrun helpers: process group, device, DDP or FSDP wrapping, reductions.

One process per device (`torchrun --nproc-per-node N`); gloo on CPU, NCCL on CUDA. Rank 0
logs; every rank reads its own share of the data (RankSampler) and, under FSDP, writes its
own shard of each checkpoint.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import FSDPModule, fully_shard

from litebert.write_errors import WriteFailed


@dataclass(frozen=True)
class DistInfo:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def init_distributed() -> DistInfo:
    """Join the torchrun process group if there is one; pick this rank's device."""
    world = int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo",
                                store=attempt_store(world), rank=int(os.environ["RANK"]),
                                world_size=world)
    rank = dist.get_rank() if dist.is_initialized() else 0
    return DistInfo(rank=rank, world_size=world, local_rank=local, device=device)


def attempt_store(world: int) -> dist.Store:
    """The rendezvous store torchrun's environment names, its keys under this attempt's
    prefix. torchrun keeps one store for all the restarts of a job (`--max-restarts`); a
    restarted rank could read the address a rank of the killed attempt wrote there and
    wait on it ("connectFullMesh failed ... Connection refused", or a hang)."""
    missing = [name for name in ("RANK", "MASTER_ADDR", "MASTER_PORT") if name not in os.environ]
    if missing:
        raise ValueError(f"WORLD_SIZE={world} but {', '.join(missing)} unset: start the "
                         f"processes with torchrun, or set RANK, MASTER_ADDR and MASTER_PORT "
                         f"as torchrun does")
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    hosts = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True" and \
        os.environ.get("RANK") == "0"  # else torchrun's agent serves it
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                          is_master=hosts, timeout=timedelta(minutes=10))
    return dist.PrefixStore(f"litebert/attempt-{restart}", store)


def shutdown(status: int = 0) -> None:
    """Close the process group after a successful (or preempted: `status`, every rank at
    the same step) run; under torchrun, end the process here with `status`.

    Every rank meets at a barrier first, so no rank tears gloo down while another still
    talks to it. A torchrun process then leaves with os._exit: gloo's C++ worker threads can
    still hold tensors when the interpreter finalises, and freeing them then aborts a rank
    ("terminate called without an active exception", seen about once in a few hundred CI
    runs). Nothing is left to do at that point but flush the streams.
    """
    if not dist.is_initialized():
        return
    dist.barrier()
    dist.destroy_process_group()
    if int(os.environ.get("WORLD_SIZE", 1)) > 1 and "TORCHELASTIC_RUN_ID" in os.environ:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it), for a process
    group started on this machine."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def shards(info: DistInfo, fsdp: bool) -> bool:
    """Whether `wrap` shards the model: FSDP asked for and a process group to shard over. A
    group of one process counts (a one-GPU check of FSDP's code path: gpu_check.py)."""
    return fsdp and (info.distributed or dist.is_initialized())


def wrap(model: nn.Module, info: DistInfo, fsdp: bool,
         units: Sequence[tuple[nn.Module, bool]] = (), find_unused: bool = False) -> nn.Module:
    """DDP, or FSDP2: fully_shard on each of `units` (module, reshard_after_forward), the
    objective's choice, and then on the root, which takes every parameter left.

    A unit kept gathered after forward (reshard False: one module applied at several
    depths) is kept gathered after backward too, for the whole step: FSDP would otherwise
    reshard it after each use's backward and gather it again before the next one's, once
    per use. The training loop then hands `held_units(units)` to `release` once the step's
    last backward is done. find_unused: DDP looks for parameters the forward did not use
    after each one (a walk over the autograd graph), for a model with some its loss never
    reaches."""
    if shards(info, fsdp):
        for module, reshard in units:
            fully_shard(module, reshard_after_forward=reshard)
        for module in held_units(units):
            cast(FSDPModule, module).set_reshard_after_backward(False, recurse=False)
        fully_shard(model)
        return model
    if not info.distributed:
        return model
    ids = [info.device.index] if info.device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=ids,
                                               find_unused_parameters=find_unused)


def held_units(units: Sequence[tuple[nn.Module, bool]]) -> list[nn.Module]:
    """The units `wrap` keeps gathered for a whole step under FSDP (reshard False)."""
    return [module for module, reshard in units if not reshard]


def release(held: Sequence[nn.Module]) -> None:
    """Reshard the held units (`held_units`) after a step's last backward and before its
    optimizer step: their gradients are already reduce-scattered onto the shards, which
    clipping and the optimizer read and update; the next forward then gathers the updated
    shards. Nothing to do for units not gathered (a no-op in FSDP), or without FSDP (empty)."""
    for module in held:
        if isinstance(module, FSDPModule):
            module.reshard()


def unwrap(model: nn.Module) -> nn.Module:
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model


def all_reduce_sum(values: torch.Tensor) -> torch.Tensor:
    """Sum over ranks (a copy); the identity without a process group."""
    if dist.is_initialized():
        values = values.clone()
        dist.all_reduce(values)
    return values


def barrier() -> None:
    if dist.is_initialized():
        dist.barrier()


def rank_and_world() -> tuple[int, int]:
    """(this rank, number of ranks); (0, 1) without a process group."""
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def broadcast_object(obj: Any, src: int = 0) -> Any:
    """Rank `src`'s `obj` (picklable) on every rank; `obj` itself without a process group."""
    if not dist.is_initialized():
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def all_gather_objects(obj: Any) -> list[Any]:
    """Every rank's `obj`, in rank order, on every rank; [obj] without a process group."""
    if not dist.is_initialized():
        return [obj]
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def agree_on_write(mine: WriteFailed | None) -> WriteFailed | None:
    """Every rank's outcome of a write, gathered (a collective: every rank calls it): the
    first failing rank's WriteFailed, marked agreed, on every rank; None when none failed.
    The `agree` of litebert.write_errors.explained_write under torchrun."""
    outcomes = all_gather_objects(None if mine is None else (str(mine), mine.errno))
    world = rank_and_world()[1]
    for rank, outcome in enumerate(outcomes):
        if outcome is not None:
            message, code = outcome
            where = f"rank {rank} of {world}: " if world > 1 else ""
            return WriteFailed(where + message, code, agreed=True)
    return None
