"""PretrainConfig: one pre-training run, read from a recipe (a name from
src/litebert/recipes/pretrain/, shipped with the package, or a YAML file) plus overrides."""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from litebert.config import PRESETS
from litebert.data.attention_choice import ATTENTIONS, check_attention
from litebert.data.blend import parse_data
from litebert.data.integrity import DataError
from litebert.files import named_yaml, yaml_names
from litebert.objectives.configs import (
    BUILTIN,
    MLMConfig,
    ObjectiveConfig,
    ObjectiveError,
    config_class,
    objective_config,
)
from litebert.options import option
from litebert.train import phases as phase_plan
from litebert.train.schedule import (
    SCHEDULES,
    resolve_warmup,
    warmup_stable_decay,
    wsd_decay_steps,
)

log = logging.getLogger("litebert")


class RunConfigError(ValueError):
    """A bad recipe file or override; the message names the file/field and the fix."""


# torch.compile's modes. "default": inductor's kernels; "reduce-overhead": the same, replayed
# as CUDA graphs (one launch a step: for small models, where launches cost more than the
# arithmetic; static shapes only); "max-autotune-no-cudagraphs": matmul kernels tuned at
# compile time (minutes more of compiling); "max-autotune": both.
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
COMPILE_CHOICES = ("auto", "true", "false", *COMPILE_MODES)
# The arithmetic of a run, pre-training or fine-tuning (litebert.train.precision).
PRECISIONS = ("auto", "fp32", "bf16", "fp16")


