"""Checkpoints of every run through torch.distributed.checkpoint: DDP ranks write in parallel
(each replicated tensor once), a checkpoint resumes under another number of processes or
another wrapper (DDP, FSDP, one process), and `--async-save` writes in a thread without
changing a bit of what is saved, nor leaving a half-written checkpoint visible."""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from torch.distributed.checkpoint.state_dict import get_state_dict

from litebert.train import checkpoint
from litebert.train.optimizers import OPTIMIZERS, build_optimizer
from litebert.train.pretrain import Trainer, pretrain
from litebert.train.state import ensure_optimizer_state, load_model_state
from litebert.train.throughput import TIMING_FIELDS
from tests.helpers.launch import kill_once_logged, run_ranks
from tests.helpers.pretrain import (
    pretrain_cli,
    read_metrics,
    run_config,
    run_here,
)

TENSOR_FILES = ("__0_0.distcp", "__1_0.distcp")


def step_dir(run_dir: Path, step: int) -> Path:
    return checkpoint.checkpoint_dir(run_dir) / f"step-{step:08d}"


def ddp_cli(data_dir, out, *extra) -> list[str]:
    """5 steps of 2 x micro-batch 4 (global batch 8), a checkpoint every 2 steps and at 5."""
    return pretrain_cli(data_dir, out, 5, "--no-export", "--micro-batch-size", "4", *extra)[3:]


def resumed_copy(run: Path, to: Path, step: int) -> Path:
    """A copy of `run` without its checkpoints after `step`, as a run killed there leaves it."""
    shutil.copytree(run, to)
    for path in checkpoint.list_checkpoints(to):
        if checkpoint.step_of(path) > step:
            shutil.rmtree(path)
    return to


def assert_close_runs(straight: Path, resumed: Path) -> None:
    """Every step logged, each loss as the straight run's, the last weights too (to float32
    rounding: another number of processes sums in another order)."""
    a_lines, _ = read_metrics(straight)
    b_lines, _ = read_metrics(resumed)
    assert [x["step"] for x in b_lines] == [x["step"] for x in a_lines]
    for a, b in zip(a_lines, b_lines, strict=True):
        assert b["loss"] == pytest.approx(a["loss"], abs=1e-5, rel=0), a["step"]
    a, _ = load_model_state(checkpoint.latest(straight))
    b, saved = load_model_state(checkpoint.latest(resumed))
    assert saved["format"] == "sharded" and sorted(a) == sorted(b)
    for key in a:
        torch.testing.assert_close(a[key], b[key], atol=1e-5, rtol=0, msg=key)


