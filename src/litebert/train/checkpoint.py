"""Resumable training state, as opposed to an exported model (model/hub.py).

    RUN_DIR/checkpoints/step-00000100/
        model.safetensors   the training model's own state dict (our parameter names)
        optimizer.pt        optimizer + LR-scheduler state, read with weights_only=True
        rng.pt              torch CPU (and CUDA) generator states, weights_only=True
        state.json          step, data position, counters, the run's config

A checkpoint is written into `step-N.tmp/` and renamed to `step-N/` only when complete, so a
kill at any moment leaves either the previous checkpoint or both; `latest()` ignores `.tmp`
directories. Only plain tensors and containers are stored: nothing here is ever unpickled.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

log = logging.getLogger("litebert")

_STEP_DIR = re.compile(r"^step-(\d+)$")


class CheckpointNotFound(FileNotFoundError):
    pass


def checkpoint_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "checkpoints"


def list_checkpoints(run_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first."""
    root = checkpoint_dir(run_dir)
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir()
             if (m := _STEP_DIR.match(p.name)) and (p / "state.json").is_file()]
    return [p for _, p in sorted(found)]


def latest(run_dir: Path) -> Path | None:
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


def rng_state() -> dict[str, Any]:
    state = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["cpu"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save(run_dir: Path, step: int, model_state: dict[str, torch.Tensor],
         optim_state: dict[str, Any], train_state: dict[str, Any], keep_last: int = 3) -> Path:
    """Write checkpoint `step` atomically, then delete all but the newest `keep_last`."""
    root = checkpoint_dir(run_dir)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:08d}"
    tmp = root / f"step-{step:08d}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    tensors = {k: v.detach().contiguous().cpu() for k, v in model_state.items()}
    save_file(tensors, tmp / "model.safetensors", {"format": "pt"})
    torch.save(optim_state, tmp / "optimizer.pt")
    torch.save(rng_state(), tmp / "rng.pt")
    (tmp / "state.json").write_text(json.dumps(train_state, indent=2, sort_keys=True) + "\n")
    _fsync_dir(tmp)
    if final.exists():  # a re-save of the same step (e.g. the final one): replace it
        shutil.rmtree(final)
    os.replace(tmp, final)
    _fsync_dir(root)
    for old in list_checkpoints(run_dir)[:-keep_last] if keep_last > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _fsync_dir(path: Path) -> None:
    """Make the files (and the rename) durable before the old checkpoints go."""
    for child in list(path.iterdir()) + [path]:
        try:
            fd = os.open(child, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)


def load(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, Any], dict[str, Any],
                              dict[str, Any]]:
    """(model state, optimizer state, rng state, train state) of one checkpoint."""
    path = Path(path)
    if not (path / "state.json").is_file():
        raise CheckpointNotFound(f"{path}: not a complete checkpoint (no state.json)")
    model = load_file(path / "model.safetensors")
    optim = torch.load(path / "optimizer.pt", map_location="cpu", weights_only=True)
    rng = torch.load(path / "rng.pt", map_location="cpu", weights_only=True)
    state = json.loads((path / "state.json").read_text())
    return model, optim, rng, state


def resolve_resume(run_dir: Path, resume: str | None) -> Path | None:
    """`--resume auto` -> the newest checkpoint of RUN_DIR (None if there is none yet);
    a path -> that checkpoint; None -> start fresh."""
    if not resume:
        return None
    if resume == "auto":
        found = latest(run_dir)
        if found is None:
            log.info("%s: no checkpoint yet, starting from step 0", run_dir)
        return found
    path = Path(resume)
    if not (path / "state.json").is_file():
        raise CheckpointNotFound(f"--resume {resume}: not a checkpoint directory "
                                 f"(expected {path}/state.json)")
    return path
