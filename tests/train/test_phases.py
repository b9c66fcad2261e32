"""Runs in phases: a plan of phases (64 then 128 tokens here), killed anywhere, goes on bit
for bit; the schedule continues or starts anew; checkpoints of the same plan are accepted,
others refused; a phase the model cannot hold is refused before training; --new-phase."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from litebert.cli import main
from litebert.config import ModelConfig
from litebert.data.builder import BuildConfig, build
from litebert.tokenization import train_sentencepiece
from litebert.train import checkpoint
from litebert.train.phased_run import model_shapes
from litebert.train.pretrain import RunComplete, pretrain
from litebert.train.run_config import RunConfigError, load_run_config
from litebert.train.state import load_model_state
from tests.data.builds import write_corpus
from tests.helpers.launch import ENV, kill_once_logged
from tests.helpers.pretrain import (
    MICRO_MODEL,
    pretrain_cli,
    read_metrics,
    run_config,
    run_here,
)

MODEL_128 = dict(MICRO_MODEL, max_position_embeddings=128)


@pytest.fixture(scope="module")
def lengths(tmp_path_factory):
    """{64: DIR, 128: DIR}: one corpus and one tokenizer, built at two lengths."""
    root = tmp_path_factory.mktemp("phases")
    corpus = write_corpus(root / "corpus.txt", docs=150)
    tok = train_sentencepiece([corpus], root / "tok", vocab_size=200).parent
    for n in (64, 128):
        build([corpus], tok, root / f"data-{n}", BuildConfig(
            max_seq_length=n, format="bert", heldout_fraction=0.1))
    return {n: root / f"data-{n}" for n in (64, 128)}


def two_phases(lengths, out, **kw):
    """3 steps at 64 tokens, then 3 at 128 (each phase's checkpoint at its end)."""
    plan = [{"steps": 3}, {"steps": 3, "data": str(lengths[128])}]
    values = dict(model_overrides=MODEL_128, export=False, phases=plan, eval_every=100)
    return run_config(lengths[64], out, **{**values, **kw})


def weights(run):
    return load_model_state(checkpoint.latest(run))[0]


def same_weights(a, b) -> bool:
    wa, wb = weights(a), weights(b)
    return all(torch.equal(wa[k], wb[k]) for k in wa)


def state_of(run, step):
    return json.loads((checkpoint.checkpoint_dir(run) / f"step-{step:08d}" / "state.json")
                      .read_text())


def test_killed_in_either_phase_or_across_the_boundary_it_goes_on_bit_for_bit(lengths,
                                                                              tmp_path):
    """6 steps at 64 tokens, then 6 at 128 with a schedule of their own; checkpoints every
    2 steps. Killed at step 5 (phase 1), then at step 7 (phase 2, before its first
    checkpoint: it goes on from the boundary's), the same command each time."""
    plan = [{"steps": 6}, {"steps": 6, "data": str(lengths[128]), "lr": 0.005,
                           "warmup_steps": 1, "micro_batch_size": 4}]
    extra = ("--no-export", "--keep-last", "10", f"--set=phases={json.dumps(plan)}",
             f"--set=model_overrides={json.dumps(MODEL_128)}")

    def command(out):
        return pretrain_cli(lengths[64], out, 12, *extra)

    run_here(command(tmp_path / "straight"))
    killed = tmp_path / "killed"
    for step in (5, 7):
        kill_once_logged(command(killed), ENV, killed, step)
    run_here(command(killed))
    straight, resumed = read_metrics(tmp_path / "straight")[0], read_metrics(killed)[0]
    assert [x["step"] for x in resumed] == list(range(1, 13))  # no step twice
    assert [x["loss"] for x in straight] == [x["loss"] for x in resumed]
    # Its own schedule: a warm-up of 1, then linear decay over its other 5 steps.
    assert [x["lr"] for x in resumed][6:8] == [0.005, pytest.approx(0.004)]
    assert same_weights(tmp_path / "straight", killed)
    assert state_of(killed, 6)["phase"] == {"number": 1, "start_step": 0}
    assert state_of(killed, 12)["phase"] == {"number": 2, "start_step": 6}
    assert state_of(killed, 12)["plan"]["phases"] == plan


def test_a_phase_without_schedule_fields_continues_the_curve(lengths, tmp_path):
    pretrain(two_phases(lengths, tmp_path / "phased"))
    pretrain(run_config(lengths[64], tmp_path / "plain", model_overrides=MODEL_128,
                        export=False))
    rates = [[x["lr"] for x in read_metrics(tmp_path / run)[0]] for run in ("phased", "plain")]
    assert rates[0] == rates[1]  # one warm-up and decay over the 6 steps of both phases
    tokens = [x["tokens"] for x in read_metrics(tmp_path / "phased")[0]]
    # The second phase reads rows of 128: about twice the tokens per step.
    assert tokens[5] - tokens[4] > 1.5 * (tokens[2] - tokens[1])


def test_the_same_plan_continues_and_another_is_refused(lengths, tmp_path):
    run = tmp_path / "run"
    pretrain(two_phases(lengths, run))
    shutil.rmtree(checkpoint.latest(run))  # killed in phase 2: its newest is the boundary's
    pretrain(two_phases(lengths, run, log_every=2))  # how it runs may change
    assert [x["step"] for x in read_metrics(run)[0]] == [1, 2, 3, 4, 6]
    other = [{"steps": 3}, {"steps": 3, "data": str(lengths[128]), "lr": 0.02}]
    with pytest.raises(RunConfigError, match=r"step-00000006 was written by a run with other "
                                             r"phases .*'lr': 0.02"):
        pretrain(two_phases(lengths, run, phases=other))
    with pytest.raises(RunConfigError, match="other settings"):
        pretrain(run_config(lengths[64], run, model_overrides=MODEL_128, max_steps=6))


def test_a_plan_is_complete_after_its_last_phase_not_at_an_earlier_phases_end(lengths,
                                                                             tmp_path):
    run = tmp_path / "run"
    pretrain(two_phases(lengths, run))
    with pytest.raises(RunComplete, match=r"is complete at step 6: nothing to do. To train "
                                          r"further, add a phase with --new-phase"):
        pretrain(two_phases(lengths, run))
    shutil.rmtree(checkpoint.latest(run))  # the newest now ends phase 1, at its max_steps
    pretrain(two_phases(lengths, run))
    assert checkpoint.step_of(checkpoint.latest(run)) == 6


def test_a_phase_the_model_cannot_hold_is_refused_before_training(lengths, tmp_path):
    run = tmp_path / "run"
    with pytest.raises(RunConfigError, match=r"phase 2 \(data .*data-128\): its sequences of "
                                             r"128 tokens exceed the 64 positions of the "
                                             r"model's absolute position table"):
        pretrain(two_phases(lengths, run, model_overrides=MICRO_MODEL))
    plan = [{"steps": 3}, {"steps": 3, "data": str(lengths[128]),
                           "model_overrides": {"max_position_embeddings": 128}}]
    with pytest.raises(RunConfigError, match="model_overrides change the shape of "
                                             "backbone.embeddings.position_embeddings.weight"):
        pretrain(two_phases(lengths, run, model_overrides=MICRO_MODEL, phases=plan))
    with pytest.raises(RunConfigError, match=r"phase 2 names no data: .* --set "
                                             r"phases.2.data=DIR"):
        pretrain(two_phases(lengths, run, phases=[{"steps": 3}, {"steps": 3}]))
    assert not checkpoint.checkpoint_dir(run).exists()


def test_new_phase_goes_on_from_the_checkpoint_and_the_same_command_continues(lengths,
                                                                             tmp_path):
    run = tmp_path / "run"
    pretrain(run_config(lengths[64], run, model_overrides=MODEL_128, max_steps=4,
                        save_every=2, export=False))
    command = run_config(lengths[128], run, model_overrides=MODEL_128, max_steps=8,
                         save_every=2, export=False, new_phase="reset-optimizer", lr=0.005)
    pretrain(command)
    record = state_of(run, 8)
    assert record["phase"] == {"number": 2, "start_step": 4}
    assert record["plan"]["phases"] == [{"steps": 4}, {
        "steps": 4, "data": str(lengths[128]), "lr": 0.005, "reset_optimizer": True}]
    finished = weights(run)
    shutil.rmtree(checkpoint.latest(run))  # killed between 6 and 8
    pretrain(command)  # the same command: phase 2 goes on, no third phase
    assert state_of(run, 8)["plan"] == record["plan"]
    assert all(torch.equal(finished[k], v) for k, v in weights(run).items())
    assert [x["step"] for x in read_metrics(run)[0]] == list(range(1, 9))


def test_a_plan_is_checked_when_the_config_is_read(lengths):
    data = str(lengths[128])
    with pytest.raises(RunConfigError, match=r"phases\.1\.seed=1: unknown field.* seed"):
        run_config(lengths[64], "out", phases=[{"steps": 3, "seed": 1}])
    with pytest.raises(RunConfigError, match="first phase has no optimizer state"):
        run_config(lengths[64], "out", phases=[{"steps": 3, "reset_optimizer": True}])
    with pytest.raises(RunConfigError, match=r"phases\.2\.warmup_steps=5: phase 2 begins a "
                                             r"schedule over 3 steps, which does not hold"):
        run_config(lengths[64], "out", phases=[{"steps": 3},
                                               {"steps": 3, "data": data, "warmup_steps": 5}])
    # A built-in plan, one field of a phase set, and --max-steps alone scaling the phases.
    bert = load_run_config("bert-base", {"phases.2.data": data})
    assert [p["steps"] for p in bert.phases] == [900_000, 100_000]
    assert bert.max_steps == 1_000_000 and bert.phases[1]["data"] == data
    short = load_run_config("bert-base", {"max_steps": 20})
    assert [p["steps"] for p in short.phases] == [18, 2] and short.warmup_steps == 0
    modern = load_run_config("modernbert-base", {"max_steps": 120})
    assert [p["steps"] for p in modern.phases] == [102, 18]  # 85% and 15% of it


def test_rotary_fields_change_no_parameter_shape():
    cfg = load_run_config("modernbert-tiny-cpu", {})
    shapes = [model_shapes(cfg, ModelConfig.from_preset("modernbert-tiny", **overrides))
              for overrides in ({"global_rope_theta": 10_000.0, "max_position_embeddings": 1024},
                                {"global_rope_theta": 160_000.0, "max_position_embeddings": 8192})]
    assert shapes[0] == shapes[1]


def test_help_shows_phases(capsys):
    with pytest.raises(SystemExit):
        main(["pretrain", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "--new-phase [{true,false,reset-optimizer}]" in shown
    assert "phases.N.FIELD" in shown

