"""Studies: specs load and are checked; a tiny study runs end to end, resumably."""

from __future__ import annotations

import json

import pytest

from litebert.cli import main
from litebert.studies.runner import _continue, run_study
from litebert.studies.spec import StudyError, builtin_names, load_spec
from litebert.train.run_config import PretrainConfig
from tests.data.builds import write_corpus

STUDY = """\
name: tiny-study
title: two micro models
paper: Table 4
corpus: corpus.txt
vocab_size: 200
data: {max_seq_length: 64, format: bert, heldout_fraction: 0.1}
recipe: tiny-cpu
pretrain:
  model_overrides: {hidden_size: 32, num_hidden_layers: 2, num_attention_heads: 2,
                    intermediate_size: 64, embedding_size: 16, max_position_embeddings: 64}
  eval_instances: 20
budget: {steps: 3, batch_size: 4}
evaluations: [pretraining, similarity]
runs:
  - {name: all, pretrain: {model_overrides: {sharing: all}}, paper: {params: 12M}}
  - {name: none, pretrain: {model_overrides: {sharing: none}}, paper: {params: 89M}}
"""
RECORD_KEYS = {"name", "study", "paper", "data", "data_dir", "pretrain", "model", "params",
               "pretraining", "tokens", "minutes", "results"}


def write_study(tmp_path, text=STUDY):
    write_corpus(tmp_path / "corpus.txt", docs=60)
    path = tmp_path / "study.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def checkpoint_times(run_dir):
    return {p: p.stat().st_mtime_ns for p in (run_dir / "checkpoints").rglob("*")}


def test_a_tiny_study_runs_end_to_end_and_a_second_run_does_no_work(tmp_path):
    out = tmp_path / "out"
    assert main(["study", "run", str(write_study(tmp_path)), "--out", str(out),
                 "--workers", "1"]) == 0
    study = json.loads((out / "study.json").read_text())
    assert study["runs"] == ["all", "none"] and study["budget"] == {"steps": 3, "batch_size": 4}
    records = {n: json.loads((out / "runs" / n / "study.json").read_text())
               for n in ("all", "none")}
    for name, record in records.items():
        assert RECORD_KEYS <= set(record)
        assert record["pretraining"]["steps"] == 3 and record["pretraining"]["tokens"] > 0
        assert record["results"]["pretraining"]["mlm_accuracy"] is not None
        assert len(record["results"]["similarity"]["l2"]) == 2
        assert record["model"]["sharing"] == name
    assert records["all"]["params"]["backbone"] < records["none"]["params"]["backbone"]
    # Same evaluation data and seed for both runs: the same examples.
    evals = [r["results"]["pretraining"] for r in records.values()]
    assert evals[0]["mlm_tokens"] == evals[1]["mlm_tokens"]
    before = checkpoint_times(out / "runs" / "all")
    again = run_study(load_spec(tmp_path / "study.yaml"), out)
    assert checkpoint_times(out / "runs" / "all") == before
    assert again["all"]["results"] == records["all"]["results"]
    # Killed after its last checkpoint but before its record: resumes, trains no more steps.
    (out / "runs" / "none" / "study.json").unlink()
    resumed = run_study(load_spec(tmp_path / "study.yaml"), out, only=["none"])["none"]
    assert resumed["pretraining"]["resumed"] and resumed["tokens"] == records["none"]["tokens"]


def test_only_runs_the_runs_named(tmp_path):
    out = tmp_path / "out"
    records = run_study(load_spec(write_study(tmp_path)), out, only=["none"])
    assert list(records) == ["none"]
    assert (out / "runs" / "none" / "study.json").is_file()
    assert not (out / "runs" / "all").exists()
    with pytest.raises(StudyError, match="no run 'nope'"):
        run_study(load_spec(tmp_path / "study.yaml"), out, only=["nope"])


@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_study_loads_and_validates(name):
    spec = load_spec(name)
    assert spec.runs and spec.budget["steps"] > 0
    assert spec.resolved(True).budget["steps"] < spec.budget["steps"]
    assert all(run.paper is not None for run in spec.runs)


def test_the_builtin_studies_are_listed():
    assert {"sentence-objectives", "sharing", "embedding-size",
            "layer-similarity", "electra-vs-mlm"} <= set(builtin_names())


def test_a_flops_matched_budget_gives_each_run_the_first_runs_compute():
    from litebert.config import ModelConfig
    from litebert.objectives import OBJECTIVES
    from litebert.studies.spec import pretrain_config

    spec = load_spec("electra-vs-mlm")
    cfgs = [pretrain_config(spec, run, {"data": "-", "out": "-"}, "test") for run in spec.runs]
    config = ModelConfig.from_preset("electra-small", vocab_size=spec.vocab_size,
                                      **cfgs[0].model_overrides)
    flops = [OBJECTIVES[c.objective.name](c).flops_per_token(config, 128) for c in cfgs]
    assert cfgs[0].max_steps == spec.budget["steps"] == 600
    for cfg, f in zip(cfgs[1:], flops[1:], strict=True):
        assert cfg.objective.name == "electra" and f > flops[0]  # the generator costs extra
        assert cfg.max_steps == round(600 * flops[0] / f)
    with pytest.raises(StudyError, match="match"):
        import dataclasses

        from litebert.studies.spec import validate
        validate(dataclasses.replace(spec, budget={**spec.budget, "match": "tokens"}))


