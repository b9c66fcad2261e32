"""tasks/runtime.py without processes: the rank split of a global batch gives the gradient of
the whole batch, evaluation batches are shared out and gathered back in order, outputs come
to the host as float32, and a CPU runtime is what the config asks for."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import litebert
from litebert.distributed import DistInfo
from litebert.tasks.base import finetune_config
from litebert.tasks.runtime import (
    Runtime,
    in_batch_order,
    rank_batches,
    rank_rows,
    rank_sizes,
    to_host,
)
from tests.helpers.models import make_inputs, randomize, small_config

CPU = torch.device("cpu")


def test_rank_rows_split_a_global_batch_and_weigh_each_share():
    ids = [10, 11, 12, 13, 14, 15, 16]
    shares = [rank_rows(ids, rank, 3) for rank in range(3)]
    assert shares == [([10, 13, 16], 3 / 7), ([11, 14], 2 / 7), ([12, 15], 2 / 7)]
    assert sorted(i for rows, _ in shares for i in rows) == ids  # every row once
    assert sum(weight for _, weight in shares) == pytest.approx(1.0)
    # A last batch smaller than the world: the ranks left without a row run one, weighted 0.
    assert [rank_rows([7, 8], rank, 4) for rank in range(4)] == \
        [([7], 0.5), ([8], 0.5), ([7], 0.0), ([7], 0.0)]
    assert rank_rows(ids, 0, 1) == (ids, 1.0)
    # What every rank holds, known to each without a collective (contrastive.gather_rows).
    for rows, world in ((ids, 3), ([7, 8], 4), (ids, 1)):
        sizes = rank_sizes(len(rows), world)
        assert sizes == [weight and len(mine) for mine, weight in
                         (rank_rows(rows, rank, world) for rank in range(world))]


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_evaluation_batches_are_shared_out_and_gathered_in_order(world):
    for n in range(8):
        owned = [list(rank_batches(n, rank, world)) for rank in range(world)]
        assert sorted(b for part in owned for b in part) == list(range(n))  # each once
        parts = [{b: f"outputs of {b}" for b in part} for part in owned]
        assert in_batch_order(parts[::-1], n) == [f"outputs of {b}" for b in range(n)]
    with pytest.raises(RuntimeError, match=r"no outputs for batches \[1\]"):
        in_batch_order([{0: "a"}, {2: "c"}], 3)


def _labels(head: str, batch: int, seq: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    if head == "classification":
        return {"labels": torch.randint(0, 3, (batch,), generator=g)}
    if head == "regression":
        return {"labels": torch.rand(batch, generator=g)}
    return {"start_positions": torch.randint(0, seq - 4, (batch,), generator=g),
            "end_positions": torch.randint(0, seq - 4, (batch,), generator=g)}


HEADS = {"classification": lambda: litebert.EncoderForSequenceClassification(
             small_config(num_labels=3, classifier_dropout_prob=0.0)),
         "regression": lambda: litebert.EncoderForSequenceClassification(
             small_config(num_labels=1, classifier_dropout_prob=0.0)),
         "span": lambda: litebert.EncoderForQuestionAnswering(small_config())}


def _gradient(model, batch, rows=None, scale=1.0) -> torch.Tensor:
    model.zero_grad()
    if rows is not None:
        batch = {k: v[rows] for k, v in batch.items()}
    (model(**batch).loss * scale).backward()
    return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


@pytest.mark.parametrize("head", sorted(HEADS))
@pytest.mark.parametrize("world", [2, 3, 6])
def test_weighted_rank_losses_average_to_the_global_batchs_gradient(head, world):
    """What DDP computes, without processes: the mean over ranks of the gradients of each
    rank's loss scaled by weight * world is the gradient of one process over the batch of
    5 (world 6: one rank without a row, running one at weight 0)."""
    torch.manual_seed(0)
    model = randomize(HEADS[head]())
    batch = {**make_inputs(batch=5, seq=11), **_labels(head, 5, 11)}
    whole = _gradient(model, batch)
    ranks = []
    for rank in range(world):
        rows, weight = rank_rows(list(range(5)), rank, world)
        ranks.append(_gradient(model, batch, rows, weight * world))
    torch.testing.assert_close(torch.stack(ranks).mean(0), whole, atol=1e-6, rtol=1e-5)


def _runtime(rank: int, world: int, precision: str = "fp32") -> Runtime:
    cfg = finetune_config(task="sst2", data="d", model="m", out="o", precision=precision)
    runtime = Runtime.from_config(cfg)
    runtime.info = DistInfo(rank=rank, world_size=world, local_rank=rank, device=CPU)
    return runtime


def test_ranks_evaluating_their_own_batches_give_one_processs_outputs():
    model = randomize(litebert.EncoderForSequenceClassification(small_config(num_labels=3)))
    model.eval()
    inputs = make_inputs(batch=3, seq=11)
    rows = [{k: v[i % 3] for k, v in inputs.items()} for i in range(7)]
    batches = [[0, 1], [2, 3], [4, 5], [6]]

    def collate(ids):
        return {k: torch.stack([rows[i][k] for i in ids]) for k in inputs}

    def logits(out):
        return [out.logits]

    one = _runtime(0, 1).evaluate_batches(model, batches, collate, logits)
    assert [len(x[0]) for x in one] == [2, 2, 2, 1]
    parts = [_runtime(r, 3).own_outputs(model, batches, collate, logits) for r in range(3)]
    assert [sorted(p) for p in parts] == [[0, 3], [1], [2]]
    for mine, theirs in zip(in_batch_order(parts, len(batches)), one, strict=True):
        np.testing.assert_array_equal(mine[0], theirs[0])


def test_outputs_come_to_the_host_as_float32_and_indices_stay_integers():
    assert to_host(torch.ones(2, dtype=torch.bfloat16, requires_grad=True)).dtype == np.float32
    assert to_host(torch.arange(3)).dtype == np.int64


def test_a_cpu_runtime_is_one_eager_fp32_process_unless_told_otherwise():
    runtime = _runtime(0, 1)
    assert (runtime.device, runtime.precision, runtime.compiled, runtime.scaler) == \
        (CPU, "fp32", False, None)
    assert runtime.describe() == "cpu, fp32"
    assert runtime.rows_of([4, 5, 6]) == ([4, 5, 6], 1.0)
    half = _runtime(1, 2, "fp16")
    assert half.precision == "fp16" and half.scaler is not None
    assert half.describe() == "cpu x 2 processes, fp16"
    compiled = Runtime.from_config(finetune_config(task="sst2", data="d", model="m", out="o",
                                                  compile="reduce-overhead"))
    assert compiled.compiled and compiled.mode == "reduce-overhead"
    assert "compiled (reduce-overhead)" in compiled.describe()
