"""Exporting a run (litebert.train.state) when the disk fills up: at the end of `pretrain` and
in `litebert export`, one sentence; an earlier export stays whole, nothing partial is left."""

from __future__ import annotations

from pathlib import Path

import pytest
from safetensors import SafetensorError

from litebert.cli import main
from litebert.files import is_temporary
from litebert.model import AlbertForPreTraining, hub
from litebert.train import checkpoint
from litebert.train.pretrain import pretrain
from litebert.train.state import load_model_state
from litebert.write_errors import WriteFailed, human_size
from tests.train import test_pretrain
from tests.train.test_pretrain import run_config

data_dir = test_pretrain.data_dir  # the pre-training corpus fixture (built once for this module)

ENOSPC_TEXT = "Error while serializing: I/O error: No space left on device (os error 28)"


def full_disk(tensors, path, metadata=None):
    """safetensors' save_file on a full disk: part of the file, then its error."""
    Path(path).write_bytes(b"\0" * 64)
    raise SafetensorError(ENOSPC_TEXT)


def temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if is_temporary(p))


def test_a_full_disk_while_exporting_is_one_sentence_and_the_export_comes_later(
        data_dir, tmp_path, monkeypatch, capsys):
    run, export = tmp_path / "run", tmp_path / "run" / "export"
    real = hub.save_file
    monkeypatch.setattr(hub, "save_file", full_disk)
    with pytest.raises(WriteFailed) as caught:  # the export at the end of the run
        pretrain(run_config(data_dir, run, max_steps=4, save_every=2, eval_every=100))
    newest = checkpoint.latest(run)
    assert newest is not None and newest.name == "step-00000004"
    weights = load_model_state(newest)[0]
    size = sum(t.numel() * t.element_size() for t in weights.values())  # bytes
    assert str(caught.value).startswith(
        f"could not write the export to {export}: no space left on the device (it needs "
        f"about {human_size(size)}, ")
    assert str(caught.value).endswith(
        f"free there); nothing complete was damaged and the newest intact checkpoint is "
        f"{newest}: free some space, then run `litebert export {run}` to write it again")
    checkpoint.verify(newest, checksums=True)
    assert temporaries(run) == [] and not (export / hub.WEIGHTS_NAME).exists()

    monkeypatch.setattr(hub, "save_file", real)  # space again
    assert main(["export", str(run)]) == 0
    first = (export / hub.WEIGHTS_NAME).read_bytes()

    monkeypatch.setattr(hub, "save_file", full_disk)  # exporting again onto a full disk
    assert main(["export", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"litebert export: error: could not write the export to {export}: "
                          f"no space left on the device")
    assert (export / hub.WEIGHTS_NAME).read_bytes() == first and temporaries(run) == []
    AlbertForPreTraining.from_pretrained(export)  # the earlier export, whole
