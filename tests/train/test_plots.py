"""plot_run on synthetic runs: which PNGs are written for sop, nsp, none and ELECTRA runs, and
which curves each figure holds."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from litebert.train.metrics import METRICS_NAME, MetricsError
from litebert.train.plots import plot_run, run_figures

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def synthetic_run(run_dir: Path, objective: str = "sop", steps: int = 400,
                  eval_every: int = 50) -> Path:
    """A metrics.jsonl shaped like the pre-training loop's: noisy decaying losses."""
    rng = np.random.default_rng(0)
    run_dir.mkdir(parents=True, exist_ok=True)
    records = []
    for step in range(1, steps + 1):
        mlm = 2.0 + 8.0 * math.exp(-step / 80) + rng.normal(0, 0.3)
        record = {"step": step, "loss": mlm, "mlm_loss": mlm,
                  "lr": 1e-3 * min(step / 40, (steps - step) / (steps - 40)),
                  "tokens_per_s": 50_000 + rng.normal(0, 3000), "grad_norm": 1 + rng.random(),
                  "time": step * 0.1}
        if objective != "none":
            pair = 0.3 + 0.4 * math.exp(-step / 150) + rng.normal(0, 0.05)
            record[f"{objective}_loss"] = pair
            record["loss"] = mlm + pair
        records.append(record)
        if step % eval_every == 0:
            acc = 0.6 * (1 - math.exp(-step / 100))
            ev = {"step": step, "eval_loss": record["loss"] - 0.1,
                  "eval_mlm_loss": mlm - 0.1, "eval_mlm_accuracy": acc,
                  "eval_mlm_baseline_accuracy": 0.06}
            if objective != "none":
                ev[f"eval_{objective}_accuracy"] = 0.5 + 0.4 * (1 - math.exp(-step / 200))
                ev[f"eval_{objective}_baseline_accuracy"] = 0.51
            records.append(ev)
    (run_dir / METRICS_NAME).write_text("".join(json.dumps(r) + "\n" for r in records))
    return run_dir


