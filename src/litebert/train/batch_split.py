"""How a run's global batch splits: `batch_size` sequences per optimizer step over all ranks,
each rank taking micro-batches of `micro_batch_size` and accumulating their gradients, so
batch_size = micro_batch_size x ranks x accumulation, in whole numbers.

A recipe's micro-batch is a memory budget, not part of what is trained: when the batch a
command asks for (`--batch-size 16` with a recipe's micro-batch of 32) does not split into
it, the micro-batch is lowered to the largest that splits the batch, and one line says so.
A micro-batch the user gave (a flag, `--set`) is kept, and one that does not split the batch
is an error naming both fields' sources. A run in phases is split phase by phase.

This module is config alone (no torch); the number of ranks is torchrun's WORLD_SIZE, read
as litebert.distributed reads it.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from litebert.provenance import FieldError, Provenance

log = logging.getLogger("litebert")


def launch_world_size() -> int:
    """The processes this run is launched with (torchrun's WORLD_SIZE; 1 without it)."""
    return int(os.environ.get("WORLD_SIZE", 1))


def accumulation(batch: int, micro: int, world: int) -> int:
    """Micro-batches per rank per optimizer step; FieldError when they are not whole."""
    check_split(batch, micro, world)
    return batch // (micro * world)


def check_split(batch: int, micro: int, world: int, batch_field: str = "batch_size",
                micro_field: str = "micro_batch_size") -> None:
    """FieldError, about the micro-batch, when `batch` is not whole micro-batches on
    each of `world` ranks; about the batch when no micro-batch could split it."""
    ranks = _ranks(world)
    if batch % world:
        raise FieldError(batch_field, batch, f"{ranks} cannot share it evenly; give a "
                                             f"multiple of {world}")
    if (batch // world) % micro:
        per_rank = batch // world
        raise FieldError(micro_field, micro,
                         f"does not split {batch_field}={batch} on {ranks} ({per_rank} per "
                         f"rank) into whole micro-batches; give a --micro-batch-size that "
                         f"divides {per_rank}, or a --batch-size that is a multiple of "
                         f"{micro * world}", related={batch_field: batch})


def fitted(batch: int, micro: int, world: int) -> int:
    """The largest micro-batch, at most `micro`, that splits `batch` evenly over `world`
    ranks (`batch` a multiple of `world`)."""
    per_rank = batch // world
    return next(m for m in range(min(micro, per_rank), 0, -1) if per_rank % m == 0)


def fit_micro_batches(values: dict[str, Any], defaults: dict[str, int],
                      provenance: Provenance, world: int) -> None:
    """In place, before the config is built: each micro-batch (the run's, or each phase's)
    that the user did not give and that does not split its batch lowered to one that does,
    with one line logged; one the user gave, or a batch no micro-batch splits, a
    FieldError. `defaults`: the config's batch_size and micro_batch_size, where `values`
    has none. Values of the wrong type or sign are left to the config's own checks."""
    batch: Any = values.get("batch_size", defaults["batch_size"])
    micro: Any = values.get("micro_batch_size", defaults["micro_batch_size"])
    batch_key, micro_key = "batch_size", "micro_batch_size"
    entries = _entries(values)
    for k, entry in enumerate(entries or [{}], start=1 if entries else 0):
        if "batch_size" in entry:
            batch, batch_key = entry["batch_size"], f"phases.{k}.batch_size"
        if "micro_batch_size" in entry:
            micro, micro_key = entry["micro_batch_size"], f"phases.{k}.micro_batch_size"
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                   for v in (batch, micro)):
            return
        if provenance.explicit(micro_key) or batch % world:
            check_split(batch, micro, world, batch_key, micro_key)
            continue
        lowered = fitted(batch, micro, world)
        if lowered != micro:
            _say_lowered(f"phase {k}: " if k else "", lowered,
                         provenance.spell(micro_key, micro), provenance.spell(batch_key, batch),
                         world)
            _set_micro(values, k, lowered)
            micro = lowered


def _entries(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The phases' entries, when they are mappings (a malformed plan is phases.py's to
    report)."""
    phases = values.get("phases") or []
    if not isinstance(phases, list) or not all(isinstance(e, dict) for e in phases):
        return []
    return phases


def _set_micro(values: dict[str, Any], k: int, micro: int) -> None:
    """The lowered micro-batch: the run's (k 0: no phases), else phase k's entry's, which
    the phases after it inherit (a copy: the plan stays as it was read)."""
    if k == 0:
        values["micro_batch_size"] = micro
        return
    phases = list(values["phases"])
    phases[k - 1] = {**phases[k - 1], "micro_batch_size": micro}
    values["phases"] = phases


def _say_lowered(where: str, lowered: int, micro_from: str, batch_from: str,
                 world: int) -> None:
    if os.environ.get("RANK", "0") == "0":  # one line per run, not one per rank
        log.info("%s%s does not split %s on %s: micro-batch lowered to %d "
                 "(--micro-batch-size N chooses another)", where, micro_from, batch_from,
                 _ranks(world), lowered)


def _ranks(world: int) -> str:
    return f"{world} rank{'s' if world > 1 else ''}"
