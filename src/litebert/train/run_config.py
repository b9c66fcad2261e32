"""PretrainConfig: one pre-training run, read from a recipe (a name from
src/litebert/recipes/pretrain/, shipped with the package, or a YAML file) plus overrides."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from litebert.config import PRESETS
from litebert.files import named_yaml, yaml_names
from litebert.objectives import OBJECTIVES
from litebert.options import option
from litebert.train.schedule import SCHEDULES, resolve_warmup

PAIR_TASKS = ("own", "both")  # eval_pair_tasks


class RunConfigError(ValueError):
    """A bad recipe file or override; the message names the file/field and the fix."""


@dataclass
class PretrainConfig:
    model: str = option("tiny", "model size, a preset of litebert.config.PRESETS",
                        choices=PRESETS)
    objective: str = option(
        "mlm", "what is trained (litebert.objectives): mlm = masked-LM plus the data's "
               "sentence-pair task (SOP or NSP, as the data was built); electra = a small "
               "generator fills masked tokens, the model learns which tokens were replaced",
        choices=OBJECTIVES)
    model_overrides: dict[str, Any] = option(
        help="AlbertConfig fields that replace the preset's", factory=dict)
    data: str | None = option(None, "a directory written by `litebert data build`")
    out: str = option("runs/pretrain", "the run directory: checkpoints, metrics, export")
    # Batch: `batch_size` sequences per optimizer step over all ranks, reached with
    # micro-batches of `micro_batch_size` per rank and gradient accumulation.
    batch_size: int = option(32, "sequences per optimizer step, over all ranks")
    micro_batch_size: int = option(
        32, "sequences per forward pass on one rank; gradients accumulate up to batch_size")
    max_steps: int = option(1000, "optimizer steps of the run")
    optimizer: str = option("lamb", "the optimizer", choices=("lamb", "adamw"))
    lr: float = option(0.00176, "peak learning rate, reached at the end of warm-up")
    weight_decay: float = option(0.01, "decoupled weight decay (not on LayerNorm and biases)")
    betas: tuple[float, float] = option((0.9, 0.999), "the optimizer's moment decay rates")
    eps: float = option(1e-6, "the optimizer's epsilon")
    schedule: str = option("polynomial", "learning-rate schedule after warm-up",
                           choices=SCHEDULES)
    warmup_steps: int = option(
        100, "steps of linear warm-up; when only --max-steps is given, the recipe's share of "
             "max_steps, rounded half up")
    power: float = option(1.0, "exponent of the polynomial decay")
    max_grad_norm: float = option(1.0, "global gradient-norm clip; 0 = no clipping (RoBERTa's "
                                  "recipe; the norm is still logged)")
    precision: str = option("auto", "arithmetic: auto is bf16 on CUDA, fp32 on CPU",
                            choices=("auto", "fp32", "bf16", "fp16"))
    fsdp: bool = option(False, "shard parameters with torch's fully_shard (large presets, "
                               "GPUs)")
    log_every: int = option(10, "steps between metric lines")
    eval_every: int = option(200, "steps between held-out evaluations")
    eval_instances: int = option(2000, "held-out instances per evaluation, at most")
    eval_pair_tasks: str = option(
        "own", "sentence-pair tasks of each evaluation: own = the data's objective only; "
               "both = also SOP and NSP pairs drawn once per run from the same held-out "
               "documents (the paper's cross evaluation: eval_sop_* and eval_nsp_* "
               "accuracies, as `litebert eval-pretraining` scores them)",
        choices=PAIR_TASKS)
    # ELECTRA (objective: electra); the official code's defaults.
    generator_size: float = option(
        0.25, "electra: the generator's hidden size, FFN and heads as a share of the "
              "discriminator's")
    generator_layers: float = option(
        1.0, "electra: the generator's depth as a share of the discriminator's")
    generator_masking: str = option(
        "uniform", "electra: which tokens the generator fills: uniform = ELECTRA's draw of "
                   "mask_prob of each row's tokens every step; data = the data's own masks "
                   "(its n-gram / whole-word spans)", choices=("uniform", "data"))
    mask_prob: float = option(0.15, "electra: share of tokens masked for the generator")
    temperature: float = option(1.0, "electra: temperature of the generator's sampling")
    gen_weight: float = option(1.0, "electra: weight of the generator's MLM loss")
    disc_weight: float = option(50.0, "electra: weight of the replaced-token-detection loss")
    discriminator_pair_task: bool = option(
        False, "electra: also train the data's SOP/NSP task on the discriminator's first "
               "token (not in the ELECTRA paper)")
    save_every: int = option(200, "steps between checkpoints")
    keep_last: int = option(3, "checkpoints kept")
    max_nonfinite: int = option(10, "non-finite losses in a row that stop the run")
    num_workers: int = option(0, "DataLoader worker processes")
    seed: int = option(1234, "seed of the model's initialisation and the data order")
    resume: str | None = option(None, "'auto' (the newest checkpoint of --out) or a "
                                      "checkpoint directory")
    export: bool = option(True, "write RUN_DIR/export (transformers format) at the end")

    def __post_init__(self) -> None:
        betas = tuple(self.betas)  # a recipe's YAML or --set gives a list
        if len(betas) != 2:  # the optimizer would reject it too, later and less clearly
            raise RunConfigError(f"pretrain config betas={self.betas!r}: give two rates, "
                                 f"e.g. [0.9, 0.999]")
        self.betas = (betas[0], betas[1])
        checks = [
            (self.model in PRESETS, "model", f"unknown preset; choose from {', '.join(PRESETS)}"),
            (self.objective in OBJECTIVES, "objective",
             f"unknown objective; choose from {', '.join(OBJECTIVES)}"),
            (self.batch_size > 0 and self.micro_batch_size > 0, "batch_size",
             "batch sizes must be positive"),
            (self.max_steps > 0, "max_steps", "must be positive"),
            (self.lr > 0, "lr", "must be positive"),
            (self.max_grad_norm >= 0, "max_grad_norm", "must be 0 (no clipping) or positive"),
            (self.optimizer in ("lamb", "adamw"), "optimizer", "choose 'lamb' or 'adamw'"),
            (self.precision in ("auto", "fp32", "bf16", "fp16"), "precision",
             "choose auto, fp32, bf16 or fp16"),
            (self.eval_pair_tasks in PAIR_TASKS, "eval_pair_tasks", "choose 'own' or 'both'"),
            (0 < self.generator_size <= 1 and 0 < self.generator_layers <= 1,
             "generator_size", "generator_size and generator_layers must be in (0, 1]"),
            (0 < self.mask_prob < 1, "mask_prob", "must be between 0 and 1"),
            (self.temperature > 0, "temperature", "must be positive"),
            (self.generator_masking in ("uniform", "data"), "generator_masking",
             "choose 'uniform' or 'data'"),
            (min(self.log_every, self.eval_every, self.save_every) > 0, "log_every",
             "log_every, eval_every and save_every must be positive"),
        ]
        for ok, name, why in checks:
            if not ok:
                raise RunConfigError(f"pretrain config {name}={getattr(self, name)!r}: {why}")
        try:
            resolve_warmup(self.max_steps, self.warmup_steps)  # the bounds, as in fine-tuning
        except ValueError as err:
            raise RunConfigError(f"pretrain config: {err}") from None

    def accumulation(self, world_size: int) -> int:
        """Micro-batches per rank per optimizer step."""
        per_step = self.micro_batch_size * world_size
        if self.batch_size % per_step:
            raise RunConfigError(
                f"batch_size={self.batch_size} is not a multiple of micro_batch_size="
                f"{self.micro_batch_size} x {world_size} rank(s)")
        return self.batch_size // per_step

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["betas"] = list(self.betas)
        return out


FIELDS = {f.name: f for f in dataclasses.fields(PretrainConfig)}


RECIPE_DIR = Path(__file__).resolve().parents[1] / "recipes" / "pretrain"  # package data


def recipe_names() -> list[str]:
    """The built-in recipes, by name (the file names without .yaml)."""
    return yaml_names(RECIPE_DIR)


def recipe_summary(name: str) -> str:
    """The first sentence of a built-in recipe's leading comment: what it is for."""
    text = ""
    for line in (RECIPE_DIR / f"{name}.yaml").read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        text += " " + line.lstrip("#").strip()
    return text.strip().split(". ")[0].rstrip(".")


