"""Faults a cluster brings, each followed by the same command again: a preemption signal
(the run saves at the step it is in and exits 128 + n) and a rank SIGKILLed under
`torchrun --max-restarts`; the finished run equals one never stopped, bit for bit."""

from __future__ import annotations

import os
import signal
import time

import pytest
import torch

from litebert.distributed import init_distributed
from litebert.train import checkpoint
from litebert.train.preemption import ECHO_SECONDS, PreemptionWatch, exit_status
from litebert.train.state import load_model_state
from tests.train import test_pretrain
from tests.train.launch import (
    litebert,
    pretrain_args,
    rank_pid,
    run,
    start,
    torchrun,
    wait_for_step,
)
from tests.train.test_pretrain import read_metrics

data_dir = test_pretrain.data_dir  # the module's corpus fixture
STEPS = 24
# torchrun itself catches SIGUSR1 only when told to (it would die of it otherwise).
HANDLE_USR1 = "--signals-to-handle=SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1"


def assert_same_run(straight, resumed) -> None:
    """Every logged loss and every final weight bit for bit; no step logged twice."""
    a, b = read_metrics(straight)[0], read_metrics(resumed)[0]
    assert [x["step"] for x in b] == list(range(1, STEPS + 1))
    assert [x["loss"] for x in a] == [x["loss"] for x in b]
    wa = load_model_state(checkpoint.latest(straight))[0]
    wb = load_model_state(checkpoint.latest(resumed))[0]
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


@pytest.fixture(scope="module")
def two_ranks(data_dir, tmp_path_factory):
    """An uninterrupted 2-process run and the arguments that make it."""
    out = tmp_path_factory.mktemp("straight") / "run"
    run(torchrun(2, *pretrain_args(data_dir, out, STEPS, 4)))
    return out


def test_sigterm_saves_at_the_step_and_the_same_command_continues(data_dir, tmp_path):
    """One process with a loader worker, the whole session signalled as a scheduler does:
    the worker survives it, the run saves where it is and exits 143."""
    args = pretrain_args(data_dir, tmp_path / "run", STEPS, 8, "--num-workers", "1")
    run(litebert(*pretrain_args(data_dir, tmp_path / "straight", STEPS, 8)))
    proc = start(litebert(*args))
    wait_for_step(proc, tmp_path / "run", 5)
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == exit_status(signal.SIGTERM) == 143, err[-3000:]
    saved = checkpoint.latest(tmp_path / "run")
    step = checkpoint.step_of(saved)
    assert f"stopped by SIGTERM after step {step}, saved in {saved}" in err
    assert step >= 5 and step % 4  # its own checkpoint, not a scheduled one
    run(litebert(*args))  # the same command
    assert_same_run(tmp_path / "straight", tmp_path / "run")


def test_sigusr1_to_every_process_of_a_torchrun_job(data_dir, two_ranks, tmp_path):
    """Slurm's --signal reaches torchrun and both ranks; torchrun forwards it again. The
    ranks agree on one step, save it and exit 138; the same command continues."""
    command = torchrun(2, *pretrain_args(data_dir, tmp_path / "run", STEPS, 4),
                       launcher=("--standalone", HANDLE_USR1))
    proc = start(command)
    wait_for_step(proc, tmp_path / "run", 5)
    os.killpg(proc.pid, signal.SIGUSR1)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert err.count("stopped by SIGUSR1 after step") == 1, err[-3000:]  # rank 0 says it
    assert f"exit status {exit_status(signal.SIGUSR1)}" in err
    step = checkpoint.step_of(checkpoint.latest(tmp_path / "run"))
    assert step >= 5 and step % 4
    run(command)
    assert_same_run(two_ranks, tmp_path / "run")


def test_a_rank_killed_under_max_restarts_finishes_by_itself(data_dir, two_ranks, tmp_path):
    """SIGKILL to rank 1 mid-run: torchrun restarts both ranks, which continue from the
    newest checkpoint; one command, no one typing --resume."""
    command = torchrun(2, *pretrain_args(data_dir, tmp_path / "run", STEPS, 4),
                       launcher=("--standalone", "--max-restarts", "2"))
    proc = start(command)
    wait_for_step(proc, tmp_path / "run", 6)
    os.kill(rank_pid(proc.pid, 1), signal.SIGKILL)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-6000:]
    # killed once step 6 was logged: the restarted ranks continue from step 4
    assert err.count("starting from step 0") == 1
    assert "checkpoints/step-00000004 (step 4)" in err
    assert_same_run(two_ranks, tmp_path / "run")


def test_a_second_signal_stops_at_once_but_its_echo_does_not(monkeypatch):
    exits: list[int] = []

    def fake_exit(status: int) -> None:
        exits.append(status)

    monkeypatch.setattr(os, "_exit", fake_exit)
    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    with PreemptionWatch(init_distributed()) as watch:
        assert watch.stop_now() is None
        signal.raise_signal(signal.SIGTERM)
        assert watch.stop_now() == signal.SIGTERM
        now[0] += ECHO_SECONDS / 2  # torchrun forwarding the same signal
        signal.raise_signal(signal.SIGTERM)
        assert exits == []
        now[0] += ECHO_SECONDS
        signal.raise_signal(signal.SIGUSR1)
        assert exits == [143]  # the first signal's status: it is what stops the run
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers put back
