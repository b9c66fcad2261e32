"""Where a run starts: the same command continues, --restart moves the old run aside,
--resume PATH branches, pruning deletes only this run's checkpoints."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
import torch

from litebert.cli import main
from litebert.train import checkpoint
from litebert.train.pretrain import Trainer, pretrain
from litebert.train.run_config import RunConfigError
from litebert.train.state import load_model_state
from tests.helpers.pretrain import cli_run, read_metrics, run_config


def steps_logged(run) -> list[int]:
    return [x["step"] for x in read_metrics(run)[0]]


def weights(run):
    return load_model_state(checkpoint.latest(run))[0]


def test_the_same_command_again_continues_the_run(data_dir, tmp_path):
    """No --resume: a run whose newest checkpoint was lost with the kill (6) continues from
    the one before (3), logs no step twice and ends where the uninterrupted run did."""
    pretrain(run_config(data_dir, tmp_path / "straight", export=False))
    run = tmp_path / "run"
    shutil.copytree(tmp_path / "straight", run)
    shutil.rmtree(checkpoint.latest(run))  # killed between steps 5 and 6, say
    trainer = Trainer(run_config(data_dir, run, export=False))
    assert trainer.state.step == 3
    trainer.run()
    assert steps_logged(run) == [1, 2, 3, 4, 5, 6]
    a, b = weights(tmp_path / "straight"), weights(run)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_run_killed_before_its_first_checkpoint_starts_again_without_repeating(data_dir,
                                                                               tmp_path):
    run = tmp_path / "run"
    pretrain(run_config(data_dir, run, max_steps=2, save_every=100, export=False))
    shutil.rmtree(checkpoint.checkpoint_dir(run))  # killed at step 2, before saving it
    assert steps_logged(run) == [1, 2]
    pretrain(run_config(data_dir, run, max_steps=2, save_every=100, export=False))
    assert steps_logged(run) == [1, 2]  # the first attempt's lines are dropped, not doubled
    shutil.rmtree(checkpoint.checkpoint_dir(run))  # and killed again
    with pytest.raises(RunConfigError, match=r"config.json was written by a run with other "
                                             r"settings \(lr: 0.01 there, 0.02 here\)"):
        Trainer(run_config(data_dir, run, max_steps=2, save_every=100, lr=0.02))


def test_another_config_stops_with_every_field_that_differs(data_dir, tmp_path):
    run = tmp_path / "run"
    pretrain(run_config(data_dir, run, max_steps=3, export=False))
    with pytest.raises(RunConfigError) as caught:
        Trainer(run_config(data_dir, run, max_steps=5, lr=0.02, seed=9, log_every=2))
    message = str(caught.value)
    assert "step-00000003 was written by a run with other settings (lr: 0.01 there, 0.02 " \
           "here; max_steps: 3 there, 5 here; seed: 1234 there, 9 here)" in message
    assert "--restart" in message and "--resume PATH" in message
    assert "log_every" not in message  # how it runs, not what it trains
    # The same data copied elsewhere is the same data; other data is not.
    moved = tmp_path / "moved"
    shutil.copytree(data_dir, moved)
    assert Trainer(run_config(data_dir=moved, out=run, max_steps=3)).state.step == 3
    record_path = checkpoint.latest(run) / "state.json"
    record = json.loads(record_path.read_text())
    record["data_digest"] = "0" * 16
    record_path.write_text(json.dumps(record))
    with pytest.raises(RunConfigError, match="data \\(its files' checksums\\): '0000"):
        Trainer(run_config(data_dir, run, max_steps=3))


def test_restart_moves_the_old_run_aside_whole(data_dir, tmp_path):
    run = tmp_path / "run"
    pretrain(run_config(data_dir, run, max_steps=3, export=False))
    trainer = Trainer(run_config(data_dir, run, max_steps=4, lr=0.02, restart=True))
    assert trainer.state.step == 0
    trainer.run()
    (aside,) = tmp_path.glob("run.previous-*")
    assert steps_logged(aside) == [1, 2, 3] and steps_logged(run) == [1, 2, 3, 4]
    assert [p.name for p in checkpoint.list_checkpoints(aside)] == ["step-00000003"]
    assert [p.name for p in checkpoint.list_checkpoints(run)] == ["step-00000003",
                                                                 "step-00000004"]


def test_restart_on_a_restarted_attempt_continues(data_dir, tmp_path, monkeypatch):
    """torchrun restarts the workers with the command unchanged, --restart included: the
    job's later attempts continue what its first attempt began."""
    run = tmp_path / "run"
    pretrain(run_config(data_dir, run, max_steps=3, restart=True, export=False))
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "1")
    trainer = Trainer(run_config(data_dir, run, max_steps=3, restart=True))
    assert trainer.state.step == 3 and not list(tmp_path.glob("run.previous-*"))


