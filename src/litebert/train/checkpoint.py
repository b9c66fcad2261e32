"""Resumable training state on disk, as opposed to an exported model (model/hub.py).

    RUN_DIR/checkpoints/step-00000100/
        state.json          step, data position, counters, the run's config and world size,
                            "format", and "files": the size and sha256 of every other file
        rng-rank{R}.pt      rank R's torch CPU (and CUDA) generator states
        objective-rank{R}.safetensors   rank R's objective state (memories, ...), if any
      "format": "full" (one process, DDP), written by rank 0:
        model.safetensors   the training model's own state dict (our parameter names)
        optimizer.pt        optimizer + LR-scheduler state
      "format": "sharded" (FSDP), torch.distributed.checkpoint, every rank its own shard:
        .metadata, __R_0.distcp   model + optimizer, loadable on any number of processes
        scheduler.pt        LR-scheduler state

Every rank writes into `step-N.tmp/`; rank 0 adds state.json once all have finished and
renames the directory into place (litebert.files.atomic_directory), so a kill at any moment
leaves the previous checkpoints intact and `.tmp` directories are never listed. Opening a
checkpoint compares its files' sizes with state.json; resuming and exporting compare their
checksums too, so a copy cut short or a flipped byte is an error naming the file, and
`--resume auto` skips such a checkpoint for the newest intact one. Nothing is unpickled
freely: `.pt` files are read with weights_only=True, DCP's pickled `.metadata` through an
allowlist of the classes it is made of.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import logging
import pickle
import re
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, cast

import torch
from safetensors.torch import load_file, save_file

from litebert.distributed import (
    all_gather_objects,
    barrier,
    broadcast_object,
    rank_and_world,
)
from litebert.files import atomic_directory, damaged_files, describe_files
from litebert.write_errors import explained_write, human_size, tree_size

log = logging.getLogger("litebert")

_STEP_DIR = re.compile(r"^step-(\d+)$")


class CheckpointNotFound(FileNotFoundError):
    pass


class DamagedCheckpoint(ValueError):
    """A checkpoint whose files differ from what it recorded; the message names them."""


def checkpoint_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "checkpoints"


def list_checkpoints(run_dir: Path) -> list[Path]:
    """Complete checkpoints (intact or not), oldest first."""
    root = checkpoint_dir(run_dir)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir()
             if (m := _STEP_DIR.match(p.name)) and (p / "state.json").is_file()]
    return [p for _, p in sorted(found)]


# ---- integrity ------------------------------------------------------------------------------

def problems(path: Path, checksums: bool = False) -> list[str]:
    """One "file: what is wrong" line per damaged file of checkpoint `path`; [] if intact.

    Sizes are always compared; with `checksums` every byte is hashed too, the files shared
    out over the ranks (every rank must call this then, and all get the same answer).
    """
    state_file = Path(path) / "state.json"
    try:
        recorded = json.loads(state_file.read_text(encoding="utf-8")).get("files")
    except FileNotFoundError:
        return [f"{state_file}: missing"]
    except (ValueError, AttributeError):  # bad JSON / UTF-8, or not an object
        return [f"{state_file}: not a valid state.json (cut short or overwritten)"]
    if recorded is None:
        return []  # written before checkpoints recorded their files: nothing to compare
    if not isinstance(recorded, dict):
        return [f"{state_file}: its \"files\" record is not a mapping (overwritten?)"]
    if not checksums:
        return damaged_files(path, recorded, checksums=False)
    rank, world = rank_and_world()
    mine = sorted(recorded)[rank::world]
    found = all_gather_objects(damaged_files(path, {k: recorded[k] for k in mine}, True))
    return sorted(line for lines in found for line in lines)


def verify(path: Path, checksums: bool = False) -> dict[str, Any]:
    """The state.json of checkpoint `path`, after checking its files (see problems())."""
    path = Path(path)
    found = problems(path, checksums)
    if found:
        raise DamagedCheckpoint(
            f"{path} is damaged: {'; '.join(found)}. Delete this checkpoint (the one "
            f"before it then comes first) or put back an intact copy")
    return json.loads((path / "state.json").read_text(encoding="utf-8"))


def latest(run_dir: Path) -> Path | None:
    """The newest checkpoint whose files have their recorded sizes (a cheap check)."""
    for path in reversed(list_checkpoints(run_dir)):
        found = problems(path)
        if not found:
            return path
        _warn(f"skipping the damaged checkpoint {path}: {'; '.join(found)}")
    return None


def resolve_resume(run_dir: Path, resume: str | None) -> Path | None:
    """`--resume auto` -> the newest intact checkpoint of RUN_DIR (None if there is none
    yet; damaged ones are skipped with a warning); a path -> that checkpoint, which must be
    intact; None -> start fresh. Every rank calls this (they share the checksumming)."""
    if not resume:
        return None
    if resume != "auto":
        path = Path(resume)
        if not (path / "state.json").is_file():
            raise CheckpointNotFound(f"--resume {resume}: not a checkpoint directory "
                                     f"(expected {path}/state.json)")
        verify(path, checksums=True)
        return path
    found = list_checkpoints(run_dir)
    for path in reversed(found):
        damaged = problems(path, checksums=True)
        if not damaged:
            return path
        _warn(f"--resume auto: skipping the damaged checkpoint {path}: {'; '.join(damaged)}")
    if found:  # starting over silently would throw the whole run away
        raise DamagedCheckpoint(f"--resume auto: every checkpoint of {run_dir} is damaged "
                                f"(see above); restore one, or delete "
                                f"{checkpoint_dir(run_dir)} to start from step 0")
    log.info("%s: no checkpoint yet, starting from step 0", run_dir)
    return None


def _warn(message: str) -> None:
    if rank_and_world()[0] == 0:  # every rank finds the same; one line is enough
        log.warning(message)


# ---- writing --------------------------------------------------------------------------------

def write(run_dir: Path, step: int, fill: Callable[[Path], None], train_state: dict[str, Any],
          keep_last: int = 3) -> Path:
    """Checkpoint `step`, written by all ranks together (every rank calls this).

    `fill(directory)` writes this rank's files there; each rank adds its RNG state. Once all
    are done the ranks hash the files between them, rank 0 records them in state.json and
    renames the directory into place, then deletes all but the newest `keep_last`.
    """
    rank, _ = rank_and_world()
    final = checkpoint_dir(run_dir) / f"step-{step:08d}"
    # A failed write (full disk...) is one sentence on every rank (explained_checkpoint): the
    # inner block's inside atomic_directory, which then removes the partial directory; the
    # outer one's for state.json and the rename.
    with explained_checkpoint(run_dir, final, step), contextlib.ExitStack() as stack:
        tmp = stack.enter_context(atomic_directory(final)) if rank == 0 else None
        tmp = Path(broadcast_object(str(tmp) if tmp else None))  # where rank 0 made it
        with explained_checkpoint(run_dir, final, step):
            fill(tmp)
            save_pt(rng_state(), tmp / rng_file(rank))
        files = _describe_together(tmp)
        if rank == 0:
            (tmp / "state.json").write_text(json.dumps({**train_state, "files": files},
                                                       indent=2, sort_keys=True) + "\n")
    if rank == 0:
        prune(run_dir, keep_last)
    barrier()  # nobody goes on (or reads the checkpoint) before it is in place
    return final


def explained_checkpoint(run_dir: Path, final: Path, step: int
                         ) -> contextlib.AbstractContextManager[None]:
    """A block of writing checkpoint `step` (to become `final`), entered by every rank: a
    failed write in it is a WriteFailed on all of them naming the checkpoint, about the size
    of the newest one as the space needed, and the newest intact one to resume from."""
    def needed() -> str | int | None:
        newest = latest(run_dir)
        if newest is not None:
            return tree_size(newest)
        written = tree_size(final.with_name(final.name + ".tmp"))  # gone once it is removed
        return f"more than the {human_size(written)} written before it failed" if written \
            else None
    return explained_write(final, f"checkpoint step {step}", needed=needed,
                           after=lambda: resume_advice(run_dir), together=True)


def resume_advice(run_dir: Path) -> str:
    """What a run stopped by a failed write can resume from: its newest intact checkpoint."""
    newest = latest(run_dir)
    if newest is None:
        return ("nothing complete was damaged, but no checkpoint was written before it: free "
                "some space, then start the run again")
    return (f"nothing complete was damaged and the newest intact checkpoint is {newest}: free "
            f"some space, then rerun with --resume auto")


def _describe_together(directory: Path) -> dict[str, dict[str, Any]]:
    """{name: size and sha256} of every file in `directory`, each rank hashing a share."""
    barrier()  # every rank's files are complete
    rank, world = rank_and_world()
    names = sorted(p.name for p in directory.iterdir() if p.is_file())
    merged: dict[str, dict[str, Any]] = {}
    for part in all_gather_objects(describe_files(directory, names[rank::world])):
        merged.update(part)
    return merged


def prune(run_dir: Path, keep_last: int) -> None:
    """Delete all but the newest `keep_last` checkpoints, and leftovers of killed writes."""
    root = checkpoint_dir(run_dir)
    old = list_checkpoints(run_dir)[:-keep_last] if keep_last > 0 else []
    leftovers = [*root.glob("step-*.tmp"), *root.glob("step-*.old")]
    for path in old + leftovers:
        shutil.rmtree(path, ignore_errors=True)


def save_full(directory: Path, model_state: dict[str, torch.Tensor],
              optim_state: dict[str, Any]) -> None:
    tensors = {k: v.detach().contiguous().cpu() for k, v in model_state.items()}
    save_file(tensors, directory / "model.safetensors", {"format": "pt"})
    save_pt(optim_state, directory / "optimizer.pt")


def save_pt(obj: Any, path: Path) -> None:
    """torch.save to `path` through a Python file: torch's own file writer reports a failed
    write (a full disk) as "unexpected pos", the OS error lost; this raises that OSError."""
    try:
        with open(path, "wb") as file:
            stream = _KeepsWriteError(file)
            try:
                torch.save(obj, cast(IO[bytes], stream))  # it only writes and flushes
            except RuntimeError:
                if stream.error is None:
                    raise
                raise stream.error from None
    except OSError as err:
        err.filename = str(path)  # which of a checkpoint's files, for the message
        raise


class _KeepsWriteError:
    """A writable stream that remembers the OSError of a failed write (torch.save replaces
    it with a RuntimeError of its own)."""

    def __init__(self, file: Any) -> None:
        self.file = file
        self.error: OSError | None = None

    def write(self, data: Any) -> int:
        try:
            return self.file.write(data)
        except OSError as err:
            self.error = err
            raise

    def flush(self) -> None:
        self.file.flush()


def load_model_file(path: Path) -> dict[str, torch.Tensor]:
    return load_file(Path(path) / "model.safetensors")


def load_pt(path: Path) -> Any:
    """A `.pt` file of plain tensors and containers (optimizer, scheduler, RNG state)."""
    return torch.load(path, map_location="cpu", weights_only=True)


# ---- RNG ------------------------------------------------------------------------------------

def rng_file(rank: int) -> str:
    return f"rng-rank{rank}.pt"


def rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {"cpu": torch.get_rng_state()}  # "cuda": one per device
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["cpu"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def load_rng(path: Path, rank: int) -> dict[str, Any]:
    """This rank's generator states. A rank the saved run did not have takes rank 0's (the
    run then differs from an uninterrupted one anyway); rng.pt is the pre-per-rank name."""
    for name in (rng_file(rank), "rng.pt", rng_file(0)):
        if (Path(path) / name).is_file():
            return load_pt(Path(path) / name)
    raise DamagedCheckpoint(f"{path}: no {rng_file(rank)}; not a complete checkpoint")


# ---- the objective's state -------------------------------------------------------------------

def objective_file(rank: int) -> str:
    return f"objective-rank{rank}.safetensors"


def save_objective_state(directory: Path, rank: int, state: dict[str, torch.Tensor]) -> None:
    """Rank `rank`'s objective state (Objective.state_dict); nothing when it is empty."""
    if state:
        tensors = {k: v.detach().contiguous().cpu() for k, v in state.items()}
        save_file(tensors, directory / objective_file(rank), {"format": "pt"})


