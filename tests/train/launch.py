"""Launching pre-training runs as a cluster does, for the fault tests: the CLI in a
subprocess, torchrun with its options, waiting for a step, finding a rank's process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.pretrain import MICRO_MODEL

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def pretrain_args(data_dir: Path, out: Path, steps: int, micro: int, *extra: str) -> list[str]:
    """`litebert pretrain` arguments: the micro model, global batch 8 in micro-batches of
    `micro` per rank, a log line every step, a checkpoint every 4 steps, no evaluation, no
    export."""
    return ["pretrain", "--data", str(data_dir), "--out", str(out), "--max-steps", str(steps),
            "--set", "model=tiny", "--set", f"model_overrides={json.dumps(MICRO_MODEL)}",
            "--batch-size", "8", "--micro-batch-size", str(micro), "--lr", "0.01",
            "--warmup-steps", "2", "--log-every", "1", "--eval-every", "1000",
            "--save-every", "4", "--seed", "7", "--no-export", *extra]


def litebert(*args: str) -> list[str]:
    return [sys.executable, "-m", "litebert.cli", *args]


def torchrun(nproc: int, *args: str, launcher: tuple[str, ...] = ("--standalone",)) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *launcher, "--nproc-per-node",
            str(nproc), "-m", "litebert.cli", *args]


def run(command: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-6000:]
    return done


def start(command: list[str], **popen) -> subprocess.Popen:
    """In a session of its own, so that os.killpg reaches it and every process it starts,
    as a scheduler signals a whole job; `popen`: cwd, env (default ENV)."""
    return subprocess.Popen(command, **{"env": ENV, **popen}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for_step(proc: subprocess.Popen, run_dir: Path, step: int, timeout: float = 180):
    """Until RUN_DIR/metrics.jsonl holds `step` (the process must still be running)."""
    metrics = Path(run_dir) / "metrics.jsonl"
    deadline = time.time() + timeout
    while time.time() < deadline:
        if metrics.exists() and f'"step": {step},' in metrics.read_text():
            return
        assert proc.poll() is None, proc.communicate()[1][-6000:]
        time.sleep(0.005)
    raise AssertionError(f"step {step} was never logged")


def rank_pid(parent: int, rank: int) -> int:
    """The process of torchrun `parent` whose environment says RANK=`rank`."""
    for child in Path(f"/proc/{parent}/task/{parent}/children").read_text().split():
        environ = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
        if f"RANK={rank}".encode() in environ:
            return int(child)
    raise AssertionError(f"no rank {rank} under process {parent}")