def test_resume_path_branches_and_keeps_the_abandoned_checkpoints(data_dir, tmp_path):
    """Continuing from step 2 of a run that reached 6, with a longer schedule: 4 and 6 move
    to superseded-*, with a copy of the metrics; the new branch's checkpoints are kept."""
    run = tmp_path / "run"
    pretrain(run_config(data_dir, run, save_every=2, keep_last=5, export=False))
    two = checkpoint.checkpoint_dir(run) / "step-00000002"
    trainer = Trainer(run_config(data_dir, run, save_every=2, keep_last=2, max_steps=8,
                                 resume=str(two), export=False))
    trainer.run()
    (aside,) = checkpoint.checkpoint_dir(run).glob("superseded-*")
    assert sorted(p.name for p in aside.iterdir()) == ["metrics.jsonl", "step-00000004",
                                                       "step-00000006"]
    assert steps_logged(run) == list(range(1, 9))
    assert [p.name for p in checkpoint.list_checkpoints(run)] == ["step-00000006",
                                                                 "step-00000008"]
    again = Trainer(run_config(data_dir, run, save_every=2, keep_last=2, max_steps=8))
    assert again.state.step == 8  # the branch is now the run: the same command continues


def test_resume_path_trains_at_its_own_lr(data_dir, tmp_path):
    """The checkpoint's scheduler state holds its peak lr: --resume PATH --lr X trained on at
    the old one (0.01) before the schedule took the run's."""
    run = tmp_path / "run"
    fields = dict(schedule="constant_with_warmup", save_every=3, export=False)
    pretrain(run_config(data_dir, run, max_steps=3, **fields))
    Trainer(run_config(data_dir, run, max_steps=4, lr=0.02, resume=str(checkpoint.latest(run)),
                       **fields)).run()
    assert [x["lr"] for x in read_metrics(run)[0]] == [0.005, 0.01, 0.01, 0.02]


def test_resume_path_from_elsewhere_into_a_run_is_refused(data_dir, tmp_path):
    pretrain(run_config(data_dir, tmp_path / "a", max_steps=3, export=False))
    pretrain(run_config(data_dir, tmp_path / "b", max_steps=3, export=False))
    with pytest.raises(RunConfigError, match="already holds the checkpoints of a run"):
        Trainer(run_config(data_dir, tmp_path / "b", max_steps=3,
                           resume=str(checkpoint.latest(tmp_path / "a"))))


def test_pruning_deletes_only_this_runs_checkpoints(tmp_path, caplog):
    def state(step, run_id):
        return {"step": step, "run_id": run_id}

    checkpoint.write(tmp_path, 50, lambda d: None, state(50, "other"), keep_last=2)
    with caplog.at_level(logging.WARNING, logger="litebert"):
        for step in (1, 2, 3):
            checkpoint.write(tmp_path, step, lambda d: None, state(step, "mine"), keep_last=2)
    names = [p.name for p in checkpoint.list_checkpoints(tmp_path)]
    assert names == ["step-00000002", "step-00000003", "step-00000050"]
    assert caplog.text.count("step-00000050: checkpoint(s) of another run") == 1  # said once


def test_a_checkpoint_of_the_previous_sampler_continues_in_its_order(data_dir, tmp_path,
                                                                     monkeypatch):
    """state.json without sampler_version: written when every epoch was one torch.randperm
    (version 1); the run continues with that order, bit for bit."""
    with monkeypatch.context() as patch:
        patch.setattr("litebert.train.trainer.SAMPLER_VERSION", 1)
        pretrain(run_config(data_dir, tmp_path / "old", export=False))
    run = tmp_path / "run"
    shutil.copytree(tmp_path / "old", run)
    shutil.rmtree(checkpoint.latest(run))
    state = checkpoint.latest(run) / "state.json"
    record = json.loads(state.read_text())
    assert record.pop("sampler_version") == 1
    state.write_text(json.dumps(record))
    trainer = Trainer(run_config(data_dir, run, export=False))
    assert trainer.state.sampler_version == 1
    trainer.run()
    a, b = weights(tmp_path / "old"), weights(run)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert json.loads((checkpoint.latest(run) / "state.json").read_text())[
        "sampler_version"] == 1


def written(run) -> dict[str, int]:
    """Every file of the run directory (checkpoints aside) and when it was last written."""
    return {str(p.relative_to(run)): p.stat().st_mtime_ns for p in run.rglob("*")
            if p.is_file() and "checkpoints" not in p.parts}


def test_a_finished_run_again_says_it_is_complete_and_writes_nothing(data_dir, tmp_path,
                                                                   capsys, caplog):
    """The same command after the run ended: one line, exit 0, no evaluation, no export, no
    file touched; a larger --max-steps from its checkpoint is what trains it further."""
    run = tmp_path / "run"
    assert main(cli_run(data_dir, run)) == 0
    before, last = written(run), checkpoint.latest(run)
    capsys.readouterr()
    with caplog.at_level(logging.INFO, logger="litebert"):
        assert main(cli_run(data_dir, run)) == 0
    out = capsys.readouterr().out
    assert out == (f"litebert pretrain: run {run} is complete at step 3, its export in "
                   f"{run / 'export'}: nothing to do. To train further, add --resume {last} "
                   f"--max-steps MORE; `litebert export {run}` writes the export again\n")
    assert "continuing from" not in caplog.text
    assert written(run) == before  # metrics, export, config, tensorboard: as they were
    assert main(cli_run(data_dir, run, "--resume", str(last), "--max-steps", "4")) == 0
    assert steps_logged(run) == [1, 2, 3, 4]
    assert written(run)["export/model.safetensors"] > before["export/model.safetensors"]
