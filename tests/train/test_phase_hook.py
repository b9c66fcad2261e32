"""Trainer.phase_hook: the benchmarks' split of a step (copy, forward + backward, clipping,
optimizer) is told each boundary in order, and a step with the hook trains exactly as the
default step (no hook) does."""

from __future__ import annotations

import torch

from litebert.distributed import DistInfo
from litebert.train.pretrain import Trainer
from tests.helpers.pretrain import run_config

BOUNDARIES = ["copied", "backward", "clipped", "stepped"]


def trainer(data_dir, out) -> Trainer:
    cfg = run_config(data_dir, out, max_steps=3, export=False)
    return Trainer(cfg, DistInfo(rank=0, world_size=1, local_rank=0,
                                 device=torch.device("cpu")))


def test_the_hook_hears_the_four_boundaries_in_order_and_changes_nothing(data_dir, tmp_path):
    plain, hooked = trainer(data_dir, tmp_path / "plain"), trainer(data_dir, tmp_path / "hooked")
    assert plain.phase_hook is None  # the default step calls nothing
    heard: list[str] = []
    hooked.phase_hook = heard.append
    batch = next(iter(torch.utils.data.DataLoader(
        plain.train_data, batch_size=8, collate_fn=plain.train_data.collate)))
    for step in range(2):
        ours = plain.train_step(iter([batch]))
        theirs = hooked.train_step(iter([batch]))
        assert heard == BOUNDARIES * (step + 1)
        torch.testing.assert_close(ours["losses"], theirs["losses"], rtol=0, atol=0)
    for (name, a), b in zip(plain.model.state_dict().items(),
                            hooked.model.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)
