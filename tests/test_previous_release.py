"""What the previous release wrote still works (issue 18, "Compatibility").

tests/fixtures/previous_release/ holds a data directory and two runs (MLM + SOP, and ELECTRA
with non-default objective fields) that commit 8f963a3 wrote, with its make.py (see there):
4 steps each, checkpoints at 2 and 4, exports, and the recipes and a study file in that
release's flat spelling of objective fields (`objective: electra`, `temperature: 2.0`, ...).

The current code must resume those runs and reproduce their step 4 (CPU, one thread, as they
were written) up to float32 rounding (TRAINED_REL: bit for bit until the static-shaped step
of issue 20 changed the order of two sums), export their checkpoints as they were
exported, read the data directory item for item, and load the flat files with one warning
that shows the nested spelling (`objective: {name: electra, temperature: 2.0}`) and the same
objective values.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import shutil
import textwrap
from pathlib import Path

import pytest
import torch
import transformers
import yaml
from safetensors.torch import load_file

from litebert.cli import main
from litebert.data.builder import BuildConfig
from litebert.data.loader import PretrainingDataset
from litebert.model import AutoModelForPreTraining, AutoModelForReplacedTokenDetection
from litebert.studies.runner import _continue
from litebert.studies.spec import StudyError, load_spec, pretrain_config
from litebert.train.checkpoint import load_model_file
from litebert.train.run_config import PretrainConfig, load_run_config
from litebert.train.state import load_model_state
from litebert.train.throughput import TIMING_FIELDS
from tests.fixtures.previous_release.arrays import unpack
from tests.fixtures.previous_release.torch_files import unpack as unpack_torch_files
from tests.helpers.pretrain import one_torch_thread

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "previous_release"
RECIPES = {"mlm": "recipe-mlm.yaml", "electra": "recipe-electra.yaml"}
# The objective fields of each recipe, nested as the redesign spells them.
NESTED = {"mlm": {"name": "mlm", "eval_pair_tasks": "both"},
          "electra": {"name": "electra", "generator_size": 0.5, "temperature": 2.0,
                      "disc_weight": 40.0}}
STEP_4 = "checkpoints/step-00000004"
# Steps trained again by this release equal the previous release's up to float32 rounding:
# the static-shaped step (issue 20) sums the MLM loss and its gradients over fixed prediction
# slots and the RTD loss over weighted tokens, where the release summed boolean-indexed
# rows: the same terms in another order, a few ulp apart (at most ~1e-7 relative measured).
TRAINED_REL = 1e-5


@pytest.fixture
def previous(tmp_path, monkeypatch) -> Path:
    """A copy of the fixture, the working directory: its runs name `data` and `runs/NAME`
    relative to it, as the release's commands were run."""
    copy = tmp_path / "previous"
    shutil.copytree(FIXTURE, copy, ignore=shutil.ignore_patterns(
        "make.py", "arrays.py", "torch_files.py", "__pycache__"))
    unpack(copy / "data")  # the data arrays, kept as text in the repository
    unpack_torch_files(copy / "runs")  # optimizer and RNG states: JSON + safetensors there
    monkeypatch.chdir(copy)
    return copy


