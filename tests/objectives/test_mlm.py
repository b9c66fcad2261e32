"""The MLM objective (+ the data's SOP/NSP task): parts, counts and sums, metrics, export."""

from __future__ import annotations

import contextlib
import json
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
import transformers

from litebert.config import ConfigError
from litebert.data.loader import SLOT_KEYS, PretrainingDataset
from litebert.distributed import DistInfo
from litebert.model import EncoderForPreTraining
from litebert.objectives import MLMObjective
from litebert.objectives.mlm_eval import load_for_evaluation
from litebert.train.pretrain import model_config
from litebert.train.run_config import PretrainConfig
from tests.helpers.family_configs import xlnet_config
from tests.helpers.models import randomize, small_config
from tests.helpers.pretrain import MICRO_MODEL, run_config

CPU = DistInfo(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))
OWN_KEYS = {"eval_loss", "eval_mlm_loss", "eval_mlm_accuracy", "eval_mlm_baseline_accuracy",
            "eval_sop_loss", "eval_sop_accuracy", "eval_sop_baseline_accuracy"}


@pytest.fixture(scope="module")
def train(data_dir) -> PretrainingDataset:
    return PretrainingDataset(data_dir, "train", seed=0)


def objective_and_model(data_dir, train, **kw) -> tuple[MLMObjective, torch.nn.Module]:
    cfg = run_config(data_dir, data_dir / "unused", **kw)
    objective = MLMObjective(cfg, train)
    torch.manual_seed(0)
    return objective, objective.build(model_config(cfg, data_dir)).eval()


def test_the_pair_task_and_its_name_come_from_the_data(data_dir, train):
    cfg = run_config(data_dir, data_dir / "unused")
    sop = MLMObjective(cfg, train)
    assert (sop.parts, sop.weights) == (("mlm", "sop"), (1.0, 1.0))
    nsp_data = SimpleNamespace(label_key="next_sentence_label", data=train.data)
    assert MLMObjective(cfg, nsp_data).parts == ("mlm", "nsp")  # type: ignore[arg-type]
    alone = SimpleNamespace(label_key=None, data=train.data)  # data objective "none"
    assert MLMObjective(cfg, alone).parts == ("mlm",)  # type: ignore[arg-type]
    assert MLMObjective(cfg).parts == ("mlm",)  # no data: build and export only


def test_counts_and_sums_of_a_micro_batch_match_a_direct_computation(data_dir, train):
    """The sums come from the static slots; the direct computation from the labels path."""
    objective, model = objective_and_model(data_dir, train)
    batch = train.collate([train[i] for i in range(5)])
    masked = batch["labels"] != -100  # (B, T)
    torch.testing.assert_close(objective.counts(batch),
                               torch.tensor([float(masked.sum()), 5.0]), atol=0, rtol=0)
    with torch.no_grad():
        sums = objective.loss_sums(model, batch)  # (2,)
        out = model(**{k: v for k, v in batch.items() if k not in SLOT_KEYS})
    mlm = F.cross_entropy(out.prediction_logits, batch["labels"][masked], reduction="sum")
    sop = F.cross_entropy(out.sop_logits, batch["sentence_order_label"], reduction="sum")
    torch.testing.assert_close(sums, torch.stack([mlm, sop]), rtol=1e-6, atol=1e-5)


def test_a_micro_batch_without_masked_tokens_sums_to_zero(data_dir, train):
    objective, model = objective_and_model(data_dir, train)
    batch = train.collate([train[i] for i in range(3)])
    batch["labels"].fill_(-100)
    batch["masked_weights"].zero_()
    assert objective.counts(batch).tolist() == [0.0, 3.0]
    with torch.no_grad():
        sums = objective.loss_sums(model, batch)
    assert sums[0].item() == 0.0 and torch.isfinite(sums).all()


@pytest.mark.parametrize("pair_tasks", ["own", "both"])
def test_evaluation_reports_todays_metric_names(data_dir, train, pair_tasks):
    objective, model = objective_and_model(data_dir, train,
                                           objective={"name": "mlm", "eval_pair_tasks": pair_tasks})
    result = objective.evaluate(model, CPU, contextlib.nullcontext())
    cross = {"eval_nsp_accuracy", "eval_nsp_baseline_accuracy"} if pair_tasks == "both" else set()
    assert set(result) == OWN_KEYS | cross
    assert result["eval_loss"] == pytest.approx(result["eval_mlm_loss"]
                                                + result["eval_sop_loss"])
    assert not model.training  # its mode as it was
    assert MLMObjective(run_config(data_dir, data_dir)).evaluate(model, CPU,
                                                                 contextlib.nullcontext()) == {}


def test_export_is_an_albert_pretraining_directory_with_the_tokenizer(data_dir, train,
                                                                      tmp_path):
    objective, model = objective_and_model(data_dir, train)
    assert isinstance(model, EncoderForPreTraining)  # its state-dict keys are the checkpoints'
    config = model_config(run_config(data_dir, tmp_path), data_dir)
    out = objective.export(model.state_dict(), config, data_dir, tmp_path / "export")
    assert (out / "spiece.model").exists()
    loaded = EncoderForPreTraining.from_pretrained(out).eval()
    ids = torch.randint(5, config.vocab_size, (2, 12))
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids).sop_logits, model(ids).sop_logits, atol=0, rtol=0)


def test_a_family_without_a_pair_head_class_keeps_the_trained_head_beside_it(data_dir, train,
                                                                             tmp_path):
    """ELECTRA's transformers layout has no pre-training class with a SOP head: the export
    is its masked LM, which transformers loads, and the SOP head and pooler are kept in our
    layout beside it, which litebert loads and eval-pretraining scores."""
    cfg = run_config(data_dir, tmp_path, model="electra-small",
                     model_overrides=dict(MICRO_MODEL, num_hidden_groups=2))
    objective = MLMObjective(cfg, train)
    torch.manual_seed(0)
    config = model_config(cfg, data_dir)
    model = randomize(objective.build(config)).eval()
    out = objective.export(model.state_dict(), config, data_dir, tmp_path / "export")
    assert json.loads((out / "config.json").read_text())["architectures"] == [
        "ElectraForMaskedLM"]
    theirs = transformers.ElectraForMaskedLM.from_pretrained(out).eval()
    loaded = EncoderForPreTraining.from_pretrained(out, strict=True).eval()  # nothing missing
    ids = torch.randint(5, config.vocab_size, (2, 12))
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids).sop_logits, model(ids).sop_logits, atol=0, rtol=0)
        torch.testing.assert_close(theirs(ids).logits, model(ids).prediction_logits,
                                   atol=1e-5, rtol=0)
    assert load_for_evaluation(out)[1] is True  # has a pair head: SOP and NSP are scored


@pytest.mark.parametrize("attention", ["document", "unpadded"])
def test_a_backbone_that_cannot_read_the_runs_layout_is_refused_at_build(attention):
    objective = MLMObjective(PretrainConfig(objective="mlm", attention=attention))
    assert isinstance(objective.build(small_config()), EncoderForPreTraining)
    with pytest.raises(ConfigError, match=f"attention='{attention}': backbone 'xlnet' reads "
                                          f"full only"):
        objective.build(xlnet_config(use_pooler=True))