@dataclass
class PretrainConfig:
    model: str = option("tiny", "model size, a preset of litebert.config.PRESETS (not read "
                                "with --from, which gives the model)", choices=PRESETS)
    start_from: str | None = option(
        None, "start from this model directory's weights and shape instead of a preset "
              "(continued pre-training): a transformers or litebert model directory of any "
              "family, a run directory (its export) or an ELECTRA export; the data must be "
              "built with its tokenizer (`litebert data build --tokenizer DIR`); the export "
              "keeps its class, layout and files (litebert.train.start_from)", flag="--from",
        metavar="DIR")
    generator_from: str | None = option(
        None, "ELECTRA with --from: the generator's model directory (a masked LM of the same "
              "family); default: the generator of an ELECTRA export given to --from, else a "
              "new one", metavar="DIR")
    objective: ObjectiveConfig = option(
        help="what is trained and its own fields (litebert.objectives): {name: mlm} = "
             "masked-LM plus the data's sentence-pair task; {name: electra, ...} = ELECTRA's "
             "replaced-token detection; package.module:Class = your own",
        factory=MLMConfig)
    model_overrides: dict[str, Any] = option(
        help="ModelConfig fields that replace the preset's; overrides of a recipe's are "
             "merged key by key into it", factory=dict)
    data: str | None = option(
        None, "a directory written by `litebert data build`, or a blend of several: "
              "DIR:WEIGHT,DIR:WEIGHT (weights normalised to sum 1; DIR,DIR weighs each by its "
              "size); evaluation reads the first (litebert.data.blend)")
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
    power: float = option(1.0, "exponent of the decay: polynomial (1 - p) ** power; wsd "
                               "1 - p ** power (0.5 is ModernBERT's 1 - sqrt)")
    decay_steps: int = option(0, "wsd (warm-up, stable, decay): steps of the final decay; "
                                 "0 = the last 10% of max_steps")
    max_grad_norm: float = option(1.0, "global gradient-norm clip; 0 = no clipping (RoBERTa's "
                                  "recipe; the norm is still logged)")
    precision: str = option("auto", "arithmetic: auto is bf16 on CUDA, fp32 on CPU",
                            choices=PRECISIONS)
    attention: str = option(
        "full", "which tokens attend to which: full = every real token of the row (RoBERTa's "
                "way, packed documents included); document = packed data only, within each "
                "document, positions restarting at each (FlexAttention on CUDA); unpadded = "
                "the encoder runs on a padded batch's real tokens only (FlashAttention varlen "
                "on CUDA; on a CPU an explicit mask, slower than full); MLM and ELECTRA take all "
                "three, XLNet's plm full only", choices=ATTENTIONS)
    fsdp: bool = option(False, "shard parameters with torch's fully_shard (large presets, "
                               "GPUs)")
    compile: bool | str | None = option(
        None, "torch.compile the model (one static graph; the first steps pay for compiling): "
              "auto = on CUDA, eager on a CPU; true = torch's default mode; or a mode: "
              "reduce-overhead (CUDA graphs, for small models whose step is launch-bound), "
              "max-autotune-no-cudagraphs, max-autotune; --compile [MODE] / --no-compile, or "
              "in a recipe compile: auto | true | false | MODE", choices=COMPILE_CHOICES,
        shown="auto")
    log_every: int = option(10, "steps between metric lines")
    eval_every: int = option(200, "steps between held-out evaluations")
    eval_instances: int = option(2000, "held-out instances per evaluation, at most")
    save_every: int = option(200, "steps between checkpoints")
    keep_last: int = option(3, "checkpoints kept")
    async_save: bool = option(
        False, "write checkpoints in a background thread from a copy in host memory, so "
               "training goes on meanwhile; a checkpoint becomes visible once written and "
               "checksummed (by the next log line that finds it done, the next save or the "
               "run's end). A crash loses at most the checkpoint in flight; the one before "
               "stays intact. Costs a second copy of the model and optimizer state in host "
               "memory while it is written")
    max_nonfinite: int = option(10, "non-finite losses in a row that stop the run")
    num_workers: int | None = option(
        None, "DataLoader worker processes that read, mask and collate batches; default: 4 "
              "on CUDA (at most the CPUs less one), 0 on a CPU, where workers would take "
              "cores from the step")
    peak_tflops: float | None = option(
        None, "the device's peak TFLOP/s at the run's precision, for the logged mfu; default: "
              "looked up for A100, H100 and H200 GPUs, none elsewhere (no mfu logged)")
    seed: int = option(1234, "seed of the model's initialisation and the data order")
    resume: str | None = option(
        "auto", "where the run starts: auto = the newest intact checkpoint of --out when it "
                "holds one (the run must agree with it), else step 0; or a checkpoint "
                "directory to continue from, the schedule (max_steps, lr, ...) free to change")
    restart: bool = option(False, "start over from step 0: the run in --out moves aside to "
                                  "OUT.previous-STAMP (nothing is deleted); on a job's first "
                                  "attempt only, so torchrun's restarts still continue")
    export: bool = option(True, "write RUN_DIR/export (transformers format) at the end")
    phases: list[dict[str, Any]] = option(
        help="the run in phases, one after the other: [{steps: N, FIELD: VALUE, ...}, ...], "
             "each phase changing any of data, batch_size, micro_batch_size, lr, "
             "warmup_steps, schedule, power, decay_steps, model_overrides (rotary bases, "
             "max_position_embeddings: nothing that changes a parameter's shape) and "
             "reset_optimizer; max_steps is their sum; every phase after the first names its "
             "data; one field of one phase: --set phases.2.data=DIR (docs/pretraining.md, "
             "Runs in phases)", factory=list)
    new_phase: bool | str | None = option(
        False, "go on from the checkpoint --resume chooses (auto: the newest of --out) into "
               "a new phase with this command's data, batch, schedule and model_overrides, "
               "up to --max-steps in all; optimizer moments carry on, or start afresh with "
               "--new-phase reset-optimizer; the same command again continues that phase",
        choices=phase_plan.NEW_PHASE_CHOICES, shown="off")

    def __post_init__(self) -> None:
        betas = tuple(self.betas)  # a recipe's YAML or --set gives a list
        if len(betas) != 2:  # the optimizer would reject it too, later and less clearly
            raise RunConfigError(f"pretrain config betas={self.betas!r}: give two rates, "
                                 f"e.g. [0.9, 0.999]")
        self.betas = (betas[0], betas[1])
        self.compile = compile_setting(self.compile)
        self._check_phases()
        try:
            self.objective = objective_config(self.objective, "pretrain config")
        except ObjectiveError as err:
            raise RunConfigError(str(err)) from None
        checks = [
            (self.model in PRESETS, "model", f"unknown preset; choose from {', '.join(PRESETS)}"),
            (self.batch_size > 0 and self.micro_batch_size > 0, "batch_size",
             "batch sizes must be positive"),
            (self.max_steps > 0, "max_steps", "must be positive"),
            (self.lr > 0, "lr", "must be positive"),
            (self.max_grad_norm >= 0, "max_grad_norm", "must be 0 (no clipping) or positive"),
            (self.optimizer in ("lamb", "adamw"), "optimizer", "choose 'lamb' or 'adamw'"),
            (self.precision in PRECISIONS, "precision",
             f"choose from {', '.join(PRECISIONS)}"),
            (min(self.log_every, self.eval_every, self.save_every) > 0, "log_every",
             "log_every, eval_every and save_every must be positive"),
            (self.peak_tflops is None or self.peak_tflops > 0, "peak_tflops",
             "must be positive (or left out)"),
            (self.num_workers is None or self.num_workers >= 0, "num_workers",
             "must be 0 or more (or left out)"),
            (self.attention in ATTENTIONS, "attention", f"choose from {', '.join(ATTENTIONS)}"),
        ]
        for ok, name, why in checks:
            if not ok:
                raise RunConfigError(f"pretrain config {name}={getattr(self, name)!r}: {why}")
        if self.generator_from is not None and self.start_from is None:
            raise RunConfigError(f"pretrain config generator_from={self.generator_from!r}: "
                                 f"give the discriminator with --from too")
        if self.data is not None:
            try:
                parse_data(self.data)
            except DataError as err:
                raise RunConfigError(str(err)) from None  # "--data TEXT: ..."
        try:
            resolve_warmup(self.max_steps, self.warmup_steps)  # the bounds, as in fine-tuning
            if self.schedule == "wsd":  # warm-up, stable, then decay_steps within max_steps
                warmup_stable_decay(0, warmup_steps=self.warmup_steps,
                                    total_steps=self.max_steps, power=self.power,
                                    decay_steps=wsd_decay_steps(
                                        self.decay_steps, self.warmup_steps, self.max_steps))
        except ValueError as err:
            raise RunConfigError(f"pretrain config: {err}") from None

    def _check_phases(self) -> None:
        """new_phase normalised; with phases, max_steps is their sum and each phase's config
        and schedule must hold (train/phases.py)."""
        try:
            self.new_phase = phase_plan.new_phase_setting(self.new_phase)
            phase_plan.check_plan(self)
        except ValueError as err:
            raise RunConfigError(f"pretrain config phases: {err}") from None
        if self.phases:
            self.max_steps = sum(phase_plan.steps_of(self))

    def accumulation(self, world_size: int) -> int:
        """Micro-batches per rank per optimizer step."""
        per_step = self.micro_batch_size * world_size
        if self.batch_size % per_step:
            raise RunConfigError(
                f"batch_size={self.batch_size} is not a multiple of micro_batch_size="
                f"{self.micro_batch_size} x {world_size} rank(s)")
        return self.batch_size // per_step

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)  # the objective as a mapping: {name: ..., fields}
        out["betas"] = list(self.betas)
        out["compile"] = shown_compile(self.compile)
        return out

    @property
    def objective_name(self) -> str:
        return self.objective.name


