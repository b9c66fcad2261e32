"""XLNet's permutation LM through the pre-training loop: it learns, it evaluates and exports
an XLNetLMHeadModel directory, and with memories on it stays exact under gradient
accumulation, two torchrun processes and kill -9 + resume (the memories are the objective's
state, saved per rank in every checkpoint when objective.checkpoint_memories is set)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import torch
import transformers
from safetensors.torch import load_file

from litebert.model import EncoderForPermutationLM
from litebert.objectives import evaluate_directory
from litebert.train import checkpoint
from litebert.train.pretrain import pretrain
from litebert.train.state import load_model_state
from tests.helpers.launch import ENV, kill_once_logged, run_ranks
from tests.helpers.plm import (
    MEM,
    OBJECTIVE,
    SAVING_MEMORIES,
    plm_cli,
    run_config,
)
from tests.helpers.pretrain import read_metrics, run_here


def test_plm_trains_evaluates_and_exports_an_xlnet_directory(plm_data, tmp_path):
    result = pretrain(run_config(plm_data, tmp_path / "run", max_steps=12, eval_every=6))
    train, evals = read_metrics(tmp_path / "run")
    assert [x["step"] for x in train] == list(range(1, 13))
    assert all(x["loss"] == pytest.approx(x["plm_loss"]) for x in train)
    assert train[-1]["plm_loss"] < train[0]["plm_loss"]
    assert [x["step"] for x in evals] == [6, 12]
    for key in ("eval_plm_accuracy", "eval_plm_baseline_accuracy"):
        assert 0.0 <= result[key] <= 1.0
    assert result["eval_plm_loss"] == pytest.approx(result["eval_loss"])
    # The memories are not checkpointed by default.
    assert not list(checkpoint.latest(tmp_path / "run").glob("objective-rank*"))
    export = tmp_path / "run" / "export"
    config = json.loads((export / "config.json").read_text())
    assert config["model_type"] == "xlnet" and config["architectures"] == ["XLNetLMHeadModel"]
    ours = EncoderForPermutationLM.from_pretrained(export).eval()
    theirs = transformers.XLNetLMHeadModel.from_pretrained(export).eval()
    ids = torch.randint(9, ours.config.vocab_size, (2, 12))
    with torch.no_grad():
        torch.testing.assert_close(ours(ids).logits, theirs(ids).logits, atol=1e-5, rtol=0)
    # eval-pretraining scores the export as the run's last evaluation did.
    objective, scored = evaluate_directory(export, plm_data, instances=16, seed=1234,
                                           batch_size=8)
    assert objective.__name__ == "PLMObjective"
    assert scored["plm_accuracy"] == pytest.approx(result["eval_plm_accuracy"], abs=1e-6)
    assert scored["plm_loss"] == pytest.approx(result["eval_plm_loss"], rel=1e-4)


def test_plm_with_nsp_trains_the_pair_head_and_keeps_it_beside_the_export(plm_data, tmp_path):
    """objective.nsp (the "+NSP" ablation row): nsp_loss is logged and added to the loss,
    evaluations score it against the majority label, the export stays an XLNetLMHeadModel
    directory and keeps the pair head in litebert_heads.safetensors, from which
    eval-pretraining reads it back to the run's last figures."""
    objective = {**OBJECTIVE, "nsp": True}
    result = pretrain(run_config(plm_data, tmp_path / "run", objective=objective))
    train, evals = read_metrics(tmp_path / "run")
    assert all(x["loss"] == pytest.approx(x["plm_loss"] + x["nsp_loss"]) for x in train)
    assert 0.0 <= result["eval_nsp_accuracy"] <= 1.0
    assert 0.5 <= result["eval_nsp_baseline_accuracy"] <= 1.0
    assert result["eval_loss"] == pytest.approx(result["eval_plm_loss"]
                                                + result["eval_nsp_loss"])
    export = tmp_path / "run" / "export"
    config = json.loads((export / "config.json").read_text())
    assert config["architectures"] == ["XLNetLMHeadModel"]
    kept = load_file(export / "litebert_heads.safetensors")
    assert sorted(kept) == ["albert.pooler.bias", "albert.pooler.weight",
                            "sop_classifier.classifier.bias", "sop_classifier.classifier.weight"]
    transformers.XLNetLMHeadModel.from_pretrained(export)  # the rest is transformers' layout
    objective_cls, scored = evaluate_directory(export, plm_data, instances=16, seed=1234,
                                               batch_size=8)
    assert scored["nsp_accuracy"] == pytest.approx(result["eval_nsp_accuracy"], abs=1e-6)
    assert scored["nsp_loss"] == pytest.approx(result["eval_nsp_loss"], rel=1e-4)
    assert scored["plm_loss"] == pytest.approx(result["eval_plm_loss"], rel=1e-4)
    assert "nsp_accuracy" in objective_cls.format_result(scored)