def load_objective_state(path: Path, rank: int) -> dict[str, torch.Tensor]:
    """Rank `rank`'s objective state; {} when the checkpoint has none at all. State saved by
    other ranks only cannot be split or merged: an error naming the checkpoint."""
    mine = Path(path) / objective_file(rank)
    if mine.is_file():
        return load_file(mine)
    if any(Path(path).glob("objective-rank*.safetensors")):
        raise DamagedCheckpoint(f"{path}: the objective's state was saved by other ranks, "
                                f"none for rank {rank}; resume with the number of processes "
                                f"that wrote it")
    return {}


# ---- sharded (torch.distributed.checkpoint) -------------------------------------------------

def save_sharded(state_dict: dict[str, Any], directory: Path) -> None:
    """This rank's shards of `state_dict`; a collective, every rank calls it."""
    import torch.distributed.checkpoint as dcp

    dcp.save(state_dict, storage_writer=dcp.FileSystemWriter(directory))


def load_sharded(state_dict: dict[str, Any], path: Path) -> None:
    """Fill `state_dict` from a sharded checkpoint, resharded to its tensors' layout (DTensor
    shards under FSDP, whole tensors otherwise); with or without a process group."""
    import torch.distributed.checkpoint as dcp

    _check_metadata(Path(path) / ".metadata")
    with warnings.catch_warnings():  # one process without a process group is intended
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        dcp.load(state_dict, storage_reader=dcp.FileSystemReader(path),
                 planner=_safe_load_planner())


