"""The prepared GPU check (benchmarks/gpu_check.py) runs every one of its checks in the dry run
(the same code paths at tiny shapes on the CPU), so it cannot rot between GPU loans; a
failing check becomes its row's status and a non-zero exit, after the rows that ran.

The data is what benchmarks/gpu_check_data.py builds, here from a small synthetic corpus.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.data.builds import write_corpus

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def check_data(tmp_path_factory) -> Path:
    """gpu_check_data.py's folder at tiny sizes: vocabularies of 200, instances of 64 and 32."""
    root = tmp_path_factory.mktemp("gpu-check")
    corpus = write_corpus(root / "corpus.txt", docs=60)
    run = subprocess.run(
        [sys.executable, str(BENCHMARKS / "gpu_check_data.py"), "--out", str(root / "data"),
         "--corpus", str(corpus), "--vocab-size", "200", "--long", "64", "--short", "32",
         "--format", "bert", "--workers", "1"],
        capture_output=True, text=True, timeout=600, env={**os.environ,
                                                           "PYTHONPATH": str(ROOT / "src")})
    assert run.returncode == 0, run.stderr[-3000:]
    return root / "data"


@pytest.fixture
def gpu_check(monkeypatch):
    """The benchmark modules, importable as the scripts import each other."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import gpu_check
    import gpu_rows

    return gpu_check, gpu_rows


def test_the_data_folder_holds_every_input_of_the_check(check_data):
    for name in ("sop", "none", "packed", "xlnet"):
        assert (check_data / name / "manifest.json").is_file()
    lines = (check_data / "sst2" / "train.tsv").read_text().splitlines()
    assert lines[0] == "sentence\tlabel" and len(lines) > 40
    assert {line.rsplit("\t", 1)[1] for line in lines[1:]} <= {"0", "1"}
    squad = json.loads((check_data / "squad" / "train-v1.1.json").read_text())
    for article in squad["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:  # each answer is where it says it is
                answer = qa["answers"][0]
                start = answer["answer_start"]
                assert paragraph["context"][start:start + len(answer["text"])] == answer["text"]


PRETRAINING = ("mlm+sop full", "mlm+sop unpadded", "modernbert", "modernbert unpadded",
               "electra", "plm", "fsdp", "mlm document")
MLM = {"mlm+sop full", "mlm+sop unpadded", "modernbert", "modernbert unpadded", "fsdp",
       "mlm document"}


def test_the_dry_run_runs_every_check(check_data, tmp_path):
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, str(BENCHMARKS / "gpu_check.py"), "--dry-run", "--data",
         str(check_data), "--out", str(out), "--steps", "1", "--warmup", "1",
         "--peak-tflops", "1", "--budget-s", "1e9"],  # every check, however slow the CPU
        capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    table = json.loads((out / "gpu_check.json").read_text())
    assert table["dry_run"] and table["precision"] == "fp32"
    rows = table["rows"]
    assert [r["status"] for r in rows] == ["ok"] * len(rows)
    checks = list(dict.fromkeys(r["check"] for r in rows))  # in the order they ran
    assert checks == ["mlm+sop full", "mlm+sop unpadded", "modernbert", "modernbert unpadded",
                      "electra", "plm", "finetune sst2", "finetune squad1", "max-batch",
                      "fsdp", "checkpoint", "mlm document"]
    variants = {(r["check"], r["variant"]) for r in rows}
    assert {("electra", "cuda graphs"), ("plm", "compiled"), ("mlm+sop full", "eager"),
            ("mlm+sop full", "cuda graphs"), ("modernbert", "compiled"),
            ("modernbert unpadded", "compiled")} <= variants
    modern = [r for r in rows if r["check"].startswith("modernbert")]
    assert all(r["transformers"] is not None for r in modern)  # ModernBertForMaskedLM's loop
    for r in rows:  # every speed measured; every comparison a ratio of two measured figures
        assert r["litebert"] > 0
        if r["transformers"] is not None:
            assert r["ratio"] == pytest.approx(r["litebert"] / r["transformers"])
            assert r["transformers_spread"] >= 0 and r["transformers_peak_mb"] is not None
    assert sum(r["transformers"] is not None for r in rows) >= 10
    for r in (r for r in rows if r["check"] in PRETRAINING):
        assert_timed_step(r)
    assert "max |w - straight run's w| = 0;" in next(
        r["what"] for r in rows if r["check"] == "checkpoint")  # exact on a CPU
    assert set(table["environment"]) >= {"torch", "cuda", "cudnn", "driver", "gpu clocks",
                                         "cpu", "cpu cores", "load average (1, 5, 15 min)"}
    assert table["environment"]["torch"] == torch.__version__
    markdown = (out / "gpu_check.md").read_text()
    assert f"- torch: {torch.__version__}" in markdown.split("| check |")[0]  # the head
    assert "| check | variant | litebert | MFU | HFU | padding | spread | peak MB |" in markdown
    assert markdown.count("| ok |") == len(rows)


def assert_timed_step(r: dict) -> None:
    """A pre-training row's columns: the loader's time, the rounds' spread, the step's
    split within its time; MLM rows' MFU, HFU and padding share from the batches."""
    assert r["data_ms"] > 0 and r["spread"] >= 0 and r["peak_mb"] is not None
    split = r["split_ms"]
    assert list(split) == ["copy", "fwd+bwd", "clip", "optimizer"]
    assert min(split.values()) >= 0 and split["fwd+bwd"] > 0
    assert sum(split.values()) <= r["step_ms"]
    assert r["mfu"] > 0 and 0 <= r["padding"] < 1
    if r["check"] in MLM:  # counted batch by batch: padding and filler cost hardware FLOPs
        assert r["hfu"] >= r["mfu"] * (1 - 1e-9)
    else:  # ELECTRA, PLM: the per-token count x real tokens, no hardware count
        assert r["hfu"] is None and "per-token count" in r["what"]


def test_a_failing_check_is_its_rows_status_and_the_exit_status(gpu_check, tmp_path, capsys):
    runner, rows = gpu_check
    s = rows.Settings(data=tmp_path, work=tmp_path, device=torch.device("cpu"),
                      precision="fp32", dry=True, steps=1, warmup=1)

    def broken(_):
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nmore")

    def fine(_):
        return [rows.Row("fine", "eager", "a tiny check", litebert=5.0, transformers=2.0)]

    table = runner.run_checks({"broken": broken, "fine": fine}, s, tmp_path / "out", 1e9)
    assert [r.status for r in table] == [
        "error: RuntimeError: CUDA error: an illegal memory access was encountered", "ok"]
    assert runner.exit_status(table) == 1
    printed = capsys.readouterr().out
    assert "| fine | eager | 5 tok/s | - | - | - | - | - | 2 | 2.50x |" in printed  # after it
    saved = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert [r["check"] for r in saved["rows"]] == ["broken", "fine"]
    skipped = runner.run_checks({"fine": fine}, s, tmp_path / "out", -1.0)
    assert skipped[0].status.startswith("skipped") and runner.exit_status(skipped) == 2
    assert "cut by the time budget (not run): fine" in (tmp_path / "out" / "gpu_check.md"
                                                        ).read_text()


def test_without_data_the_check_says_how_to_make_it(tmp_path):
    run = subprocess.run([sys.executable, str(BENCHMARKS / "gpu_check.py"), "--dry-run",
                          "--data", str(tmp_path)], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert run.returncode != 0 and "make gpu-check-data" in run.stderr
    assert "Traceback" not in run.stderr
