"""Resumable training state on disk, as opposed to an exported model (model/hub.py).

    RUN_DIR/checkpoints/step-00000100/
        state.json          step, data position, counters, the run's config and world size,
                            "format", and "files": the size and sha256 of every other file
        rng-rank{R}.pt      rank R's torch CPU (and CUDA) generator states
        objective-rank{R}.safetensors   rank R's objective state (memories, ...), if any
      "format": "sharded" (every run: one process, DDP, FSDP), torch.distributed.checkpoint:
        .metadata, __R_0.distcp   model + optimizer, keyed by the model's own parameter
                            names; rank R writes file R: its FSDP shards, or under DDP its
                            half of the tensors every rank holds (DCP gives each replicated
                            tensor to one rank). Loadable on any number of processes.
        scheduler.pt        LR-scheduler state
      "format": "full" (written by earlier releases for one process and DDP; still read):
        model.safetensors   the training model's own state dict (our parameter names)
        optimizer.pt        optimizer + LR-scheduler state

Every rank writes into `step-N.tmp/`; rank 0 adds state.json once all have finished and
renames the directory into place (litebert.files.atomic_directory), so a kill at any moment
leaves the previous checkpoints intact and `.tmp` directories are never listed. Writing is
start() then commit(): between the two a background thread may still be writing the model
and optimizer (async saving), and the checkpoint stays invisible until commit() has hashed
it. Opening a checkpoint compares its files' sizes with state.json; resuming and exporting
compare their checksums too, so a copy cut short or a flipped byte is an error naming the
file, and `--resume auto` skips such a checkpoint for the newest intact one. Nothing is
unpickled freely: `.pt` files are read with weights_only=True, DCP's pickled `.metadata`
through an allowlist of the classes it is made of.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import io
import json
import logging
import pickle
import re
import shutil
import warnings
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import IO, Any, cast

import torch
import torch.distributed.checkpoint as dcp
from safetensors.torch import load_file, save_file
from torch.distributed.checkpoint import DefaultLoadPlanner

from litebert.distributed import (
    agree_on_write,
    all_gather_objects,
    barrier,
    broadcast_object,
    rank_and_world,
)
from litebert.files import atomic_directory, damaged_files, describe_files, follow_umask
from litebert.model.previous_names import (
    current_key,
    holds_previous_names,
    previous_key,
    rename_tree,
)
from litebert.write_errors import explained_write, human_size, tree_size

log = logging.getLogger("litebert")
# One process saving or loading without a process group is intended (every one-process run
# checkpoints through DCP); DCP warns about it each time, from the writing thread too.
warnings.filterwarnings("ignore", category=UserWarning,
                        message="torch.distributed is disabled, unavailable or uninitialized")

_STEP_DIR = re.compile(r"^step-(\d+)$")


class CheckpointNotFound(FileNotFoundError):
    pass


class DamagedCheckpoint(ValueError):
    """A checkpoint whose files differ from what it recorded; the message names them."""


def checkpoint_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "checkpoints"


def step_of(path: Path) -> int:
    """The step of checkpoint directory `path` (step-00000100 -> 100)."""
    found = _STEP_DIR.match(Path(path).name)
    if found is None:
        raise CheckpointNotFound(f"{path}: not a checkpoint directory (step-NNNNNNNN)")
    return int(found.group(1))


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
    if rank_and_world()[0] == 0:
        log.info("%s: no checkpoint yet, starting from step 0", run_dir)
    return None


def _warn(message: str) -> None:
    if rank_and_world()[0] == 0:  # every rank finds the same; one line is enough
        log.warning(message)


# ---- writing --------------------------------------------------------------------------------

@dataclasses.dataclass
class Pending:
    """A checkpoint started but not committed: its files are going into `directory`
    (step-N.tmp). `writing` is the future of a background write still under way, if any."""

    run_dir: Path
    final: Path
    directory: Path
    train_state: dict[str, Any]
    keep_last: int
    writing: Future | None
    # Rank 0's atomic_directory, left open: closing it renames the directory into place.
    stack: contextlib.ExitStack

    def written(self) -> bool:
        """Whether this rank's files are all on disk (commit() would not wait)."""
        return self.writing is None or self.writing.done()


def write(run_dir: Path, step: int, fill: Callable[[Path], Future | None],
          train_state: dict[str, Any], keep_last: int = 3) -> Path:
    """Checkpoint `step`, written by all ranks together (every rank calls this).

    `fill(directory)` writes this rank's files there; each rank adds its RNG state. Once all
    are done the ranks hash the files between them, rank 0 records them in state.json and
    renames the directory into place, then deletes all but the newest `keep_last`.
    """
    return commit(start(run_dir, step, fill, train_state, keep_last))