@pytest.mark.parametrize("micro", [4, 2])
def test_accumulation_with_memories_matches_one_big_batch(plm_data, tmp_path, micro):
    """1 x 8 == 2 x 4 == 4 x 2: each micro-batch keeps its own rows' memories, so the same
    streams meet the same memories however the batch is split."""
    pretrain(run_config(plm_data, tmp_path / "big", max_steps=3, export=False,
                        objective=SAVING_MEMORIES))
    pretrain(run_config(plm_data, tmp_path / "acc", max_steps=3, micro_batch_size=micro,
                        export=False, objective=SAVING_MEMORIES))
    a, _ = load_model_state(checkpoint.latest(tmp_path / "big"))
    b, _ = load_model_state(checkpoint.latest(tmp_path / "acc"))
    for key in a:
        torch.testing.assert_close(a[key], b[key], atol=1e-5, rtol=1e-4, msg=key)
    mems_a = load_file(checkpoint.latest(tmp_path / "big") / "objective-rank0.safetensors")
    mems_b = load_file(checkpoint.latest(tmp_path / "acc") / "objective-rank0.safetensors")
    whole = mems_a["mems.0"]  # (L, M, 8, H); the groups' rows in order make the same batch
    assert whole.shape == (2, MEM, 8, 32) and whole.abs().sum() > 0
    split = torch.cat([mems_b[f"mems.{g}"] for g in range(8 // micro)], dim=2)
    torch.testing.assert_close(whole, split, atol=1e-5, rtol=1e-4)


def test_kill_9_then_resume_with_memories_is_bit_identical(plm_data, tmp_path):
    """With objective.checkpoint_memories (set as --set objective.checkpoint_memories=true)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    steps, opt_in = 10, ("--set", "objective.checkpoint_memories=true")
    run_here(plm_cli(plm_data, tmp_path / "straight", steps, *opt_in))
    # killed once step 5 is logged: between checkpoints 4 and 6
    kill_once_logged(plm_cli(plm_data, tmp_path / "killed", steps, *opt_in), env,
                     tmp_path / "killed", step=5)
    run_here(plm_cli(plm_data, tmp_path / "killed", steps, *opt_in, "--resume", "auto"))
    straight, _ = read_metrics(tmp_path / "straight")
    resumed, _ = read_metrics(tmp_path / "killed")
    assert [x["step"] for x in resumed] == list(range(1, steps + 1))
    for a, b in zip(straight, resumed, strict=True):
        assert a["loss"] == b["loss"], (a["step"], a["loss"], b["loss"])  # bit for bit
    weights = [load_model_state(checkpoint.latest(tmp_path / r))[0] for r in ("straight",
                                                                             "killed")]
    mems = [load_file(checkpoint.latest(tmp_path / r) / "objective-rank0.safetensors")
            for r in ("straight", "killed")]
    for a, b in (weights, mems):
        assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow  # 23 s; test_pretrain_plm_memories resumes two processes' memories on one
def test_two_processes_with_memories_match_one(plm_data, tmp_path):
    """DDP over gloo, 2 x micro-batch 4 == 1 process with micro-batch 8: rank k reads streams
    4k .. 4k + 3 and keeps their memories, which tie a resume to two processes."""
    opt_in = ("--set", "objective.checkpoint_memories=true")
    run_here(plm_cli(plm_data, tmp_path / "one", 3, *opt_in))
    run_ranks(2, plm_cli(plm_data, tmp_path / "two", 3, *opt_in, "--micro-batch-size", "4")[3:])
    a, _ = load_model_state(checkpoint.latest(tmp_path / "one"))
    b, _ = load_model_state(checkpoint.latest(tmp_path / "two"))
    for key in a:
        torch.testing.assert_close(a[key], b[key], atol=1e-5, rtol=0, msg=key)
    one = load_file(checkpoint.latest(tmp_path / "one") / "objective-rank0.safetensors")
    ranks = [load_file(checkpoint.latest(tmp_path / "two") / f"objective-rank{r}.safetensors")
             for r in (0, 1)]
    torch.testing.assert_close(one["mems.0"], torch.cat([m["mems.0"] for m in ranks], dim=2),
                               atol=1e-5, rtol=1e-4)
    # The two ranks' memories on one process: a sentence, not one rank's memories kept and
    # the other's dropped unseen (micro-batches of 4: each rank's file would fit).
    run = subprocess.run(plm_cli(plm_data, tmp_path / "two", 4, *opt_in, "--micro-batch-size",
                              "4", "--resume", str(checkpoint.latest(tmp_path / "two"))),
                         env=ENV, capture_output=True, text=True)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert "saved by 2 processes, one file each, and this run has 1" in run.stderr
