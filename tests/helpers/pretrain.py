"""Pre-training on a generated corpus with a micro model: the data build, run configs,
command lines, the metrics a run writes, and a command run here."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import sys
from pathlib import Path
from unittest import mock

import torch

from litebert.cli import main
from litebert.data.builder import BuildConfig, build
from litebert.tokenization import train_sentencepiece
from litebert.train.run_config import PretrainConfig
from tests.data.builds import write_corpus

MICRO_MODEL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=64, embedding_size=16, max_position_embeddings=64)


# ELECTRA's preset at the micro size; no dropout, whose draws depend on how a batch is split.
ELECTRA_MODEL = dict(MICRO_MODEL, num_hidden_groups=2, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)


OBJECTIVE_FIELDS = {"mlm": {}, "electra": dict(model="electra-small", objective="electra",
                                               model_overrides=ELECTRA_MODEL)}


def objective_cli(objective: str) -> list[str]:
    """`--set` options that make a CLI run train `objective` (OBJECTIVE_FIELDS)."""
    return [f"--set={k}={json.dumps(v)}" for k, v in OBJECTIVE_FIELDS[objective].items()]


def tiny_data(root: Path, **build_fields) -> Path:
    """ROOT/data: 150 generated documents, a 200-piece vocabulary, length 64, 10% held out;
    `build_fields` change the BuildConfig (objective, packing, ...)."""
    corpus = write_corpus(root / "corpus.txt", docs=150)
    tok = train_sentencepiece([corpus], root / "tok", vocab_size=200).parent
    build([corpus], tok, root / "data", BuildConfig(**{
        "max_seq_length": 64, "format": "bert", "heldout_fraction": 0.1, **build_fields}))
    return root / "data"


def run_config(data_dir, out, **kw) -> PretrainConfig:
    values = dict(model="tiny", model_overrides=MICRO_MODEL, data=str(data_dir), out=str(out),
                  batch_size=8, micro_batch_size=8, max_steps=6, warmup_steps=2, lr=0.01,
                  log_every=1, eval_every=3, save_every=3, keep_last=2, eval_instances=40)
    return PretrainConfig(**{**values, **kw})


def file_reads(monkeypatch) -> collections.Counter:
    """From now on, how often each file is read (Path.read_text, through which every
    manifest.json and config.json is read), by its resolved path."""
    reads: collections.Counter = collections.Counter()
    read_text = Path.read_text

    def counted(self, *args, **kwargs):
        reads[Path(self).resolve()] += 1
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    return reads


def read_metrics(run_dir):
    lines = [json.loads(x) for x in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]
    return [x for x in lines if "loss" in x], [x for x in lines if "eval_loss" in x]


def pretrain_cli(data_dir, out, steps, *extra):
    """`python -m litebert.cli pretrain` of the micro ALBERT for `steps`, saved every 2."""
    return [sys.executable, "-m", "litebert.cli", "pretrain", "--data", str(data_dir),
            "--out", str(out), "--max-steps", str(steps), "--set", "model=tiny",
            "--set", f"model_overrides={json.dumps(MICRO_MODEL)}", "--batch-size", "8",
            "--micro-batch-size", "8", "--lr", "0.01", "--warmup-steps", "2",
            "--log-every", "1", "--eval-every", "100", "--save-every", "2", "--seed", "7",
            *extra]


def run_here(command: list[str], env: dict[str, str] | None = None) -> None:
    """A `python -m litebert.cli ...` command (pretrain_cli's) run by litebert.cli.main in
    this process, with `env`'s variables set, on one torch thread as its subprocess would
    run with OMP_NUM_THREADS=1: its losses and weights are the subprocess's bit for bit
    (two threads sum in another order). For the runs a fault test compares against, never
    for the run it kills: it saves the 3-5 s a new process spends importing torch."""
    prefix = [sys.executable, "-m", "litebert.cli"]
    assert command[:3] == prefix, command[:3]
    with mock.patch.dict(os.environ, env or {}), one_torch_thread():
        assert main(command[3:]) == 0


@contextlib.contextmanager
def one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def cli_run(data_dir, out, *extra: str) -> list[str]:
    """`litebert pretrain` of 3 micro steps, evaluated and saved at 3, exported."""
    return ["pretrain", "--data", str(data_dir), "--out", str(out), "--max-steps", "3",
            "--set", "model=tiny", "--set", f"model_overrides={json.dumps(MICRO_MODEL)}",
            "--batch-size", "8", "--micro-batch-size", "8", "--warmup-steps", "1",
            "--log-every", "1", "--eval-every", "3", "--save-every", "3",
            "--eval-instances", "16", *extra]
