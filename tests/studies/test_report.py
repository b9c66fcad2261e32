"""The study report from a hand-written study directory."""

from __future__ import annotations

import json

import pytest

from litebert.studies.report import ReportError, agreement, write_report

PAPER = {"none": {"mlm": 54.9, "nsp": 52.4, "sop": 53.3},
         "nsp": {"mlm": 54.5, "nsp": 90.5, "sop": 52.0},
         "sop": {"mlm": 54.0, "nsp": 78.9, "sop": 86.5, "avg": 82.3}}
OURS = {"none": (0.31, 0.50, 0.51), "nsp": (0.30, 0.83, 0.52), "sop": (0.29, 0.66, 0.61)}


def record(name: str, similarity: bool) -> dict:
    mlm, nsp, sop = OURS[name]
    results: dict = {
        "pretraining": {"mlm_accuracy": mlm, "mlm_baseline_accuracy": 0.05,
                        "nsp_accuracy": nsp, "nsp_baseline_accuracy": 0.5,
                        "sop_accuracy": sop, "sop_baseline_accuracy": 0.5},
        "probes": {"bbc-topics": {"data": "bbc-news articles -> 5 topics", "metric": "accuracy",
                                  "seeds": [42, 43, 44], "values": [0.8, 0.85, 0.9],
                                  "median": 0.85, "min": 0.8, "max": 0.9, "baseline": 0.23}}}
    if similarity:
        results["similarity"] = {"l2": [3.0, 2.0, 1.5], "degrees": [40.0, 30.0, 25.0],
                                 "tokens": 100}
    return {"name": name, "params": {"backbone": 1_234_567, "with_heads": 1_300_000},
            "tokens": 2_000_000, "minutes": 3.5, "config": {"model": {"preset": "tiny"}},
            "paper": PAPER[name], "results": results}


def study(root, similarity=False, names=("none", "nsp", "sop")):
    root.mkdir()
    (root / "study.json").write_text(json.dumps(
        {"name": "sop", "title": "Table 5: inter-sentence losses", "paper": "ALBERT Table 5",
         "quick": False, "budget": {}, "runs": [{"name": n} for n in names]}))
    for name in names:
        (root / "runs" / name).mkdir(parents=True)
        (root / "runs" / name / "study.json").write_text(json.dumps(record(name, similarity)))
    return root


def test_report_has_a_row_per_run_with_ours_and_the_papers_numbers(tmp_path):
    root = study(tmp_path / "study")
    written = write_report(root)
    assert [p.name for p in written] == ["report.md", "results.json", "metrics.png"]
    report = (root / "report.md").read_text()
    assert report.startswith("# Table 5: inter-sentence losses")
    assert "tiny" in report and "2.0M tokens" in report and "CPUs" in report
    assert "probe seeds: 3" in report
    sop_row = next(line for line in report.splitlines() if line.startswith("| sop |"))
    assert "1.2M / 1.3M" in sop_row and "61.0 (50.0)" in sop_row and "86.5" in sop_row
    assert "avg 82.3" in sop_row and "85.0 (80.0-90.0)" in report
    assert ("SOP: the paper has sop at 86.5% and nsp at 52%; ours sop 61.0% vs nsp 52.0% — "
            "agrees with the paper's direction (2 of 3 pairs") in report
    assert "MLM: the paper has none at 54.9% and sop at 54%; ours none 31.0% vs sop 29.0% — " \
           "agrees" in report
    assert "| 3.5 |" in sop_row  # minutes, one decimal
    assert "bbc-news articles -> 5 topics" in report and "baseline 23.0%" in report
    gathered = json.loads((root / "results.json").read_text())
    assert [r["name"] for r in gathered["runs"]] == ["none", "nsp", "sop"]
    assert gathered["study"]["name"] == "sop"
    assert (root / "metrics.png").stat().st_size > 1000


def test_similarity_study_draws_figure_2_and_missing_sections_are_tolerated(tmp_path):
    root = study(tmp_path / "study", similarity=True, names=("none", "sop"))
    data = json.loads((root / "runs" / "none" / "study.json").read_text())
    del data["results"]["probes"], data["paper"]
    (root / "runs" / "none" / "study.json").write_text(json.dumps(data))
    written = write_report(root)
    assert (root / "figure2.png") in written and (root / "figure2.png").stat().st_size > 1000
    report = (root / "report.md").read_text()
    assert "| none |" in report and "| sop |" in report


