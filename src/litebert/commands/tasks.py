"""`litebert finetune` and `evaluate`.
Each command imports what it runs inside it: a command line builds only its own group's
parser (litebert.cli), and `--help` loads no torch.
"""

from __future__ import annotations

import argparse
import json
import os


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


def add_task_commands(sub) -> None:
    from litebert.tasks.finetune_options import EVALUATE_FIELDS, add_finetune_options

    p = sub.add_parser("finetune", help="fine-tune a model directory on a task: GLUE, SQuAD, "
                                        "RACE, your own table, ... (the list below)")
    add_finetune_options(p)
    p.set_defaults(func=cmd_finetune)
    p = sub.add_parser("evaluate", help="score a model directory on a task's dev set and "
                                        "write its prediction files")
    add_finetune_options(p, only=EVALUATE_FIELDS)
    p.set_defaults(func=cmd_evaluate)
