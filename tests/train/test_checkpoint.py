"""Checkpoint integrity: every file's size and sha256 recorded when it is written, sizes
checked whenever it is opened, checksums on resume and export; damaged ones are skipped by
`--resume auto` and are clear errors everywhere else."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import logging
import os
import pickle
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from litebert.cli import main
from litebert.data.loader import SAMPLER_VERSION
from litebert.distributed import DistInfo
from litebert.train import checkpoint
from litebert.train.checkpoint import DamagedCheckpoint
from litebert.train.feed import DataPosition
from litebert.train.pretrain import Trainer, pretrain
from litebert.train.run_config import RunConfigError
from litebert.train.state import TrainState, _batch_position, export_run, load_model_state
from litebert.write_errors import WriteFailed, human_size, tree_size
from tests.helpers.pretrain import pretrain_cli, read_metrics, run_config


@pytest.fixture(scope="module")
def trained(data_dir, tmp_path_factory):
    """A run of 6 steps with checkpoints at steps 3 and 6; tests damage a copy of it."""
    out = tmp_path_factory.mktemp("checkpoints") / "run"
    pretrain(run_config(data_dir, out, export=False))
    return out


@pytest.fixture
def run(trained, tmp_path):
    shutil.copytree(trained, tmp_path / "run")
    return tmp_path / "run"


def step_dir(run_dir: Path, step: int) -> Path:
    return checkpoint.checkpoint_dir(run_dir) / f"step-{step:08d}"


def cut_short(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def flip_byte(path: Path) -> None:
    """Same size, one bit changed in the middle (inside the tensor data)."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


DAMAGE = {"cut": cut_short, "flip": flip_byte}
WEIGHTS = "__0_0.distcp"  # one process's checkpoint: the model and optimizer, all in one file


def test_state_json_records_every_file_with_size_and_sha256(trained):
    path = step_dir(trained, 6)
    files = json.loads((path / "state.json").read_text())["files"]
    assert set(files) == {".metadata", "__0_0.distcp", "scheduler.pt", "rng-rank0.pt"}
    for name, record in files.items():
        data = (path / name).read_bytes()
        assert record == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert not list(checkpoint.checkpoint_dir(trained).glob("*.tmp"))


def test_resume_auto_skips_a_checkpoint_cut_short_and_continues(run, data_dir, caplog):
    uninterrupted, _ = load_model_state(step_dir(run, 6))
    cut_short(step_dir(run, 6) / WEIGHTS)
    with caplog.at_level(logging.WARNING, logger="litebert"):
        assert checkpoint.resolve_resume(run, "auto") == step_dir(run, 3)
    assert f"{step_dir(run, 6) / WEIGHTS}: " in caplog.text
    assert "cut short" in caplog.text
    pretrain(run_config(data_dir, run, export=False, resume="auto"))
    assert [x["step"] for x in read_metrics(run)[0]] == [1, 2, 3, 4, 5, 6]
    again, _ = load_model_state(step_dir(run, 6))  # re-written from step 3 on
    assert all(torch.equal(uninterrupted[k], again[k]) for k in uninterrupted)


def test_resume_auto_finds_a_flipped_byte_by_its_checksum(run, caplog):
    flip_byte(step_dir(run, 6) / WEIGHTS)
    assert checkpoint.latest(run) == step_dir(run, 6)  # the size is right: the cheap check passes
    with caplog.at_level(logging.WARNING, logger="litebert"):
        assert checkpoint.resolve_resume(run, "auto") == step_dir(run, 3)
    assert f"{step_dir(run, 6) / WEIGHTS}: sha256 differs" in caplog.text


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("name", ["scheduler.pt", ".metadata"])
def test_resume_from_a_damaged_path_is_an_error_naming_the_file(run, damage, name):
    DAMAGE[damage](step_dir(run, 6) / name)
    with pytest.raises(DamagedCheckpoint, match=f"step-00000006/{name}"):
        checkpoint.resolve_resume(run, str(step_dir(run, 6)))


