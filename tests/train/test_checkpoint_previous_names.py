"""A sharded checkpoint of the previous release names the heads' backbone `albert.`: it
resumes into today's `backbone.` names, optimizer state and param groups included."""

import torch

from litebert.model.previous_names import previous_key, rename_tree
from litebert.train import checkpoint


def _state(fill: float) -> dict:
    """A model + optimizer state dict as get_state_dict gives it, under today's names."""
    return {"model": {"backbone.w": torch.full((2, 3), fill), "head.b": torch.full((3,), fill)},
            "optimizer": {"state": {"backbone.w": {"step": torch.tensor(fill),
                                                   "exp_avg": torch.full((2, 3), fill)}},
                          "param_groups": [{"lr": fill, "params": ["backbone.w", "head.b"]}]}}


def test_a_checkpoint_with_the_previous_backbone_names_loads_under_today_s(tmp_path):
    written = _state(1.5)
    rename_tree(written, previous_key)  # as the previous release saved it
    checkpoint.save_sharded(written, tmp_path)
    assert "optimizer.state.backbone.w.step" in checkpoint.saved_keys(tmp_path)
    fresh = _state(0.0)
    model, states = fresh["model"], fresh["optimizer"]["state"]
    checkpoint.load_sharded(fresh, tmp_path)
    assert fresh["model"] is model and fresh["optimizer"]["state"] is states  # in place
    assert torch.equal(model["backbone.w"], torch.full((2, 3), 1.5))
    assert torch.equal(states["backbone.w"]["exp_avg"], torch.full((2, 3), 1.5))
    assert fresh["optimizer"]["param_groups"][0]["params"] == ["backbone.w", "head.b"]
    assert fresh["optimizer"]["param_groups"][0]["lr"] == 1.5


def test_a_checkpoint_with_today_s_names_loads_as_it_is(tmp_path):
    checkpoint.save_sharded(_state(2.0), tmp_path)
    assert "model.backbone.w" in checkpoint.saved_keys(tmp_path)
    fresh = _state(0.0)
    checkpoint.load_sharded(fresh, tmp_path)
    assert torch.equal(fresh["model"]["backbone.w"], torch.full((2, 3), 2.0))
