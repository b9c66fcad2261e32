"""Fine-tuning and evaluation beyond one eager fp32 process: two processes (gloo on
the CPU) give one process's weights, prediction files and metrics; compile modes mark
steps as they must (a compiled run's graphs and losses: test_bounded_shapes.py); bf16 and
fp16 runs finish."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

import litebert
from litebert.cli import main
from litebert.tasks.base import FinetuneError, finetune_config
from litebert.tasks.finetune import evaluate_model, finetune
from litebert.tasks.runtime import finetune_compiles
from litebert.train.compiling import BACKEND_ENV
from tests.helpers.cli import cli_options
from tests.helpers.finetune import MICRO, race_dir, squad_json, sst2_dir
from tests.helpers.launch import run_ranks

# 12 steps of 8 over a train set of odd size whose last batch holds one row (in two
# processes one rank has none), two evaluations, dropout off: the same arithmetic either way.
SCHEDULE = dict(lr=1e-4, batch_size=8, max_steps=12, warmup_steps=1, eval_every=6,
                eval_batch_size=4, log_every=4, dropout=0.0, classifier_dropout=0.0)
RESULT_KEYS = ("task", "best_step", "metric", "dev", "history", "schedule", "optimizer")
# Weights without a gradient in exact arithmetic: a softmax does not see a bias added to all
# of its inputs (ALBERT's attention key bias; SQuAD's start and end biases over the tokens;
# RACE's score bias over the options). Their gradients are rounding noise, which Adam scales
# up to steps of the lr's order, and which changes with any change of summation order (the
# thread count of one process too): they are compared as noise, near their initial 0.
# RACE's one-process score bias ends at 5.8e-6 to 1.3e-5 after its 12 steps, by thread count
# and batch layout (its last batch alone or filled with dummy rows), where a weight with a
# gradient moves by about the lr (1e-4) a step: NOISE_BOUND lies between.
NOISE_BOUND = 5e-5
NOISE = {"sst2": (),  # XLNet's attention has no key bias
         "squad1": ("attention.key.bias", "qa_outputs.bias"),
         "race": ("attention.key.bias", "classifier.bias")}


@pytest.fixture(scope="module")
def lively_model(base_model, tmp_path_factory):
    """test_finetune's micro ALBERT with larger initial weights: its untrained predictions
    already differ from example to example, so a prediction file out of order would show."""
    root = tmp_path_factory.mktemp("lively")
    tokenizer = litebert.Tokenizer.from_pretrained(base_model)
    torch.manual_seed(0)
    config = litebert.ModelConfig(vocab_size=len(tokenizer), initializer_range=0.2, **MICRO)
    litebert.EncoderForPreTraining(config).save_pretrained(root)
    tokenizer.save_pretrained(root)
    return root


def task_data(task: str, root):
    """(data directory, config fields, files to compare) of a small run of `task`: each
    train set of odd size with a last batch of one row, each evaluation in several
    batches (an odd number where it can), a test split where the task has one."""
    if task == "sst2":
        return sst2_dir(root / "SST-2", n_train=33, n_dev=19), \
            dict(max_seq_length=32), ["predictions/SST-2.tsv"]
    if task == "squad1":
        (root / "train-v1.1.json").write_text(json.dumps(squad_json(False, 25, 5)))
        (root / "dev-v1.1.json").write_text(json.dumps(squad_json(False, 10, 6)))
        (root / "test-v1.1.json").write_text(json.dumps(squad_json(False, 5, 9)))
        return root, dict(max_seq_length=64, doc_stride=16, max_query_length=16), \
            ["predictions.json", "predictions/test_predictions.json"]
    return race_dir(root / "RACE", train=(9, 8), dev=(5, 5)), \
        dict(max_seq_length=64, batch_size=4, eval_batch_size=8), ["predictions.json"]


def assert_same_results(one, two, files: list[str], noise: tuple[str, ...]) -> float:
    """Both runs' results.json (timing aside) and `files` are equal, the `noise` weights
    near 0 in both; returns the largest difference between the other weights."""
    a = json.loads((one / "results.json").read_text())
    b = json.loads((two / "results.json").read_text())
    assert {k: a[k] for k in RESULT_KEYS} == {k: b[k] for k in RESULT_KEYS}
    for name in files:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    mine, theirs = (load_file(run / "model" / "model.safetensors") for run in (one, two))
    assert mine.keys() == theirs.keys()
    noisy = [k for k in mine if k.endswith(noise)]
    assert len(noisy) == len(noise)
    for k in noisy:
        assert max(float(mine[k].abs().max()), float(theirs[k].abs().max())) < NOISE_BOUND, k
    return max(float((mine[k] - theirs[k]).abs().max()) for k in mine if k not in noisy)


@pytest.mark.parametrize("task, model", [("sst2", "lively_xlnet"), ("squad1", "lively_model"),
                                         ("race", "lively_model")])
def test_two_processes_fine_tune_as_one(request, tmp_path, task, model):
    """SST-2 with XLNet (left padding, a parameter DDP sees unused), SQuAD's span head and
    RACE's multiple choice with ALBERT."""
    data, fields, files = task_data(task, tmp_path)
    fields = {**SCHEDULE, **fields}
    common = dict(task=task, data=str(data), model=str(request.getfixturevalue(model)))
    finetune(finetune_config(**common, out=str(tmp_path / "one"), **fields))
    run_ranks(2, ["finetune", *cli_options({**common, "out": tmp_path / "two", **fields})])
    difference = assert_same_results(tmp_path / "one", tmp_path / "two", files, NOISE[task])
    print(f"{task}: largest weight difference {difference:.2e}")
    assert difference <= 1e-6
    for name in files:  # predictions that differ from example to example
        assert len(set(predictions(tmp_path / "one" / name))) > 1, name


