"""The built-in studies' --quick sizes end to end on real text (bbc-news from PyPI).

One (layer-similarity: no probes, two runs) runs in the default suite; every one runs twice in
the slow suite, for the report's structure and for determinism. These check the pipeline,
not the paper's direction: a quick run is a few dozen steps.
"""

from __future__ import annotations

import json
import re

import pytest

from litebert.cli import main
from litebert.studies.spec import builtin_names, load_spec, pretrain_config

VOLATILE = {"minutes"}  # wall-clock; everything else a study records is a function of the seed


def run_quick(name: str, out) -> dict:
    assert main(["study", "run", name, "--quick", "--out", str(out)]) == 0
    assert main(["study", "report", str(out)]) == 0
    return json.loads((out / "results.json").read_text())


def check_structure(name: str, out, gathered: dict) -> None:
    spec = load_spec(name)
    names = [run.name for run in spec.runs]
    assert [r["name"] for r in gathered["runs"]] == names
    report = (out / "report.md").read_text()
    assert report.startswith(f"# {spec.title} (--quick: a smoke test, not a measurement)")
    for run in names:
        assert f"| {run} |" in report
    quick = spec.resolved(True)
    for run, record in zip(quick.runs, gathered["runs"], strict=True):
        assert record["tokens"] > 0 and record["params"]["backbone"] > 0
        steps = pretrain_config(quick, run, {"data": "-", "out": "-"}, "test").max_steps
        assert record["pretraining"]["steps"] == steps  # the budget's, or its FLOPs match
    assert (out / "metrics.png").is_file() or (out / "figure2.png").is_file()


@pytest.mark.slow  # 65-73 s on 2 cores: the study's pieces have their own default tests
def test_layer_similarity_quick_runs_end_to_end(tmp_path):
    out = tmp_path / "layer-similarity"
    gathered = run_quick("layer-similarity", out)
    check_structure("layer-similarity", out, gathered)
    runs = {r["name"]: r for r in gathered["runs"]}
    for record in runs.values():
        found = record["results"]["similarity"]
        assert len(found["l2"]) == len(found["degrees"]) == record["model"]["num_hidden_layers"]
        assert all(x > 0 for x in found["l2"]) and all(0 < d < 180 for d in found["degrees"])
    assert runs["all-shared"]["params"]["backbone"] < runs["not-shared"]["params"]["backbone"]
    assert (out / "figure2.png").stat().st_size > 1000


def _measured(gathered: dict, root) -> list[dict]:
    """The runs' records with the study directory's path and wall-clock times taken out, at
    any depth (a run's pretraining record holds its minutes too)."""
    def steady(value):
        if isinstance(value, dict):
            return {k: steady(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [steady(v) for v in value]
        return value
    text = json.dumps(gathered["runs"]).replace(str(root), "<study>")
    # The data directory's name hashes its inputs' paths and times, which differ per study
    # directory; what was built in it is compared through everything measured from it.
    text = re.sub(r"<study>/data/[0-9a-f]{16}", "<study>/data/<hash>", text)
    return steady(json.loads(text))


@pytest.mark.slow
@pytest.mark.parametrize("name", builtin_names())
def test_every_quick_study_reports_and_repeats_exactly(name, tmp_path):
    first = run_quick(name, tmp_path / "a")
    check_structure(name, tmp_path / "a", first)
    second = run_quick(name, tmp_path / "b")
    assert _measured(second, tmp_path / "b") == _measured(first, tmp_path / "a")
