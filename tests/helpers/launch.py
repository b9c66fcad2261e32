"""Launching runs as a cluster does: the CLI in a subprocess, torchrun with its options
(for the tests whose subject is torchrun: its signals, restarts and nodes), waiting for a
step, finding a rank's process; and `run_ranks`, a command on N gloo processes started as
torchrun starts its ranks, for the tests whose subject is what the ranks compute."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.helpers.pretrain import MICRO_MODEL, run_here

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


def kill_once_logged(command: list[str], env: dict, run_dir: Path, step: int) -> None:
    """Start a run and SIGKILL it as soon as RUN_DIR/metrics.jsonl holds `step`."""
    proc = start(command, env=env)
    wait_for_step(proc, run_dir, step, timeout=120)
    proc.kill()
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it was killed"


def rank_pid(parent: int, rank: int) -> int:
    """The process of torchrun `parent` whose environment says RANK=`rank`."""
    for child in Path(f"/proc/{parent}/task/{parent}/children").read_text().split():
        environ = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
        if f"RANK={rank}".encode() in environ:
            return int(child)
    raise AssertionError(f"no rank {rank} under process {parent}")


def rank_environments(nproc: int) -> list[dict[str, str]]:
    """The variables torchrun --standalone gives each of `nproc` ranks on this machine
    (TORCHELASTIC_RUN_ID included: litebert ends a rank under it with os._exit, see
    litebert.distributed.shutdown); rank 0 serves the store, as without torchrun's agent."""
    shared = {**os.environ, "OMP_NUM_THREADS": "1", "WORLD_SIZE": str(nproc),
              "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1",
              "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(listening_port()),
              "TORCHELASTIC_RUN_ID": "tests", "TORCHELASTIC_RESTART_COUNT": "0",
              "TORCHELASTIC_MAX_RESTARTS": "0"}
    return [{**shared, "RANK": str(r), "LOCAL_RANK": str(r), "ROLE_RANK": str(r)}
            for r in range(nproc)]


def listening_port() -> int:
    """A free port below Linux's ephemeral range (32768-60999), so that no connection
    another test opens meanwhile is given it before rank 0 listens on it, seconds later;
    torchrun's own store listens at once and needs no such care."""
    while True:
        port = random.SystemRandom().randrange(20000, 32768)  # whatever a test seeded
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port


def run_ranks(nproc: int, args: list[str], env: dict[str, str] | None = None,
              timeout: float = 300) -> str:
    """`litebert ARGS` on `nproc` gloo processes (for 1, in this process: run_here), each
    with `env`'s variables too; their stderr, rank by rank. The ranks start as torchrun
    starts them, without its agent (one more process that imports torch: about 2 s a
    launch on 2 cores)."""
    if nproc == 1:
        run_here(litebert(*args), env)
        return ""
    with contextlib.ExitStack() as files:
        errs = [files.enter_context(tempfile.TemporaryFile("w+")) for _ in range(nproc)]
        procs = [subprocess.Popen(litebert(*args), env={**rank_env, **(env or {})},
                                  stdout=subprocess.DEVNULL, stderr=err, text=True)
                 for rank_env, err in zip(rank_environments(nproc), errs, strict=True)]
        late = wait_all(procs, timeout)
        said = ""
        for err in errs:
            err.seek(0)
            said += err.read()
    assert not late and all(p.returncode == 0 for p in procs), \
        f"exit statuses {[p.returncode for p in procs]}{late}\n{said[-6000:]}"
    return said


def wait_all(procs: list[subprocess.Popen], timeout: float) -> str:
    """Until every process has ended; as torchrun's agent does, the first to fail ends
    the others, and so does the timeout (then: a sentence saying so)."""
    deadline = time.monotonic() + timeout
    while None in [p.poll() for p in procs]:  # a list: every process polled, each round
        if any(p.returncode for p in procs) or time.monotonic() > deadline:
            for p in procs:
                p.kill()
            for p in procs:
                p.wait()
            return f" (killed after {timeout:g} s)" if time.monotonic() > deadline else ""
        time.sleep(0.02)
    return ""