def recipe_path(recipe: str | Path) -> Path:
    """A recipe file: `recipe` itself when it is a file, else the built-in of that name."""
    path = named_yaml(recipe, RECIPE_DIR)
    if path is not None:
        return path
    raise RunConfigError(f"--config {recipe}: no such recipe file, and no built-in recipe of "
                         f"that name; built-in: {', '.join(recipe_names())} (see `litebert "
                         f"recipes`)")


def read_recipe(recipe: str | Path) -> dict[str, Any]:
    """The fields of a recipe (a built-in name or a YAML file), checked against FIELDS."""
    path = recipe_path(recipe)
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark else ""
        raise RunConfigError(f"{path}{where}: invalid YAML ({err})") from None
    if not isinstance(loaded, dict):
        raise RunConfigError(f"{path}: expected a mapping of fields, got {type(loaded)}")
    unknown = sorted(set(loaded) - set(FIELDS))
    if unknown:
        raise RunConfigError(f"{path}: unknown field(s) {', '.join(unknown)}; known: "
                             f"{', '.join(FIELDS)}")
    return loaded


def load_run_config(recipe: str | Path | None, overrides: dict[str, Any]) -> PretrainConfig:
    """Recipe (optional: a built-in name or a YAML file) + overrides (None values ignored)
    -> PretrainConfig. Overriding max_steps alone scales the recipe's warm-up with it
    (train.schedule.resolve_warmup)."""
    values = read_recipe(recipe) if recipe is not None else {}
    given = {k: v for k, v in overrides.items() if v is not None}
    where = recipe or "pretrain config"
    try:
        if "max_steps" in given:
            recipe_steps = values.get("max_steps", FIELDS["max_steps"].default)
            recipe_warmup = values.get("warmup_steps", FIELDS["warmup_steps"].default)
            _, given["warmup_steps"] = resolve_warmup(
                recipe_steps, recipe_warmup, given["max_steps"], given.get("warmup_steps"))
        return PretrainConfig(**{**values, **given})
    except TypeError as err:
        raise RunConfigError(f"{where}: {err}") from None
    except ValueError as err:
        if isinstance(err, RunConfigError):
            raise
        raise RunConfigError(f"{where}: {err}") from None


def parse_override(text: str) -> tuple[str, Any]:
    """`--set field=value` with the value parsed as YAML (numbers, lists, dicts)."""
    if "=" not in text:
        raise RunConfigError(f"--set {text}: expected FIELD=VALUE")
    key, raw = text.split("=", 1)
    if key not in FIELDS:
        raise RunConfigError(f"--set {key}: unknown field; known: {', '.join(FIELDS)}")
    return key, yaml.safe_load(raw)