@pytest.fixture(scope="module")
def ddp_run(data_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ddp") / "run"
    run_ranks(2, ddp_cli(data_dir, out))
    return out


@pytest.fixture(scope="module")
def one_run(data_dir, ddp_run, tmp_path_factory) -> Path:
    """The DDP run resumed from its step 2 on one process (2 micro-batches of 4)."""
    run = resumed_copy(ddp_run, tmp_path_factory.mktemp("one") / "run", 2)
    run_ranks(1, ddp_cli(data_dir, run, "--resume", "auto"))
    return run


def test_ddp_ranks_write_the_replicated_state_once_between_them(ddp_run, one_run):
    path = step_dir(ddp_run, 4)
    names = {p.name for p in path.iterdir()}
    assert names == {".metadata", *TENSOR_FILES, "rng-rank0.pt", "rng-rank1.pt",
                     "scheduler.pt", "state.json"}  # no model.safetensors, no optimizer.pt
    state = json.loads((path / "state.json").read_text())
    assert state["format"] == "sharded" and set(state["files"]) == names - {"state.json"}
    # Each rank wrote a share; together as much as one process writes alone, not twice it.
    sizes = [(path / name).stat().st_size for name in TENSOR_FILES]
    alone = (step_dir(one_run, 4) / "__0_0.distcp").stat().st_size
    assert min(sizes) > 0.25 * alone and sum(sizes) < 1.1 * alone, (sizes, alone)


def test_a_ddp_checkpoint_resumes_on_one_process(ddp_run, one_run):
    assert json.loads((step_dir(one_run, 4) / "state.json").read_text())["world_size"] == 1
    assert_close_runs(ddp_run, one_run)


def test_a_one_process_checkpoint_resumes_under_ddp(data_dir, ddp_run, one_run, tmp_path):
    run = resumed_copy(one_run, tmp_path / "run", 4)  # step 4, written by one process
    run_ranks(2, ddp_cli(data_dir, run, "--resume", "auto"))
    assert_close_runs(ddp_run, run)


def test_a_ddp_checkpoint_resumes_under_fsdp(data_dir, ddp_run, tmp_path):
    run = resumed_copy(ddp_run, tmp_path / "run", 2)
    run_ranks(2, ddp_cli(data_dir, run, "--fsdp", "--resume", "auto"))
    assert_close_runs(ddp_run, run)


# ---- --async-save ---------------------------------------------------------------------------

def trained_state(data_dir, path: Path) -> tuple[dict, dict]:
    """(model, optimizer) state dicts of checkpoint `path`, as a run resuming it holds them
    (in a directory of its own: resuming from PATH in its run would move the later ones
    aside, as a branch)."""
    reader = path.parent.parent.with_name(f"{path.parent.parent.name}-reading-{path.name}")
    trainer = Trainer(run_config(data_dir, reader, resume=str(path), export=False))
    return trainer.model.state_dict(), trainer.optimizer.state_dict()


def assert_equal_states(a, b) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and torch.equal(a, b)
    elif isinstance(a, dict):
        assert sorted(a, key=str) == sorted(b, key=str)
        for key in a:
            assert_equal_states(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_equal_states(x, y)
    else:
        assert a == b


def test_async_save_writes_what_a_synchronous_save_writes(data_dir, tmp_path, monkeypatch):
    """Bit for bit: every checkpoint's model and optimizer state, the losses, the export.
    The copy the thread writes is taken at the step, whatever training does meanwhile."""
    kw = dict(max_steps=6, save_every=2, keep_last=3, eval_every=100)
    pretrain(run_config(data_dir, tmp_path / "sync", **kw))
    started = []
    save_async = checkpoint.save_sharded_async
    monkeypatch.setattr(checkpoint, "save_sharded_async",
                        lambda *a, **k: started.append(1) or save_async(*a, **k))
    pretrain(run_config(data_dir, tmp_path / "async", async_save=True, **kw))
    assert len(started) == 3  # the async path wrote every checkpoint
    untimed = [[{k: v for k, v in x.items() if k not in TIMING_FIELDS} for x in part]
               for run in ("sync", "async") for part in read_metrics(tmp_path / run)]
    assert untimed[:2] == untimed[2:]  # every loss, norm, rate and evaluation
    sync, done = (checkpoint.list_checkpoints(tmp_path / run) for run in ("sync", "async"))
    assert [p.name for p in done] == [p.name for p in sync] == [
        "step-00000002", "step-00000004", "step-00000006"]  # all committed by the run's end
    assert not list(checkpoint.checkpoint_dir(tmp_path / "async").glob("*.tmp"))
    for a, b in zip(sync, done, strict=True):
        assert checkpoint.problems(b, checksums=True) == []
        assert_equal_states(trained_state(data_dir, a), trained_state(data_dir, b))
    for a in (tmp_path / "sync" / "export").rglob("*.safetensors"):
        b = tmp_path / "async" / "export" / a.relative_to(tmp_path / "sync" / "export")
        assert_equal_states(load_file(a), load_file(b))


# A run whose disk stalls on step 4's checkpoint: its write never ends, so the run holds it
# in flight (and, at step 6, waits for it) until it is killed.
STALLED = textwrap.dedent("""
    import sys, threading
    from torch.distributed.checkpoint import FileSystemWriter
    from litebert.cli import main

    write_data = FileSystemWriter.write_data

    def stalled(self, plan, planner):
        if "step-00000004" in str(self.path):
            threading.Event().wait()
        return write_data(self, plan, planner)

    FileSystemWriter.write_data = stalled
    sys.exit(main(sys.argv[1:]))
""")


def test_a_run_killed_during_an_async_save_resumes_from_the_one_before(data_dir, tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    steps, extra = 8, ("--no-export", "--async-save")
    run_here(pretrain_cli(data_dir, tmp_path / "straight", steps, *extra))
    script = tmp_path / "stalled.py"
    script.write_text(STALLED)
    killed = tmp_path / "killed"
    command = [sys.executable, str(script), *pretrain_cli(data_dir, killed, steps, *extra)[3:]]
    kill_once_logged(command, env, killed, step=5)
    # Step 4's checkpoint was in flight: never visible; step 2's was committed, intact.
    assert [p.name for p in checkpoint.list_checkpoints(killed)] == ["step-00000002"]
    assert (checkpoint.checkpoint_dir(killed) / "step-00000004.tmp").is_dir()
    assert checkpoint.resolve_resume(killed, "auto") == step_dir(killed, 2)
    run_here(pretrain_cli(data_dir, killed, steps, *extra, "--resume", "auto"))
    straight, _ = read_metrics(tmp_path / "straight")
    resumed, _ = read_metrics(killed)
    assert [x["step"] for x in resumed] == list(range(1, steps + 1))
    assert [x["loss"] for x in resumed] == [x["loss"] for x in straight]  # bit for bit
    a, _ = load_model_state(checkpoint.latest(tmp_path / "straight"))
    b, _ = load_model_state(checkpoint.latest(killed))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not (checkpoint.checkpoint_dir(killed) / "step-00000004.tmp").exists()  # cleared


@pytest.mark.parametrize("name", ["lamb", "adamw"])
def test_an_optimizer_given_its_state_before_a_step_steps_as_without(name):
    """ensure_optimizer_state writes what the first step would: the same update follows,
    and get_state_dict then finds state to read instead of stepping at lr 0 itself."""
    def stepped(prefill: bool):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
        optimizer = build_optimizer(name, model, lr=0.1)
        if prefill:
            ensure_optimizer_state(optimizer, OPTIMIZERS[name])
            before = [p.detach().clone() for p in model.parameters()]
            _, saved = get_state_dict(model, optimizer)
            assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(),
                                                         strict=True))
            assert all(float(s["step"]) == 0 for s in saved["state"].values())
        model(torch.randn(5, 4)).pow(2).sum().backward()
        optimizer.step()
        return [p.detach() for p in model.parameters()], optimizer.state_dict()["state"]

    (plain, plain_state), (filled, filled_state) = stepped(False), stepped(True)
    assert all(torch.equal(a, b) for a, b in zip(plain, filled, strict=True))
    for k, state in plain_state.items():
        assert all(torch.equal(state[x], filled_state[k][x]) for x in state)
