"""benchmarks/bench_sampler.py: its "previous" path reads the previous release's order, and at
a tiny size it runs, measures every rank and phase of both samplers and prints the table."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from litebert.data.loader import RankSampler
from litebert.train.feed import DataPosition, EpochChunks

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "bench_sampler.py"


def test_the_benchmarks_samplers_read_the_previous_and_the_current_order():
    spec = importlib.util.spec_from_file_location("bench_sampler", SCRIPT)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    for version, first_batch in ((1, bench.previous_first_batch),
                                 (2, bench.current_first_batch)):
        sampler = RankSampler(4000, 1, 2, seed=1234, version=version)
        chunks = EpochChunks(sampler, 4, DataPosition(bench.EPOCH, 7))
        assert first_batch(4000, 1, 2, 4, 7) == next(iter(chunks))


@pytest.mark.slow
def test_bench_sampler_runs_at_a_tiny_size(tmp_path):
    cmd = [sys.executable, str(SCRIPT), "--instances", "5000", "--old-instances", "4000",
           "--ranks", "2", "--micro", "4", "--json", str(tmp_path / "rows.json")]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert run.returncode == 0, run.stderr[-3000:]
    assert "| sampler | instances | ranks measured | first micro-batch of |" in run.stdout
    rows = json.loads((tmp_path / "rows.json").read_text())
    assert [(r["sampler"], r["phase"], r["rank"]) for r in rows] == [
        (side, phase, rank) for side in ("previous", "current")
        for phase in ("epoch start", "resume") for rank in (0, 1)]
    assert all(r["seconds"] > 0 and r["peak_mb"] >= 0 for r in rows)
