"""`compile` in the Trainer: a compiled run is one graph per mode (training, evaluation) with no
graph breaks and the eager run's losses; the option reads auto | true | false; a failure to
compile is a sentence naming --no-compile.

The fast tests compile with backend aot_eager (LITEBERT_COMPILE_BACKEND): dynamo and AOT
autograd trace forward and backward as they do for inductor, without C++ compilation; one
slow test runs inductor itself."""

from __future__ import annotations

import collections
import json
import logging
import re

import pytest
import torch
from torch._dynamo.utils import counters

import litebert.model.attention as attention
from litebert.cli import main
from litebert.model import EncoderForPermutationLM
from litebert.studies.runner import SPEED_FIELDS
from litebert.train import compiling
from litebert.train.compiling import (
    BACKEND_ENV,
    RECOMPILE_LIMIT,
    compile_errors,
    compile_in_place,
    compile_mode,
    compile_units,
    resolved_compile,
)
from litebert.train.pretrain import Trainer, pretrain
from litebert.train.run_config import RunConfigError, load_run_config
from tests.helpers import plm
from tests.helpers import pretrain as mlm
from tests.helpers.varlen_reference import CALLS, use_reference_varlen


@pytest.fixture(scope="module")
def nsp_data(tmp_path_factory):
    """test_pretrain's data with NSP pairs instead of SOP."""
    return mlm.tiny_data(tmp_path_factory.mktemp("nsp"), objective="nsp")


@pytest.fixture(scope="module")
def varied_data(tmp_path_factory):
    """Pairs of up to 128 tokens, most of them shorter (short_seq_prob 0.9): unpadded, a batch
    of 2 takes 5 sizes N (128 to 256 tokens)."""
    return mlm.tiny_data(tmp_path_factory.mktemp("varied"), max_seq_length=128,
                         short_seq_prob=0.9)


def one_layer_electra(data_dir, out, **kw):
    """The micro ELECTRA with one layer in each of its two encoders: its layers share no
    weights, so a second one would trace the same code again (the compiled run took 13-15 s
    with two, 9-10 s with one)."""
    fields = mlm.OBJECTIVE_FIELDS["electra"]
    one_layer = {**fields["model_overrides"], "num_hidden_layers": 1, "num_hidden_groups": 1}
    return mlm.run_config(data_dir, out, **{**fields, "model_overrides": one_layer, **kw})


# Every objective: a data fixture and a run_config; each trains and evaluates in full graphs.
COMPILED_OBJECTIVES = {"mlm+sop": ("data_dir", mlm.run_config),
                       "mlm+nsp": ("nsp_data", mlm.run_config),
                       "electra": ("data_dir", one_layer_electra),
                       "plm": ("plm_data", plm.run_config)}
STEPS, EVALS = 16, 2


class Recompiles(logging.Handler):
    """Dynamo's recompile records (TORCH_LOGS=recompiles), counted per compiled function."""

    LOGGER = "torch._dynamo.guards.__recompiles"

    def __init__(self):
        super().__init__()
        self.by_function: collections.Counter[str] = collections.Counter()

    def emit(self, record: logging.LogRecord) -> None:
        found = re.search(r"Recompiling function (\S+)", record.getMessage())
        if found:
            self.by_function[found.group(1)] += 1