def _safe_load_planner():
    """DCP's planner, but the non-tensor values (param-group hyper-parameters) are vetted
    with weights_only=True before DCP unpickles them its own (unrestricted) way."""
    import io

    from torch.distributed.checkpoint import DefaultLoadPlanner

    class SafeLoadPlanner(DefaultLoadPlanner):
        def load_bytes(self, read_item, value: io.BytesIO) -> None:
            data = value.getvalue()
            torch.load(io.BytesIO(data), weights_only=True)  # raises on anything but data
            super().load_bytes(read_item, io.BytesIO(data))

    return SafeLoadPlanner()


_METADATA_GLOBALS = {("torch", "Size"), ("torch.serialization", "_get_layout"),
                     ("collections", "OrderedDict"), ("builtins", "set"),
                     ("builtins", "frozenset"), ("pathlib", "PosixPath"),
                     ("pathlib", "WindowsPath"), ("pathlib._local", "PosixPath"),
                     ("pathlib._local", "WindowsPath")}


class _MetadataUnpickler(pickle.Unpickler):
    """Admits only what DCP's metadata is made of: its own dataclasses and enums, torch
    sizes, dtypes and layouts, paths. Anything else could run code when unpickled."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _METADATA_GLOBALS or (
                module == "torch" and isinstance(getattr(torch, name, None), torch.dtype)):
            return super().find_class(module, name)
        if module.startswith("torch.distributed.checkpoint.") and name.isidentifier():
            found = super().find_class(module, name)
            if dataclasses.is_dataclass(found) or (isinstance(found, type)
                                                   and issubclass(found, enum.Enum)):
                return found
        raise pickle.UnpicklingError(f"{module}.{name}")


def _check_metadata(path: Path) -> None:
    """Unpickle DCP's .metadata through the allowlist before DCP reads it itself."""
    try:
        with open(path, "rb") as f:
            _MetadataUnpickler(f).load()
    except FileNotFoundError:
        raise DamagedCheckpoint(f"{path}: missing; not a complete sharded checkpoint") from None
    except pickle.UnpicklingError as err:
        raise DamagedCheckpoint(f"{path}: holds {err}, which checkpoint metadata never does; "
                                f"not loading it (unpickling it could run code)") from None
    except (EOFError, ImportError, ValueError, TypeError, AttributeError) as err:
        raise DamagedCheckpoint(f"{path}: unreadable ({err})") from None