@pytest.mark.parametrize("change, field", [
    ("budget: {steps: 3, batch_size: 4}", "budget"),
    ("recipe: tiny-cpu", "colour"),
    ("  - {name: all, pretrain: {model_overrides: {sharing: all}}, paper: {params: 12M}}",
     "runs[0]"),
    ("data: {max_seq_length: 64, format: bert, heldout_fraction: 0.1}", "data"),
])
def test_a_bad_study_names_the_file_and_the_field(tmp_path, change, field):
    bad = {"budget": "budget: {steps: 0, batch_size: 4}",
           "colour": "recipe: tiny-cpu\ncolour: blue",
           "runs[0]": "  - {name: all, pretrain: {model_overrides: {sharing: some}}}",
           "data": "data: {max_seq_length: 64, objective: xyz}"}[field]
    path = write_study(tmp_path, STUDY.replace(change, bad))
    with pytest.raises(StudyError) as err:
        load_spec(path)
    assert str(path) in str(err.value) and field in str(err.value)


def test_a_study_directory_holds_one_budget(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "study.json").write_text(json.dumps({"name": "tiny-study", "quick": False,
                                                "budget": {"steps": 9, "batch_size": 4}}))
    with pytest.raises(StudyError, match="study.json"):
        run_study(load_spec(write_study(tmp_path)), out)


def test_the_cli_lists_studies(capsys):
    assert main(["study", "list"]) == 0
    assert "sentence-objectives" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["study", "run", "--help"])
    assert "--only" in capsys.readouterr().out


MIXED = """\
name: mixed-objectives
title: MLM + SOP and ELECTRA on one preset
corpus: corpus.txt
vocab_size: 200
data: {max_seq_length: 64, format: bert, heldout_fraction: 0.2}
recipe: electra-tiny-cpu
pretrain:
  model: electra-small
  model_overrides: {hidden_size: 32, num_hidden_layers: 2, num_hidden_groups: 2,
                    num_attention_heads: 2, intermediate_size: 64, embedding_size: 16,
                    max_position_embeddings: 64}
  eval_instances: 20
budget: {steps: 2, batch_size: 4}
evaluations: [pretraining, similarity]
runs:
  - {name: mlm-sop, pretrain: {objective: {name: mlm}}}
  - {name: electra, pretrain: {objective: {name: electra}}}
"""


def test_a_study_of_mlm_and_electra_runs_evaluates_both_and_keeps_the_sop_head(tmp_path):
    """Before: the ELECTRA run's evaluation stopped the study ("no MLM head"), and the MLM
    run's export on the ELECTRA family dropped its trained SOP head (SOP, NSP not scored)."""
    out = tmp_path / "out"
    assert main(["study", "run", str(write_study(tmp_path, MIXED)), "--out", str(out),
                 "--workers", "1"]) == 0
    records = {n: json.loads((out / "runs" / n / "study.json").read_text())
               for n in ("mlm-sop", "electra")}
    mlm = records["mlm-sop"]["results"]["pretraining"]
    assert mlm["scored_by"] == "MLMObjective" and mlm["has_pair_head"] is True
    assert all(0.0 <= mlm[k] <= 1.0 for k in ("mlm_accuracy", "sop_accuracy", "nsp_accuracy"))
    export = out / "runs" / "mlm-sop" / "export"
    assert json.loads((export / "config.json").read_text())["architectures"] == [
        "ElectraForMaskedLM"]  # transformers' layout, and the SOP head kept beside it
    assert (export / "litebert_heads.safetensors").is_file()
    rtd = records["electra"]["results"]["pretraining"]
    assert rtd["scored_by"] == "ElectraObjective" and 0.0 <= rtd["rtd_accuracy"] <= 1.0
    for record in records.values():
        assert len(record["results"]["similarity"]["l2"]) == 2


def test_a_run_continues_under_other_speed_settings_but_not_other_training(tmp_path):
    """Loader workers, compile and the peak for mfu change how fast a run goes, not what it
    learns: a recorded run continues under other values; another learning rate is another
    run."""
    def record(**fields):
        return {"data": {"max_seq_length": 64}, "model": {"hidden_size": 32},
                "pretrain": PretrainConfig(**fields).to_dict(), "tokens": 10, "minutes": 1.0}

    before = record(num_workers=0)
    kept = _continue(before, record(num_workers=None, peak_tflops=2.0, compile=True),
                     tmp_path / "run.json")
    assert kept["tokens"] == 10 and kept["minutes"] == 1.0
    with pytest.raises(StudyError, match=r"run.json: recorded with another pretrain config "
                                         r"\(differs in lr\)"):
        _continue(before, record(num_workers=0, lr=0.5), tmp_path / "run.json")
