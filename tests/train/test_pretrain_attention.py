"""The run option `attention` end to end: what it refuses, and runs that train with it."""

from __future__ import annotations

import pytest

from litebert.train.pretrain import Trainer, pretrain
from litebert.train.run_config import RunConfigError, check_data_attention, load_run_config
from tests.model.varlen_reference import CALLS, use_reference_varlen
from tests.train import test_pretrain
from tests.train.test_pretrain import OBJECTIVE_FIELDS, read_metrics, run_config, tiny_data

data_dir = test_pretrain.data_dir  # sentence pairs (SOP), built once for this module


@pytest.fixture(scope="module")
def packed_dir(tmp_path_factory):
    return tiny_data(tmp_path_factory.mktemp("packed"), objective="none",
                     packing="full-sentences")


def test_document_attention_on_pairs_is_a_run_config_error(data_dir, tmp_path):
    with pytest.raises(RunConfigError, match=r"attention='document': --data .*needs packed "
                                             r"data \(built with --packing full-sentences"):
        Trainer(run_config(data_dir, tmp_path / "run", attention="document"))


def test_an_objective_without_the_layout_refuses_it():
    """XLNet's two streams lay attention out by permutation; it takes `full` alone."""
    cfg = load_run_config("xlnet-tiny-cpu", {"attention": "unpadded"})
    with pytest.raises(RunConfigError, match="objective 'plm' supports full"):
        check_data_attention(cfg, packed=False)


def test_unknown_attention_is_a_run_config_error(data_dir, tmp_path):
    with pytest.raises(RunConfigError, match="attention='flash': choose from full, document, "
                                             "unpadded"):
        run_config(data_dir, tmp_path / "run", attention="flash")


@pytest.mark.parametrize("varlen", [False, True], ids=["padded-fallback", "reference-varlen"])
@pytest.mark.parametrize("objective", ["mlm", "electra"])
def test_unpadded_training_follows_the_padded_run(data_dir, tmp_path, objective, varlen,
                                                  monkeypatch):
    """Same data, same model: the loss curve of attention 'unpadded' is the padded one's,
    on this CPU's padded fallback and on varlen's segments (the reference op; ELECTRA:
    generator and discriminator both run on the real tokens alone)."""
    fields = OBJECTIVE_FIELDS[objective]
    full = pretrain(run_config(data_dir, tmp_path / "full", max_steps=3, export=False,
                               **fields))
    if varlen:
        use_reference_varlen(monkeypatch)
    CALLS.clear()
    unpadded = pretrain(run_config(data_dir, tmp_path / "unpadded", max_steps=3, export=False,
                                   attention="unpadded", **fields))
    assert bool(CALLS) is varlen  # the unpadded path ran, or the padded layout did
    a, b = read_metrics(tmp_path / "full")[0], read_metrics(tmp_path / "unpadded")[0]
    for x, y in zip(a, b, strict=True):
        assert y["loss"] == pytest.approx(x["loss"], rel=1e-4)
    assert unpadded["eval_loss"] == pytest.approx(full["eval_loss"], rel=1e-4)


@pytest.mark.parametrize("objective", ["mlm", "electra"])
def test_document_attention_trains_on_packed_data(packed_dir, tmp_path, objective):
    """Packed rows with documents: a run trains and evaluates (its batches carry
    document_ids), and its losses are not the full-attention run's."""
    fields = OBJECTIVE_FIELDS[objective]
    full = pretrain(run_config(packed_dir, tmp_path / "full", max_steps=3, export=False,
                               **fields))
    document = pretrain(run_config(packed_dir, tmp_path / "doc", max_steps=3, export=False,
                                   attention="document", **fields))
    assert document["eval_loss"] > 0 and document["eval_loss"] != full["eval_loss"]
    losses = [x["loss"] for x in read_metrics(tmp_path / "doc")[0]]
    assert len(losses) == 3 and losses != [x["loss"] for x in read_metrics(tmp_path / "full")[0]]