@pytest.mark.parametrize("damage", DAMAGE)
def test_export_of_a_damaged_checkpoint_is_an_error_naming_the_file(run, tmp_path, capsys,
                                                                    damage):
    DAMAGE[damage](step_dir(run, 6) / WEIGHTS)
    with pytest.raises(DamagedCheckpoint, match=f"step-00000006/{WEIGHTS}"):
        export_run(run, tmp_path / "out")
    assert main(["export", str(run), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"step-00000006/{WEIGHTS}" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_state_json_keeps_the_flat_fields_it_always_had(trained):
    """The Trainer's counters are a TrainState; state.json still holds them as the flat
    fields earlier releases wrote and read, nothing more and nothing less."""
    state = json.loads((step_dir(trained, 6) / "state.json").read_text())
    counters = {"step", "epoch", "batch", "skipped_steps", "nonfinite_in_row", "tokens",
                "seconds", "sampler_version"}
    assert set(state) == counters | {"model_config", "run_id", "adopts_unnamed", "data_digest",
                                     "log_window", "config", "world_size", "format", "files"}
    assert TrainState.from_saved(state).to_record() == {k: state[k] for k in counters}
    assert TrainState.from_saved(state).position == DataPosition(state["epoch"], state["batch"])
    older = {k: state[k] for k in counters - {"seconds", "sampler_version"}}  # before them
    assert TrainState.from_saved(older).to_record() == {**older, "seconds": 0.0,
                                                        "sampler_version": SAMPLER_VERSION}


def test_a_state_json_cut_short_is_skipped(run, caplog):
    cut_short(step_dir(run, 6) / "state.json")
    with caplog.at_level(logging.WARNING, logger="litebert"):
        assert checkpoint.resolve_resume(run, "auto") == step_dir(run, 3)
    assert "step-00000006/state.json: not a valid state.json" in caplog.text


def test_every_checkpoint_damaged_is_an_error_not_a_fresh_start(run):
    for step in (3, 6):
        cut_short(step_dir(run, step) / WEIGHTS)
    with pytest.raises(DamagedCheckpoint, match="every checkpoint .* is damaged"):
        checkpoint.resolve_resume(run, "auto")


def test_a_half_written_checkpoint_is_never_resumed_and_is_cleared(run):
    partial = checkpoint.checkpoint_dir(run) / "step-00000009.tmp"
    shutil.copytree(step_dir(run, 6), partial)  # even with its state.json
    assert checkpoint.resolve_resume(run, "auto") == step_dir(run, 6)
    checkpoint.write(run, 7, lambda directory: None, {"step": 7}, keep_last=2)
    assert not partial.exists()
    assert [p.name for p in checkpoint.list_checkpoints(run)] == ["step-00000006",
                                                                 "step-00000007"]


def test_checkpoints_from_before_the_manifest_still_resume(run, data_dir):
    """No "files" in state.json (nothing to compare) and rng.pt instead of rng-rank0.pt."""
    path = step_dir(run, 6)
    state = json.loads((path / "state.json").read_text())
    del state["files"]
    (path / "state.json").write_text(json.dumps(state))
    os.replace(path / "rng-rank0.pt", path / "rng.pt")
    assert checkpoint.resolve_resume(run, "auto") == path
    trainer = Trainer(run_config(data_dir, run, export=False))
    assert trainer.state.step == 6


def test_sharded_metadata_that_would_run_code_is_refused(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("still here")

    class Payload:
        def __reduce__(self):
            return os.remove, (str(victim),)

    (tmp_path / ".metadata").write_bytes(pickle.dumps(Payload()))
    with pytest.raises(DamagedCheckpoint, match="could run code"):
        checkpoint.load_sharded({}, tmp_path)
    assert victim.exists()


def test_data_position_converts_to_another_number_of_processes():
    saved = {"batch": 3, "epoch": 0, "world_size": 2, "config": {"micro_batch_size": 4}}
    cfg = run_config("data", "out", micro_batch_size=4)
    one = DistInfo(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))
    assert _batch_position(saved, cfg, one) == 6  # 3 x (2 ranks x 4) = 6 x (1 rank x 4)
    cfg = run_config("data", "out", batch_size=16, micro_batch_size=16)
    with pytest.raises(RunConfigError, match="24 instances into epoch 0"):
        _batch_position(saved, cfg, one)


def write_full_checkpoint(trainer: Trainer) -> Path:
    """A checkpoint of `trainer` at its step in format "full", as releases before DCP wrote
    them for one process and DDP: model.safetensors + optimizer.pt, written by rank 0."""
    def fill(directory: Path) -> None:
        checkpoint.save_full(directory, trainer.model.state_dict(),
                             {"optimizer": trainer.optimizer.state_dict(),
                              "scheduler": trainer.scheduler.state_dict()})
    record = {**trainer.state.to_record(), "model_config": trainer.config.to_dict(),
              "config": trainer.cfg.to_dict(), "world_size": 1, "format": "full"}
    return checkpoint.write(trainer.run_dir, trainer.state.step, fill, record)


def test_a_full_format_checkpoint_exports_and_resumes_bit_for_bit(trained, data_dir, tmp_path):
    """Step 3 of the run, rewritten in the earlier layout, reads back as the same weights
    and, resumed, trains on to the very step 6 the run saved."""
    out = tmp_path / "full"
    at_3 = Trainer(run_config(data_dir, out, resume=str(step_dir(trained, 3)), export=False))
    path = write_full_checkpoint(at_3)
    assert {p.name for p in path.iterdir()} == {"model.safetensors", "optimizer.pt",
                                                "rng-rank0.pt", "state.json"}
    model_state, saved = load_model_state(path)
    assert saved["step"] == 3 and saved["format"] == "full"
    expected, _ = load_model_state(step_dir(trained, 3))
    assert sorted(model_state) == sorted(expected)
    assert all(torch.equal(expected[k], model_state[k]) for k in expected)
    pretrain(run_config(data_dir, out, resume="auto", export=False))
    assert json.loads((step_dir(out, 6) / "state.json").read_text())["format"] == "sharded"
    a, _ = load_model_state(step_dir(trained, 6))
    b, _ = load_model_state(step_dir(out, 6))
    assert all(torch.equal(a[k], b[k]) for k in a)


# ---- a write that fails: a full disk, an I/O error ---------------------------------------------

ENOSPC_TEXT = "Error while serializing: I/O error: No space left on device (os error 28)"


def leftovers(run: Path) -> list[str]:
    """What a failed write could leave beside the complete checkpoints: partial directories."""
    return sorted(p.name for p in checkpoint.checkpoint_dir(run).iterdir()
                  if not checkpoint._STEP_DIR.match(p.name))


def target_name(f) -> str:
    """The path torch.save writes to: a path, a file, or save_pt's wrapper of a file."""
    return str(getattr(f, "name", None) or getattr(getattr(f, "file", None), "name", f))


def test_a_full_disk_at_a_checkpoint_is_one_sentence_and_the_run_resumes(
        data_dir, tmp_path, monkeypatch, capsys):
    """The disk fills while the second checkpoint is written (its scheduler.pt, after DCP's
    tensor files): `litebert pretrain` says so in one line, the first checkpoint is intact
    and nothing partial is left; once there is space the same command continues."""
    run = tmp_path / "run"
    args = pretrain_cli(data_dir, run, 6, "--no-export")[3:]  # checkpoints at 2, 4, 6
    real = torch.save

    def full_disk(obj, f, *rest, **kwargs):
        if "step-00000004" in target_name(f) and "scheduler.pt" in target_name(f):
            f.write(b"\0" * 100)  # the part that fitted
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(obj, f, *rest, **kwargs)

    monkeypatch.setattr(torch, "save", full_disk)
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    first = step_dir(run, 2)
    assert err.startswith(f"litebert pretrain: error: could not write checkpoint step 4's "
                          f"scheduler.pt to "
                          f"{step_dir(run, 4)}: no space left on the device (it needs about "
                          f"{human_size(tree_size(first))}, ")
    assert "free there); nothing complete was damaged and the newest intact checkpoint is " \
           f"{first}: free some space, then run the same command again" in err
    checkpoint.verify(first, checksums=True)
    assert leftovers(run) == [] and checkpoint.list_checkpoints(run) == [first]

    monkeypatch.setattr(torch, "save", real)  # space again
    assert main(args) == 0
    assert checkpoint.latest(run) == step_dir(run, 6)
    assert [x["step"] for x in read_metrics(run)[0]] == [1, 2, 3, 4, 5, 6]


def test_an_io_error_at_the_first_checkpoint_says_there_is_none_to_resume(data_dir, tmp_path,
                                                                         monkeypatch):
    run = tmp_path / "run"
    cfg = run_config(data_dir, run, max_steps=4, save_every=2, eval_every=100, export=False)
    real, calls = torch.save, []

    def failing_disk(obj, f, *args, **kwargs):
        calls.append(f)
        if len(calls) == 1:  # step 2's first tensor file
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", failing_disk)
    with pytest.raises(WriteFailed) as caught:
        pretrain(cfg)
    assert str(caught.value).startswith(
        f"could not write checkpoint step 2 to {step_dir(run, 2)}: Input/output error (EIO; ")
    assert "free there); nothing complete was damaged, but no checkpoint was written before " \
           "it: free some space, then start the run again" in str(caught.value)
    assert caught.value.errno == errno.EIO
    assert leftovers(run) == [] and checkpoint.list_checkpoints(run) == []
    monkeypatch.setattr(torch, "save", real)
    pretrain(dataclasses.replace(cfg, resume="auto"))
    assert checkpoint.latest(run) == step_dir(run, 4)


def test_a_sharded_save_that_fails_is_translated_from_dcp(tmp_path, monkeypatch):
    """DCP wraps a rank's failed write in a CheckpointException (raised on every rank): the
    sentence is the same as for any other checkpoint file."""
    state = {"model": {"w": torch.arange(1000.0)}}

    def fill(directory: Path) -> None:
        checkpoint.save_sharded(state, directory)

    with warnings.catch_warnings():  # DCP in one process without a process group: intended
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        first = checkpoint.write(tmp_path, 1, fill, {"step": 1})
        monkeypatch.setattr(torch, "save", lambda *a, **k: (_ for _ in ()).throw(
            OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))))
        with pytest.raises(WriteFailed, match=r"^could not write checkpoint step 2 to .*"
                           r"step-00000002: no space left on the device \(it needs about "):
            checkpoint.write(tmp_path, 2, fill, {"step": 1})
    checkpoint.verify(first, checksums=True)
    assert leftovers(tmp_path) == [] and checkpoint.list_checkpoints(tmp_path) == [first]


