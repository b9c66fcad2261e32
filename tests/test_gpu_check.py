"""The prepared GPU check (benchmarks/gpu_check.py) runs every one of its checks in the dry run
(the same code paths at tiny shapes on the CPU), so it cannot rot between GPU loans; a
failing check becomes its row's status and a non-zero exit, after the rows that ran.

The data is what benchmarks/gpu_check_data.py builds, here from a small synthetic corpus.
"""

from __future__ import annotations

import gc
import gzip
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from litebert.studies.lite_vs_bert.rows import ROWS
from tests.data.builds import write_corpus

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def check_data(tmp_path_factory) -> Path:
    """gpu_check_data.py's folder at tiny sizes: vocabularies of 200, instances of 64 and 32
    (its main() run here, as the command line runs it)."""
    root = tmp_path_factory.mktemp("gpu-check")
    corpus = write_corpus(root / "corpus.txt", docs=60)
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCHMARKS))
        patch.setattr(sys, "argv", [
            "gpu_check_data.py", "--out", str(root / "data"), "--corpus", str(corpus),
            "--vocab-size", "200", "--long", "64", "--short", "32", "--longest", "96",
            "--format", "bert", "--workers", "1"])
        importlib.import_module("gpu_check_data").main()
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


@pytest.fixture(scope="module")
def dry_run(check_data, tmp_path_factory):
    """One dry run of every check (minutes on a loaded CPU), shared by the tests that read
    its files: (the finished process, its OUT folder)."""
    out = tmp_path_factory.mktemp("dry-run") / "out"
    run = subprocess.run(
        [sys.executable, str(BENCHMARKS / "gpu_check.py"), "--dry-run", "--data",
         str(check_data), "--out", str(out), "--steps", "1", "--warmup", "1",
         "--peak-tflops", "1", "--budget-s", "1e9"],  # every check, however slow the CPU
        capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    return run, out


def test_the_dry_run_runs_every_check(dry_run):
    run, out = dry_run
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    table = json.loads((out / "gpu_check.json").read_text())
    assert table["dry_run"] and table["precision"] == "fp32"
    rows = table["rows"]
    assert [r["status"] for r in rows] == ["ok"] * len(rows)
    checks = list(dict.fromkeys(r["check"] for r in rows))  # in the order they ran
    assert checks == ["mlm+sop full", "mlm+sop unpadded", "profile", "micro", "modernbert",
                      "modernbert unpadded", "electra", "plm", "finetune sst2",
                      "finetune squad1", "max-batch", "fsdp", "checkpoint", "mlm document",
                      "lite-vs-bert"]
    variants = {(r["check"], r["variant"]) for r in rows}
    assert {("electra", "cuda graphs"), ("plm", "compiled"), ("mlm+sop full", "eager"),
            ("mlm+sop full", "cuda graphs"), ("mlm+sop full", "regional"),
            ("modernbert", "compiled"),
            ("modernbert unpadded", "compiled")} <= variants
    modern = [r for r in rows if r["check"].startswith("modernbert")]
    assert all(r["transformers"] is not None for r in modern)  # ModernBertForMaskedLM's loop
    for r in rows:  # every speed measured; every comparison a ratio of two measured figures
        assert r["litebert"] > 0
        if r["transformers"] is not None:
            assert r["ratio"] == pytest.approx(r["litebert"] / r["transformers"])
            if r["check"] != "profile":  # one pass under the profiler: no rounds
                assert r["transformers_spread"] >= 0 and r["transformers_peak_mb"] is not None
    assert sum(r["transformers"] is not None for r in rows) >= 10
    for r in (r for r in rows if r["check"] in PRETRAINING):
        assert_timed_step(r)
    lite = [r for r in rows if r["check"] == "lite-vs-bert"]  # the study's GPU row, one a size
    assert [r["variant"] for r in lite] == [row.name for row in ROWS]
    assert all(r["mfu"] > 0 and r["peak_mb"] > 0 and "LAMB" in r["what"] for r in lite)
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
    assert gc.get_freeze_count() == 0  # frozen between checks, this process's own again after
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


def test_without_data_the_check_says_how_to_make_it(gpu_check, tmp_path, monkeypatch):
    runner, _ = gpu_check
    monkeypatch.setattr(sys, "argv", ["gpu_check.py", "--dry-run", "--data", str(tmp_path)])
    with pytest.raises(SystemExit) as stop:  # a sentence, which the interpreter prints
        runner.main()
    assert isinstance(stop.value.code, str) and "make gpu-check-data" in stop.value.code


def test_the_data_folder_holds_modernberts_long_rows(check_data):
    config = json.loads((check_data / "full" / "manifest.json").read_text())["config"]
    assert (config["max_seq_length"], config["packing"]) == (96, "full-sentences")  # --longest


def test_the_modernbert_rows_read_the_long_rows(dry_run):
    _, out = dry_run
    rows = json.loads((out / "gpu_check.json").read_text())["rows"]
    modern = [r for r in rows if r["check"].startswith("modernbert")]
    assert len(modern) == 3 and all(" x 96, " in r["what"] for r in modern)


def test_the_profile_says_where_each_sides_time_goes(dry_run):
    _, out = dry_run
    record = json.loads((out / "profile.json").read_text())
    assert set(record["sides"]) == {"litebert-full", "litebert-unpadded", "transformers"}
    for side, r in record["sides"].items():
        assert r["steps"] == 2 and r["kernels_per_step"] > 0 and 0 < r["busy_fraction"] <= 1
        assert set(r["categories"]) == {"gemm", "attention", "elementwise", "optimizer",
                                        "memcpy", "other"}
        assert sum(r["categories"].values()) == pytest.approx(1.0)
        assert r["categories"]["gemm"] > 0 and r["categories"]["optimizer"] > 0
        top = r["top_kernels"]
        assert 0 < len(top) <= 20 and all(k["calls"] > 0 and k["ms"] >= 0 for k in top)
        assert [k["ms"] for k in top] == sorted((k["ms"] for k in top), reverse=True)
        assert sum(k["share"] for k in top) <= 1 + 1e-9
        with gzip.open(out / f"trace-{side}.json.gz", "rt") as f:  # the first step only
            names = {e.get("name") for e in json.load(f)["traceEvents"]}
        assert "profiled step 0" in names and "profiled step 1" not in names
    markdown = (out / "profile.md").read_text()
    assert markdown.count("| kernel | category | calls | ms | share |") == 3
    rows = json.loads((out / "gpu_check.json").read_text())["rows"]
    profile = [r for r in rows if r["check"] == "profile"]
    assert [r["variant"] for r in profile] == ["compiled full", "compiled unpadded"]
    assert all("kernels/step" in r["what"] and r["transformers"] > 0 for r in profile)


def test_the_micro_benchmarks_time_every_case_or_say_why_not(dry_run):
    _, out = dry_run
    cases = json.loads((out / "micro.json").read_text())["cases"]
    sdpa = {(c["name"], c["passes"]) for c in cases if c["group"] == "attention sdpa"}
    assert sdpa == {(f"{backend}, {mask}", passes)
                    for backend in ("flash", "efficient", "cudnn", "math")
                    for mask in ("no mask", "bool mask", "float mask")
                    for passes in ("fwd", "fwd+bwd")}
    groups = {c["group"] for c in cases}
    assert {"gemm albert-base real M", "gemm albert-base padded M", "attention varlen",
            "attention flex"} <= groups
    for c in cases:  # measured, or the reason it could not run
        if c["status"] == "ok":
            assert c["ms"] > 0 and c["tflops"] > 0
        else:
            assert c["tflops"] is None and ": " in c["status"]
    ok = {(c["group"], c["name"]) for c in cases if c["status"] == "ok"}
    assert ("attention sdpa", "math, bool mask") in ok  # every backend a CPU has runs
    assert {("gemm albert-base real M", n) for n in ("qkv", "ffn in", "decoder")} <= ok
    assert "| group | case | shape | pass | ms | TFLOP/s |" in (out / "micro.md").read_text()


def test_kernels_are_sorted_and_the_busy_time_is_a_union(gpu_check, monkeypatch):
    """The GPU side of gpu_profile on a hand-made CUDA trace: kernel names of each kind, a
    compiled optimizer's kernel found by its launch inside Optimizer.step, overlaps once."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import gpu_profile

    def kernel(name, ts, dur, corr):
        return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur,
                "args": {"correlation": corr}}

    events = [
        {"ph": "X", "cat": "user_annotation", "name": "profiled step 0", "ts": 0, "dur": 50},
        {"ph": "X", "cat": "user_annotation", "name": "profiled step 1", "ts": 50, "dur": 40},
        {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#Lamb.step", "ts": 80,
         "dur": 10},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 85, "dur": 1,
         "args": {"correlation": 7}},
        kernel("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits>", 10, 20, 1),
        kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", 20, 20, 2),
        kernel("triton_poi_fused__scaled_dot_product_efficient_attention_add_0", 60, 10, 3),
        kernel("fmha_cutlassB_bf16_aligned_64x64_k64_sm80", 70, 5, 4),
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)",
         "ts": 75, "dur": 5},
        kernel("triton_red_fused_add_div_mul_sqrt_0", 95, 5, 7),  # launched at 85
        kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop", 100, 5, 8),
    ]
    r = gpu_profile.summary(events, cuda=True)
    assert r["kernels_per_step"] == 3.5 and r["wall_ms"] == pytest.approx(0.105)
    assert r["busy_fraction"] == pytest.approx((30 + 10 + 5 + 5 + 5 + 5) / 105)
    kinds = {k["name"][:12]: k["category"] for k in r["top_kernels"]}
    assert kinds == {"void pytorch": "attention", "sm90_xmma_ge": "gemm",
                     "triton_poi_f": "elementwise", "fmha_cutlass": "attention",
                     "Memcpy HtoD ": "memcpy", "triton_red_f": "optimizer",
                     "cudnn_genera": "attention"}
    assert r["categories"]["attention"] == pytest.approx(30 / 70)
    assert sum(r["categories"].values()) == pytest.approx(1.0)
    trace = gpu_profile.first_step({"traceEvents": events})["traceEvents"]
    assert {e["name"][:12] for e in trace} == {"profiled ste", "void pytorch", "sm90_xmma_ge"}


def test_a_loans_output_is_filed_by_date_and_card_and_a_dry_run_is_not(dry_run, tmp_path,
                                                                       monkeypatch):
    _, out = dry_run
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import gpu_record

    with pytest.raises(SystemExit, match="a dry run"):
        gpu_record.record(out, tmp_path / "results")
    loan = tmp_path / "loan"
    shutil.copytree(out, loan)
    table = json.loads((loan / "gpu_check.json").read_text())
    table.update(dry_run=False, device="NVIDIA H200 (139 GiB)", date="2026-12-01")
    (loan / "gpu_check.json").write_text(json.dumps(table))
    first = gpu_record.record(loan, tmp_path / "results")
    second = gpu_record.record(loan, tmp_path / "results")  # a second loan that day
    assert (first.name, second.name) == ("2026-12-01-nvidia-h200", "2026-12-01-nvidia-h200-2")
    kept = {p.name for p in first.iterdir()}
    assert {"gpu_check.md", "gpu_check.json", "profile.md", "micro.json"} <= kept
    assert any(name.startswith("trace-") and name.endswith(".json.gz") for name in kept)
    assert "litebert commit" in table["environment"]
