from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from litebert.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_params_prints_the_design_counts(capsys):
    assert main(["params"]) == 0
    out = capsys.readouterr().out
    for number in ("11,683,584", "17,683,968", "58,724,864", "222,595,584", "11,813,810",
                   "17,847,474", "59,021,490", "223,158,450"):
        assert number in out
    assert "sharing=attention" in out and "E=768" in out


def test_smoke_trains_saves_and_reloads(capsys):
    assert main(["smoke", "--preset", "tiny", "--batch", "2", "--seq", "16",
                 "--steps", "2"]) == 0
    out = capsys.readouterr().out
    assert "step 2: loss" in out and "loss difference 0.00e+00" in out


def test_bad_arguments_are_a_message_not_a_traceback():
    run = subprocess.run([sys.executable, "-m", "litebert.cli", "smoke", "--preset", "huge"],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert "invalid choice: 'huge'" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.slow
def test_model_benchmark_runs():
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_model.py"),
                          "--presets", "tiny", "--steps", "1", "--seq", "32"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "| tiny |" in run.stdout
