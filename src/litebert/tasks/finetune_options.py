"""What `litebert finetune` and `litebert evaluate` take: the options every task shares
(FinetuneOptions), each with its help text, and the chosen task's own options (declared with
its entry in tasks/registry.py), checked and gathered into `task_options`.
litebert.tasks.base's FinetuneConfig fills in what was not given (the model family's
defaults, then the task's recipe); this module imports no torch, so that the parsers are
built without it.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import Any

from litebert.family_names import named_families
from litebert.options import add_options, option
from litebert.tasks.registry import GLUE, TASKS, option_classes, option_fields, own_fields, takers
from litebert.train.optimizers import OPTIMIZERS, described
from litebert.train.run_config import COMPILE_CHOICES, PRECISIONS

RULES = ("head-to-embeddings", "layers-only")  # layer-decay rules (tasks/layer_decay.py)
RULE_ALIASES = {"electra": "head-to-embeddings", "xlnet": "layers-only"}  # earlier names


def rule_name(rule: str) -> str:
    """The current name of layer-decay rule `rule` (an earlier name, or itself)."""
    return RULE_ALIASES.get(rule, rule)


# What `litebert evaluate` reads of a FinetuneConfig (the rest only matters in training).
# Every task's own options are read too.
EVALUATE_FIELDS = ("task", "data", "model", "out", "max_seq_length", "eval_batch_size",
                   "precision", "compile")

RECIPE = "the task's recipe"  # what a None default means, in --help
FAMILY = "the model family's (see litebert.tasks.family_defaults)"
FAMILY_OR_RECIPE = FAMILY + ", else the task's recipe"


@dataclass
class FinetuneOptions:
    """The fields of a fine-tuning run as given. Those with the default None ("not given")
    are typed as what litebert.tasks.base.FinetuneConfig, which adds nothing but filling
    them in, makes of them: the value given, the model family's, or the recipe's. Code that
    reads a config never sees None."""

    task: str = option(help="the task (tasks/registry.py, listed below with each task's own "
                            "options); its recipe fills the defaults the model family leaves",
                       choices=TASKS)
    data: str = option(help="the task's directory or file; generic tasks read .tsv, .csv, "
                            ".jsonl, .parquet, or a folder written by datasets' save_to_disk "
                            "(a directory may hold train.* and dev.* of these, or a "
                            "DatasetDict's train/ and validation/ folders)")
    model: str = option(help=f"a model directory of any family litebert reads "
                             f"({named_families()})")
    out: str = option(help="output directory: model/, results.json, predictions")
    lr: float = option(None, "peak learning rate", shown=FAMILY_OR_RECIPE)
    batch_size: int = option(None, "training examples per step", shown=RECIPE)
    max_steps: int = option(None, "optimizer steps", shown=RECIPE)
    warmup_steps: int = option(
        None, "steps of linear warm-up; a family's is a share of max_steps, and so is the "
              "recipe's when only --max-steps is given (rounded half up)",
        shown=FAMILY_OR_RECIPE)
    max_seq_length: int = option(None, "tokens per example, longer ones truncated",
                                 shown=RECIPE)
    dropout: float = option(None, "hidden and attention dropout", shown=FAMILY_OR_RECIPE)
    classifier_dropout: float = option(0.1, "dropout before the task head")
    optimizer: str = option("adamw", f"the optimizer (litebert.train.optimizers): {described()}",
                            choices=OPTIMIZERS)
    weight_decay: float = option(None, "the optimizer's decoupled weight decay (not on "
                                       "LayerNorm and biases)", shown=FAMILY)
    layer_decay: float = option(
        None, "layer-wise learning-rate decay in (0, 1]: the head trains at the lr, layer j of "
              "L (1 = lowest) at lr * X^(L+2-j), the embeddings at lr * X^(L+2); 1 is off",
        shown=FAMILY)
    layer_decay_rule: str = option(
        None, "which layers --layer-decay slows: 'head-to-embeddings' (the layers and the "
              "embeddings, as above; ELECTRA's) or 'layers-only' (only the layers, layer j at "
              "lr * X^(L-j); embeddings and head at the lr; XLNet's); the previous release's "
              "names 'electra' and 'xlnet' are still accepted",
        choices=(*RULES, *RULE_ALIASES), shown=FAMILY)
    adam_beta2: float = option(None, "the optimizer's beta2, the decay of its squared-gradient "
                                     "average", shown=FAMILY)
    adam_epsilon: float = option(None, "the optimizer's epsilon, added to the root of its "
                                       "squared-gradient average", shown=FAMILY)
    eval_every: int = option(None, "steps between dev evaluations", shown="max_steps / 10")
    eval_batch_size: int = option(64, "examples per batch when evaluating")
    log_every: int = option(50, "steps between training-loss lines (the mean loss since the "
                                "last one); the only times the loop waits for the device")
    # Where and how it computes (tasks/runtime.py): the device is torchrun's LOCAL_RANK GPU,
    # else the GPU, else the CPU.
    precision: str = option("auto", "arithmetic: auto is bf16 on CUDA, fp32 on a CPU; fp16 "
                                    "adds a gradient scaler", choices=PRECISIONS)
    compile: bool | str | None = option(
        None, "torch.compile the model (static shapes: batches padded to power-of-two "
              "widths up to --max-seq-length and to one size): auto = eager (until the GPU "
              "check measures compiled fine-tuning, docs/finetuning.md); "
              "true = torch's default mode; or a mode: "
              "reduce-overhead, max-autotune-no-cudagraphs, max-autotune; --compile [MODE] / "
              "--no-compile", choices=COMPILE_CHOICES, shown="auto")
    activation_checkpointing: bool = option(
        False, "keep only each layer position's input for the backward pass, which recomputes "
               "the position's activations: for when a batch runs out of memory; costs about "
               "one more forward pass of the layers (~33% more compute a step), the results "
               "unchanged")
    seed: int = option(42, "seed of the head's initialisation and the data order")
    seeds: int = option(1, "runs with seeds seed, seed+1, ...; results report the median")
    task_options: Any = option(
        None, "the task's own options (an instance of its registry entry's options class; "
              "None for a task without any), from the values given for them")
    # Filled in: which defaults came from the model's family (results.json `defaults`).
    family_defaults: dict[str, Any] = option(
        None, "set from the model directory: its family, the source of the family's defaults "
              "and the values taken from them")


class TaskOptionError(ValueError):
    """An option given that the chosen task does not take, or a bad value of one."""


def task_options(task: str, given: Any) -> Any:
    """`task`'s options instance from `given`: a dict of values (those not given take the
    field's default), an instance already (kept), or None (all defaults). None for a task
    without options. A value for a field the task does not take is an error naming the tasks
    that do take it."""
    options = TASKS[task].options
    if given is not None and not isinstance(given, dict):
        return given
    given = dict(given or {})
    own = {f.name for f in option_fields(task)}
    for name in given:
        if name not in own:
            raise TaskOptionError(not_taken(task, name))
    if options is None:
        return None
    try:
        return options(**given)
    except ValueError as err:  # a field's own check (the options' __post_init__)
        raise TaskOptionError(f"--task {task}: {err}") from None


def not_taken(task: str, name: str) -> str:
    flag = "--" + name.replace("_", "-")
    users = takers(name)
    if not users:
        return f"{flag}: no fine-tuning task has this option"
    return (f"{flag} is an option of {task_list(users)}, not of --task {task}; see "
            f"`litebert finetune --help`")


def task_list(tasks: list[str]) -> str:
    """Task names for a sentence or a title, the nine GLUE tasks as one name."""
    if set(GLUE) <= set(tasks):
        tasks = ["the GLUE tasks"] + [t for t in tasks if t not in GLUE]
    return ", ".join(tasks)


def add_finetune_options(parser: argparse.ArgumentParser,
                         only: tuple[str, ...] | None = None) -> None:
    """The options every task shares (or those of `only`), each task's own in a group, and
    the list of tasks with a line each below."""
    add_options(parser, FinetuneOptions, only=only)
    add_task_option_groups(parser)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter  # the list as laid out
    width = max(map(len, TASKS))
    parser.epilog = "tasks:\n" + "\n".join(f"  {name:<{width}}  {spec.summary}"
                                            for name, spec in TASKS.items())


def add_task_option_groups(parser: argparse.ArgumentParser) -> None:
    """One --help group per options class of tasks/registry.py, titled with the tasks that
    take its fields. A field two classes declare is one option (argparse takes a flag once):
    its help is the first class's, and the later group names it with its own default."""
    added: set[str] = set()
    for cls, tasks in option_classes().items():
        doc = (cls.__doc__ or "").strip().splitlines()[0]
        shared = [f for f in own_fields(cls) if f.name in added]
        also = "also " + ", ".join(f"--{f.name.replace('_', '-')} (default here: "
                                     f"{f.default})" for f in shared) if shared else None
        group = parser.add_argument_group(f"{task_list(tasks)}: {doc}", also)
        fresh = [f.name for f in own_fields(cls) if f.name not in added]
        added.update(add_options(group, cls, only=fresh))


def given_task_options(args: argparse.Namespace) -> dict[str, Any]:
    """The tasks' own options given on the command line (lists -> tuples)."""
    names = {f.name for cls in option_classes() for f in dataclasses.fields(cls)}
    out = {}
    for name in sorted(names):
        value = getattr(args, name, None)
        if value is not None:
            out[name] = tuple(value) if isinstance(value, list) else value
    return out

