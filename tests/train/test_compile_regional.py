"""`compile: regional`: each distinct encoder module compiled on its own, once for all the
layer positions that share it; the embeddings, heads and losses eager. Backend aot_eager
(LITEBERT_COMPILE_BACKEND), which traces as inductor does without C++ compilation."""

from __future__ import annotations

import json

import pytest
import torch
from torch._dynamo.utils import counters

import litebert
from litebert.train import checkpoint
from litebert.train.compiling import (
    BACKEND_ENV,
    compile_mode,
    compile_units,
    compiles_regions,
    resolved_compile,
)
from litebert.train.pretrain import pretrain
from litebert.train.run_config import RunConfigError, compile_setting, load_run_config
from tests.helpers import pretrain as mlm
from tests.helpers.models import make_inputs, mlm_labels
from tests.helpers.pretrain import MICRO_MODEL


def test_the_shared_layer_is_one_graph_for_all_its_positions(monkeypatch):
    """The tiny preset (micro sizes): one attention and one FFN module at 4 positions; two
    training steps under bf16 autocast compile 2 graphs (a full graph would unroll 4 copies
    of each into one), and the outputs equal the eager model's."""
    monkeypatch.setenv(BACKEND_ENV, "aot_eager")
    config = litebert.ModelConfig.from_preset("tiny", **{**MICRO_MODEL, "num_hidden_layers": 4},
                                              vocab_size=99)
    torch.manual_seed(0)
    model = litebert.EncoderForPreTraining(config)
    encoder = model.backbone.encoder
    assert (len(encoder.attentions), len(encoder.ffns), len(encoder.attention_index)) == (1, 1, 4)
    x = make_inputs()
    labels = mlm_labels(x)
    eager = model(**x, labels=labels).loss
    torch._dynamo.reset()
    counters.clear()
    compile_units(encoder.fsdp_units())
    for _ in range(2):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(**x, labels=labels).loss
        loss.backward()
    assert counters["stats"]["unique_graphs"] == 2 and not counters["graph_break"]
    assert model(**x, labels=labels).loss.item() == pytest.approx(eager.item(), abs=1e-6)


def losses(out) -> list[float]:
    return [json.loads(line)["loss"] for line in (out / "metrics.jsonl").read_text().splitlines()
            if '"loss"' in line]


def test_a_regional_run_keeps_the_eager_losses_and_checkpoint_keys(data_dir, tmp_path,
                                                                    monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "aot_eager")
    runs = {}
    for setting in (False, "regional"):
        torch._dynamo.reset()
        counters.clear()
        out = tmp_path / str(setting)
        pretrain(mlm.run_config(data_dir, out, max_steps=4, eval_every=100, save_every=4,
                                compile=setting))
        runs[setting] = out, counters["stats"]["unique_graphs"]
    (eager, eager_graphs), (regional, regional_graphs) = runs[False], runs["regional"]
    assert eager_graphs == 0 and regional_graphs >= 2
    assert losses(regional) == pytest.approx(losses(eager), abs=1e-5)
    assert len(losses(regional)) == 4
    saved = [checkpoint.latest(out) for out in (eager, regional)]
    assert checkpoint.saved_keys(saved[1]) == checkpoint.saved_keys(saved[0])


def test_compile_reads_regional_for_pretraining_only():
    cfg = load_run_config(None, {"compile": "regional"})
    assert cfg.compile == "regional" and cfg.to_dict()["compile"] == "regional"
    assert compiles_regions(cfg.compile) and not compiles_regions(True)
    assert compile_mode("regional") is None  # its modules in torch's default mode
    assert resolved_compile("regional", torch.device("cpu"))
    with pytest.raises(RunConfigError, match="regional compiles pre-training's"):
        compile_setting("regional", "finetune config", regional=False)