@pytest.fixture
def cpu_one_thread(monkeypatch):
    """As the fixture was written: on CPU (the Trainer and the evaluations take CUDA when
    there is one) in one thread (with two, the weights of step 4 differ in their last bits)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with one_torch_thread():
        yield


def pretrain(run: str, *extra: str, recipe: str | None = None) -> int:
    """`litebert pretrain` of a fixture run, as make.py ran it, plus `extra`."""
    return main(["pretrain", "--config", recipe or RECIPES[run], "--data", "data", "--out",
                 f"runs/{run}", *extra])


def metric_lines(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def assert_same_numbers(then: list[dict], now: list[dict], rel: float = 0.0) -> None:
    """Every number the previous release logged, equal within `rel` (timings aside); new keys
    may come."""
    assert [x["step"] for x in now] == [x["step"] for x in then]
    for old, new in zip(then, now, strict=True):
        for key, value in old.items():
            if key in TIMING_FIELDS:
                continue
            expected = pytest.approx(value, rel=rel) if isinstance(value, float) else value
            assert new.get(key) == expected, (old["step"], key, value, new.get(key))


def assert_same_weights(then: Path | dict[str, torch.Tensor],
                        now: Path | dict[str, torch.Tensor], rel: float = 0.0) -> None:
    """The same tensors, bit for bit, or within `rel` (and as much absolute, for entries
    near 0) for weights trained again; each a file, or the tensors themselves."""
    a, b = (x if isinstance(x, dict) else load_file(x) for x in (then, now))
    assert sorted(a) == sorted(b)
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=rel, atol=rel, msg=key)


def resume_from_step_2(previous: Path, run: str, recipe: str | None = None) -> None:
    """Drop the step-4 checkpoint and export of the copy, resume, and compare with the
    fixture's own step 4."""
    shutil.rmtree(previous / "runs" / run / STEP_4)
    shutil.rmtree(previous / "runs" / run / "export")
    step_2 = previous / "runs" / run / "checkpoints/step-00000002/state.json"
    written = step_2.stat().st_ino, step_2.stat().st_mtime_ns
    assert pretrain(run, "--resume", "auto", recipe=recipe) == 0
    # Resumed, not started over: a fresh run with the same seed would write step 2 again.
    assert (step_2.stat().st_ino, step_2.stat().st_mtime_ns) == written
    then, now = FIXTURE / "runs" / run, previous / "runs" / run
    # Steps 3 and 4 trained again.
    assert_same_numbers(metric_lines(then), metric_lines(now), rel=TRAINED_REL)
    # Written now in the current layout (torch.distributed.checkpoint), both read as export
    # does (the release's "full" file under today's parameter names).
    assert_same_weights(load_model_file(then / STEP_4),
                        load_model_state(now / STEP_4)[0], rel=TRAINED_REL)
    for weights in sorted((then / "export").rglob("model.safetensors")):  # the end's export
        assert_same_weights(weights, now / weights.relative_to(then), rel=TRAINED_REL)
    # The counters (a TrainState now) are the flat state.json fields the release wrote.
    old, new = (json.loads((d / STEP_4 / "state.json").read_text()) for d in (then, now))
    for key in ("step", "epoch", "batch", "skipped_steps", "nonfinite_in_row", "tokens"):
        assert new[key] == old[key], key


# ---- (a) runs and checkpoints resume ---------------------------------------------------------

@pytest.mark.parametrize("run", ["mlm", "electra"])
def test_a_previous_run_resumes_from_step_2_to_its_own_step_4(previous, cpu_one_thread, run):
    resume_from_step_2(previous, run)


@pytest.mark.parametrize("run", ["mlm", "electra"])
def test_a_finished_previous_run_trains_on(previous, cpu_one_thread, run):
    """A longer schedule continues from a named checkpoint (the same command would refuse
    the changed max_steps); one written before runs had ids is this run's to prune."""
    last = previous / "runs" / run / STEP_4
    assert pretrain(run, "--resume", str(last), "--max-steps", "6") == 0
    lines = [x for x in metric_lines(previous / "runs" / run) if "loss" in x]
    assert [x["step"] for x in lines] == [1, 2, 3, 4, 5, 6]
    assert all(torch.isfinite(torch.tensor(x["loss"])) for x in lines)
    state = json.loads((previous / "runs" / run / "checkpoints/step-00000006/state.json")
                       .read_text())
    assert state["step"] == 6


# ---- (b) checkpoints export as the previous release exported them ---------------------------

