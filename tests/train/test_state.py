"""Exporting a run (litebert.train.state) when the disk fills up: at the end of `pretrain` and
in `litebert export`, one sentence; an earlier export stays whole, nothing partial is left."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors import SafetensorError

from litebert.cli import main
from litebert.files import is_temporary
from litebert.model import EncoderForPreTraining, hub
from litebert.train import checkpoint, state
from litebert.train.pretrain import pretrain
from litebert.train.state import load_model_state
from litebert.write_errors import WriteFailed, human_size
from tests.helpers.pretrain import run_config

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
    EncoderForPreTraining.from_pretrained(export)  # the earlier export, whole


def _before_the_fix(optimizer, spec) -> None:
    """ensure_optimizer_state as it was: state only for an optimizer that never stepped."""
    if not optimizer.state:
        state.ensure_optimizer_state(optimizer, spec)


@pytest.mark.parametrize("written", ["now", "before the fix"])
def test_mlm_alone_resumes_though_its_pooler_never_had_a_gradient(packed_data, tmp_path,
                                                                   monkeypatch, written):
    """MLM alone trains no pooler and no pair head, so AdamW keeps no state for them; the
    resumed optimizer must not expect any (a checkpoint of an earlier version has none), and
    the run ends with the weights of the run never stopped."""
    fields = dict(optimizer="adamw", lr=1e-3, max_steps=6, save_every=2, eval_every=6)
    if written != "now":
        monkeypatch.setattr(state, "ensure_optimizer_state", _before_the_fix)
    pretrain(run_config(packed_data, tmp_path / "straight", **fields))  # checkpoints 4 and 6 kept
    monkeypatch.undo()
    at_four = tmp_path / "straight" / "checkpoints" / "step-00000004"
    pretrain(run_config(packed_data, tmp_path / "resumed", **fields, resume=str(at_four)))
    a, _ = load_model_state(checkpoint.latest(tmp_path / "straight"))
    b, _ = load_model_state(checkpoint.latest(tmp_path / "resumed"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_resume_keeps_this_runs_fused_update_whatever_the_checkpoint_says():
    """A checkpoint of a per-parameter AdamW (fused None: a CPU run of an older litebert)
    loaded into this run's fused one: the update stays fused, the step counts move where it
    reads them, and a step that skips on the device (found_inf) runs."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    old = torch.optim.AdamW(model.parameters(), lr=0.1)
    model(torch.randn(2, 4)).sum().backward()
    old.step()
    fused = torch.optim.AdamW(model.parameters(), lr=0.1, fused=True)
    own = state.implementation(fused)
    fused.load_state_dict(old.state_dict())
    assert fused.param_groups[0]["fused"] is None  # what load_state_dict alone leaves
    state.keep_implementation(fused, own)
    assert fused.param_groups[0]["fused"] is True
    before = model.weight.detach().clone()
    fused.found_inf = torch.ones(())  # type: ignore[attr-defined]  # a skipped step
    fused.step()
    assert torch.equal(model.weight, before)
    fused.found_inf = torch.zeros(())  # type: ignore[attr-defined]
    fused.step()
    assert not torch.equal(model.weight, before)