def start(run_dir: Path, step: int, fill: Callable[[Path], Future | None],
          train_state: dict[str, Any], keep_last: int = 3) -> Pending:
    """The first half of write(): make `step-N.tmp`, fill it and add this rank's RNG state.
    `fill` may return a future (a write it left to a thread); commit() waits for it. A
    collective: every rank calls it."""
    rank, _ = rank_and_world()
    final = checkpoint_dir(run_dir) / f"step-{step:08d}"
    with contextlib.ExitStack() as stack:  # on an error here rank 0 removes step-N.tmp
        tmp = stack.enter_context(atomic_directory(final)) if rank == 0 else None
        tmp = Path(broadcast_object(str(tmp) if tmp else None))  # where rank 0 made it
        # A failed write (full disk...) is one sentence on every rank (explained_checkpoint).
        with explained_checkpoint(run_dir, final, step):
            writing = fill(tmp)
            save_pt(rng_state(), tmp / rng_file(rank))
        pending = Pending(Path(run_dir), final, tmp, train_state, keep_last, writing,
                          stack.pop_all())  # handed on: nothing left to undo here
    return pending


def commit(pending: Pending) -> Path:
    """The second half of write(): wait for this rank's files, hash them all between the
    ranks, record them in state.json, rename the directory into place and prune. A
    collective: every rank calls it at the same point. If a write failed (or anything here
    does), the `.tmp` directory is removed and the error raised, one sentence on every rank:
    the previous checkpoints are untouched."""
    rank, _ = rank_and_world()
    explained = partial(explained_checkpoint, pending.run_dir, pending.final,
                        pending.train_state["step"])
    # The inner block's inside the atomic directory, which then removes step-N.tmp; the
    # outer one's for the rename.
    with explained(), pending.stack:  # leaving the stack renames step-N.tmp (rank 0)
        with explained():
            if pending.writing is not None:
                pending.writing.result()  # raises what the background write raised
            files = _describe_together(pending.directory)
            if rank == 0:
                (pending.directory / "state.json").write_text(json.dumps(
                    {**pending.train_state, "files": files}, indent=2, sort_keys=True) + "\n")
    if rank == 0:
        prune(pending.run_dir, pending.keep_last, pending.train_state.get("run_id"),
              pending.train_state.get("adopts_unnamed", False))
    barrier()  # nobody goes on (or reads the checkpoint) before it is in place
    return pending.final


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
                           after=lambda: resume_advice(run_dir), agree=agree_on_write)


def resume_advice(run_dir: Path) -> str:
    """What a run stopped by a failed write can resume from: its newest intact checkpoint."""
    newest = latest(run_dir)
    if newest is None:
        return ("nothing complete was damaged, but no checkpoint was written before it: free "
                "some space, then start the run again")
    return (f"nothing complete was damaged and the newest intact checkpoint is {newest}: free "
            f"some space, then run the same command again: it continues from there")


def _describe_together(directory: Path) -> dict[str, dict[str, Any]]:
    """{name: size and sha256} of every file in `directory`, each rank hashing a share."""
    barrier()  # every rank's files are complete
    rank, world = rank_and_world()
    names = sorted(p.name for p in directory.iterdir() if p.is_file())
    merged: dict[str, dict[str, Any]] = {}
    for part in all_gather_objects(describe_files(directory, names[rank::world])):
        merged.update(part)
    return merged


def prune(run_dir: Path, keep_last: int, run_id: str | None = None,
          adopts_unnamed: bool = False) -> None:
    """Delete all but the newest `keep_last` checkpoints of run `run_id` (any, for None),
    and leftovers of killed writes. Checkpoints of another run are kept, and said once."""
    root = checkpoint_dir(run_dir)
    mine: list[Path] = []
    theirs: list[Path] = []
    for path in list_checkpoints(run_dir):
        owner = run_id_of(path)
        same = run_id is None or owner == run_id or (owner is None and adopts_unnamed)
        (mine if same else theirs).append(path)
    old = mine[:-keep_last] if keep_last > 0 else []
    leftovers = [*root.glob("step-*.tmp"), *root.glob("step-*.old")]
    for path in old + leftovers:
        shutil.rmtree(path, ignore_errors=True)
    unsaid = [p for p in theirs if p not in _SAID_FOREIGN]
    if unsaid:
        _SAID_FOREIGN.update(unsaid)
        log.warning("kept %s: checkpoint(s) of another run, which pruning never deletes; "
                    "move or delete them yourself", ", ".join(str(p) for p in unsaid))


_SAID_FOREIGN: set[Path] = set()  # foreign checkpoints already named in the log