def test_a_previous_mlm_checkpoint_exports_as_it_did(previous):
    assert main(["export", "runs/mlm", "--out", "again"]) == 0
    then = FIXTURE / "runs" / "mlm" / "export"
    assert_same_weights(then / "model.safetensors", previous / "again" / "model.safetensors")
    assert (previous / "again" / "spiece.model").read_bytes() == \
        (FIXTURE / "data" / "tokenizer" / "spiece.model").read_bytes()
    ids = torch.randint(5, 150, (2, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        old = transformers.AlbertForPreTraining.from_pretrained(then).eval()(ids)
        new = transformers.AlbertForPreTraining.from_pretrained(previous / "again").eval()(ids)
        ours = AutoModelForPreTraining.from_pretrained(then).eval()(ids)  # reads the old one
    assert torch.equal(new.prediction_logits, old.prediction_logits)
    assert torch.equal(new.sop_logits, old.sop_logits)
    torch.testing.assert_close(ours.prediction_logits, old.prediction_logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours.sop_logits, old.sop_logits, atol=1e-5, rtol=0)


def test_a_previous_electra_checkpoint_exports_as_it_did(previous):
    assert main(["export", "runs/electra", "--out", "again"]) == 0
    then, now = FIXTURE / "runs" / "electra" / "export", previous / "again"
    for part in ("discriminator", "generator"):
        assert_same_weights(then / part / "model.safetensors", now / part / "model.safetensors")
    ids = torch.randint(5, 150, (2, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        old = transformers.ElectraForPreTraining.from_pretrained(then / "discriminator")
        new = transformers.ElectraForPreTraining.from_pretrained(now / "discriminator")
        ours = AutoModelForReplacedTokenDetection.from_pretrained(then / "discriminator")
        old_logits, new_logits = old.eval()(ids).logits, new.eval()(ids).logits
        ours_logits = ours.eval()(ids).logits
        old_gen = transformers.ElectraForMaskedLM.from_pretrained(then / "generator").eval()
        new_gen = transformers.ElectraForMaskedLM.from_pretrained(now / "generator").eval()
        assert torch.equal(new_gen(ids).logits, old_gen(ids).logits)
    assert torch.equal(new_logits, old_logits)
    torch.testing.assert_close(ours_logits, old_logits, atol=1e-5, rtol=0)


def score(model: str, out: str, *options: str) -> dict:
    assert main(["eval-pretraining", model, "--data", "data", *options, "--out", out]) == 0
    return json.loads(Path(out).read_text())


def test_an_export_of_a_previous_run_scores_as_it_did(previous, cpu_one_thread):
    """`litebert eval-pretraining` of the current export of the step-4 checkpoint gives what
    the release's own command gave for its export (eval-mlm.json)."""
    assert main(["export", "runs/mlm"]) == 0  # RUN_DIR/export, tokenizer and all
    now = score("runs/mlm/export", "scored.json", "--instances", "24", "--seed", "7",
                "--batch-size", "8")
    then = json.loads((FIXTURE / "eval-mlm.json").read_text())
    assert {k: now.get(k) for k in then} == then


def test_a_previous_electra_export_scores_as_it_did_and_a_new_one_as_its_run(
        previous, cpu_one_thread):
    """The previous release's discriminator export records no objective fields: it is scored
    as that release scored it (eval-electra.json, at temperature 1). Exported now, it records
    the run's (temperature 2.0, ...) and eval-pretraining, given the run's seed, instances
    and batch size, reproduces the run's own last evaluation, which the release's did not."""
    options = ("--instances", "24", "--seed", "7", "--batch-size", "8")
    old = score("runs/electra/export/discriminator", "old.json", *options)
    then = json.loads((FIXTURE / "eval-electra.json").read_text())
    assert {k: old.get(k) for k in then if k != "generator"} == {
        k: v for k, v in then.items() if k != "generator"}
    assert main(["export", "runs/electra"]) == 0
    run = json.loads((previous / "runs/electra/config.json").read_text())["pretrain"]
    new = score("runs/electra/export/discriminator", "new.json", "--instances",
                str(run["eval_instances"]), "--seed", str(run["seed"]), "--batch-size",
                str(run["micro_batch_size"]))
    rows = [json.loads(x) for x in (previous / "runs/electra/metrics.jsonl").read_text()
            .splitlines()]
    last = [r for r in rows if "eval_rtd_accuracy" in r][-1]
    for key in ("rtd_accuracy", "rtd_loss", "rtd_precision", "rtd_recall",
                "generator_mlm_accuracy", "generator_mlm_loss", "replaced_fraction"):
        assert new[key] == last[f"eval_{key}"], key


# ---- (c) the data directory reads item for item ----------------------------------------------

def test_a_previous_data_directory_gives_the_same_items(previous):
    recorded = json.loads((FIXTURE / "items.json").read_text())["items"]
    assert len(recorded) >= 8
    for entry in recorded:
        dataset = PretrainingDataset(previous / "data", entry["split"], seed=entry["seed"])
        dataset.set_epoch(entry["epoch"])
        assert len(dataset) == entry["length"]
        item = {k: v.tolist() for k, v in dataset[entry["index"]].items()}
        assert item == entry["item"], (entry["split"], entry["epoch"], entry["index"])


def test_a_previous_data_directory_verifies(previous):
    assert main(["data", "verify", "data"]) == 0


# ---- (d) recipes and study files in the flat spelling ----------------------------------------

def nested_spellings(message: str) -> list[dict]:
    """Every `objective:` mapping a message shows: flow form (`objective: {name: electra,
    temperature: 2.0}`) or block form (`objective:` then indented `name: electra` lines)."""
    found = [yaml.safe_load(m.group(1))
             for m in re.finditer(r"objective:[ \t]*(\{[^{}]*\})", message)]
    block = r"^([ \t]*)objective:[ \t]*\n((?:\1[ \t]+\S.*(?:\n|$))+)"
    found += [yaml.safe_load(textwrap.dedent(m.group(2)))
              for m in re.finditer(block, message, re.MULTILINE)]
    return [x for x in found if isinstance(x, dict)]


def test_nested_spellings_reads_both_yaml_forms():
    flow = "x.yaml: write objective: {name: electra, temperature: 2.0} instead"
    block = "x.yaml: write\n  objective:\n    name: electra\n    temperature: 2.0\n  lr: 1"
    expected = [{"name": "electra", "temperature": 2.0}]
    assert nested_spellings(flow) == expected
    assert nested_spellings(block) == expected
    assert nested_spellings("objective: electra, temperature: 2.0") == []


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("run", ["mlm", "electra"])
def test_the_flat_files_hold_the_objective_fields_nested_here(run):
    """NESTED, which the tests of the new spelling expect, is what the flat files say."""
    recipe = yaml.safe_load((FIXTURE / RECIPES[run]).read_text())
    study = yaml.safe_load((FIXTURE / "study-flat.yaml").read_text())
    in_study = next(r["pretrain"] for r in study["runs"] if r["pretrain"]["objective"] == run)
    for flat in (recipe, in_study):
        assert {"name": flat["objective"],
                **{k: flat[k] for k in NESTED[run] if k in flat}} == NESTED[run]


@pytest.mark.parametrize("run", ["mlm", "electra"])
def test_a_flat_recipe_still_loads(run):
    cfg = load_run_config(FIXTURE / RECIPES[run], {})
    assert cfg.max_steps == 4 and cfg.model_overrides["hidden_size"] == 32


def test_a_flat_study_still_loads():
    spec = load_spec(FIXTURE / "study-flat.yaml")
    assert [r.name for r in spec.runs] == ["mlm-sop", "electra"]


@pytest.mark.parametrize("run", ["mlm", "electra"])
def test_a_flat_recipe_warns_once_with_the_nested_spelling(caplog, run):
    """One warning on logger "litebert", naming the file, that shows the recipe's objective
    fields in the nested spelling."""
    with caplog.at_level(logging.WARNING, logger="litebert"):
        load_run_config(FIXTURE / RECIPES[run], {})
    messages = warnings_of(caplog)
    assert len(messages) == 1, messages
    assert RECIPES[run] in messages[0]
    assert NESTED[run] in nested_spellings(messages[0]), messages[0]


@pytest.mark.parametrize("run", ["mlm", "electra"])
def test_a_flat_recipe_keeps_its_objective_values(run):
    cfg = load_run_config(FIXTURE / RECIPES[run], {})
    for field, value in NESTED[run].items():
        assert getattr(cfg.objective, field) == value, field


def test_a_flat_study_warns_once_with_the_nested_spelling(caplog):
    with caplog.at_level(logging.WARNING, logger="litebert"):
        load_spec(FIXTURE / "study-flat.yaml")
    messages = warnings_of(caplog)
    assert len(messages) == 1, messages
    assert "study-flat.yaml" in messages[0]
    shown = nested_spellings(messages[0])
    assert NESTED["mlm"] in shown and NESTED["electra"] in shown, messages[0]


@pytest.mark.parametrize(("run", "objective"), [("mlm-sop", "mlm"), ("electra", "electra")])
def test_a_flat_study_keeps_its_objective_values(run, objective):
    spec = load_spec(FIXTURE / "study-flat.yaml")
    cfg = pretrain_config(spec, spec.run(run), {"data": "unused", "out": "unused"}, "test")
    for field, value in NESTED[objective].items():
        assert getattr(cfg.objective, field) == value, field


@pytest.mark.parametrize("run", ["mlm", "electra"])
def test_a_previous_run_resumes_with_its_recipe_in_the_nested_spelling(previous, cpu_one_thread,
                                                                       run):
    """A user who rewrites the recipe as the warning says resumes the old run unchanged."""
    fields = yaml.safe_load((FIXTURE / RECIPES[run]).read_text())
    fields["objective"] = {"name": fields.pop("objective"),
                           **{k: fields.pop(k) for k in NESTED[run] if k in fields}}
    assert fields["objective"] == NESTED[run]
    (previous / "nested.yaml").write_text(yaml.safe_dump(fields))
    resume_from_step_2(previous, run, recipe="nested.yaml")


# ---- names the previous release used (issue 30): packing "xlnet" ---------------------------

def test_a_study_run_recorded_with_packing_xlnet_continues(tmp_path):
    """A study run that release recorded (study.json) with packing "xlnet" is the same run as
    today's "streams": its progress is kept; another packing is still another run."""
    streams = dataclasses.asdict(BuildConfig(objective="none", packing="streams"))

    def record(**data):
        return {"data": {**streams, **data}, "model": {"hidden_size": 32},
                "pretrain": PretrainConfig().to_dict(), "tokens": 10, "minutes": 1.0}

    kept = _continue(record(packing="xlnet"), record(), tmp_path / "study.json")
    assert kept["tokens"] == 10 and kept["minutes"] == 1.0
    assert kept["data"]["packing"] == "streams"
    with pytest.raises(StudyError, match=r"study.json: recorded with another data config "
                                         r"\(differs in packing\)"):
        _continue(record(packing="xlnet"), record(packing="doc-sentences"),
                  tmp_path / "study.json")
