"""Faults a cluster brings, each followed by the same command again: a preemption signal
(the run saves at the step it is in and exits 128 + n) and a rank SIGKILLed under
`torchrun --max-restarts`; the finished run equals one never stopped, bit for bit. A
user's Ctrl-C is one of those signals in the loop, and one line anywhere else."""

from __future__ import annotations

import os
import signal
import time

import pytest
import torch

from litebert.cli import main
from litebert.distributed import init_distributed
from litebert.train import checkpoint, trainer
from litebert.train.preemption import ECHO_SECONDS, LAUNCHER_ENV, PreemptionWatch, exit_status
from litebert.train.state import load_model_state
from tests.helpers.launch import (
    litebert,
    pretrain_args,
    rank_pid,
    run,
    run_ranks,
    start,
    torchrun,
    wait_for_step,
)
from tests.helpers.pretrain import cli_run, read_metrics, run_here

STEPS = 24
# The signalled runs schedule no checkpoint of their own (pretrain_args saves every 4 steps,
# and a busy machine may run past step 5 to 8 before the signal lands): the one they hold is
# the signal's.
NO_SCHEDULED_SAVE = ("--save-every", str(10 * STEPS))
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
    """An uninterrupted 2-process run (torchrun's own runs are the tests below)."""
    out = tmp_path_factory.mktemp("straight") / "run"
    run_ranks(2, pretrain_args(data_dir, out, STEPS, 4))
    return out


def test_sigterm_saves_at_the_step_and_the_same_command_continues(data_dir, tmp_path):
    """One process with a loader worker, the whole session signalled as a scheduler does:
    the worker survives it, the run saves where it is and exits 143."""
    args = pretrain_args(data_dir, tmp_path / "run", STEPS, 8, "--num-workers", "1",
                         *NO_SCHEDULED_SAVE)
    run_here(litebert(*pretrain_args(data_dir, tmp_path / "straight", STEPS, 8)))
    proc = start(litebert(*args))
    wait_for_step(proc, tmp_path / "run", 5)
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == exit_status(signal.SIGTERM) == 143, err[-3000:]
    saved = checkpoint.latest(tmp_path / "run")
    step = checkpoint.step_of(saved)
    assert f"stopped by SIGTERM after step {step}, saved in {saved}" in err
    assert step >= 5 and checkpoint.list_checkpoints(tmp_path / "run") == [saved]
    run_here(litebert(*args))  # the same command
    assert_same_run(tmp_path / "straight", tmp_path / "run")


def test_ctrl_c_saves_at_the_step_in_one_line(data_dir, tmp_path):
    """SIGINT to the whole session, as a terminal's Ctrl-C sends it (the loader worker
    included): no traceback, a checkpoint at the step, one line, 130. It stops as SIGTERM
    does, whose test runs the same command on to the end."""
    args = pretrain_args(data_dir, tmp_path / "run", STEPS, 8, "--num-workers", "1",
                         *NO_SCHEDULED_SAVE)
    proc = start(litebert(*args))
    wait_for_step(proc, tmp_path / "run", 5)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == exit_status(signal.SIGINT) == 130, err[-3000:]
    saved = checkpoint.latest(tmp_path / "run")
    step = checkpoint.step_of(saved)
    assert f"stopped by SIGINT (Ctrl-C) after step {step}, saved in {saved}; the same " \
           f"command continues from there (exit status 130)" in err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert step >= 5 and checkpoint.list_checkpoints(tmp_path / "run") == [saved]


def test_sigusr1_to_every_process_of_a_torchrun_job(data_dir, two_ranks, tmp_path):
    """Slurm's --signal reaches torchrun and both ranks; torchrun forwards it again. The
    ranks agree on one step, save it and exit 138; the same command continues."""
    command = torchrun(2, *pretrain_args(data_dir, tmp_path / "run", STEPS, 4,
                                         *NO_SCHEDULED_SAVE),
                       launcher=("--standalone", HANDLE_USR1))
    proc = start(command)
    wait_for_step(proc, tmp_path / "run", 5)
    os.killpg(proc.pid, signal.SIGUSR1)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert err.count("stopped by SIGUSR1 after step") == 1, err[-3000:]  # rank 0 says it
    assert f"exit status {exit_status(signal.SIGUSR1)}" in err
    saved = checkpoint.latest(tmp_path / "run")
    assert checkpoint.step_of(saved) >= 5
    assert checkpoint.list_checkpoints(tmp_path / "run") == [saved]
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


def test_a_second_ctrl_c_stops_at_once_unless_torchrun_forwarded_it(monkeypatch):
    """Nothing forwards a Ctrl-C to a lone process: a second one is the user's, however
    soon. Under torchrun the terminal's and torchrun's copies arrive together."""
    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    monkeypatch.delenv(LAUNCHER_ENV, raising=False)
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN in a shell's background job
    with PreemptionWatch(init_distributed()) as watch:
        signal.raise_signal(signal.SIGINT)
        assert watch.stop_now() == signal.SIGINT and exits == []
        signal.raise_signal(signal.SIGINT)
        assert exits == [130]
    monkeypatch.setenv(LAUNCHER_ENV, "job")
    with PreemptionWatch(init_distributed()) as watch:
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)  # the same Ctrl-C, forwarded
        assert watch.stop_now() == signal.SIGINT and exits == [130]
    assert signal.getsignal(signal.SIGINT) == before


def test_ctrl_c_outside_the_steps_is_one_line_and_the_same_command_finishes(
        data_dir, tmp_path, monkeypatch, capsys):
    """Ctrl-C while the export is written: one line naming the checkpoint, 130, no export
    half written; the same command then writes the export alone (no evaluation again), and
    once more says the run is complete. At start-up, before any checkpoint, it says the
    same command starts the run again."""
    run = tmp_path / "run"

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer, "finish_export", ctrl_c)  # the objective's files written
    with pytest.raises(SystemExit) as stopped:
        main(cli_run(data_dir, run))
    err = capsys.readouterr().err
    assert stopped.value.code == 130
    assert f"litebert pretrain: interrupted by Ctrl-C outside the training steps; the same " \
           f"command continues from {checkpoint.latest(run)} (exit status 130)\n" in err
    assert "Traceback" not in err
    assert not any(p.name.startswith("export") for p in run.iterdir())  # nor export.tmp
    monkeypatch.undo()
    evaluations = read_metrics(run)[1]
    assert main(cli_run(data_dir, run)) == 0
    assert (run / "export" / "model.safetensors").is_file()
    assert read_metrics(run)[1] == evaluations
    assert main(cli_run(data_dir, run)) == 0
    assert "is complete at step 3" in capsys.readouterr().out
    monkeypatch.setattr(trainer, "model_config", ctrl_c)
    with pytest.raises(SystemExit, match="130"):
        main(cli_run(data_dir, tmp_path / "fresh"))
    assert capsys.readouterr().err.endswith(
        "litebert pretrain: interrupted by Ctrl-C before the run's first checkpoint; the same "
        "command starts it again (exit status 130)\n")


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
