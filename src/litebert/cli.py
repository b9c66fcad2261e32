"""`litebert <command>`: pick the command's group of parsers (litebert.commands), run it, and
turn a user's error into one line. The commands themselves live in litebert/commands/."""

from __future__ import annotations

import argparse
import logging
import sys

from litebert.commands.data import add_data_commands
from litebert.commands.study import add_study_commands
from litebert.commands.tasks import add_task_commands
from litebert.commands.tools import add_tool_commands
from litebert.commands.train import add_train_commands
from litebert.config import ConfigError
from litebert.family_names import named_families

# Each group of commands, with the command names it adds. A command line builds only its
# command's group: the training groups import torch and the models (about 4 s), which
# `litebert data build` and the tokenizer commands never use.
COMMAND_GROUPS = (
    (add_tool_commands, ("params", "smoke", "tokenizer", "corpus", "model")),
    (add_data_commands, ("data",)),
    (add_train_commands, ("pretrain", "eval-pretraining", "recipes", "export", "plot", "demo")),
    (add_task_commands, ("finetune", "evaluate", "embed", "task-data")),
    (add_study_commands, ("study",)),
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of `command`'s group when it names one."""
    parser = argparse.ArgumentParser(
        prog="litebert", description=f"{named_families('and', own=False)}: tokenizers, data, "
                                     f"pre-training, fine-tuning and the papers' studies")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="debug logging (default: off)")
    sub = parser.add_subparsers(dest="command", required=True)
    known = any(command in names for _, names in COMMAND_GROUPS)
    for add, names in COMMAND_GROUPS:
        if not known or command in names:
            add(sub)
    return parser


def user_errors() -> tuple[type[Exception], ...]:
    """The errors a command reports as one line (bad input, a failed write, a diverged run),
    imported only once one happened."""
    from litebert.data.sources import FetchError
    from litebert.train.pretrain import TrainingDiverged
    from litebert.write_errors import WriteFailed

    return (ConfigError, ValueError, FileNotFoundError, FetchError, TrainingDiverged,
            WriteFailed)


INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(command).parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(message)s")
    try:
        args.func(args)
    except KeyboardInterrupt:  # Ctrl-C: one line and the shell's status for SIGINT
        print(f"litebert {args.command}: interrupted by Ctrl-C", file=sys.stderr)
        return INTERRUPTED
    except Exception as err:
        if not isinstance(err, user_errors()):
            raise
        print(f"litebert {args.command}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