RANK1_FULL_DISK = """\
import errno, os, sys, time, torch
from litebert.cli import main
from litebert.train.saver import CheckpointSaver as Saver
if os.environ["RANK"] == "0":  # rank 0 unwinds slowly: torchrun must not end it unheard
    stop = Saver.stop_after_error
    def slow_stop(self):
        time.sleep(3)
        stop(self)
    Saver.stop_after_error = slow_stop
if os.environ["RANK"] == "1":  # rank 1 alone, at rng-rank1.pt of step 4
    real = torch.save
    def full_disk(obj, f, *args, **kwargs):
        name = str(getattr(f, "name", None) or getattr(getattr(f, "file", None), "name", f))
        if "step-00000004" in name and "rng-rank1" in name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(obj, f, *args, **kwargs)
    torch.save = full_disk
sys.exit(main(sys.argv[1:]))
"""


def test_a_full_disk_on_one_rank_stops_every_rank_with_the_same_sentence(data_dir, tmp_path):
    """Under torchrun only rank 1's write fails: no rank waits for it, and both say why,
    even when rank 0 takes seconds longer to get there (torchrun ends every rank as soon as
    one exits)."""
    script = tmp_path / "rank1_full_disk.py"
    script.write_text(RANK1_FULL_DISK)
    run = tmp_path / "run"
    args = pretrain_cli(data_dir, run, 6, "--no-export", "--micro-batch-size", "4")[3:]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc-per-node", "2", str(script), *args], env=env,
                          capture_output=True, text=True, timeout=120)
    said = [line for line in done.stderr.splitlines() if "litebert pretrain: error:" in line]
    assert done.returncode != 0 and len(said) == 2, done.stderr[-6000:]
    assert said[0] == said[1]
    assert (f"error: rank 1 of 2: could not write checkpoint step 4's rng-rank1.pt to "
            f"{step_dir(run, 4)}: no space left on the device (it needs about ") in said[0]
    assert f"the newest intact checkpoint is {step_dir(run, 2)}: free some space" in said[0]
    checkpoint.verify(step_dir(run, 2), checksums=True)
    assert leftovers(run) == [] and checkpoint.list_checkpoints(run) == [step_dir(run, 2)]