def compile_setting(value: Any, where: str = "pretrain config") -> bool | str | None:
    """`compile` as a recipe, --set or the command line gives it: None (auto), False (eager),
    True (compiled, torch's default mode) or the name of another mode (compiled so)."""
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("auto", "true", "false", "default"):
        return None if text == "auto" else text != "false"
    if text in COMPILE_MODES:
        return text
    raise RunConfigError(f"{where} compile={value!r}: choose auto, true or false, or a "
                         f"torch.compile mode ({', '.join(COMPILE_MODES[1:])})")


def shown_compile(value: bool | str | None) -> bool | str:
    """A compile setting as a config file writes it: auto, true, false or the mode."""
    return "auto" if value is None else value


FIELDS = {f.name: f for f in dataclasses.fields(PretrainConfig)}


def check_data_attention(cfg: PretrainConfig, packed: bool, supported: tuple[str, ...]) -> None:
    """RunConfigError when the run's attention does not fit its objective (`supported`: the
    objective class's `attentions`, those it lays its batches out for) or its data
    (`document` needs packed data)."""
    if cfg.attention not in supported:
        raise RunConfigError(f"pretrain config attention={cfg.attention!r}: objective "
                             f"{cfg.objective.name!r} supports {', '.join(supported)}")
    try:
        check_attention(cfg.attention, packed, f"--data {cfg.data}")
    except ValueError as err:
        raise RunConfigError(f"pretrain config attention={cfg.attention!r}: {err}") from None


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
    # The first sentence: a full stop before a capital ("et al. 2019" does not end one).
    return re.split(r"\.\s+(?=[A-Z])", text.strip())[0].rstrip(".")


