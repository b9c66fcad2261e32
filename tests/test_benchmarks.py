"""The step benchmarks (bench_pretrain, bench_electra, bench_xlnet) run end to end at a tiny
shape: each prints its header, the table of sides (tokens/s, TFLOP/s, MFU, peak memory, speed
against transformers) and the ratio lines that `make bench` readers look for.

They read small data directories built here (--data), not bbc-news, so the tests need no
network; --no-memory skips the fresh-process memory runs, and the compiled side compiles with
backend aot_eager (LITEBERT_COMPILE_BACKEND), which traces like inductor without C++. A
script's main() runs in this process as `python benchmarks/SCRIPT` would run it (its
sys.argv, its folder on the path), except where the process is what is measured or the
script reads its environment on import: a new Python spends 3-5 s importing torch.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from litebert.data.builder import BuildConfig, build
from litebert.tokenization import train_sentencepiece, train_tokenizer
from litebert.train.compiling import BACKEND_ENV
from tests.data.builds import write_corpus

ROOT = Path(__file__).resolve().parents[1]
SEQ = 64
COLUMNS = "| side | tok/s | TFLOP/s | MFU | peak RSS MB | vs transformers |"
NUMBER = r"[\d,.]+"


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    """A SOP directory (bench_pretrain), an objective-none one (bench_electra) and XLNet's
    streams (bench_xlnet), all at length SEQ."""
    root = tmp_path_factory.mktemp("bench-data")
    corpus = write_corpus(root / "corpus.txt", docs=60)
    kinds = {"sop": ("sentencepiece", dict(objective="sop")),
             "none": ("sentencepiece", dict(objective="none")),
             "xlnet": ("xlnet", dict(objective="none", packing="xlnet"))}
    dirs = {}
    for name, (kind, fields) in kinds.items():
        tok = train_tokenizer(kind, [corpus], root / f"tok-{kind}", vocab_size=200).parent
        dirs[name] = root / name
        build([corpus], tok, dirs[name], BuildConfig(max_seq_length=SEQ, format="bert",
                                                     heldout_fraction=0.1, **fields))
    return dirs


@dataclass
class Ran:
    status: int
    stdout: str
    stderr: str


@pytest.fixture
def run_script(monkeypatch, capsys):
    """run_script(script, *argv, **env): benchmarks/SCRIPT's main() on `argv` in this process,
    with `env` set; what it printed and its exit status (a SystemExit's message goes to
    stderr with status 1, SystemExit() is 0, as the interpreter does it)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))

    def run(script: str, *argv: str, **env: str) -> Ran:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(sys, "argv", [script, *argv])
        status = 0
        try:
            importlib.import_module(Path(script).stem).main()
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
            if isinstance(stop.code, str):
                print(stop.code, file=sys.stderr)
        out, err = capsys.readouterr()
        return Ran(status, out, err)
    return run


@pytest.fixture
def bench(run_script):
    """bench(script, data, *options, **env): a 1-step run of the benchmark on 2 x SEQ on the
    CPU (it must succeed)."""
    def run(script: str, data: Path, *options: str, **env: str) -> Ran:
        ran = run_script(script, "--data", str(data), "--batch", "2", "--steps", "1",
                         "--warmup", "1", "--device", "cpu", "--no-memory", *options, **env)
        assert ran.status == 0, ran.stderr[-3000:]
        return ran
    return run


def assert_table(out: str, preset: str, name: str, sides: tuple[str, ...]) -> None:
    """The header names the preset and shape; one row per side, in order, with its figures;
    the ratio lines close the output."""
    assert f"{preset} preset, batch 2 x {SEQ}, fp32" in out
    assert "median of 1 steps after 1 warm-up" in out
    assert COLUMNS in out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "side" not in line]
    assert [row.split(" | ")[0][2:] for row in rows] == [*sides, "transformers"]
    for row in rows:  # tok/s, TFLOP/s > 0; no MFU on a CPU without --peak-tflops
        cells = row.strip("| ").split(" | ")
        assert re.fullmatch(NUMBER, cells[1]) and float(cells[1].replace(",", "")) > 0
        assert float(cells[2]) > 0 and cells[3] == "-" and cells[4] == "-"
    assert rows[-1].endswith("| 1.00x |")
    labels = {"litebert eager": name, "litebert compiled": f"{name} compiled"}
    tail = out.strip().splitlines()[-len(sides):]
    assert [line.rsplit(" ", 1)[0] for line in tail] == [
        f"{labels[side]} step speed ratio" for side in sides]
    assert all(re.fullmatch(r"\d+\.\d\dx", line.rsplit(" ", 1)[1]) for line in tail)


def test_pretrain_benchmark_eager_under_the_deprecated_model_option(data, bench):
    run = bench("bench_pretrain.py", data["sop"], "--model", "tiny", "--compile", "false")
    assert "--model is deprecated; use --preset" in run.stderr
    assert_table(run.stdout, "tiny", "pretrain", ("litebert eager",))


@pytest.mark.slow  # 16 s on 2 cores
def test_pretrain_benchmark_compiled_side_alone(data, bench):
    out = bench("bench_pretrain.py", data["sop"], "--preset", "tiny", "--compile", "true",
                **{BACKEND_ENV: "aot_eager"}).stdout
    assert_table(out, "tiny", "pretrain", ("litebert compiled",))


@pytest.mark.slow
def test_pretrain_benchmark_both_litebert_sides(data, bench):
    out = bench("bench_pretrain.py", data["sop"], "--preset", "tiny", "--compile", "both",
                **{BACKEND_ENV: "aot_eager"}).stdout
    assert_table(out, "tiny", "pretrain", ("litebert eager", "litebert compiled"))


