"""MLM + SOP / NSP: a micro-batch's loss sums compile whole (torch.compile fullgraph) and give
the eager sums; batches of one data directory compile once, plus once more for the other
padding case (attention_mask present or left out): one shape per directory, no host sync."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo
import torch._dynamo.testing
import torch._dynamo.utils
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

from litebert.data.builder import BuildConfig, build
from litebert.data.loader import PretrainingDataset
from litebert.objectives import MLMObjective
from litebert.tokenization import train_sentencepiece
from litebert.train.pretrain import model_config
from tests.data.builds import write_corpus
from tests.helpers.pretrain import run_config


@pytest.fixture(scope="module", params=["sop", "nsp"])
def data_dir(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(request.param)
    corpus = write_corpus(root / "corpus.txt", docs=60)
    tok = train_sentencepiece([corpus], root / "tok", vocab_size=200).parent
    out = root / "data"
    build([corpus], tok, out, BuildConfig(max_seq_length=64, format="bert",
                                          heldout_fraction=0.1, objective=request.param))
    return out


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Every test compiles from nothing and leaves no cached graphs or counts behind."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    yield
    torch._dynamo.reset()


def one_padded_one_not(train: PretrainingDataset) -> list[dict[str, torch.Tensor]]:
    """Two micro-batches of 4: the first with a padded row, the second with none."""
    width = train.config.max_seq_length
    full = [i for i in range(len(train)) if len(train[i]["input_ids"]) == width]
    short = [i for i in range(len(train)) if len(train[i]["input_ids"]) < width]
    batches = [train.collate([train[i] for i in full[:3] + short[:1]]),
               train.collate([train[i] for i in full[3:7]])]
    assert "attention_mask" in batches[0] and "attention_mask" not in batches[1]
    return batches


class StaticGraphs:
    """A compile backend (aot_eager, counted) that records every data-dependent size of the
    graphs it is given: boolean-mask indexing or nonzero gives one (an unbacked symbol),
    which torch may trace but which syncs with the host on a GPU."""

    def __init__(self) -> None:
        self.counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
        self.dependent: list[object] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs):
        for node in gm.graph.nodes:
            value = node.meta.get("example_value")
            if value is not None:
                self.dependent.extend(free_unbacked_symbols(value))
        return self.counter(gm, example_inputs)


def test_loss_sums_compile_without_graph_breaks_and_match_eager(data_dir):
    train = PretrainingDataset(data_dir, "train", seed=0)
    cfg = run_config(data_dir, data_dir / "unused")
    objective = MLMObjective(cfg, train)
    assert objective.parts == ("mlm", train.config.objective)  # MLM + SOP, MLM + NSP
    torch.manual_seed(0)
    model = objective.build(model_config(cfg, data_dir)).eval()  # no dropout draws to compare
    batches = one_padded_one_not(train)
    backend = StaticGraphs()

    def step(batch):  # the Trainer's micro-batch: sums and counts on the device
        return objective.loss_sums(model, batch), objective.counts(batch)

    compiled = torch.compile(step, fullgraph=True, backend=backend)  # a break would raise
    for batch in batches:
        sums, counts = compiled(batch)
        model.zero_grad()
        sums.sum().backward()  # the compiled backward, as in training
        grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        eager_sums, eager_counts = step(batch)
        model.zero_grad()
        eager_sums.sum().backward()
        eager_grads = [p.grad for p in model.parameters() if p.grad is not None]
        torch.testing.assert_close(sums, eager_sums, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(counts, eager_counts, rtol=0, atol=0)
        assert len(grads) == len(eager_grads) > 0
        for ours, theirs in zip(grads, eager_grads, strict=True):
            torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)
    compiled(train.collate([train[i] for i in range(8, 12)]))  # a third batch: no new graph
    assert 1 <= backend.counter.frame_count <= 2  # the first compilation, one recompilation
    assert not torch._dynamo.utils.counters["graph_break"]
    assert backend.dependent == []  # static shapes: nothing sized by the data
