"""tasks/contrastive.py: the in-batch loss is sentence-transformers' MultipleNegativesRankingLoss;
GradCache's chunked backward gives the unchunked gradient, dropout included; a rank without
rows joins with a zero gradient. (Two processes against one: tests/tasks/test_embedding.py.)"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from torch.nn.parallel import DistributedDataParallel

import litebert
from litebert.model.sentence_encoder import SentenceEncoder
from litebert.tasks.contrastive import (
    ContrastiveStep,
    RngState,
    gather_rows,
    global_loss,
    in_batch_loss,
    split_rows,
)
from tests.helpers.models import VOCAB, randomize, small_config


@pytest.mark.parametrize("negatives", [False, True])
def test_the_loss_is_sentence_transformers_multiple_negatives_ranking_loss(negatives):
    g = torch.Generator().manual_seed(0)
    columns = [torch.randn(6, 8, generator=g) * 3 for _ in range(3 if negatives else 2)]
    theirs = MultipleNegativesRankingLoss(model=None, scale=20.0).compute_loss_from_embeddings(
        columns, labels=None)
    mine = in_batch_loss(*columns, scale=20.0)
    assert float(mine) == pytest.approx(float(theirs), rel=1e-6)
    assert float(in_batch_loss(*columns, scale=5.0)) != pytest.approx(float(mine))


def encoder(dropout: float = 0.0, pooling: str = "mean") -> SentenceEncoder:
    """A small ALBERT in float64: the chunked and unchunked sums then differ by 1e-15, so
    a tolerance of 1e-9 shows any difference in the arithmetic itself."""
    config = small_config(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
                          num_hidden_layers=2)
    backbone = litebert.AlbertModel(config, add_pooling_layer=False)
    return SentenceEncoder(randomize(backbone, seed=3), pooling).double()


def batches(rows: int = 7, columns: int = 3, width: int = 12) -> list[dict[str, torch.Tensor]]:
    """`columns` batches of `rows` padded rows of random ids."""
    g = torch.Generator().manual_seed(5)
    out = []
    for _ in range(columns):
        ids = torch.randint(5, VOCAB, (rows, width), generator=g)
        lengths = torch.randint(3, width + 1, (rows,), generator=g)
        mask = (torch.arange(width)[None, :] < lengths[:, None]).long()  # (rows, width)
        out.append({"input_ids": ids * mask, "attention_mask": mask,
                    "token_type_ids": torch.zeros_like(ids)})
    return out


def gradients(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def run(model: SentenceEncoder, columns, chunk_size: int | None, seed: int = 11,
        own: bool = True) -> tuple[float, dict[str, torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    loss = ContrastiveStep(model, scale=20.0, chunk_size=chunk_size).backward(columns, own)
    return float(loss), gradients(model)


# The attention key bias has no gradient in exact arithmetic (a softmax does not see a bias
# added to all its inputs): its gradient is rounding noise, compared as such.
NOISE = ".key.bias"


def assert_close(mine: dict[str, torch.Tensor], theirs: dict[str, torch.Tensor]) -> float:
    """Every gradient within 1e-9 of the other, relative to its largest entry; returns the
    largest such difference."""
    assert mine.keys() == theirs.keys()
    worst = max(float((mine[k] - theirs[k]).abs().max() / theirs[k].abs().max())
                for k in mine if not k.endswith(NOISE))
    assert worst < 1e-9, worst
    noise = [k for k in mine if k.endswith(NOISE)]
    assert noise and all(float((mine[k] - theirs[k]).abs().max()) < 1e-12 for k in noise)
    return worst


@pytest.mark.parametrize("chunk_size", [1, 3, 7])
def test_grad_cache_gives_the_unchunked_gradient(chunk_size):
    """Triplets of 7 rows in chunks of 1, 3 (a short last chunk) and 7 (one chunk)."""
    model, columns = encoder(), batches()
    loss, whole = run(model, columns, None)
    chunked_loss, chunked = run(model, columns, chunk_size)
    assert chunked_loss == pytest.approx(loss, rel=1e-12)
    assert len(whole) == len(list(model.parameters()))  # every parameter has one
    worst = assert_close(chunked, whole)
    print(f"chunks of {chunk_size}: largest relative difference {worst:.1e}")


def test_grad_cache_replays_the_dropout_of_each_chunk():
    """With dropout, each chunk's second run draws the masks of its first: the gradient is
    that of the embeddings the loss was computed on, i.e. of running the same chunks with a
    graph from the start (the reference below). Without the saved states it would not be.
    (On a GPU the CUDA generator's state is the one saved and restored: not run here.)"""
    model = encoder(dropout=0.3)
    columns = batches()
    loss, chunked = run(model, columns, chunk_size=3)
    model.zero_grad(set_to_none=True)
    torch.manual_seed(11)
    embedded = [torch.cat([model(**part) for part in split_rows(batch, 3)]) for batch in columns]
    reference_loss = in_batch_loss(*embedded)
    reference_loss.backward()
    assert loss == pytest.approx(float(reference_loss.detach()), rel=1e-12)
    assert_close(chunked, gradients(model))
    _, other_seed = run(model, columns, chunk_size=3, seed=12)  # the dropout matters here
    key = "backbone.encoder.embedding_hidden_mapping_in.weight"
    assert not torch.allclose(other_seed[key], chunked[key])


def test_a_rank_without_rows_runs_with_zero_gradients():
    """runtime.rank_rows gives a rank left without a row the batch's first, weight 0: it
    must take part in the backward (DDP's all-reduce) and add nothing."""
    model, columns = encoder(), batches(rows=1)
    for chunk_size in (None, 2):
        _, grads = run(model, columns, chunk_size, own=False)
        assert grads and all(float(g.abs().max()) == 0 for g in grads.values())


def test_without_a_process_group_gathering_is_the_identity():
    x = torch.randn(3, 4, requires_grad=True)
    assert gather_rows(x) is x
    loss = global_loss([x, x * 2], own=True, scale=20.0)
    assert float(loss.detach()) == pytest.approx(float(in_batch_loss(x, x * 2).detach()))


def test_a_saved_random_state_gives_the_same_masks_and_leaves_the_callers():
    state = RngState.capture(torch.device("cpu"))
    first = torch.rand(5)
    after = torch.get_rng_state()
    with state.restored():
        assert torch.equal(torch.rand(5), first)
    assert torch.equal(torch.get_rng_state(), after)


def test_under_ddp_only_the_last_chunk_all_reduces(tmp_path):
    """A one-process gloo group: DDP's communication hook runs once per bucket of a synced
    backward; GradCache's nine chunk backwards (3 columns x 3 chunks) sync once, the last."""
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    try:
        model = DistributedDataParallel(encoder(), bucket_cap_mb=1000)  # one bucket
        calls = []

        def hook(state, bucket):
            calls.append(bucket.index())
            future = torch.futures.Future()
            future.set_result(bucket.buffer())
            return future

        model.register_comm_hook(None, hook)
        ContrastiveStep(model, chunk_size=3).backward(batches())
        assert calls == [0]
        calls.clear()
        ContrastiveStep(model).backward(batches())  # unchunked: one backward, one sync
        assert calls == [0]
    finally:
        dist.destroy_process_group()
