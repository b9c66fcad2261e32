"""Several nodes, as a cluster launches them: two torchrun launches of one process each,
meeting through a c10d rendezvous, train as one process does (MLM+SOP, DDP and FSDP)."""

from __future__ import annotations

import math
import os
import sys

import pytest
import torch

from litebert.distributed import init_distributed
from litebert.train import checkpoint
from litebert.train.state import load_model_state
from tests.train import test_pretrain
from tests.train.launch import ENV, free_port, litebert, pretrain_args, run, start
from tests.train.test_pretrain import read_metrics

data_dir = test_pretrain.data_dir  # the corpus fixture
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


@pytest.mark.parametrize("sharding", ["--no-fsdp", "--fsdp"])
def test_two_nodes_train_as_one_process(data_dir, tmp_path, sharding):
    run(litebert(*pretrain_args(data_dir, tmp_path / "one", STEPS, 8)))
    two_nodes(data_dir, tmp_path / "two", tmp_path, sharding)
    a, b = read_metrics(tmp_path / "one")[0], read_metrics(tmp_path / "two")[0]
    assert [x["step"] for x in b] == list(range(1, STEPS + 1))  # rank 0 alone logs
    for x, y in zip(a, b, strict=True):  # micro-batches of 8 vs 2 x 4: summed in other orders
        assert math.isclose(x["loss"], y["loss"], rel_tol=1e-5), (x, y)
    wa = load_model_state(checkpoint.latest(tmp_path / "one"))[0]
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