def run_id_of(path: Path) -> str | None:
    """The id of the run that wrote checkpoint `path` (None: written before runs had ids,
    or unreadable)."""
    try:
        record = json.loads((Path(path) / "state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record.get("run_id") if isinstance(record, dict) else None


def save_full(directory: Path, model_state: dict[str, torch.Tensor],
              optim_state: dict[str, Any]) -> None:
    """The files of format "full" (one writer, every reader loads them whole), which runs do
    not write: it stays beside its reader so that tests and the checkpoint benchmark can make
    one as earlier releases did."""
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
    """A "full" checkpoint's model state under today's parameter names (current_key)."""
    return {current_key(k): v for k, v in load_file(Path(path) / "model.safetensors").items()}


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
        follow_umask(directory / objective_file(rank))


def load_objective_state(path: Path, rank: int) -> dict[str, torch.Tensor]:
    """Rank `rank`'s objective state; {} when the checkpoint has none at all. State saved per
    rank cannot be split or merged: on another number of processes (fewer too, where every
    rank would find a file and the others' state would be lost unseen) an error naming the
    checkpoint."""
    saved = [int(p.name[len("objective-rank"):-len(".safetensors")])
             for p in Path(path).glob("objective-rank*.safetensors")]
    world = rank_and_world()[1]
    if saved and max(saved) >= world:
        raise DamagedCheckpoint(f"{path}: the objective's state was saved by {max(saved) + 1} "
                                f"processes, one file each, and this run has {world}; resume "
                                f"with the number of processes that wrote it")
    mine = Path(path) / objective_file(rank)
    if mine.is_file():
        return load_file(mine)
    if saved:
        raise DamagedCheckpoint(f"{path}: the objective's state was saved by other ranks, "
                                f"none for rank {rank}; resume with the number of processes "
                                f"that wrote it")
    return {}


# ---- sharded (torch.distributed.checkpoint) -------------------------------------------------

def save_sharded(state_dict: dict[str, Any], directory: Path) -> None:
    """This rank's share of `state_dict`; a collective, every rank calls it. Tensors that
    several ranks hold alike (DDP's replicas) are written once, by one of them."""
    dcp.save(state_dict, storage_writer=dcp.FileSystemWriter(directory))


def save_sharded_async(state_dict: dict[str, Any], directory: Path, group=None) -> Future:
    """save_sharded, but returning once `state_dict` is copied to host memory: a thread
    writes the copy meanwhile (the future says when it is done). Its collectives go over
    `group`, which must not be the one training uses: two threads issuing collectives on one
    group could interleave them differently on different ranks."""
    return cast(Future, dcp.async_save(state_dict, process_group=group,
                                       storage_writer=dcp.FileSystemWriter(directory)))


def load_sharded(state_dict: dict[str, Any], path: Path) -> None:
    """Fill `state_dict` from a sharded checkpoint, resharded to its tensors' layout (DTensor
    shards under FSDP, whole tensors otherwise); with or without a process group. A checkpoint
    of the previous release (the backbone under `albert.`) is read through its names: the
    state dict is renamed to them in place for the load, and back."""
    saved = set(_check_metadata(Path(path) / ".metadata").state_dict_metadata)
    previous = holds_previous_names(saved)
    if previous:
        rename_tree(state_dict, previous_key)
    try:
        dcp.load(state_dict, storage_reader=dcp.FileSystemReader(path),
                 planner=_safe_load_planner())
    finally:
        if previous:
            rename_tree(state_dict, current_key)


def _safe_load_planner():
    """DCP's planner, but the non-tensor values (param-group hyper-parameters) are vetted
    with weights_only=True before DCP unpickles them its own (unrestricted) way."""
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


def saved_keys(path: Path) -> set[str]:
    """The flattened keys a sharded checkpoint holds ("optimizer.state.FQN.step", ...), read
    from its .metadata through the allowlist, under today's parameter names (current_key)."""
    return {current_key(k) for k in _check_metadata(Path(path) / ".metadata").state_dict_metadata}


def _check_metadata(path: Path) -> Any:
    """Unpickle DCP's .metadata through the allowlist before DCP reads it itself; returns it."""
    try:
        with open(path, "rb") as f:
            return _MetadataUnpickler(f).load()
    except FileNotFoundError:
        raise DamagedCheckpoint(f"{path}: missing; not a complete sharded checkpoint") from None
    except pickle.UnpicklingError as err:
        raise DamagedCheckpoint(f"{path}: holds {err}, which checkpoint metadata never does; "
                                f"not loading it (unpickling it could run code)") from None
    except (EOFError, ImportError, ValueError, TypeError, AttributeError) as err:
        raise DamagedCheckpoint(f"{path}: unreadable ({err})") from None
