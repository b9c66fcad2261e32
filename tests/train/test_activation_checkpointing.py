"""The activation_checkpointing option (model/checkpointing.py) in pre-training and
fine-tuning: a short pre-training run with it logs the losses of a run without it (dropout
on) and writes checkpoints and an export with the same keys and files; fine-tuning's runtime
sets it on the model it places; --help of both commands shows it, off by default; a resume
may switch it."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open

import litebert
import litebert.train.trainer as trainer_module
from litebert.tasks.base import finetune_config
from litebert.tasks.runtime import Runtime
from litebert.train import checkpoint
from litebert.train.pretrain import pretrain
from litebert.train.restart import HOW_IT_RUNS
from litebert.train.run_config import load_run_config
from litebert.train.state import load_model_state
from tests.helpers.cli import help_entries
from tests.helpers.models import small_config
from tests.helpers.pretrain import MICRO_MODEL, read_metrics, run_config

DROPOUT_MODEL = dict(MICRO_MODEL, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)


def export_keys(export) -> set[str]:
    with safe_open(str(export / "model.safetensors"), "pt") as f:
        return set(f.keys())


def test_a_pretraining_run_with_it_trains_and_saves_as_one_without(data_dir, tmp_path,
                                                                   monkeypatch):
    set_calls: list[tuple[bool, int]] = []
    setter = trainer_module.set_activation_checkpointing

    def recorded(model, enabled=True):
        set_calls.append((enabled, setter(model, enabled)))
        return set_calls[-1][1]

    monkeypatch.setattr(trainer_module, "set_activation_checkpointing", recorded)
    runs = {}
    for on in (False, True):
        out = tmp_path / ("on" if on else "off")
        pretrain(run_config(data_dir, out, model_overrides=DROPOUT_MODEL, max_steps=4,
                            eval_every=4, save_every=4, activation_checkpointing=on))
        runs[on] = out
    assert set_calls == [(False, 1), (True, 1)]  # the run's one encoder, set as asked
    losses = {on: [x["loss"] for x in read_metrics(out)[0]] for on, out in runs.items()}
    assert len(losses[True]) == 4
    assert losses[True] == pytest.approx(losses[False], rel=1e-6, abs=0.0)
    states = {on: load_model_state(checkpoint.latest(out))[0] for on, out in runs.items()}
    assert states[True].keys() == states[False].keys()
    exports = {on: out / "export" for on, out in runs.items()}
    assert sorted(p.name for p in exports[True].iterdir()) == \
        sorted(p.name for p in exports[False].iterdir())
    assert export_keys(exports[True]) == export_keys(exports[False])
    configs = [json.loads((e / "config.json").read_text()) for e in exports.values()]
    assert configs[0] == configs[1]
    assert "checkpoint" not in json.dumps(configs[0])  # the export does not carry it


def test_recipes_may_set_it_and_a_resume_may_switch_it(tmp_path):
    cfg = load_run_config("tiny-cpu", {"activation_checkpointing": True,
                                              "out": str(tmp_path)})
    assert cfg.activation_checkpointing is True
    assert load_run_config("tiny-cpu", {"out": str(tmp_path)}).activation_checkpointing is False
    assert "activation_checkpointing" in HOW_IT_RUNS  # not what is trained


def test_finetunings_runtime_sets_it_on_the_model_it_places():
    for on in (False, True):
        runtime = Runtime.from_config(finetune_config(task="sst2", data="d", model="m",
                                                      out="o", activation_checkpointing=on))
        model = runtime.place(litebert.EncoderForSequenceClassification(
            small_config(num_labels=2)))
        assert model.backbone.encoder.checkpoint_positions is on


@pytest.mark.parametrize("command", ["pretrain", "finetune"])
def test_help_shows_the_option_and_its_default(command, capsys):
    entries = help_entries([command], capsys)
    text = entries["--activation-checkpointing"]
    assert "recomputes" in text and text.endswith("(default: off)")


def test_the_step_checkpoints_only_in_training(data_dir, tmp_path):
    """The Trainer's model in train mode recomputes each position once in backward; its
    evaluation (eval mode, no grad) does not."""
    cfg = run_config(data_dir, tmp_path / "run", activation_checkpointing=True)
    model = trainer_module.Trainer(cfg).model
    encoder = model.backbone.encoder
    calls = []
    encoder.attentions[0].register_forward_hook(lambda *_: calls.append(1))
    ids = torch.randint(5, model.config.vocab_size, (2, 16))
    model.train()
    model(ids, labels=ids).loss.backward()
    positions = len(encoder.attention_index)
    assert len(calls) == 2 * positions
    model.eval()
    with torch.no_grad():
        model(ids)
    assert len(calls) == 3 * positions
