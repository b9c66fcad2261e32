"""The pre-training loop end to end on a generated corpus and a micro model."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest
import torch
import transformers

from litebert.cli import main
from litebert.model import EncoderForPreTraining
from litebert.objectives import BUILTIN, OBJECTIVES
from litebert.train import checkpoint
from litebert.train.compiling import BACKEND_ENV
from litebert.train.pretrain import Trainer, TrainingDiverged, pretrain, resolved_workers
from litebert.train.run_config import RunConfigError
from litebert.train.state import export_run, load_model_state
from tests.helpers.launch import kill_once_logged, run_ranks
from tests.helpers.pretrain import (
    MICRO_MODEL,
    OBJECTIVE_FIELDS,
    file_reads,
    objective_cli,
    pretrain_cli,
    read_metrics,
    run_config,
    run_here,
)

ROOT = Path(__file__).resolve().parents[2]


def test_pretrain_logs_evaluates_saves_and_exports(data_dir, tmp_path):
    result = pretrain(run_config(data_dir, tmp_path / "run"))
    train, evals = read_metrics(tmp_path / "run")
    assert [x["step"] for x in train] == [1, 2, 3, 4, 5, 6]
    for x in train:
        assert {"loss", "mlm_loss", "sop_loss", "lr", "tokens_per_s"} <= set(x)
        assert x["loss"] == pytest.approx(x["mlm_loss"] + x["sop_loss"], rel=1e-5)
    assert [x["step"] for x in evals] == [3, 6]
    for key in ("eval_mlm_accuracy", "eval_sop_accuracy", "eval_mlm_baseline_accuracy",
                "eval_sop_baseline_accuracy"):
        assert 0.0 <= evals[-1][key] <= 1.0 and key in result
    last = evals[-1]
    assert last["eval_loss"] == pytest.approx(last["eval_mlm_loss"] + last["eval_sop_loss"])
    assert train[0]["lr"] == pytest.approx(0.005)  # warmup: step 1 of 2
    saved = [p.name for p in checkpoint.list_checkpoints(tmp_path / "run")]
    assert saved == ["step-00000003", "step-00000006"]
    export = tmp_path / "run" / "export"
    assert (export / "spiece.model").exists()
    ours = EncoderForPreTraining.from_pretrained(export).eval()
    theirs = transformers.AlbertForPreTraining.from_pretrained(export).eval()
    ids = torch.randint(5, ours.config.vocab_size, (2, 12))
    with torch.no_grad():
        torch.testing.assert_close(ours(ids).prediction_logits, theirs(ids).prediction_logits,
                                   atol=1e-5, rtol=0)


@pytest.mark.parametrize(("objective", "micro", "compiled"),
                         [("mlm", 4, False), ("mlm", 2, False), ("electra", 2, False),
                          ("mlm", 2, True),
                          pytest.param("electra", 2, True, marks=pytest.mark.slow)])
def test_gradient_accumulation_matches_one_big_batch(data_dir, tmp_path, monkeypatch, objective,
                                                     micro, compiled):
    """1 x 8 == 2 x 4 == 4 x 2: every loss part of the objective is divided by its count over
    the global batch (masked tokens differ between micro-batches), not averaged per part;
    ELECTRA corrupts a row alike wherever it sits. Compiled (aot_eager), the accumulated
    run still equals the eager big batch."""
    monkeypatch.setenv(BACKEND_ENV, "aot_eager")
    torch._dynamo.reset()
    fields = OBJECTIVE_FIELDS[objective]
    once = dict(max_steps=3, eval_every=100, export=False, **fields)  # weights only: no eval
    pretrain(run_config(data_dir, tmp_path / "big", **once))
    pretrain(run_config(data_dir, tmp_path / "acc", micro_batch_size=micro, compile=compiled,
                        **once))
    a, _ = load_model_state(checkpoint.latest(tmp_path / "big"))
    b, _ = load_model_state(checkpoint.latest(tmp_path / "acc"))
    for key in a:
        torch.testing.assert_close(a[key], b[key], atol=1e-5, rtol=1e-4, msg=key)


@pytest.mark.parametrize(("objective", "compiled"),
                         # one process's eager MLM resume: also test_preemption's SIGTERM test
                         # and the compiled one (40 s) in the slow target: the suite's budget
                         [pytest.param("mlm", False, marks=pytest.mark.slow),
                          ("electra", False), pytest.param("mlm", True, marks=pytest.mark.slow)])
def test_kill_9_then_resume_is_bit_identical(data_dir, tmp_path, objective, compiled):
    """Killed between checkpoints and resumed: every loss and weight bit for bit those of the
    run never stopped; compiled runs too (model and LAMB update, aot_eager) against each other."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", BACKEND_ENV: "aot_eager"}
    steps = 14
    extra = ("--no-export", "--compile" if compiled else "--no-compile",
             *objective_cli(objective))
    run_here(pretrain_cli(data_dir, tmp_path / "straight", steps, *extra), env)
    # killed once step 7 is logged: between checkpoints 6 and 8
    kill_once_logged(pretrain_cli(data_dir, tmp_path / "killed", steps, *extra), env,
                     tmp_path / "killed", step=7)
    run_here(pretrain_cli(data_dir, tmp_path / "killed", steps, *extra, "--resume", "auto"), env)
    straight, _ = read_metrics(tmp_path / "straight")
    resumed, _ = read_metrics(tmp_path / "killed")
    assert [x["step"] for x in resumed] == list(range(1, steps + 1))
    for a, b in zip(straight, resumed, strict=True):
        assert a["loss"] == b["loss"], (a["step"], a["loss"], b["loss"])  # bit for bit
    # Training time goes on from the checkpoint's, so a study's minutes hold both segments.
    seconds = [x["train_seconds"] for x in resumed]
    assert all(later > earlier for earlier, later in zip(seconds, seconds[1:], strict=False))
    a, _ = load_model_state(checkpoint.latest(tmp_path / "straight"))
    b, _ = load_model_state(checkpoint.latest(tmp_path / "killed"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_checkpoint_between_log_lines_keeps_every_token_and_the_window(data_dir, tmp_path):
    """Checkpoint at step 3, log lines at 2, 4 and 6: a run resumed from step 3 counts the
    tokens of the run never stopped (it lost step 3's when the checkpoint held the totals of
    the last line), and its line at step 4 is the mean of steps 3 and 4 as that run's is,
    not of step 4 alone under the same name."""
    cfg = run_config(data_dir, tmp_path / "r", log_every=2, save_every=3, eval_every=6,
                     export=False)
    pretrain(cfg)
    straight = read_metrics(tmp_path / "r")[0]
    shutil.rmtree(checkpoint.latest(tmp_path / "r"))  # as if stopped after the step-3 save
    pretrain(cfg)
    resumed = read_metrics(tmp_path / "r")[0]
    assert [x["step"] for x in resumed] == [x["step"] for x in straight] == [2, 4, 6]
    for name in ("loss", "mlm_loss", "sop_loss"):  # bit for bit
        assert [x[name] for x in resumed] == [x[name] for x in straight], name
    assert resumed[-1]["tokens"] == straight[-1]["tokens"] > 0


# MLM with DDP and with FSDP eager: also tests/test_distributed.py (two nodes); the default
# suite keeps one compiled run of each wrapper.
SLOW = pytest.mark.slow


@pytest.mark.parametrize(("objective", "sharding"), [pytest.param("mlm", "--no-fsdp", marks=SLOW),
                                                   pytest.param("mlm", "--fsdp", marks=SLOW),
                                                   pytest.param("electra", "--no-fsdp",
                                                                marks=SLOW),
                                                   ("electra", "--fsdp"),
                                                   pytest.param("mlm", "--compile", marks=SLOW),
                                                   ("mlm", "--compile --fsdp"),
                                                   pytest.param("electra", "--compile --fsdp",
                                                                marks=SLOW)])
def test_two_processes_match_one(data_dir, tmp_path, objective, sharding):
    """DDP (or FSDP's fully_shard) over gloo with 2 x micro-batch 4 == 1 process with
    micro-batch 8, at the same global batch; compiled too (aot_eager): DDP over the compiled
    model, FSDP with each unit compiled."""
    env = {BACKEND_ENV: "aot_eager"}
    extra = ("--no-export", *objective_cli(objective))
    run_here(pretrain_cli(data_dir, tmp_path / "one", 3, *extra, "--no-compile"), env)
    run_ranks(2, pretrain_cli(data_dir, tmp_path / "two", 3, *extra, "--micro-batch-size",
                              "4", *sharding.split())[3:], env)
    a, _ = load_model_state(checkpoint.latest(tmp_path / "one"))
    b, _ = load_model_state(checkpoint.latest(tmp_path / "two"))  # FSDP: sharded (DCP)
    for key in a:
        torch.testing.assert_close(a[key], b[key], atol=1e-5, rtol=0, msg=key)
    train, evals = read_metrics(tmp_path / "two")
    assert [x["step"] for x in train] == [1, 2, 3] and len(evals) == 1  # rank 0 alone logs


def test_non_finite_losses_are_skipped_then_stop_the_run(data_dir, tmp_path, monkeypatch):
    """Skips are decided on the device: a skipped step counts (step, schedule and data move
    on) and leaves weights and LAMB's moments as they were; the host learns of it at the
    next log line, where max_nonfinite in a row stops the run."""
    trainer = Trainer(run_config(data_dir, tmp_path / "nan", max_steps=20, max_nonfinite=3,
                                 save_every=2, eval_every=100, log_every=2))
    forward = EncoderForPreTraining.forward
    calls = {"n": 0}

    def flaky(self, *args, **kwargs):
        out = forward(self, *args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 3 or calls["n"] >= 6:  # one bad step, later only bad ones
            out.mlm_loss = out.mlm_loss * float("nan")
        return out

    monkeypatch.setattr(EncoderForPreTraining, "forward", flaky)
    with pytest.raises(TrainingDiverged, match="3 non-finite losses in a row by step 8.*"
                                               "step-00000006"):
        trainer.run()
    assert trainer.state.skipped_steps == 4 and trainer.state.step == 8
    train, _ = read_metrics(tmp_path / "nan")
    # Step 3 was skipped: the log of steps 3-4 says so and averages step 4's loss alone.
    assert [(x["step"], x["skipped_steps"]) for x in train] == [(2, 0), (4, 1), (6, 2)]
    assert all(math.isfinite(x["loss"]) for x in train)
    # Steps 6-8 were skipped: the weights and the optimizer's moments are step 5's, which
    # the checkpoint of step 6 holds.
    good = checkpoint.latest(tmp_path / "nan")
    saved, _ = load_model_state(good)
    now = trainer.model.state_dict()
    assert all(torch.isfinite(v).all() for v in saved.values())
    assert all(torch.equal(saved[k], now[k]) for k in saved)
    moments = Trainer(run_config(data_dir, tmp_path / "nan", max_steps=20,
                                 resume=str(good))).optimizer.state_dict()["state"]
    for i, state in trainer.optimizer.state_dict()["state"].items():
        for key in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(state[key], moments[i][key]), (i, key)


def test_cli_pretrain_export_and_plot(data_dir, tmp_path, capsys):
    out = tmp_path / "cli"
    recipe = "tiny-cpu"  # a built-in recipe, by name
    assert main(["pretrain", "--config", str(recipe), "--data", str(data_dir), "--out",
                 str(out), "--max-steps", "4", "--eval-every", "2", "--save-every", "2",
                 "--log-every", "1", "--batch-size", "8", "--micro-batch-size", "8",
                 "--warmup-steps", "1",
                 "--set", f"model_overrides={json.dumps(MICRO_MODEL)}"]) == 0
    assert main(["export", str(out), "--out", str(tmp_path / "exported")]) == 0
    assert (tmp_path / "exported" / "model.safetensors").exists()
    assert main(["plot", str(out)]) == 0
    assert {p.name for p in (out / "plots").glob("*.png")} >= {"loss.png", "lr.png",
                                                                "mlm_accuracy.png"}
    assert main(["pretrain", "--config", str(recipe), "--out", str(out)]) == 2
    assert "no training data" in capsys.readouterr().err


def test_resuming_with_another_model_or_objective_is_a_clear_error(data_dir, tmp_path,
                                                                   monkeypatch):
    pretrain(run_config(data_dir, tmp_path / "r", max_steps=3, export=False))
    other = dict(MICRO_MODEL, hidden_size=64)
    with pytest.raises(ValueError, match=r"step-00000003 was written by a run with other "
                                         r"settings \(model_overrides.hidden_size: 32 there, "
                                         r"64 here\)\. .*--restart"):
        Trainer(run_config(data_dir, tmp_path / "r", max_steps=3, model_overrides=other))
    # Another registered objective: its class (OBJECTIVES) and its Config (BUILTIN).
    monkeypatch.setitem(OBJECTIVES, "other", OBJECTIVES["mlm"])
    monkeypatch.setitem(BUILTIN, "other", BUILTIN["mlm"])
    with pytest.raises(ValueError, match="objective.name: 'mlm' there, 'other' here"):
        Trainer(run_config(data_dir, tmp_path / "r", max_steps=3, objective="other"))


def test_a_checkpoint_from_before_the_objective_option_resumes_and_exports(data_dir,
                                                                          tmp_path):
    """state.json of older runs has no `objective` in its config: they trained MLM."""
    pretrain(run_config(data_dir, tmp_path / "old", max_steps=3, export=False))
    state = checkpoint.latest(tmp_path / "old") / "state.json"
    record = json.loads(state.read_text())
    del record["config"]["objective"]
    state.write_text(json.dumps(record))
    assert export_run(tmp_path / "old").name == "export"
    trainer = Trainer(run_config(data_dir, tmp_path / "old", max_steps=3))
    assert trainer.state.step == 3


# ---- FSDP: sharded checkpoints (torch.distributed.checkpoint) ---------------------------------


def _fsdp_cli(data_dir, out, *extra):
    """5 steps of micro-batches of 4 (global batch 8), a checkpoint every 2 steps and at 5."""
    return pretrain_cli(data_dir, out, 5, "--fsdp", "--micro-batch-size", "4", *extra)[3:]


@pytest.fixture(scope="module")
def fsdp_run(data_dir, tmp_path_factory):
    """An uninterrupted 2-process FSDP run; at its end it exports the live model itself."""
    out = tmp_path_factory.mktemp("fsdp") / "run"
    run_ranks(2, _fsdp_cli(data_dir, out))
    return out


def test_fsdp_ranks_write_their_own_shards(fsdp_run):
    path = checkpoint.checkpoint_dir(fsdp_run) / "step-00000002"
    names = {p.name for p in path.iterdir()}
    assert {".metadata", "__0_0.distcp", "__1_0.distcp", "rng-rank0.pt", "rng-rank1.pt",
            "scheduler.pt", "state.json"} == names  # nothing gathered into model.safetensors
    state = json.loads((path / "state.json").read_text())
    assert state["format"] == "sharded" and set(state["files"]) == names - {"state.json"}
    assert [p.name for p in checkpoint.list_checkpoints(fsdp_run)] == [
        "step-00000002", "step-00000004", "step-00000005"]


@pytest.mark.parametrize("nproc", [1, 2])
def test_fsdp_checkpoint_resumes_on_any_number_of_processes(data_dir, fsdp_run, tmp_path,
                                                            nproc):
    """Resumed from step 2 on 1 process (2 micro-batches of 4: the data position converts)
    or on 2, the run goes on as the uninterrupted one did."""
    run = tmp_path / "run"
    shutil.copytree(fsdp_run, run)
    for later in ("step-00000004", "step-00000005"):
        shutil.rmtree(checkpoint.checkpoint_dir(run) / later)
    run_ranks(nproc, _fsdp_cli(data_dir, run, "--no-export", "--resume", "auto"))
    straight, _ = read_metrics(fsdp_run)
    resumed, _ = read_metrics(run)
    assert [x["step"] for x in resumed] == [1, 2, 3, 4, 5]
    for a, b in zip(straight, resumed, strict=True):
        assert b["loss"] == pytest.approx(a["loss"], abs=1e-5, rel=0), a["step"]
        if nproc == 2:  # same world size, each rank's RNG restored: exact
            assert b["loss"] == a["loss"], a["step"]
    a, _ = load_model_state(checkpoint.latest(fsdp_run))
    b, saved = load_model_state(checkpoint.latest(run))
    assert saved["step"] == 5 and saved["format"] == "sharded"  # every run's, FSDP or not
    for key in a:
        torch.testing.assert_close(a[key], b[key], atol=1e-5, rtol=0, msg=key)


def test_fsdp_checkpoint_exports_in_one_process(fsdp_run, tmp_path):
    assert not torch.distributed.is_initialized()  # DCP reads the shards without one
    assert (checkpoint.latest(fsdp_run) / "__1_0.distcp").exists()
    out = export_run(fsdp_run, tmp_path / "exported")  # from the sharded step-5 checkpoint
    ours = EncoderForPreTraining.from_pretrained(out).eval()
    live = EncoderForPreTraining.from_pretrained(fsdp_run / "export").eval()  # the run's own
    ids = torch.randint(5, ours.config.vocab_size, (2, 12))
    with torch.no_grad():
        a, b = ours(ids), live(ids)
    torch.testing.assert_close(a.prediction_logits, b.prediction_logits, atol=0, rtol=0)
    torch.testing.assert_close(a.sop_logits, b.sop_logits, atol=0, rtol=0)
    assert (out / "spiece.model").exists()


def test_a_clip_of_zero_means_no_clipping(data_dir, tmp_path):
    """RoBERTa's recipe clips nothing (max_grad_norm 0); a literal clip of 0 would scale every
    gradient to zero, so that run would match one whose clip is too large to bite."""
    kw = dict(max_steps=2, export=False, eval_every=2, save_every=2)
    pretrain(run_config(data_dir, tmp_path / "zero", max_grad_norm=0.0, **kw))
    pretrain(run_config(data_dir, tmp_path / "huge", max_grad_norm=1e9, **kw))
    pretrain(run_config(data_dir, tmp_path / "one", max_grad_norm=1.0, **kw))
    zero, huge, one = (read_metrics(tmp_path / name)[0] for name in ("zero", "huge", "one"))
    assert [x["loss"] for x in zero] == [x["loss"] for x in huge]
    assert zero[0]["grad_norm"] > 1.0  # the clip of 1 bites: its second step differs
    assert one[1]["loss"] != zero[1]["loss"]
    with pytest.raises(RunConfigError, match="max_grad_norm"):
        run_config(data_dir, tmp_path / "bad", max_grad_norm=-1.0)


def test_loader_workers_change_nothing_but_speed(data_dir, tmp_path):
    """Items are drawn per (seed, epoch, index): two workers give the same losses as none,
    across an epoch boundary, and the default is none on a CPU."""
    assert resolved_workers(run_config(data_dir, tmp_path), torch.device("cpu")) == 0
    steps = 62  # the train split's 465 items make 58 batches of 8: into the second epoch
    fast = dict(max_steps=steps, eval_every=steps, save_every=steps, export=False)
    pretrain(run_config(data_dir, tmp_path / "none", num_workers=0, **fast))
    pretrain(run_config(data_dir, tmp_path / "two", num_workers=2, **fast))
    none, _ = read_metrics(tmp_path / "none")
    two, _ = read_metrics(tmp_path / "two")
    assert len(none) == steps and [x["loss"] for x in none] == [x["loss"] for x in two]
    state = json.loads((checkpoint.latest(tmp_path / "two") / "state.json").read_text())
    assert state["epoch"] == 1


def test_a_run_reads_its_data_manifest_once_and_the_model_it_starts_from_once(
        data_dir, tmp_path, monkeypatch):
    manifest = (data_dir / "manifest.json").resolve()
    reads = file_reads(monkeypatch)
    pretrain(run_config(data_dir, tmp_path / "run", max_steps=2, eval_every=2, save_every=2))
    assert reads[manifest] == 1  # the dataset, held-out set, baseline, pairs and digest
    reads.clear()
    source = tmp_path / "run" / "export"
    pretrain(run_config(data_dir, tmp_path / "more", max_steps=2, eval_every=2, save_every=2,
                        start_from=str(source)))
    assert reads[manifest] == 1 and reads[(source / "config.json").resolve()] == 1