def predictions(path) -> list[str]:
    """The answers of a prediction file: a GLUE submission TSV or a JSON {id: answer}."""
    if path.suffix == ".tsv":
        return [line.split("\t")[1] for line in path.read_text().splitlines()[1:]]
    return list(json.loads(path.read_text()).values())


def test_two_processes_evaluate_as_one(lively_model, tmp_path):
    """`litebert evaluate` on two processes: the files and metrics of one process."""
    data, fields, files = task_data("squad1", tmp_path)
    model = tmp_path / "tuned"
    finetune(finetune_config(task="squad1", data=str(data), model=str(lively_model),
                            out=str(model), **{**SCHEDULE, **fields, "max_steps": 2}))
    common = dict(task="squad1", data=str(data), model=str(model / "model"),
                  eval_batch_size=4, **fields)
    evaluate_model(finetune_config(**common, out=str(tmp_path / "one")))
    run_ranks(2, ["evaluate", *cli_options({**common, "out": tmp_path / "two"})])
    for name in ("results.json", *files):
        assert (tmp_path / "one" / name).read_text() == (tmp_path / "two" / name).read_text()
    assert json.loads((tmp_path / "two" / "results.json").read_text())["dev"]["f1"] >= 0


@pytest.mark.parametrize("compile_setting, marks", [("reduce-overhead", 6), (True, 0)])
def test_cuda_graph_modes_mark_each_step(base_model, tmp_path, monkeypatch,
                                         compile_setting, marks):
    """compile: reduce-overhead replays CUDA graphs, so each training step is marked as a new
    one (aot_eager ignores the mode here); the default mode marks nothing."""
    monkeypatch.setenv(BACKEND_ENV, "aot_eager")
    marked = []
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: marked.append(1))
    data = sst2_dir(tmp_path / "SST-2", n_train=40, n_dev=10)
    torch._dynamo.reset()
    finetune(finetune_config(task="sst2", data=str(data), model=str(base_model), batch_size=8,
                            max_steps=6, warmup_steps=1, max_seq_length=32, eval_every=6,
                            out=str(tmp_path / "out"), compile=compile_setting))
    assert len(marked) == marks


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_half_precision_runs_train_and_evaluate(base_model, tmp_path, monkeypatch,
                                                precision):
    """Autocast on the CPU: the forward in bf16 (or fp16, with the gradient scaler's
    scale, unscale and update every step), the weights and their file in fp32."""
    updates = []
    update = torch.amp.GradScaler.update
    monkeypatch.setattr(torch.amp.GradScaler, "update",
                        lambda self, *a: updates.append(1) or update(self, *a))
    data = sst2_dir(tmp_path / "SST-2", n_train=40, n_dev=10)
    result = finetune(finetune_config(task="sst2", data=str(data), model=str(base_model),
                                     out=str(tmp_path / "o"), lr=2e-3, batch_size=8,
                                     max_steps=6, warmup_steps=1, max_seq_length=32,
                                     eval_every=3, precision=precision))
    assert len(updates) == (6 if precision == "fp16" else 0)
    assert [h["step"] for h in result["history"]] == [3, 6]
    assert 0 <= result["dev"]["accuracy"] <= 1
    weights = load_file(tmp_path / "o" / "model" / "model.safetensors")
    assert {w.dtype for w in weights.values()} == {torch.float32}
    assert (tmp_path / "o" / "predictions" / "SST-2.tsv").exists()
    again = evaluate_model(finetune_config(task="sst2", data=str(data),
                                          model=str(tmp_path / "o" / "model"),
                                          out=str(tmp_path / "e"), max_seq_length=32,
                                          precision=precision))
    assert again["dev"]["accuracy"] == result["dev"]["accuracy"]


def test_bad_runtime_settings_are_one_sentence(base_model, tmp_path, monkeypatch,
                                               capsys):
    given = dict(task="sst2", data="d", model="m", out="o")
    assert finetune_config(**given).compile is None  # auto
    assert finetune_config(**given, compile="false").compile is False
    assert finetune_config(**given, compile="max-autotune").compile == "max-autotune"
    for field, value, why in (("compile", "sometimes", "choose auto, true or false"),
                              ("precision", "fp8", "choose from auto, fp32, bf16, fp16"),
                              ("log_every", 0, "must be at least 1")):
        with pytest.raises(FinetuneError, match=f"{field}={value!r}: {why}"):
            finetune_config(**given, **{field: value})
    # A compile failure: a sentence naming the way back to eager, exit status 2.
    monkeypatch.setenv(BACKEND_ENV, "no-such-backend")
    data = sst2_dir(tmp_path / "SST-2", n_train=8, n_dev=4)
    assert main(["finetune", "--task", "sst2", "--data", str(data), "--model", str(base_model),
                 "--out", str(tmp_path / "o"), "--max-steps", "1", "--compile"]) == 2
    err = capsys.readouterr().err
    assert "torch.compile failed" in err and "--no-compile" in err and "Traceback" not in err


def test_fine_tuning_compiles_only_when_asked():
    """auto stays eager on CUDA too (measured slower compiled); true or a mode compiles."""
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert not finetune_compiles(None, cuda) and not finetune_compiles(None, cpu)
    assert finetune_compiles(True, cuda) and finetune_compiles("reduce-overhead", cpu)
    assert not finetune_compiles(False, cuda)
