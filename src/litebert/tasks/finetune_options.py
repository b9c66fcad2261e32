"""What `litebert finetune` and `litebert evaluate` take: the tasks' recipes (paper Table 14)
and the options of a run (FinetuneOptions), each with its help text. litebert.tasks.base's
FinetuneConfig fills in what was not given (the model family's defaults, then the recipe's);
this module imports no torch, so that their parsers are built without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from litebert.family_names import named_families
from litebert.options import option
from litebert.train.run_config import COMPILE_CHOICES, PRECISIONS


@dataclass(frozen=True, kw_only=True)
class TaskRecipe:
    """A task's fine-tuning recipe (ALBERT's Table 14; classifier dropout is 0.1 for all)."""

    lr: float
    batch_size: int
    dropout: float  # ALBERT's hidden and attention dropout
    max_steps: int
    warmup_steps: int
    max_seq_length: int = 512


RECIPES: dict[str, TaskRecipe] = {  # paper Table 14
    "cola": TaskRecipe(lr=1e-5, batch_size=16, dropout=0.0,
                       max_steps=5336, warmup_steps=320),
    "stsb": TaskRecipe(lr=2e-5, batch_size=16, dropout=0.0,
                       max_steps=3598, warmup_steps=214),
    "sst2": TaskRecipe(lr=1e-5, batch_size=32, dropout=0.0,
                       max_steps=20935, warmup_steps=1256),
    "mnli": TaskRecipe(lr=3e-5, batch_size=128, dropout=0.0,
                       max_steps=10000, warmup_steps=1000),
    "qnli": TaskRecipe(lr=1e-5, batch_size=32, dropout=0.0,
                       max_steps=33112, warmup_steps=1986),
    "qqp": TaskRecipe(lr=5e-5, batch_size=128, dropout=0.1,
                      max_steps=14000, warmup_steps=1000),
    "rte": TaskRecipe(lr=3e-5, batch_size=32, dropout=0.1,
                      max_steps=800, warmup_steps=200),
    "mrpc": TaskRecipe(lr=2e-5, batch_size=32, dropout=0.0,
                       max_steps=800, warmup_steps=200),
    "wnli": TaskRecipe(lr=2e-5, batch_size=16, dropout=0.1,
                       max_steps=2000, warmup_steps=250),
    "squad1": TaskRecipe(lr=5e-5, batch_size=48, dropout=0.0,
                         max_steps=3649, warmup_steps=365, max_seq_length=384),
    "squad2": TaskRecipe(lr=3e-5, batch_size=48, dropout=0.0,
                         max_steps=8144, warmup_steps=814),
    "race": TaskRecipe(lr=2e-5, batch_size=32, dropout=0.1,
                       max_steps=12000, warmup_steps=1000),
    # Not in the paper: generic tasks get a short, safe default.
    "classification": TaskRecipe(lr=2e-5, batch_size=32, dropout=0.0,
                                 max_steps=1000, warmup_steps=100, max_seq_length=128),
    "regression": TaskRecipe(lr=2e-5, batch_size=32, dropout=0.0,
                             max_steps=1000, warmup_steps=100, max_seq_length=128),
}
GLUE = ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli")

RULES = ("head-to-embeddings", "layers-only")  # layer-decay rules (tasks/layer_decay.py)
RULE_ALIASES = {"electra": "head-to-embeddings", "xlnet": "layers-only"}  # earlier names


def rule_name(rule: str) -> str:
    """The current name of layer-decay rule `rule` (an earlier name, or itself)."""
    return RULE_ALIASES.get(rule, rule)


# What `litebert evaluate` reads of a FinetuneConfig (the rest only matters in training).
EVALUATE_FIELDS = ("task", "data", "model", "out", "max_seq_length", "eval_batch_size",
                   "text_a", "text_b", "label_column", "dev_fraction", "doc_stride",
                   "max_query_length", "n_best_size", "max_answer_length", "qa_head",
                   "precision", "compile", "workers", "cache_dir")

RECIPE = "the task's recipe"  # what a None default means, in --help
FAMILY = "the model family's (see litebert.tasks.family_defaults)"
FAMILY_OR_RECIPE = FAMILY + ", else the task's recipe"


@dataclass
class FinetuneOptions:
    """The fields of a fine-tuning run as given. Those with the default None ("not given")
    are typed as what litebert.tasks.base.FinetuneConfig, which adds nothing but filling
    them in, makes of them: the value given, the model family's, or the recipe's. Code that
    reads a config never sees None."""

    task: str = option(help="the task; its recipe (ALBERT's Table 14) fills the defaults "
                            "the model family leaves", choices=RECIPES)
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
    weight_decay: float = option(None, "AdamW's decoupled weight decay", shown=FAMILY)
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
    adam_beta2: float = option(None, "AdamW's beta2, the decay of its squared-gradient "
                                     "average", shown=FAMILY)
    adam_epsilon: float = option(None, "AdamW's epsilon, added to the root of its "
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
        None, "torch.compile the model (automatic dynamic shapes: batches vary in length and "
              "size): auto = eager (measured faster for fine-tuning, docs/finetuning.md); "
              "true = torch's default mode; or a mode: "
              "reduce-overhead, max-autotune-no-cudagraphs, max-autotune; --compile [MODE] / "
              "--no-compile", choices=COMPILE_CHOICES, shown="auto")
    seed: int = option(42, "seed of the head's initialisation and the data order")
    seeds: int = option(1, "runs with seeds seed, seed+1, ...; results report the median")
    # Generic tasks: column names, and a dev split carved from train when there is no dev.
    text_a: str = option("sentence", "generic tasks: the column (field) of the first text")
    text_b: str | None = option(None, "generic tasks: the column of the second text, if any")
    label_column: str = option("label", "generic tasks: the column of the label")
    dev_fraction: float = option(0.1, "generic tasks without a dev file: the share of train "
                                      "held out as dev")
    # GLUE and generic tables are tokenized once into a cache (tasks/table_cache.py).
    workers: int = option(None, "GLUE and generic tasks: processes that tokenize a table the "
                                "cache does not hold yet", shown="the CPUs this process may use")
    cache_dir: str | None = option(
        None, "GLUE and generic tasks: where tokenized tables are kept, found again by every "
              "later seed and run with the same table and tokenizer (safe to delete)",
        shown="$LITEBERT_DATA/tables, else ~/.cache/litebert/tables")
    # SQuAD.
    doc_stride: int = option(128, "SQuAD: tokens between the starts of a context's windows")
    max_query_length: int = option(64, "SQuAD: question tokens kept")
    n_best_size: int = option(20, "SQuAD: start and end candidates per window")
    max_answer_length: int = option(30, "SQuAD: longest answer, in tokens")
    qa_head: str = option(
        "auto", "SQuAD: 'span' (a start and an end logit per token, BERT's), 'beam' (XLNet's: "
                "a start, an end conditioned on it and an answer classifier, decoded by beam "
                "search), or 'auto': beam for a backbone whose summary token is the last one "
                "(XLNet's <cls>), else span", choices=("auto", "span", "beam"))
    # Filled in: which defaults came from the model's family (results.json `defaults`).
    family_defaults: dict[str, Any] = option(
        None, "set from the model directory: its family, the source of the family's defaults "
              "and the values taken from them")