def recipe_path(recipe: str | Path) -> Path:
    """A recipe file: `recipe` itself when it is a file, else the built-in of that name."""
    path = named_yaml(recipe, RECIPE_DIR)
    if path is not None:
        return path
    raise RunConfigError(f"--config {recipe}: no such recipe file, and no built-in recipe of "
                         f"that name; built-in: {', '.join(recipe_names())} (see `litebert "
                         f"recipes`)")


def read_recipe(recipe: str | Path) -> dict[str, Any]:
    """The fields of a recipe (a built-in name or a YAML file), checked against FIELDS (and
    the previous release's flat objective fields, which load_run_config nests)."""
    path = recipe_path(recipe)
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark else ""
        raise RunConfigError(f"{path}{where}: invalid YAML ({err})") from None
    if not isinstance(loaded, dict):
        raise RunConfigError(f"{path}: expected a mapping of fields, got {type(loaded)}")
    check_fields(loaded, str(path))
    return loaded


def legacy_objective_fields() -> set[str]:
    """The built-in objectives' fields, which the previous release held at the top level."""
    return {f.name for _, config in BUILTIN.values()
            for f in dataclasses.fields(config)} - {"name"}


def check_fields(values: dict[str, Any], where: str) -> None:
    """Every key a field of PretrainConfig (or a flat objective field, or objective.FIELD)."""
    unknown = sorted(k for k in set(values) - set(FIELDS) - legacy_objective_fields()
                     if not k.startswith("objective.") and not phase_plan.DOTTED.match(k))
    if unknown:
        raise RunConfigError(f"{where}: unknown field(s) {', '.join(unknown)}; known: "
                             f"{', '.join(FIELDS)}")


def flow_yaml(mapping: dict[str, Any]) -> str:
    """{name: electra, temperature: 2.0}: a mapping as one line of YAML."""
    def scalar(value: Any) -> str:
        return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
    return "{" + ", ".join(f"{k}: {scalar(v)}" for k, v in mapping.items()) + "}"


def nest_objective(values: dict[str, Any], where: str, warn: bool = True) -> dict[str, Any]:
    """The previous release's spelling (objective fields at the top level) -> the nested
    one, with one warning that shows it; the nested spelling passes unchanged. Flat fields
    of another objective than the one named had no effect then and are dropped."""
    flat = [k for k in values if k in legacy_objective_fields()]
    if not flat:
        return values
    objective = values.get("objective", "mlm")
    nested = {"name": objective} if isinstance(objective, str) else dict(objective)
    nested.setdefault("name", "mlm")
    try:
        own = {f.name for f in dataclasses.fields(config_class(nested["name"]))}
    except ObjectiveError as err:
        raise RunConfigError(f"{where}: {err}") from None
    nested.update({k: values[k] for k in flat if k in own})
    ignored = [k for k in flat if k not in own]
    if warn:
        log.warning("%s: objective fields at the top level (%s) are the previous release's "
                    "spelling; write them nested: objective: %s%s", where, ", ".join(flat),
                    flow_yaml(nested), f" ({', '.join(ignored)} ignored: not fields of "
                    f"{nested['name']!r})" if ignored else "")
    return {**{k: v for k, v in values.items() if k not in flat}, "objective": nested}


