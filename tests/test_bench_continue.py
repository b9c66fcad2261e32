"""benchmarks/continue_real.py: its commands are litebert's and say what its docstring says
(MLM alone at 128 tokens, 15% masking, the runs' schedule), and its from-scratch twin is the
model's directory with new weights: the same config, tokenizer and other files."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import torch
import transformers

from litebert.cli import build_parser
from litebert.model.hub import read_canonical
from litebert.train.run_config import load_run_config

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "continue_real.py"
spec = importlib.util.spec_from_file_location("continue_real", SCRIPT)
assert spec is not None and spec.loader is not None
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_the_commands_parse_as_litebert_reads_them(tmp_path):
    args = bench.parse_args(["--work", str(tmp_path)])
    assert (args.steps, args.batch, args.lr, args.eval_every, args.seed) == (300, 16, 5e-4, 25,
                                                                           1234)
    build = bench.build_command(tmp_path / "c.jsonl", tmp_path / "model", tmp_path / "data")
    parsed = build_parser("data").parse_args(build[3:])
    assert (parsed.max_seq_length, parsed.objective, parsed.packing, parsed.masked_lm_prob,
            parsed.heldout_fraction) == (128, "none", "full-sentences", 0.15, 0.05)
    command = bench.pretrain_command(args, tmp_path / "model", tmp_path / "data",
                                     tmp_path / "run")
    parsed = build_parser("pretrain").parse_args(command[3:])
    assert parsed.start_from == str(tmp_path / "model") and parsed.config == bench.RECIPE
    cfg = load_run_config(bench.RECIPE, bench.run_settings(args))
    assert (cfg.max_steps, cfg.batch_size, cfg.optimizer, cfg.lr, cfg.warmup_steps,
            cfg.eval_every, cfg.precision) == (300, 16, "adamw", 5e-4, 18, 25, "fp32")
    assert bench.shown(command).startswith("litebert pretrain --config continue-tiny-cpu")


def test_the_scratch_twin_has_the_models_shape_and_files_and_new_weights(tmp_path):
    model = tmp_path / "model"
    torch.manual_seed(0)
    transformers.BertModel(transformers.BertConfig(
        vocab_size=20, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=24, max_position_embeddings=32)).save_pretrained(model)
    (model / "vocab.txt").write_text("\n".join(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghijklmno"]) + "\n")
    (model / "1_Pooling").mkdir()
    (model / "1_Pooling" / "config.json").write_text("{}")
    twin = bench.scratch_copy(model, tmp_path / "twin", seed=1)
    config, state, _, _ = read_canonical(model)
    twin_config, twin_state, _, _ = read_canonical(twin)
    assert twin_config.to_dict() == config.to_dict()
    assert json.loads((twin / "config.json").read_text())["architectures"] == ["BertModel"]
    assert twin_state.keys() == state.keys()
    new = {k for k in state if not torch.equal(state[k], twin_state[k])}
    matrices = {k for k, v in state.items() if v.dim() == 2 and "position_ids" not in k}
    assert matrices and matrices <= new  # every weight matrix drawn anew
    assert (twin / "vocab.txt").read_bytes() == (model / "vocab.txt").read_bytes()
    assert (twin / "1_Pooling" / "config.json").is_file()
    assert bench.scratch_copy(model, tmp_path / "twin", seed=2) == twin  # written once
