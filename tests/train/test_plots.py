"""plot_run on synthetic runs: which PNGs are written for sop, nsp and none objectives."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from litebert.train.metrics import METRICS_NAME, MetricsError
from litebert.train.plots import plot_run

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