def electra_run(run_dir: Path, steps: int = 60, eval_every: int = 20) -> Path:
    """A metrics.jsonl with the ELECTRA objective's keys (loss = generator + 50 x RTD)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    records = []
    for step in range(1, steps + 1):
        gen, rtd = 4.0 + 5.0 * math.exp(-step / 30), 0.2 + 0.2 * math.exp(-step / 40)
        records.append({"step": step, "loss": gen + 50 * rtd, "generator_mlm_loss": gen,
                        "rtd_loss": rtd, "lr": 1e-3, "tokens_per_s": 5000.0,
                        "grad_norm": 1.0, "skipped_steps": 0, "tokens": 1000 * step})
        if step % eval_every == 0:
            replaced = 0.14 - 0.0005 * step
            records.append({
                "step": step, "eval_generator_mlm_loss": gen, "eval_rtd_loss": rtd,
                "eval_generator_mlm_accuracy": 0.3 * step / steps,
                "eval_generator_mlm_baseline_accuracy": 0.04,
                "eval_rtd_accuracy": 0.86 + 0.1 * step / steps,
                "eval_rtd_precision": 0.8 * step / steps, "eval_rtd_recall": 0.5 * step / steps,
                "eval_replaced_fraction": replaced, "eval_rtd_baseline_accuracy": 1 - replaced,
                "eval_loss": gen + 50 * rtd})
    (run_dir / METRICS_NAME).write_text("".join(json.dumps(r) + "\n" for r in records))
    return run_dir


def labels(figure) -> set[str]:
    return {line.get_label() for line in figure.axes[0].get_lines()
            if not line.get_label().startswith("_")}  # "_child0": a curve left unlabelled


def assert_pngs(paths: list[Path]) -> None:
    for path in paths:
        data = path.read_bytes()
        assert len(data) > 1000 and data.startswith(PNG_MAGIC), path


@pytest.mark.parametrize("objective", ["sop", "nsp"])
def test_plots_for_sentence_pair_objectives(tmp_path, objective):
    run_dir = synthetic_run(tmp_path / "run", objective)
    paths = plot_run(run_dir)
    assert {p.name for p in paths} == {"loss.png", "mlm_accuracy.png", f"{objective}_accuracy.png",
                                        "lr.png", "throughput.png", "grad_norm.png"}
    assert all(p.parent == run_dir / "plots" for p in paths)
    assert_pngs(paths)


def test_plots_for_objective_none_into_out_dir(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", "none", steps=60, eval_every=30)
    paths = plot_run(run_dir, tmp_path / "out")
    assert {p.name for p in paths} == {"loss.png", "mlm_accuracy.png", "lr.png",
                                        "throughput.png", "grad_norm.png"}
    assert all(p.parent == tmp_path / "out" for p in paths)
    assert_pngs(paths)


def test_the_sop_runs_figures_hold_its_curves(tmp_path):
    figures = {f.get_label(): f for f in run_figures(synthetic_run(tmp_path / "run", "sop"))}
    assert labels(figures["loss"]) == {
        "train loss (smoothed)", "train mlm_loss (smoothed)", "train sop_loss (smoothed)",
        "eval loss", "eval mlm_loss"}  # the synthetic run logs no eval_sop_loss
    assert figures["loss"].axes[0].get_yscale() == "linear"
    assert labels(figures["mlm_accuracy"]) == {"MLM accuracy", "baseline"}
    assert labels(figures["sop_accuracy"]) == {"SOP accuracy", "baseline"}
    assert figures["sop_accuracy"].axes[0].get_ylim()[0] == pytest.approx(0.4)


def test_an_electra_run_gets_its_figures_from_its_keys(tmp_path):
    run_dir = electra_run(tmp_path / "run")
    assert {p.name for p in plot_run(run_dir)} == {
        "loss.png", "generator_mlm_accuracy.png", "rtd_accuracy.png", "lr.png",
        "throughput.png", "grad_norm.png"}
    assert_pngs(list((run_dir / "plots").iterdir()))
    figures = {f.get_label(): f for f in run_figures(run_dir)}
    assert labels(figures["loss"]) == {
        "train loss (smoothed)", "train generator_mlm_loss (smoothed)",
        "train rtd_loss (smoothed)", "eval loss", "eval generator_mlm_loss", "eval rtd_loss"}
    # RTD's loss is ~1/70 of the total (x50 in it): a log axis keeps it off the floor.
    assert figures["loss"].axes[0].get_yscale() == "log"
    assert labels(figures["generator_mlm_accuracy"]) == {"generator MLM accuracy", "baseline"}
    assert labels(figures["rtd_accuracy"]) == {"RTD accuracy", "RTD precision", "RTD recall",
                                               "baseline"}
    assert figures["rtd_accuracy"].axes[0].get_ylim() == pytest.approx((0.0, 1.0))
    baseline = next(line for line in figures["rtd_accuracy"].axes[0].get_lines()
                    if line.get_label() == "baseline")
    assert np.allclose(baseline.get_ydata(), [1 - (0.14 - 0.0005 * s) for s in (20, 40, 60)])


def test_plots_without_evaluation_and_with_nan(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    lines = [{"step": 1, "loss": 5.0, "lr": 0.0}, {"step": 2, "loss": None, "lr": 1e-4},
             {"step": 3, "loss": 4.0, "lr": 2e-4}]
    (run_dir / METRICS_NAME).write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert {p.name for p in plot_run(run_dir)} == {"loss.png", "lr.png"}


def test_empty_run_dir_is_a_clear_error(tmp_path):
    with pytest.raises(MetricsError, match="no metrics.jsonl"):
        plot_run(tmp_path)
    (tmp_path / METRICS_NAME).write_text("")
    with pytest.raises(MetricsError, match="no records to plot"):
        plot_run(tmp_path)
