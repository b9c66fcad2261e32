"""XLNet permutation-LM pre-training: the data build, the run config and the command line
at the micro size."""

from __future__ import annotations

import json
import sys

from litebert.data.builder import BuildConfig, build
from litebert.tokenization import train_tokenizer
from litebert.train.run_config import PretrainConfig, load_run_config
from tests.data.builds import write_corpus

SEQ, MEM = 64, 16


XLNET_MICRO = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=64, embedding_size=32, num_hidden_groups=2,
                   hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, mem_len=MEM)


OBJECTIVE = {"name": "plm", "perm_size": 16}


SAVING_MEMORIES = {**OBJECTIVE, "checkpoint_memories": True}


def build_plm_data(root):
    """XLNet streams of 64-token windows from a small corpus, under `root`."""
    corpus = write_corpus(root / "corpus.txt", docs=150)
    tok = train_tokenizer("xlnet", [corpus], root / "tok", vocab_size=200).parent
    out = root / "data"
    build([corpus], tok, out, BuildConfig(max_seq_length=SEQ, format="bert", objective="none",
                                          packing="streams", heldout_fraction=0.1))
    return out


def run_config(data_dir, out, **kw) -> PretrainConfig:
    values = dict(model="xlnet-tiny", model_overrides=XLNET_MICRO, objective=OBJECTIVE,
                  data=str(data_dir), out=str(out), batch_size=8, micro_batch_size=8,
                  max_steps=6, warmup_steps=2, lr=0.01, optimizer="adamw", log_every=1,
                  eval_every=3, save_every=3, keep_last=2, eval_instances=16)
    return load_run_config("xlnet-tiny-cpu", {**values, **kw})



def plm_cli(data_dir, out, steps, *extra):
    """`python -m litebert.cli pretrain` of the micro XLNet for `steps`, saved every 2."""
    return [sys.executable, "-m", "litebert.cli", "pretrain", "--config", "xlnet-tiny-cpu",
            "--data", str(data_dir), "--out", str(out), "--max-steps", str(steps),
            "--set", f"model_overrides={json.dumps(XLNET_MICRO)}",
            "--set", f"objective={json.dumps(OBJECTIVE)}", "--batch-size", "8",
            "--micro-batch-size", "8", "--lr", "0.01", "--warmup-steps", "2",
            "--log-every", "1", "--eval-every", "100", "--save-every", "2", "--seed", "7",
            "--no-export", *extra]
