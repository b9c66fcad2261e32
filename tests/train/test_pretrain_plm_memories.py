"""XLNet's memories in checkpoints: left out by default (a resume starts them at zero, says so
once, and may change the number of processes), saved with objective.checkpoint_memories (a
resume is bit for bit, on the same number of processes), kept in the run's compute dtype."""

from __future__ import annotations

import json
import logging
import shutil
import statistics

import pytest
import torch
from safetensors.torch import load_file, save_file

from litebert.files import describe_files
from litebert.train import checkpoint
from litebert.train.pretrain import Trainer, pretrain
from litebert.train.run_config import load_run_config, parse_override
from litebert.train.state import load_model_state
from tests.helpers.launch import run_ranks
from tests.helpers.plm import MEM, SAVING_MEMORIES, plm_cli, run_config
from tests.helpers.pretrain import read_metrics

NOTE = "resumed without XLNet memories"
STEPS, SAVED_AT = 12, 6
RESUMABLE = dict(max_steps=STEPS, save_every=SAVED_AT, keep_last=3, eval_every=1000,
                 export=False)


def losses(run_dir) -> dict[int, float]:
    """{step: loss}; a resumed run's lines after the checkpoint replace the killed ones'."""
    train, _ = read_metrics(run_dir)
    return {x["step"]: x["loss"] for x in train}


def back_to(source, target, step: int) -> None:
    """`target`: a copy of run `source` as it was at checkpoint `step` (later ones removed)."""
    shutil.copytree(source, target)
    for path in checkpoint.list_checkpoints(target):
        if int(path.name.removeprefix("step-")) > step:
            shutil.rmtree(path)


def zero_saved_memories(path) -> None:
    """Checkpoint `path`'s memories replaced by zeros, its file record kept true."""
    name = checkpoint.objective_file(0)
    saved = load_file(path / name)
    save_file({k: torch.zeros_like(v) for k, v in saved.items()}, path / name)
    record = json.loads((path / "state.json").read_text())
    record["files"].update(describe_files(path, [name]))
    (path / "state.json").write_text(json.dumps(record))


def test_a_resume_without_memories_starts_them_at_zero_and_stays_close(plm_data, tmp_path,
                                                                        caplog):
    pretrain(run_config(plm_data, tmp_path / "straight", **RESUMABLE))
    assert checkpoint.list_checkpoints(tmp_path / "straight")
    for path in checkpoint.list_checkpoints(tmp_path / "straight"):
        assert not list(path.glob("objective-rank*")), path  # nothing of the objective's
    # Saving the memories changes nothing of the training itself.
    pretrain(run_config(plm_data, tmp_path / "saving", objective=SAVING_MEMORIES,
                        **RESUMABLE))
    straight = losses(tmp_path / "straight")
    assert losses(tmp_path / "saving") == straight
    back_to(tmp_path / "straight", tmp_path / "resumed", SAVED_AT)
    with caplog.at_level(logging.INFO, logger="litebert"):
        pretrain(run_config(plm_data, tmp_path / "resumed", resume="auto", **RESUMABLE))
    assert sum(NOTE in r.getMessage() for r in caplog.records) == 1, caplog.text
    resumed = losses(tmp_path / "resumed")
    # Exactly a resume whose saved memories were zeros: the same windows, weights and RNG,
    # only the memories started over.
    back_to(tmp_path / "saving", tmp_path / "zeros", SAVED_AT)
    zero_saved_memories(checkpoint.latest(tmp_path / "zeros"))
    pretrain(run_config(plm_data, tmp_path / "zeros", resume="auto",
                        objective=SAVING_MEMORIES, **RESUMABLE))
    assert losses(tmp_path / "zeros") == resumed
    after = range(SAVED_AT + 1, STEPS + 1)
    # The memories were lost indeed: the first window after the resume reads zeros where the
    # uninterrupted run reads the last window's states, and its loss differs.
    assert resumed[SAVED_AT + 1] != straight[SAVED_AT + 1]
    # How close: the first window's loss differs by what a cold window costs, later ones by
    # what that one update's difference carries forward (reuse_len >= mem_len here, so one
    # window refills the memories). Both must stay below the loss's step-to-step spread
    # (median |loss(t+1) - loss(t)| of the uninterrupted run): the resume is then invisible
    # in the training curve. Reading other windows than the uninterrupted run, or from other
    # weights, moves the loss by that spread itself, and among six steps one such difference
    # exceeds its median with probability 1 - 2^-6. (Measured: differences of 1e-4 to 6e-4
    # against a spread near 0.09, at this model's early, memory-light stage.)
    spread = statistics.median(abs(straight[t + 1] - straight[t]) for t in range(1, STEPS))
    gaps = {t: abs(resumed[t] - straight[t]) for t in after}
    assert max(gaps.values()) < spread, (gaps, spread)