@pytest.mark.slow  # electra-small's 12 layers, twice: 25-60 s on 2 shared cores
def test_electra_benchmark_eager(data, bench):
    out = bench("bench_electra.py", data["none"], "--preset", "electra-small",
                "--compile", "false").stdout
    assert_table(out, "electra-small", "electra", ("litebert eager",))


def test_pretrain_benchmark_runs_modernbert_against_its_masked_lm(data, bench):
    # MLM alone (no pair task: ModernBERT has no pooler); transformers' side is the class the
    # exported directory names, ModernBertForMaskedLM.
    out = bench("bench_pretrain.py", data["none"], "--preset", "modernbert-tiny",
                "--pair-task", "none", "--compile", "false").stdout
    assert_table(out, "modernbert-tiny", "pretrain", ("litebert eager",))


def test_xlnet_benchmark_eager(data, bench):
    out = bench("bench_xlnet.py", data["xlnet"], "--preset", "xlnet-tiny",
                "--compile", "false").stdout
    assert_table(out, "xlnet-tiny", "xlnet", ("litebert eager",))


def test_a_seq_other_than_the_datas_is_a_sentence_naming_both(data, run_script):
    run = run_script("bench_pretrain.py", "--data", str(data["sop"]), "--seq", "128",
                     "--device", "cpu")
    assert run.status != 0
    assert f"--seq 128: {data['sop']} was built at --max-seq-length {SEQ}" in run.stderr
    assert "Traceback" not in run.stderr


def test_the_static_step_benchmark_prints_each_part_in_both_forms(run_script):
    run = run_script("bench_static_step.py", "--batch", "2", "--seq", "16", "--slots", "4",
                     "--used", "3", "--steps", "1")
    assert run.status == 0, run.stderr[-3000:]
    for part, form in [("MLM forward + backward", "labels (dynamic)"),
                       ("MLM forward + backward", "slots (static)"),
                       ("LAMB step", "plain"), ("LAMB step", "gated on the device")]:
        assert re.search(rf"\| {re.escape(part)} \| {re.escape(form)} \| {NUMBER} \|",
                         run.stdout), (part, form, run.stdout)
    assert re.search(rf"static MLM step time over dynamic {NUMBER}x", run.stdout)


def test_without_data_or_an_index_a_benchmark_says_to_pass_data(tmp_path):
    """A host with no package index (a GPU node, say) gets a sentence, not a traceback. A
    process of its own: the scripts read LITEBERT_DATA on import."""
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_pretrain.py"),
                          "--device", "cpu"], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src"),
                              "LITEBERT_DATA": str(tmp_path), "PIP_NO_INDEX": "1",
                              "PIP_FIND_LINKS": ""})
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert "bbc-news could not be fetched" in run.stderr and "--data DIR" in run.stderr


@pytest.mark.slow
def test_bench_checkpoint_runs_at_a_tiny_size(tmp_path):
    """Both layouts saved and resumed under 2 gloo processes (the benchmark checks that each
    resume restored the weights and moments), and the table of phases printed."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_checkpoint.py"), "--preset", "tiny",
           "--json", str(tmp_path / "result.json")]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert run.returncode == 0, run.stderr[-3000:]
    assert "| phase | layout | seconds | peak RSS per rank GB |" in run.stdout
    phases = [(r["phase"], r["layout"]) for r in
              json.loads((tmp_path / "result.json").read_text())["rows"]]
    assert phases == [("save", "full"), ("resume", "full"), ("save", "DCP"), ("resume", "DCP"),
                      ("async save: the step held", "DCP"),
                      ("async save: until committed", "DCP")]


def test_bench_build_memory_splits_the_peak_by_kind_of_page(tmp_path):
    """One small build: a table row whose anonymous and file-backed parts add up to (about)
    the peak of all processes."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"Sentence number {i} of document {i // 4} here.\n"
                              + ("\n" if i % 4 == 3 else "") for i in range(400)))
    tokenizer = train_sentencepiece([corpus], tmp_path / "tok", vocab_size=120).parent
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_build_memory.py"),
                          str(corpus), "--tokenizer", str(tokenizer)],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert run.returncode == 0, run.stderr[-3000:]
    row = run.stdout.strip().splitlines()[-1].split("|")
    total, (anon, file) = float(row[5]), (float(x) for x in row[6].split("/"))
    assert row[1].strip() == "corpus.txt" and total > 0
    assert abs(anon + file - total) <= 0.05 * total + 8  # shmem aside, RSS = anon + file


def test_bench_blocks_reports_the_build_and_read_costs(data, run_script):
    """On a small directory: both record passes, the three read rates, every token block
    verified by the checked reads, and the cost of one block."""
    run = run_script("bench_blocks.py", "--data", str(data["sop"]), "--items", "200")
    assert run.status == 0, run.stderr[-3000:]
    out = run.stdout
    assert re.search(rf"build: {NUMBER} MB of arrays: sha256 of every file {NUMBER} s, with "
                     rf"the block crc32s {NUMBER} s", out)
    seen = re.search(rf"plain {NUMBER}/s, checked from cold {NUMBER}/s \((\d+) of (\d+) token "
                     rf"blocks verified\), checked once verified {NUMBER}/s", out)
    assert seen and seen.group(1) == seen.group(2)
    assert re.search(rf"per block: crc32 of 64 KiB {NUMBER} us", out)
