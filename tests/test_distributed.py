"""Several nodes, as a cluster launches them: two torchrun launches of one process each,
meeting through a c10d rendezvous, train as one process does (MLM+SOP, DDP and FSDP)."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor

from litebert.distributed import DistInfo, free_port, init_distributed
from litebert.train import checkpoint
from litebert.train.pretrain import Trainer
from litebert.train.state import load_model_state
from tests.helpers.launch import ENV, litebert, pretrain_args, start
from tests.helpers.pretrain import read_metrics, run_config, run_here

STEPS = 4


def two_nodes(data_dir, out, tmp_path, *extra: str) -> None:
    """`torchrun --nnodes 2 --node-rank {0,1}` on this machine, one process each, each node
    with its own working directory and temporary directory (nothing node-local shared)."""
    port = free_port()
    nodes = []
    for rank in (0, 1):
        launcher = ["--nnodes", "2", "--node-rank", str(rank), "--rdzv-backend", "c10d",
                    "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "litebert-test"]
        local = tmp_path / f"node{rank}"
        (local / "tmp").mkdir(parents=True)
        command = [sys.executable, "-m", "torch.distributed.run", *launcher,
                   "--nproc-per-node", "1", "-m", "litebert.cli",
                   *pretrain_args(data_dir, out, STEPS, 4, *extra)]
        nodes.append(start(command, cwd=local, env={**ENV, "TMPDIR": str(local / "tmp")}))
    for proc in nodes:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-6000:]


@pytest.fixture(scope="module")
def one_process(data_dir, tmp_path_factory) -> Path:
    """The run both launches are compared with: one process, micro-batches of 8."""
    out = tmp_path_factory.mktemp("one") / "run"
    run_here(litebert(*pretrain_args(data_dir, out, STEPS, 8)))
    return out


@pytest.mark.parametrize("sharding", ["--no-fsdp", "--fsdp"])
def test_two_nodes_train_as_one_process(data_dir, one_process, tmp_path, sharding):
    two_nodes(data_dir, tmp_path / "two", tmp_path, sharding)
    a, b = read_metrics(one_process)[0], read_metrics(tmp_path / "two")[0]
    assert [x["step"] for x in b] == list(range(1, STEPS + 1))  # rank 0 alone logs
    for x, y in zip(a, b, strict=True):  # micro-batches of 8 vs 2 x 4: summed in other orders
        assert math.isclose(x["loss"], y["loss"], rel_tol=1e-5), (x, y)
    wa = load_model_state(checkpoint.latest(one_process))[0]
    wb = load_model_state(checkpoint.latest(tmp_path / "two"))[0]
    for key in wa:
        torch.testing.assert_close(wa[key], wb[key], atol=1e-5, rtol=0, msg=key)
    # Each rank wrote its own files; the shared ones come from rank 0 alone.
    names = {p.name for p in checkpoint.latest(tmp_path / "two").iterdir()}
    assert {"rng-rank0.pt", "rng-rank1.pt", "state.json"} <= names
    assert all(os.listdir(tmp_path / f"node{r}") == ["tmp"] for r in (0, 1))  # cwd untouched


def test_processes_started_without_torchrun_variables_get_a_sentence(monkeypatch):
    """WORLD_SIZE set by hand (or a scheduler) without the rest: what to set, no KeyError."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    for name in ("RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="WORLD_SIZE=2 but RANK, MASTER_ADDR, MASTER_PORT "
                                         "unset: start the processes with torchrun"):
        init_distributed()


def test_fsdp_gathers_a_shared_unit_once_a_step_over_all_its_micro_batches(data_dir, tmp_path):
    """The Trainer under FSDP (a group of one process; the counts at two processes are in
    tests/studies/test_lvb_communication.py): ALBERT's one attention and FFN module, applied
    at every depth of 2 micro-batches, find themselves sharded only at their first use of a
    step; the step releases them before clipping, so the next one gathers the update, and
    a checkpoint after an evaluation (which leaves them gathered) still reads shards."""
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    try:
        cfg = run_config(data_dir, tmp_path / "run", micro_batch_size=4, fsdp=True,
                         export=False)
        trainer = Trainer(cfg, DistInfo(rank=0, world_size=1, local_rank=0,
                                        device=torch.device("cpu")))
        layers = trainer.config.num_hidden_layers
        assert len(trainer.held) == 2 and trainer.accumulation == 2
        sharded_at_entry: list[bool] = []
        for unit in trainer.held:  # before FSDP's own hook gathers it
            unit.register_forward_pre_hook(lambda module, args: sharded_at_entry.append(
                isinstance(next(module.parameters()), DTensor)), prepend=True)
        batch = next(iter(torch.utils.data.DataLoader(
            trainer.train_data, batch_size=4, collate_fn=trainer.train_data.collate)))
        for _ in range(2):
            trainer.train_step(iter([batch, batch]))
            assert all(isinstance(p, DTensor) for u in trainer.held for p in u.parameters())
        # Uses alternate attention, FFN; each is sharded at its first use of a step only.
        step = [True, True] + [False] * (2 * layers - 2) + [False] * (2 * layers)
        assert sharded_at_entry == step * 2
        trainer.model.eval()
        with torch.no_grad():
            trainer.model(**{k: v for k, v in batch.items() if k in ("input_ids",)})
        assert not any(isinstance(p, DTensor) for u in trainer.held for p in u.parameters())
        assert all(isinstance(v, DTensor) for v in trainer.model.state_dict().values())
    finally:
        dist.destroy_process_group()
