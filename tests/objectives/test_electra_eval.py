"""`litebert eval-pretraining` on ELECTRA exports: replaced-token detection, scored by the
objective's own evaluation, on a micro discriminator / generator pair trained for 2 steps."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
import torch

from litebert import EncoderForMaskedLM
from litebert.cli import main
from litebert.data.builder import BuildConfig, build
from litebert.model import CheckpointError
from litebert.model.hub import read_model_files
from litebert.objectives import ElectraObjective
from litebert.objectives.electra_eval import RTD_KEYS
from litebert.objectives.electra_eval import evaluate_discriminator as _evaluate
from litebert.objectives.mlm_eval import RESULT_KEYS, load_for_evaluation
from litebert.tokenization import train_sentencepiece
from litebert.train.pretrain import pretrain
from litebert.train.run_config import PretrainConfig
from tests.data.builds import write_corpus
from tests.helpers.cli import help_entries

# electra-small's layout (no sharing, E != H) at a size that trains in seconds; generator
# H 16 (generator_size 0.25), one head.
MICRO = dict(hidden_size=64, num_hidden_layers=2, num_hidden_groups=2, num_attention_heads=2,
             intermediate_size=128, embedding_size=32, max_position_embeddings=64)
# What the run evaluates with; eval-pretraining's --seed, --instances, --batch-size.
SEED, INSTANCES, BATCH = 7, 40, 8
RATES = ("rtd_accuracy", "rtd_baseline_accuracy", "rtd_precision", "rtd_recall",
         "replaced_fraction", "generator_mlm_accuracy", "generator_mlm_baseline_accuracy")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, Path]:
    """(run directory, data directory) of a 2-step ELECTRA run, evaluated and exported."""
    root = tmp_path_factory.mktemp("rtd")
    corpus = write_corpus(root / "corpus.txt", docs=100)
    tok = train_sentencepiece([corpus], root / "tok", vocab_size=200).parent
    data = root / "data"
    build([corpus], tok, data, BuildConfig(max_seq_length=64, format="bert",
                                           heldout_fraction=0.3))
    out = root / "run"
    pretrain(PretrainConfig(
        objective={"name": "electra"}, model="electra-small", model_overrides=MICRO, data=str(data),
        out=str(out), batch_size=BATCH, micro_batch_size=BATCH, max_steps=2, warmup_steps=1,
        optimizer="adamw", lr=1e-3, precision="fp32", log_every=1, eval_every=2,
        save_every=2, eval_instances=INSTANCES, seed=SEED))
    return out, data


def evaluate_discriminator(model_dir, *args, **kw):
    return _evaluate(ElectraObjective, read_model_files(model_dir), *args, **kw)


def _cli(model: Path, data: Path, *extra: str) -> list[str]:
    return ["eval-pretraining", str(model), "--data", str(data), "--instances", str(INSTANCES),
            "--seed", str(SEED), "--batch-size", str(BATCH), *extra]


def _last_eval(run_dir: Path) -> dict:
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [x for x in lines if "eval_rtd_accuracy" in x][-1]


def _alone(source: Path, target: Path) -> Path:
    """A copy of a model directory with no sibling."""
    shutil.copytree(source, target)
    return target


def test_cli_scores_rtd_as_the_runs_last_evaluation(run, tmp_path, capsys):
    run_dir, data = run
    out = tmp_path / "rtd.json"
    assert main(_cli(run_dir / "export" / "discriminator", data, "--out", str(out))) == 0
    printed = capsys.readouterr().out
    assert "rtd_accuracy" in printed and "MLM, SOP and NSP are not scored" in printed
    saved = json.loads(out.read_text())
    assert tuple(saved) == RESULT_KEYS + RTD_KEYS
    assert saved["has_pair_head"] is False
    assert all(saved[k] is None for k in RESULT_KEYS if k != "has_pair_head")
    assert all(0.0 <= saved[k] <= 1.0 for k in RATES)
    assert saved["rtd_baseline_accuracy"] == 1 - saved["replaced_fraction"]
    assert 0 < saved["replaced_fraction"] < 0.5 and saved["rtd_instances"] == INSTANCES
    assert Path(saved["generator"]) == (run_dir / "export" / "generator").resolve()
    # Same weights, instances, seed and batches, and the same code: the same numbers.
    last = _last_eval(run_dir)
    for key in RTD_KEYS[:-2]:
        assert saved[key] == last[f"eval_{key}"], key


def test_a_discriminator_without_a_generator_says_how_to_pass_one(run, tmp_path, capsys):
    run_dir, data = run
    alone = _alone(run_dir / "export" / "discriminator", tmp_path / "d" / "discriminator")
    assert main(_cli(alone, data)) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert all(part in err for part in (str(alone), "ELECTRA discriminator",
                                        "--generator DIR", str(tmp_path / "d" / "generator")))
    # The MLM suite's loader, called directly, points to this one.
    with pytest.raises(CheckpointError, match="no MLM head.*ELECTRA discriminator"):
        load_for_evaluation(alone)
    # Not a generator: the discriminator has no MLM head.
    assert main(_cli(alone, data, "--generator", str(alone))) == 2
    err = capsys.readouterr().err
    assert f"generator {alone}: no MLM head" in err and "generator_predictions" in err


def test_a_generator_elsewhere_gives_the_same_scores(run, tmp_path, caplog):
    run_dir, data = run
    alone = _alone(run_dir / "export" / "discriminator", tmp_path / "d" / "discriminator")
    generator = _alone(run_dir / "export" / "generator", tmp_path / "g" / "gen")
    direct = evaluate_discriminator(alone, data, generator=generator, instances=INSTANCES,
                                    seed=SEED, batch_size=BATCH)
    last = _last_eval(run_dir)
    assert all(direct[k] == last[f"eval_{k}"] for k in RTD_KEYS[:-2])
    assert direct["generator"] == str(generator)
    # A generator whose own embeddings are not the discriminator's: scored with the
    # discriminator's, as trained, and the user is told.
    other = EncoderForMaskedLM.from_pretrained(generator)
    with torch.no_grad():
        other.backbone.embeddings.word_embeddings.weight.add_(1.0)
    other.save_pretrained(tmp_path / "other")
    with caplog.at_level(logging.WARNING, logger="litebert"):
        again = evaluate_discriminator(alone, data, generator=tmp_path / "other",
                                       instances=INSTANCES, seed=SEED, batch_size=BATCH)
    assert "embeddings differ" in caplog.text
    assert again["rtd_accuracy"] == direct["rtd_accuracy"]  # the embeddings are not read


def test_a_generator_directory_is_scored_on_mlm(run, tmp_path, capsys):
    run_dir, data = run
    generator = run_dir / "export" / "generator"
    out = tmp_path / "mlm.json"
    assert main(_cli(generator, data, "--out", str(out))) == 0
    saved = json.loads(out.read_text())
    assert tuple(saved) == RESULT_KEYS and saved["has_pair_head"] is False
    assert 0.0 <= saved["mlm_accuracy"] <= 1.0 and saved["sop_accuracy"] is None
    capsys.readouterr()
    assert main(_cli(generator, data, "--generator", str(generator))) == 2
    assert "only apply to other objectives' models (a generator to an ELECTRA discriminator)" \
        in capsys.readouterr().err


def test_generator_option_help(capsys):
    text = help_entries(["eval-pretraining"], capsys)["--generator"]
    assert "../generator" in text and "(default: " in text and text.endswith(")")


def test_a_run_with_other_fields_and_a_pair_head_is_scored_as_it_evaluated(run, tmp_path):
    """The export records the run's objective fields (here temperature 2 and mask_prob 0.2)
    and keeps its pair head: eval-pretraining corrupts as the run did and reproduces its
    last evaluation. Before, it sampled at temperature 1 and dropped the pair head."""
    _, data = run
    out = tmp_path / "run"
    pretrain(PretrainConfig(
        objective={"name": "electra", "temperature": 2.0, "mask_prob": 0.2,
                   "discriminator_pair_task": True},
        model="electra-small", model_overrides=MICRO, data=str(data), out=str(out),
        batch_size=BATCH, micro_batch_size=BATCH, max_steps=2, warmup_steps=1,
        optimizer="adamw", lr=1e-3, precision="fp32", log_every=1, eval_every=2,
        save_every=2, eval_instances=INSTANCES, seed=SEED))
    discriminator = out / "export" / "discriminator"
    assert (discriminator / "litebert_heads.safetensors").is_file()
    scored = evaluate_discriminator(discriminator, data, instances=INSTANCES, seed=SEED,
                                    batch_size=BATCH)
    last = _last_eval(out)
    assert all(scored[k] == last[f"eval_{k}"] for k in RTD_KEYS[:-2])
