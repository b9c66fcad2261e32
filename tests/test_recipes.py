"""Built-in pre-training recipes (package data, addressed by name) and the one warm-up rule
of pre-training and fine-tuning."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import litebert
from litebert.cli import main
from litebert.data.builder import BuildConfig, build
from litebert.tasks.base import FinetuneConfig, FinetuneError, finetune_config
from litebert.tasks.finetune import finetune
from litebert.tokenization import train_sentencepiece
from litebert.train.run_config import (
    RunConfigError,
    load_run_config,
    recipe_names,
    recipe_path,
)
from litebert.train.schedule import resolve_warmup
from tests.data.builds import write_corpus
from tests.helpers.finetune import sst2_dir

ROOT = Path(__file__).resolve().parents[1]


# ---- recipes ---------------------------------------------------------------------------------

def test_recipes_live_in_the_package_and_are_found_by_name():
    assert recipe_names() == ["albert-base", "albert-large", "albert-xxlarge", "bert-base",
                              "bert-tiny-cpu", "continue-albert", "continue-bert",
                              "continue-electra", "continue-modernbert", "continue-roberta",
                              "continue-tiny-cpu", "continue-xlnet", "electra-base",
                              "electra-small", "electra-tiny-cpu", "modernbert-base",
                              "modernbert-tiny-cpu", "roberta-base", "roberta-tiny-cpu",
                              "tiny-cpu", "xlnet-base", "xlnet-large", "xlnet-tiny-cpu"]
    package = Path(litebert.__file__).parent
    assert package in recipe_path("tiny-cpu").parents
    assert load_run_config("tiny-cpu", {}).max_steps == 600
    assert load_run_config(recipe_path("albert-base"), {}).model == "albert-base"  # a path
    small = load_run_config("electra-small", {})
    # ELECTRA-Small as the ELECTRA paper trains it (Table 6-7)
    assert (small.objective.name, small.model, small.batch_size, small.lr, small.optimizer,
            small.warmup_steps, small.objective.generator_size,
            small.objective.disc_weight) == (
        "electra", "electra-small", 128, 5e-4, "adamw", 10_000, 0.25, 50.0)
    # RoBERTa-base as Liu et al. train it (Table 9): MLM alone, Adam beta2 0.98, eps 1e-6, no
    # clipping, 8k batch, 6e-4, 24k warm-up of 500k steps.
    roberta = load_run_config("roberta-base", {})
    assert (roberta.model, roberta.objective.name, roberta.optimizer, roberta.betas, roberta.eps,
            roberta.max_grad_norm, roberta.batch_size, roberta.lr, roberta.warmup_steps,
            roberta.max_steps) == ("roberta-base", "mlm", "adamw", (0.9, 0.98), 1e-6, 0.0,
                                   8192, 6e-4, 24_000, 500_000)
    assert load_run_config("roberta-tiny-cpu", {}).model == "roberta-tiny"
    # Continuing RoBERTa as DAPT does (Gururangan et al. 2020, Appendix B): 12.5k steps of
    # 2,048, lr 5e-4, 6% warm-up, RoBERTa's Adam.
    dapt = load_run_config("continue-roberta", {})
    assert (dapt.max_steps, dapt.batch_size, dapt.lr, dapt.warmup_steps, dapt.betas,
            dapt.objective.name) == (12_500, 2048, 5e-4, 750, (0.9, 0.98), "mlm")
    xlnet = load_run_config("xlnet-tiny-cpu", {})
    assert (xlnet.model, xlnet.objective.name, xlnet.model_overrides["mem_len"]) == (
        "xlnet-tiny", "plm", 64)


def test_an_unknown_recipe_names_the_built_in_ones():
    with pytest.raises(RunConfigError, match="--config tiny: no such recipe file.*tiny-cpu"):
        load_run_config("tiny", {})


def test_litebert_recipes_lists_them(capsys):
    assert main(["recipes"]) == 0
    out = capsys.readouterr().out
    for name in recipe_names():
        assert f"\n{name} " in "\n" + out
    assert "The demo: the tiny preset" in out


# ---- the warm-up rule ------------------------------------------------------------------------

@pytest.mark.parametrize("max_steps, warmup", [(None, 60), (600, 60), (3, 0), (5, 1), (25, 3),
                                               (10, 1), (1200, 120)])
def test_max_steps_alone_keeps_the_recipes_share_of_warmup(max_steps, warmup):
    # tiny-cpu: 60 of 600 steps. Rounded half up: 5 -> 0.5 -> 1, 25 -> 2.5 -> 3, 3 -> 0.3 -> 0.
    assert resolve_warmup(600, 60, max_steps) == (max_steps or 600, warmup)
    cfg = load_run_config("tiny-cpu", {"max_steps": max_steps})
    assert (cfg.max_steps, cfg.warmup_steps) == (max_steps or 600, warmup)


def test_an_explicit_warmup_is_kept_or_refused_naming_both_fields():
    assert resolve_warmup(600, 60, 3, 2) == (3, 2)
    assert load_run_config("tiny-cpu", {"max_steps": 3, "warmup_steps": 3}).warmup_steps == 3
    assert load_run_config("tiny-cpu", {"warmup_steps": 10}).warmup_steps == 10
    for overrides in ({"max_steps": 3, "warmup_steps": 5}, {"warmup_steps": 601}):
        with pytest.raises(RunConfigError, match=r"warmup_steps=\d+: must lie in \[0, "
                                                 r"max_steps=\d+\]"):
            load_run_config("tiny-cpu", overrides)


def test_a_wsd_decay_that_does_not_fit_after_warmup_is_refused():
    cfg = load_run_config("tiny-cpu", {"schedule": "wsd", "decay_steps": 100})
    assert (cfg.schedule, cfg.decay_steps) == ("wsd", 100)
    with pytest.raises(RunConfigError, match=r"decay_steps=590: decay_steps \(590\) must be "
                                             r"in \[0, total_steps - warmup_steps = 540\]"):
        load_run_config("tiny-cpu", {"schedule": "wsd", "decay_steps": 590})


def test_model_overrides_merge_into_the_recipes_key_by_key():
    # xlnet-tiny-cpu turns dropout off; a study or `--set` that changes the memory alone
    # kept it off only once the two merged (the xlnet-ablation study ran dropout 0.1 before).
    recipe = load_run_config("xlnet-tiny-cpu", {}).model_overrides
    cfg = load_run_config("xlnet-tiny-cpu", {"model_overrides": {"mem_len": 32}})
    assert recipe["hidden_dropout_prob"] == 0.0 and recipe["mem_len"] == 64
    assert cfg.model_overrides == {**recipe, "mem_len": 32}
    again = load_run_config("xlnet-tiny-cpu", {"model_overrides": {"hidden_dropout_prob": 0.1}})
    assert again.model_overrides["hidden_dropout_prob"] == 0.1


def test_cli_pretrain_with_few_steps_no_longer_trips_over_the_recipes_warmup(capsys):
    # Before: "warmup_steps=60: must be in [0, max_steps=3]". Now the config is accepted and
    # the run stops later, for the missing data.
    assert main(["pretrain", "--config", "tiny-cpu", "--max-steps", "3"]) == 2
    err = capsys.readouterr().err
    assert "warmup" not in err and "no training data" in err
    assert main(["pretrain", "--config", "tiny-cpu", "--max-steps", "3",
                 "--warmup-steps", "5"]) == 2
    assert "--warmup-steps 5: must lie in [0, max_steps=3]" in capsys.readouterr().err


def squad2_config(**kw) -> FinetuneConfig:
    return finetune_config(task="squad2", data="d", model="m", out="o", **kw)


def test_finetune_follows_the_same_rule():
    assert (squad2_config().max_steps, squad2_config().warmup_steps) == (8144, 814)
    short = squad2_config(max_steps=200)  # was: warm-up capped at 200, no decay at all
    assert (short.max_steps, short.warmup_steps) == (200, 20)
    assert dataclasses.replace(short, seed=7).warmup_steps == 20  # --seeds copies stay put
    assert squad2_config(max_steps=200, warmup_steps=0).warmup_steps == 0
    assert squad2_config(warmup_steps=100).max_steps == 8144
    with pytest.raises(FinetuneError, match=r"warmup_steps=300: must lie in \[0, max_steps=200\]"):
        squad2_config(max_steps=200, warmup_steps=300)


def test_finetune_results_record_the_schedule(base_model, tmp_path):
    data = sst2_dir(tmp_path / "SST-2", n_train=40, n_dev=10)
    finetune(finetune_config(task="sst2", data=str(data), model=str(base_model),
                            out=str(tmp_path / "out"), max_steps=50, batch_size=4,
                            max_seq_length=16, eval_every=50))
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    # sst2's recipe: 1,256 of 20,935 steps; 50 steps -> 2.9997 -> 3.
    assert saved["schedule"] == {"max_steps": 50, "warmup_steps": 3, "lr": 1e-5}


# ---- an installed wheel, outside the checkout -------------------------------------------------

def run(cmd, **kw) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    assert result.returncode == 0, f"{cmd}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def tiny_data(root: Path) -> Path:
    corpus = write_corpus(root / "corpus.txt", docs=80)
    tok = train_sentencepiece([corpus], root / "tok", vocab_size=200).parent
    build([corpus], tok, root / "data", BuildConfig(max_seq_length=64, format="bert",
                                                    heldout_fraction=0.1))
    return root / "data"


def test_the_wheel_carries_the_recipes_and_pretrains_by_name(tmp_path):
    # A copy of the sources, so the build writes nothing into the checkout.
    source = tmp_path / "source"
    shutil.copytree(ROOT / "src", source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "wheels"), str(source)], env=env)
    wheel = next((tmp_path / "wheels").glob("litebert-*.whl"))
    fresh = tmp_path / "fresh"
    run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(fresh),
         str(wheel)], env=env)
    data, work = tiny_data(tmp_path), tmp_path / "elsewhere"
    work.mkdir()
    script = textwrap.dedent(f"""
        import pathlib, sys
        import litebert
        from litebert.cli import main
        assert pathlib.Path({str(fresh)!r}) in pathlib.Path(litebert.__file__).parents, \\
            litebert.__file__
        assert main(["recipes"]) == 0
        sys.exit(main(["pretrain", "--config", "tiny-cpu", "--data", {str(data)!r},
                       "--out", "run", "--max-steps", "2", "--eval-instances", "16"]))
    """)
    result = run([sys.executable, "-c", script], cwd=work,
                 env={**env, "PYTHONPATH": str(fresh)})
    assert "tiny-cpu" in result.stdout
    assert "pre-training: 2/2 step (100%)" in result.stderr and "\r" not in result.stderr
    metrics = [json.loads(x) for x in (work / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics if "loss" in m] == [2]
    assert (work / "run" / "export" / "model.safetensors").exists()