def test_disagreement_and_errors_are_reported():
    sentence = agreement("SOP", [("a", 0.4, 80.0), ("b", 0.6, 50.0)])
    assert sentence is not None and "disagrees with the paper's direction" in sentence
    assert agreement("SOP", [("a", 0.4, None), ("b", 0.6, 50.0)]) is None


def test_a_metric_no_run_learned_says_its_ordering_is_noise(tmp_path):
    root = study(tmp_path / "study")
    for name in ("none", "nsp", "sop"):
        path = root / "runs" / name / "study.json"
        data = json.loads(path.read_text())
        data["results"]["pretraining"]["sop_accuracy"] = 0.5  # = its baseline, every run
        path.write_text(json.dumps(data))
    write_report(root)
    report = (root / "report.md").read_text()
    assert "SOP: ours above its baseline in 0 of 3 runs — at this budget no run has learned " \
           "it beyond the baseline, so its figures say nothing about how the runs differ" in report
    assert "NSP: ours above its baseline in 2 of 3 runs." in report


def test_a_directory_without_runs_is_named(tmp_path):
    with pytest.raises(ReportError, match=str(tmp_path)):
        write_report(tmp_path)


def test_without_probes_mlm_is_set_against_the_papers_average_and_shapes_say_per_run(tmp_path):
    root = study(tmp_path / "study")
    for i, name in enumerate(("none", "nsp", "sop")):
        path = root / "runs" / name / "study.json"
        data = json.loads(path.read_text())
        del data["results"]["probes"]
        data["config"] = {"model": {"num_hidden_layers": 4, "embedding_size": 32 * 2 ** i}}
        data["paper"] = {"avg": 79.0 + i}  # the paper rises with the run; ours falls (OURS)
        path.write_text(json.dumps(data))
    write_report(root)
    report = (root / "report.md").read_text()
    assert "model of num_hidden_layers=4, embedding_size per run;" in report
    assert "MLM accuracy (ours) against the paper's downstream Avg: the paper has sop at 81% " \
           "and none at 79%; ours sop 29.0% vs none 31.0% — disagrees" in report
    assert report.count("a proxy: the paper reports no MLM accuracy") == 1


def test_without_a_pretraining_evaluation_the_runs_last_held_out_figures_are_shown(tmp_path):
    root = study(tmp_path / "study", names=("none", "sop"))
    for name, final in (("none", {"eval_mlm_accuracy": 0.11, "eval_mlm_baseline_accuracy": 0.04}),
                        ("sop", {"eval_plm_accuracy": 0.17, "eval_plm_baseline_accuracy": 0.03})):
        path = root / "runs" / name / "study.json"
        rec = json.loads(path.read_text())
        del rec["results"]["pretraining"]
        rec["pretraining"] = {"steps": 600, "final_eval": final}
        path.write_text(json.dumps(rec))
    report = (write_report(root)[0]).read_text()
    header = next(line for line in report.splitlines() if line.startswith("| run |"))
    assert "PLM ours % (baseline)" in header and "PLM paper" not in header
    assert "MLM paper" in header  # the paper gives MLM figures for these rows
    sop_row = next(line for line in report.splitlines() if line.startswith("| sop |"))
    assert "17.0 (3.0)" in sop_row and "| 600 |" in sop_row
    assert "Held-out figures of every run: the run's last in-training evaluation" in report
    assert "PLM: ours above its baseline in 1 of 1 runs." in report


def test_runs_without_the_shared_evaluation_are_named_beside_those_with_it(tmp_path):
    root = study(tmp_path / "study", names=("none", "sop"))
    path = root / "runs" / "sop" / "study.json"
    rec = json.loads(path.read_text())
    del rec["results"]["pretraining"]
    rec["pretraining"] = {"final_eval": {"eval_mlm_accuracy": 0.2,
                                         "eval_mlm_baseline_accuracy": 0.04}}
    path.write_text(json.dumps(rec))
    report = (write_report(root)[0]).read_text()
    assert "Held-out figures of sop: the run's last in-training evaluation" in report
    sop_row = next(line for line in report.splitlines() if line.startswith("| sop |"))
    none_row = next(line for line in report.splitlines() if line.startswith("| none |"))
    assert "20.0 (4.0)" in sop_row and "31.0 (5.0)" in none_row
