"""PLMObjective's memories without a run: the dtype they are kept in, what a checkpoint gets
and what a resume takes back."""

from __future__ import annotations

import logging

import pytest
import torch

from litebert.objectives.plm import PLMConfig, PLMObjective, _Settings, memory_dtype

SHAPE = (2, 4, 8)  # (layer positions, mem_len, H)


def objective(rows: int = 3, **fields) -> PLMObjective:
    made = PLMObjective(_Settings(0, rows, 16, PLMConfig(name="plm", **fields), {}))
    made.mem_len, made.shape = SHAPE[1], SHAPE
    return made


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_memories_take_the_autocasts_dtype(dtype):
    cpu = torch.device("cpu")
    assert memory_dtype(cpu) == torch.float32
    with torch.autocast("cpu", dtype=dtype):
        assert memory_dtype(cpu) == dtype
    plm = objective()
    batch = {"input_ids": torch.zeros(3, 5, dtype=torch.long)}
    mems = plm._memories(0, batch, dtype)
    assert [(m.shape, m.dtype) for m in mems] == [((4, 3, 8), dtype)] * 2
    fresh = tuple(torch.randn(4, 3, 8) for _ in range(2))  # the model's fp32 layer inputs
    assert [m.dtype for m in plm.kept(fresh, dtype)] == [dtype, dtype]


def test_a_checkpoint_gets_memories_only_on_request(caplog):
    plm, saving = objective(), objective(checkpoint_memories=True)
    for made in (plm, saving):
        made.mems = [tuple(torch.ones(4, 3, 8, dtype=torch.bfloat16) for _ in range(2))]
    assert plm.state_dict() == {}
    state = saving.state_dict()
    assert state["mems.0"].shape == (2, 4, 3, 8) and state["mems.0"].dtype == torch.bfloat16
    with caplog.at_level(logging.INFO, logger="litebert"):
        plm.load_state_dict(state)  # saved, but not wanted here: zeros, said once
        assert plm.mems == [] and "checkpoint_memories is false here" in caplog.text
        saving.load_state_dict({})
        assert "the checkpoint holds none" in caplog.text
    assert len(caplog.records) == 2
    saving.load_state_dict(state)
    assert torch.equal(torch.stack(saving.mems[0]), state["mems.0"])
    with pytest.raises(ValueError, match="micro-batches of 3 rows, this run's have 5: resume "
                                         "with micro_batch_size=3"):
        objective(rows=5, checkpoint_memories=True).load_state_dict(state)


def test_without_memories_a_resume_says_nothing(caplog):
    plm = objective()
    plm.mem_len = 0
    with caplog.at_level(logging.INFO, logger="litebert"):
        plm.load_state_dict({})
    assert not caplog.records