class ListHandler(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def recompiles():
    torch._logging.set_logs(recompiles=True)
    handler = Recompiles()
    logging.getLogger(Recompiles.LOGGER).addHandler(handler)
    yield handler
    logging.getLogger(Recompiles.LOGGER).removeHandler(handler)
    torch._logging.set_logs()


def train(request, objective: str, out, compile: bool) -> list[float]:
    """A run of STEPS steps with EVALS evaluations; its logged losses, in step order."""
    fixture, run_config = COMPILED_OBJECTIVES[objective]
    torch._dynamo.reset()
    counters.clear()
    pretrain(run_config(request.getfixturevalue(fixture), out, max_steps=STEPS, log_every=1,
                        eval_every=STEPS // EVALS, save_every=STEPS, compile=compile))
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert sum("eval_loss" in x for x in lines) == EVALS
    return [x["loss"] for x in lines if "loss" in x]


def graph_counts(recompiles: Recompiles) -> tuple[int, dict[str, int], int]:
    """(graph breaks, recompilations per compiled function, compiled graphs in all)."""
    return (sum(counters["graph_break"].values()), dict(recompiles.by_function),
            counters["stats"]["unique_graphs"])


@pytest.mark.parametrize("objective", sorted(COMPILED_OBJECTIVES))
def test_compiled_run_is_one_graph_per_mode_with_the_eager_losses(request, objective, tmp_path,
                                                                   monkeypatch, recompiles):
    """The model's frame recompiles for evaluation (eval mode, its batch) and LAMB's update
    once for its second parameter group: each within the issue's bound of 3."""
    monkeypatch.setenv(BACKEND_ENV, "aot_eager")
    eager = train(request, objective, tmp_path / "eager", compile=False)
    assert graph_counts(recompiles) == (0, {}, 0)  # the eager run compiled nothing
    compiled = train(request, objective, tmp_path / "compiled", compile=True)
    breaks, by_function, graphs = graph_counts(recompiles)
    print(f"{objective}: {breaks} graph breaks, recompilations {by_function}, {graphs} graphs")
    assert breaks == 0 and graphs >= 1 and all(n <= 3 for n in by_function.values())
    fixture, run_config = COMPILED_OBJECTIVES[objective]
    lamb = run_config(request.getfixturevalue(fixture), tmp_path).optimizer == "lamb"
    assert ("_lamb_update" in by_function) == lamb, by_function  # compiled with the model
    assert compiled[:5] == pytest.approx(eager[:5], rel=1e-3)
    assert len(compiled) == STEPS


def long_run(data_dir, out, **fields) -> list[dict]:
    """40 compiled steps (aot_eager) of batches of 2 x 128 with 4 evaluations of 40 held-out
    instances; the metrics' lines."""
    torch._dynamo.reset()
    counters.clear()
    pretrain(mlm.run_config(data_dir, out, max_steps=40, log_every=10, eval_every=10,
                            save_every=40, export=False, compile=True, batch_size=2,
                            micro_batch_size=2, model_overrides={
                                **mlm.MICRO_MODEL, "max_position_embeddings": 128}, **fields))
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert sum("eval_loss" in x for x in lines) == 4
    return lines


# torch's own limit of graphs per function: litebert raises it to RECOMPILE_LIMIT for
# headroom, and these runs stay below torch's.
TORCH_RECOMPILE_LIMIT = 8


def within_the_recompile_limit(recompiles: Recompiles) -> dict[str, int]:
    breaks, by_function, graphs = graph_counts(recompiles)
    assert breaks == 0 and graphs >= 1
    assert max(by_function.values()) < TORCH_RECOMPILE_LIMIT, by_function
    return by_function


def test_compiling_raises_the_graph_limit_never_lowers_it():
    # config.patch, not monkeypatch: undoing a monkeypatch on a config module deletes the entry
    with torch._dynamo.config.patch(recompile_limit=8):
        compile_in_place(torch.nn.Linear(2, 2))
        assert torch._dynamo.config.recompile_limit == RECOMPILE_LIMIT == 16
    with torch._dynamo.config.patch(recompile_limit=64):
        compile_in_place(torch.nn.Linear(2, 2))
        assert torch._dynamo.config.recompile_limit == 64


def test_unpadded_runs_compile_one_graph_for_every_token_count(varied_data, tmp_path,
                                                               monkeypatch, recompiles):
    """attention unpadded on varlen's layout (the reference op on this CPU): N, the tokens of
    the unpadded row, changes from batch to batch and is traced as a symbol, so training
    and evaluation stay within torch's graphs per function (a graph per N, with the padded
    path and evaluation beside them, did not)."""
    monkeypatch.setenv(BACKEND_ENV, "aot_eager")
    use_reference_varlen(monkeypatch)
    CALLS.clear()
    long_run(varied_data, tmp_path / "run", attention="unpadded")
    by_function = within_the_recompile_limit(recompiles)
    token_counts = {sum(lengths) for lengths, _ in CALLS}
    print(f"unpadded: recompilations {by_function}, token counts {sorted(token_counts)}")
    assert len(token_counts) >= 4  # batches of several N went through one graph
    assert {max_seqlen for _, max_seqlen in CALLS} == {128}  # T, whatever the filler


def test_cross_evaluation_keeps_one_width(varied_data, tmp_path, monkeypatch, recompiles,
                                          caplog):
    """eval_pair_tasks both: the SOP and NSP pairs (here in 11 widths) are padded to the
    data's length, one graph for them all; with attention unpadded on this CPU's padded
    layout, whose reason is logged once."""
    monkeypatch.setenv(BACKEND_ENV, "aot_eager")
    attention.log_padded_fallback.cache_clear()
    with caplog.at_level(logging.INFO, logger="litebert"):
        lines = long_run(varied_data, tmp_path / "run", attention="unpadded",
                         objective={"name": "mlm", "eval_pair_tasks": "both"})
    by_function = within_the_recompile_limit(recompiles)
    print(f"eval_pair_tasks both: recompilations {by_function}")
    assert all("eval_nsp_accuracy" in x for x in lines if "eval_loss" in x)
    said = [r.getMessage() for r in caplog.records if "instead of varlen" in r.getMessage()]
    assert len(said) == 1 and "CUDA only" in said[0], said


def test_cuda_graph_mode_marks_each_step_and_copies_what_it_keeps(plm_data, tmp_path,
                                                                   monkeypatch):
    """compile: reduce-overhead (CUDA graphs; aot_eager ignores the mode and says so): the
    loop marks the start of each step, once per step with 2 micro-batches, and XLNet keeps
    copies of its memories, which a replay would overwrite."""
    monkeypatch.setenv(BACKEND_ENV, "aot_eager")
    marks = []
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: marks.append(1))
    ignored = ListHandler()
    logging.getLogger("torch._dynamo.backends.common").addHandler(ignored)
    torch._dynamo.reset()
    try:
        trainer = Trainer(plm.run_config(plm_data, tmp_path / "graphs", max_steps=4,
                                         batch_size=8, micro_batch_size=4, eval_every=2,
                                         compile="reduce-overhead"))
        result = trainer.run()
    finally:
        logging.getLogger("torch._dynamo.backends.common").removeHandler(ignored)
    assert len(marks) == 4 and result["eval_loss"] > 0
    assert any("ignoring extra kwargs {'mode': 'reduce-overhead'}" in m for m in ignored.messages)
    objective = trainer.objective
    assert objective.copy_memories and len(objective.mems) == 2  # one per micro-batch
    mems = objective.mems[0]
    kept = objective.kept(mems, torch.float32)
    assert all(a.data_ptr() != b.data_ptr() for a, b in zip(kept, mems, strict=True))
    marks.clear()  # torch's default mode replays no CUDA graph: nothing to mark or copy
    plain = Trainer(plm.run_config(plm_data, tmp_path / "plain", max_steps=2, compile=True))
    plain.run()
    assert not marks and not plain.objective.copy_memories
    kept = plain.objective.kept(mems, torch.float32)
    assert all(a is b for a, b in zip(kept, mems, strict=True))


@pytest.mark.slow
def test_inductor_compiles_the_plm_step(request, tmp_path, monkeypatch, recompiles):
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    eager = train(request, "plm", tmp_path / "eager", compile=False)
    compiled = train(request, "plm", tmp_path / "inductor", compile=True)
    breaks, by_function, graphs = graph_counts(recompiles)
    assert breaks == 0 and graphs >= 1 and all(n <= 3 for n in by_function.values())
    assert compiled[:5] == pytest.approx(eager[:5], rel=1e-3)


def test_a_compile_failure_names_the_option_that_turns_it_off(plm_data, tmp_path,
                                                              monkeypatch, capsys):
    monkeypatch.setenv(BACKEND_ENV, "aot_eager")
    forward = EncoderForPermutationLM.forward

    def breaking(self, *args, **kwargs):
        torch._dynamo.graph_break()  # fullgraph: an error, not a slower graph
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(EncoderForPermutationLM, "forward", breaking)
    torch._dynamo.reset()
    with pytest.raises(RunConfigError, match=r"torch.compile failed.*--no-compile.*"
                                             r"compile: false"):
        pretrain(plm.run_config(plm_data, tmp_path / "run", max_steps=2, compile=True))
    # The same through the command line: a sentence, exit status 2, no traceback.
    monkeypatch.setenv(BACKEND_ENV, "no-such-backend")
    assert main(["pretrain", "--config", "xlnet-tiny-cpu", "--data", str(plm_data), "--out",
                 str(tmp_path / "cli"), "--max-steps", "1", "--set", "objective.perm_size=16",
                 "--compile"]) == 2
    err = capsys.readouterr().err
    assert "torch.compile failed" in err and "--no-compile" in err and "Traceback" not in err


def test_compile_reads_auto_true_false_and_shows_its_default(capsys):
    assert load_run_config(None, {}).compile is None  # auto
    for given, read in (("auto", None), ("true", True), (False, False), ("False", False),
                        ("default", True)):
        assert load_run_config(None, {"compile": given}).compile is read
    assert load_run_config(None, {"compile": "reduce-overhead"}).compile == "reduce-overhead"
    assert load_run_config(None, {"compile": "reduce-overhead"}).to_dict()["compile"] == \
        "reduce-overhead"
    assert load_run_config(None, {}).to_dict()["compile"] == "auto"
    with pytest.raises(RunConfigError, match="compile='sometimes'.*auto, true or false"):
        load_run_config(None, {"compile": "sometimes"})
    assert load_run_config("xlnet-tiny-cpu", {}).compile is None  # recipes say auto
    with pytest.raises(SystemExit):
        main(["pretrain", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--compile [{auto,true,false,default,reduce-overhead," in text
    assert "--no-compile the same as --compile false (default: auto)" in text
    assert "compile" in SPEED_FIELDS  # a continued study may switch it


def test_auto_compiles_on_cuda_only():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert (resolved_compile(None, cpu), resolved_compile(None, cuda)) == (False, True)
    assert resolved_compile(True, cpu) and not resolved_compile(False, cuda)
    assert resolved_compile("reduce-overhead", cpu)
    assert [compile_mode(s) for s in (None, True, False, "default", "reduce-overhead")] == \
        [None, None, None, None, "reduce-overhead"]


def test_compiling_on_a_cpu_says_once_that_eager_is_usually_faster(monkeypatch, caplog):
    """Pre-training (in place, or FSDP's units) and fine-tuning (in place, dynamic shapes)
    compile through these; on a CPU, where only an explicit --compile compiles, the first
    says once that it seldom pays, and compiles all the same. Off a CPU (meta here): not a
    word."""
    monkeypatch.setattr(compiling, "_said", set())
    monkeypatch.setenv(BACKEND_ENV, "aot_eager")
    with caplog.at_level(logging.WARNING, logger="litebert"):
        compile_in_place(torch.nn.Linear(2, 2, device="meta"))
        assert caplog.records == []
        model = torch.nn.Linear(2, 2)
        compile_in_place(model)
        compile_in_place(torch.nn.Linear(2, 2), dynamic=None)
        compile_units([(torch.nn.Linear(2, 2), None)])
    assert [r.getMessage() for r in caplog.records] == [
        "compiling on a CPU, as asked: torch.compile is usually slower than eager there and "
        "costs its compile time first; --no-compile (or `compile: false` in the recipe) runs "
        "eagerly"]
    assert model._compiled_call_impl is not None  # compiled as asked


def test_the_recompile_limit_is_a_sentence_naming_no_compile(monkeypatch):
    """FailOnRecompileLimitHit is no TorchDynamoException: compile_errors catches it too, and
    says what it means and how to train eagerly."""
    monkeypatch.setenv(BACKEND_ENV, "aot_eager")
    torch._dynamo.reset()
    double = torch.compile(lambda x: x * 2, fullgraph=True, dynamic=False, backend="aot_eager")
    with torch._dynamo.config.patch(recompile_limit=1), \
            pytest.raises(RunConfigError) as caught, compile_errors(True):
        for n in (2, 3, 4):  # a new static shape each time: a graph each
            double(torch.ones(n))
    text = str(caught.value)
    assert "limit of 1 graphs for one function" in text and "--no-compile" in text
    assert type(caught.value.__cause__).__name__ == "FailOnRecompileLimitHit"