def saved_run_config(values: dict[str, Any]) -> PretrainConfig:
    """The run config a checkpoint's state.json records, in either spelling (fields added
    since take their defaults)."""
    known = {k: v for k, v in values.items() if k in FIELDS or k in legacy_objective_fields()}
    return PretrainConfig(**nest_objective(known, "state.json", warn=False))


def merge_objective(base: Any, top: Any) -> Any:
    """A later `objective:` over an earlier one. A name alone (`--objective NAME`) changes the
    class and keeps the fields, validated against the new class's config; a mapping adds its
    fields, and one that names another class starts from that class's defaults."""
    def as_mapping(value: Any) -> dict[str, Any]:
        if isinstance(value, ObjectiveConfig):
            return dataclasses.asdict(value)
        return {"name": value} if isinstance(value, str) else dict(value or {})

    fields, new = as_mapping(base), top
    if isinstance(new, str):
        return {**fields, "name": new}
    new = as_mapping(new)
    if "name" in new and new["name"] != fields.get("name", "mlm"):
        return new
    return {**fields, **new}


def load_run_config(recipe: str | Path | None, overrides: dict[str, Any]) -> PretrainConfig:
    """Recipe (optional: a built-in name or a YAML file) + overrides (None values ignored)
    -> PretrainConfig. Overriding max_steps alone scales the recipe's warm-up with it
    (train.schedule.resolve_warmup). `objective` in the overrides changes the class and
    keeps the recipe's objective fields; `objective.FIELD` sets one field. `model_overrides`
    merge key by key into the recipe's (a recipe's `hidden_dropout_prob: 0.0` survives an
    override of `mem_len`)."""
    where = str(recipe_path(recipe)) if recipe is not None else "pretrain config"
    values = nest_objective(read_recipe(recipe), where) if recipe is not None else {}
    given = nest_objective({k: v for k, v in overrides.items() if v is not None},
                           "the overrides")
    dotted = {k.split(".", 1)[1]: given.pop(k) for k in list(given) if k.startswith("objective.")}
    if "objective" in given or dotted:
        given["objective"] = merge_objective(
            merge_objective(values.get("objective", "mlm"), given.get("objective", {})), dotted)
    try:  # phases.N.FIELD, and max_steps as the phases' sum (scaled by a --max-steps alone)
        phase_plan.prepare(values, given, where)
    except ValueError as err:
        raise RunConfigError(str(err)) from None
    if isinstance(given.get("model_overrides"), dict):
        given["model_overrides"] = {**values.get("model_overrides", {}),
                                    **given["model_overrides"]}
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
        if isinstance(err, RunConfigError) and (recipe is None or where in str(err)):
            raise
        raise RunConfigError(f"{where}: {err}") from None


def parse_override(text: str) -> tuple[str, Any]:
    """`--set field=value` (or objective.FIELD=value) with the value parsed as YAML."""
    if "=" not in text:
        raise RunConfigError(f"--set {text}: expected FIELD=VALUE")
    key, raw = text.split("=", 1)
    if key not in FIELDS and key not in legacy_objective_fields() \
            and not key.startswith("objective.") and not phase_plan.DOTTED.match(key):
        raise RunConfigError(f"--set {key}: unknown field; known: {', '.join(FIELDS)}, "
                             f"objective.FIELD (the objective's own: `litebert pretrain --help`), "
                             f"phases.N.FIELD (one field of phase N)")
    return key, yaml.safe_load(raw)