def test_a_run_saved_on_two_processes_resumes_on_one(plm_data, tmp_path, caplog):
    """Without saved memories the data position converts as an MLM run's does: the streams
    are cut by the global batch, the same on any number of processes, so the one-process
    resume of a two-process run reads the windows (and trains the weights) of a one-process
    run resumed at the same step, within DDP's float differences."""
    run_ranks(2, plm_cli(plm_data, tmp_path / "two", 2, "--micro-batch-size", "4")[3:])
    # plm_cli's settings, in this process (one process, micro-batches of 8).
    same = dict(lr=0.01, warmup_steps=2, eval_every=100, save_every=2, seed=7, export=False)
    pretrain(run_config(plm_data, tmp_path / "one", max_steps=2, **same))
    for name in ("two", "one"):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="litebert"):
            pretrain(run_config(plm_data, tmp_path / name, max_steps=5,  # a longer schedule
                                resume=str(checkpoint.latest(tmp_path / name)), **same))
        assert sum(NOTE in r.getMessage() for r in caplog.records) == 1, caplog.text
    a, b = losses(tmp_path / "two"), losses(tmp_path / "one")
    assert sorted(a) == sorted(b) == [1, 2, 3, 4, 5]
    assert [a[s] for s in a] == pytest.approx([b[s] for s in a], rel=1e-4)
    ours = load_model_state(checkpoint.latest(tmp_path / "two"))[0]
    theirs = load_model_state(checkpoint.latest(tmp_path / "one"))[0]
    for key in ours:
        torch.testing.assert_close(ours[key], theirs[key], atol=1e-5, rtol=0, msg=key)


@pytest.mark.parametrize("precision, dtype", [("bf16", torch.bfloat16),
                                              ("fp32", torch.float32)])
def test_memories_are_kept_and_saved_in_the_compute_dtype(plm_data, tmp_path, precision,
                                                          dtype):
    """bf16 under a bf16 run (CPU autocast, as CUDA's), fp32 under fp32; detached either way;
    saved so with the opt-in and read back by a resume."""
    cfg = dict(max_steps=2, save_every=2, eval_every=2, export=False, precision=precision,
               objective=SAVING_MEMORIES)
    trainer = Trainer(run_config(plm_data, tmp_path / "run", **cfg))
    result = trainer.run()
    assert result["eval_plm_loss"] > 0  # the evaluation reads its memories so too
    mems = trainer.objective.mems[0]
    assert [m.dtype for m in mems] == [dtype, dtype]
    assert all(m.shape == (MEM, 8, 32) and not m.requires_grad for m in mems)
    saved = load_file(checkpoint.latest(tmp_path / "run") / "objective-rank0.safetensors")
    assert saved["mems.0"].dtype == dtype and saved["mems.0"].abs().sum() > 0
    resumed = Trainer(run_config(plm_data, tmp_path / "run",  # one step more
                                 resume=str(checkpoint.latest(tmp_path / "run")),
                                 **{**cfg, "max_steps": 3}))
    resumed.run()
    assert [m.dtype for m in resumed.objective.mems[0]] == [dtype, dtype]


def test_checkpoint_memories_is_set_from_the_command_line():
    cfg = load_run_config("xlnet-tiny-cpu", dict([parse_override(
        "objective.checkpoint_memories=true")]))
    assert cfg.objective.checkpoint_memories is True
    assert load_run_config("xlnet-tiny-cpu", {}).objective.checkpoint_memories is False
