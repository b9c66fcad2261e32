"""A compiled fine-tuning run's bounded shapes: batches padded to width buckets and filled up
to one size with rows every task's loss ignores (tasks/batching.py), so the loss, gradient
and metrics are those of the unpadded batches, and a compiled run compiles one graph per
(width, mode) it meets, with the eager run's losses."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
import torch
from torch._dynamo.utils import counters

from litebert.tasks import batching
from litebert.tasks import finetune as finetune_module
from litebert.tasks import runtime as runtime_module
from litebert.tasks.base import finetune_config
from litebert.tasks.batching import pad_rows, width_buckets
from litebert.tasks.finetune import TrainingLoop, adapter_for, finetune
from litebert.tasks.runtime import Runtime
from litebert.tasks.table_inputs import select_rows
from litebert.train.compiling import BACKEND_ENV
from tests.helpers.conll import conll_dir
from tests.helpers.finetune import FILLER, logged_losses, race_dir, squad_json, sst2_dir, write_tsv

QUIET = dict(dropout=0.0, classifier_dropout=0.0, max_seq_length=64)


def family_data(family: str, root, request) -> dict:
    """The config fields of a small run of `family` (its data written under root)."""
    if family in ("sst2", "sst2-xlnet"):
        model = "lively_xlnet" if family == "sst2-xlnet" else "base_model"
        return dict(task="sst2", data=str(sst2_dir(root / "SST-2", n_train=12, n_dev=4)),
                    model=str(request.getfixturevalue(model)))
    if family in ("squad1", "squad1-xlnet"):
        (root / "train-v1.1.json").write_text(json.dumps(squad_json(False, 8, 5)))
        (root / "dev-v1.1.json").write_text(json.dumps(squad_json(False, 2, 6)))
        model = "lively_xlnet" if family == "squad1-xlnet" else "base_model"
        return dict(task="squad1", data=str(root), model=str(request.getfixturevalue(model)),
                    doc_stride=16, max_query_length=16, qa_head="span")
    if family == "race":
        return dict(task="race", data=str(race_dir(root / "RACE", (3, 3), (1, 1))),
                    model=str(request.getfixturevalue("base_model")))
    return dict(task="ner", data=str(conll_dir(root / "conll", 10, 3, 0)),
                model=str(request.getfixturevalue("hf_model_dir")("albert")))


def loss_and_gradient(model, batch) -> tuple[float, torch.Tensor]:
    model.zero_grad()
    loss = model(**batch).loss
    loss.backward()
    return float(loss.detach()), torch.cat([p.grad.flatten() for p in model.parameters()
                                   if p.grad is not None])


# The span head's softmax runs over every position of a row, padding included (as in
# transformers, whose SQuAD script pads each window to max_seq_length): a wider batch moves
# SQuAD's loss a little, while the other heads read real tokens only.
WIDTH_FREE = {"sst2": True, "sst2-xlnet": True, "squad1": False, "squad1-xlnet": False,
              "race": True, "ner": True}


@pytest.mark.parametrize("family", sorted(WIDTH_FREE))
def test_a_short_batch_filled_with_dummy_rows_has_the_loss_and_gradient_of_its_rows(
        family, tmp_path, request, monkeypatch):
    """Each task family's short batch of 3 rows at a width bucket, and filled up to 8 rows
    with the task's dummy labels: the same loss and gradient; where the head reads real
    tokens only, also those of the batch as an eager run collates it (its tight width).
    XLNet pads on the left, so SQuAD's positions move with the wider padding. The one
    bucket is 128 wide here (rows of at most 64 tokens), so that every batch does widen."""
    monkeypatch.setattr(batching, "MIN_WIDTH", 128)
    torch.manual_seed(0)
    task = adapter_for(finetune_config(**family_data(family, tmp_path, request), **QUIET,
                                       out=str(tmp_path / "out")))
    rows = select_rows(task.train_rows, [0, 1, 2])
    model = task.build_model().eval()  # dropout off either way; gradients still flow
    tight = task.collate(rows)
    task.bucket_limit = 128  # what a compiled run's Runtime.bucket_limit gives
    bucketed = task.collate(rows)
    filled = pad_rows(bucketed, 8, task.dummy_labels)
    assert filled["input_ids"].shape[0] == 8 and width_buckets(128) == [128]
    assert filled["input_ids"].shape[-1] == 128 > tight["input_ids"].shape[-1]
    loss, gradient = loss_and_gradient(model, bucketed)
    filled_loss, filled_gradient = loss_and_gradient(model, filled)
    assert filled_loss == pytest.approx(loss, rel=1e-5)
    torch.testing.assert_close(filled_gradient, gradient, atol=1e-6, rtol=1e-4)
    if WIDTH_FREE[family]:
        tight_loss, tight_gradient = loss_and_gradient(model, tight)
        assert filled_loss == pytest.approx(tight_loss, rel=1e-5)
        torch.testing.assert_close(filled_gradient, tight_gradient, atol=1e-6, rtol=1e-4)


def test_tasks_whose_loss_ignores_no_row_keep_their_short_batches(base_model, tmp_path):
    """Regression (mean squared error) and the beam head offer no dummy labels: the loop
    leaves their short batches short rather than change their loss."""
    stsb = tmp_path / "STS-B"
    rng = np.random.default_rng(0)
    for split in ("train", "dev"):
        write_tsv(stsb / f"{split}.tsv", ["index", "genre", "filename", "year", "old_index",
                                          "source1", "source2", "sentence1", "sentence2",
                                          "score"],
                  [(i, "g", "f", "y", i, "s", "s", "a b", "c d", float(rng.uniform(0, 5)))
                   for i in range(6)])
    (tmp_path / "train-v1.1.json").write_text(json.dumps(squad_json(False, 2, 5)))
    (tmp_path / "dev-v1.1.json").write_text(json.dumps(squad_json(False, 1, 6)))
    common = dict(model=str(base_model), out=str(tmp_path / "out"), **QUIET)
    regression = adapter_for(finetune_config(task="stsb", data=str(stsb), **common))
    beam = adapter_for(finetune_config(task="squad1", data=str(tmp_path), qa_head="beam",
                                       doc_stride=16, max_query_length=16, **common))
    assert regression.dummy_labels is None and beam.dummy_labels is None


def spy_on_filling(monkeypatch, enabled: bool) -> list[tuple[int, int]]:
    """(rows, size) of every batch the loop and the evaluation fill up; with enabled False
    no batch is filled (the run without dummy rows)."""
    calls: list[tuple[int, int]] = []

    def spy(batch, size, ignored=None):
        calls.append((len(batch["input_ids"]), size))
        return pad_rows(batch, size, ignored) if enabled else dict(batch)

    monkeypatch.setattr(finetune_module, "pad_rows", spy)
    monkeypatch.setattr(runtime_module, "pad_rows", spy)
    return calls


def test_dummy_rows_leave_an_eager_runs_losses_and_metrics_unchanged(
        base_model, tmp_path, monkeypatch, caplog):
    """33 training rows in batches of 8 (each epoch ends in a batch of one row), 19 dev rows
    in batches of 4 (the last of 3): the run that fills those short batches up logs the
    losses and scores the metrics of the run that does not."""
    data = sst2_dir(tmp_path / "SST-2", n_train=33, n_dev=19)
    fields = dict(task="sst2", data=str(data), model=str(base_model), lr=1e-3, batch_size=8,
                  max_steps=12, warmup_steps=1, eval_every=6, eval_batch_size=4, log_every=1,
                  dropout=0.0, classifier_dropout=0.0, max_seq_length=32)
    runs, fillings = {}, {}
    for filled in (True, False):
        fillings[filled] = spy_on_filling(monkeypatch, filled)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="litebert"):
            result = finetune(finetune_config(**fields, out=str(tmp_path / str(filled))))
        runs[filled] = (logged_losses(caplog.text), result["history"])
    assert (1, 8) in fillings[True] and (3, 4) in fillings[True]  # training's and dev's
    assert len(runs[True][0]) == 12
    assert runs[True][0] == pytest.approx(runs[False][0], rel=1e-5)
    assert runs[True][1] == runs[False][1]


def varied_sst2(root, n_train: int, n_dev: int):
    """SST-2 rows of 3, 20 and 70 words in turn for training (of widths 32, 64 and 128 at
    max_seq_length 128) and of 3 to 5 for dev (all in the narrowest bucket)."""
    rng = np.random.default_rng(2)
    for split, n in (("train", n_train), ("dev", n_dev)):
        words = [(3, 20, 70)[i % 3] if split == "train" else int(rng.integers(3, 6))
                 for i in range(n)]
        rows = [(" ".join(rng.choice(FILLER, k)) + " great", i % 2)
                for i, k in enumerate(words)]
        write_tsv(root / f"{split}.tsv", ["sentence", "label"], rows)
    return root


def test_a_compiled_run_compiles_one_graph_per_width_and_mode_with_the_eager_losses(
        base_model, tmp_path, monkeypatch, caplog):
    """45 rows of varied length in batches of 8 (each epoch ends in 5 rows), 14 steps with
    two evaluations, compiled (aot_eager: inductor's tracing without its C++): one graph per
    (width bucket, mode) met, so training's widths + 1 for evaluation, none after the first
    epoch and evaluation, and the eager run's losses step by step."""
    monkeypatch.setenv(BACKEND_ENV, "aot_eager")
    data = varied_sst2(tmp_path / "SST-2", n_train=45, n_dev=10)
    fields = dict(task="sst2", data=str(data), model=str(base_model), lr=1e-3, batch_size=8,
                  max_steps=14, warmup_steps=1, max_seq_length=128, eval_every=7,
                  eval_batch_size=4, log_every=1, dropout=0.0, classifier_dropout=0.0)
    shapes: set[tuple[tuple[int, ...], bool]] = set()
    to_device = Runtime.to_device
    monkeypatch.setattr(Runtime, "to_device", lambda self, batch: shapes.add(
        (tuple(batch["input_ids"].shape), torch.is_grad_enabled())) or to_device(self, batch))
    graphs_by_step: list[int] = []
    log_loss = TrainingLoop.log_loss
    monkeypatch.setattr(TrainingLoop, "log_loss", lambda self, step, steps: graphs_by_step.append(
        counters["stats"]["unique_graphs"]) or log_loss(self, step, steps))
    losses = {}
    for compiled in (False, True):
        torch._dynamo.reset()
        counters.clear()
        shapes.clear()
        graphs_by_step.clear()
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="litebert"):
            finetune(finetune_config(**fields, out=str(tmp_path / str(compiled)),
                                     compile=compiled))
        losses[compiled] = logged_losses(caplog.text)
    training = {shape for shape, grad in shapes if grad}
    evaluation = {shape for shape, grad in shapes if not grad}
    assert {b for b, _ in training} == {8} and {b for b, _ in evaluation} == {4}
    assert {w for _, w in training} == {32, 64, 128} and {w for _, w in evaluation} == {32}
    assert counters["stats"]["unique_graphs"] == len(training) + 1 == 4
    assert not counters["graph_break"]
    assert graphs_by_step[7:] == [4] * 7  # nothing compiled after step 7's evaluation
    assert len(losses[True]) == 14
    assert losses[True] == pytest.approx(losses[False], rel=1e-3)
