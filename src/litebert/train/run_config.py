"""PretrainConfig: one pre-training run, read from a recipe (a name from
src/litebert/recipes/pretrain/, shipped with the package, or a YAML file) plus overrides."""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Any

import yaml

from litebert.config import PRESETS
from litebert.data.attention_choice import ATTENTIONS, check_attention
from litebert.files import named_yaml, yaml_names
from litebert.objectives.configs import (  # COMPILE_MODES: torch.compile's modes
    BUILTIN,
    COMPILE_MODES,
    MLMConfig,
    ObjectiveConfig,
    ObjectiveError,
    config_class,
    objective_config,
)
from litebert.options import option
from litebert.provenance import FILE, GIVEN, FieldError, Provenance, Source
from litebert.train import batch_split
from litebert.train import phases as phase_plan
from litebert.train.optimizers import OPTIMIZERS, OptimizerError, check_saved, described, registered
from litebert.train.schedule import (
    SCHEDULES,
    resolve_warmup,
    warmup_stable_decay,
    wsd_decay_steps,
)

log = logging.getLogger("litebert")


class RunConfigError(ValueError):
    """A bad recipe file or override; the message names the file/field and the fix."""


class RunFieldError(FieldError, RunConfigError):
    """A bad value of one field of a run config (litebert.provenance.FieldError)."""


COMPILE_CHOICES = ("auto", "true", "false", *COMPILE_MODES)
# Pre-training's one more: each distinct encoder module compiled once on its own (torch's
# default mode), the embeddings, heads and losses eager (litebert.train.compiling).
REGIONAL = "regional"
PRETRAIN_COMPILE_CHOICES = (*COMPILE_CHOICES, REGIONAL)
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
    activation_checkpointing: bool = option(
        False, "keep only each layer position's input for the backward pass, which recomputes "
               "the position's activations: for when a micro-batch runs out of memory; costs "
               "about one more forward pass of the layers (~33% more compute a step), the "
               "results unchanged")
    max_steps: int = option(1000, "optimizer steps of the run")
    optimizer: str = option("lamb", f"the optimizer: {described()}", choices=OPTIMIZERS)
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
              "max-autotune-no-cudagraphs, max-autotune; regional = each distinct encoder "
              "module (a shared ALBERT layer once for all its positions) compiled on its own, "
              "the rest eager; --compile [MODE] / --no-compile, or in a recipe compile: auto "
              "| true | false | MODE", choices=PRETRAIN_COMPILE_CHOICES,
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
                "directory to continue from, the schedule (max_steps, lr, ...) free to change. "
                "A run at its max_steps, its export written, is complete: the same command "
                "says so and does nothing; --resume PATH with a larger --max-steps trains it "
                "further, `litebert export` writes its export again")
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
        try:
            self._check()
        except FieldError as err:  # one field's: load_run_config names where it came from
            raise RunFieldError(err.field, err.value, err.why, err.related,
                                "pretrain config") from None

    def _check(self) -> None:
        """Normalise what a recipe may spell several ways; FieldError for a bad value."""
        check_types({name: getattr(self, name) for name in KIND_OF})
        if len(self.betas) != 2:  # the optimizer would reject it too, later and less clearly
            raise FieldError("betas", self.betas, "give two rates, e.g. [0.9, 0.999]")
        self.betas = (self.betas[0], self.betas[1])  # a recipe's YAML or --set gives a list
        self.compile = compile_setting(self.compile)
        try:
            self.objective = objective_config(self.objective, "pretrain config")
        except ObjectiveError as err:
            raise RunConfigError(str(err)) from None
        for ok, name, why in self._value_checks():
            if not ok:
                raise FieldError(name, getattr(self, name), why)
        if self.generator_from is not None and self.start_from is None:
            raise FieldError("generator_from", self.generator_from,
                             "give the discriminator with --from too")
        self._check_phases()  # each phase's config: after the run's own fields hold
        self._check_schedule()

    def _value_checks(self) -> list[tuple[bool, str, str]]:
        """(holds, field, what to do) for each field's own range."""
        positive = "must be positive"
        return [
            (self.model in PRESETS, "model", f"unknown preset; choose from {', '.join(PRESETS)}"),
            (self.batch_size > 0, "batch_size", positive),
            (self.micro_batch_size > 0, "micro_batch_size", positive),
            (self.max_steps > 0, "max_steps", positive),
            (self.lr > 0, "lr", positive),
            (math.isfinite(self.power) and self.power > 0, "power",
             "must be a finite number above 0"),
            (self.max_grad_norm >= 0, "max_grad_norm", "must be 0 (no clipping) or positive"),
            (self.optimizer in OPTIMIZERS, "optimizer", f"not a registered optimizer; choose "
             f"from {registered()} (litebert.train.optimizers.register_optimizer adds one)"),
            (self.precision in PRECISIONS, "precision",
             f"choose from {', '.join(PRECISIONS)}"),
            (self.log_every > 0, "log_every", positive),
            (self.eval_every > 0, "eval_every", positive),
            (self.save_every > 0, "save_every", positive),
            (self.peak_tflops is None or self.peak_tflops > 0, "peak_tflops",
             "must be positive (or left out)"),
            (self.num_workers is None or self.num_workers >= 0, "num_workers",
             "must be 0 or more (or left out)"),
            (self.attention in ATTENTIONS, "attention", f"choose from {', '.join(ATTENTIONS)}"),
        ]

    def _check_schedule(self) -> None:
        """The warm-up within max_steps (as in fine-tuning); wsd's decay after it."""
        resolve_warmup(self.max_steps, self.warmup_steps)
        if self.schedule != "wsd":
            return
        try:
            warmup_stable_decay(0, warmup_steps=self.warmup_steps, total_steps=self.max_steps,
                                power=self.power, decay_steps=wsd_decay_steps(
                                    self.decay_steps, self.warmup_steps, self.max_steps))
        except ValueError as err:
            raise FieldError("decay_steps", self.decay_steps, str(err),
                             related={"warmup_steps": self.warmup_steps,
                                      "max_steps": self.max_steps}) from None

    def _check_phases(self) -> None:
        """new_phase normalised; with phases, max_steps is their sum and each phase's config
        and schedule must hold (train/phases.py)."""
        try:
            self.new_phase = phase_plan.new_phase_setting(self.new_phase)
            phase_plan.check_plan(self)
        except FieldError:
            raise
        except ValueError as err:
            raise RunConfigError(f"pretrain config phases: {err}") from None
        if self.phases:
            self.max_steps = sum(phase_plan.steps_of(self))

    def accumulation(self, world_size: int) -> int:
        """Micro-batches per rank per optimizer step (load_run_config fitted the split to
        the launch's ranks; a config built in code meets the check here)."""
        try:
            return batch_split.accumulation(self.batch_size, self.micro_batch_size,
                                            world_size)
        except FieldError as err:
            raise RunFieldError(err.field, err.value, err.why, err.related,
                                "pretrain config") from None

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)  # the objective as a mapping: {name: ..., fields}
        out["betas"] = list(self.betas)
        out["compile"] = shown_compile(self.compile)
        return out

    @property
    def objective_name(self) -> str:
        return self.objective.name


def compile_setting(value: Any, where: str = "pretrain config",
                    regional: bool = True) -> bool | str | None:
    """`compile` as a recipe, --set or the command line gives it: None (auto), False (eager),
    True (compiled, torch's default mode) or the name of another mode (compiled so); for
    pre-training (`regional`) also "regional" (its encoder modules compiled one by one)."""
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("auto", "true", "false", "default"):
        return None if text == "auto" else text != "false"
    if text in COMPILE_MODES:
        return text
    if text == REGIONAL:
        if regional:
            return text
        raise RunFieldError("compile", value, "regional compiles pre-training's encoder "
                                              "modules; fine-tuning compiles the whole model: "
                                              "choose true or a mode", label=where)
    modes = ", ".join(list(COMPILE_MODES)[1:])
    raise RunFieldError("compile", value, f"choose auto, true or false, or a torch.compile "
                                          f"mode ({modes})", label=where)


def shown_compile(value: bool | str | None) -> bool | str:
    """A compile setting as a config file writes it: auto, true, false or the mode."""
    return "auto" if value is None else value


FIELDS = {f.name: f for f in dataclasses.fields(PretrainConfig)}
KINDS = {int: "a whole number", float: "a number", str: "text", bool: "true or false",
         list: "a list", dict: "a mapping", tuple: "a list"}


def check_types(values: dict[str, Any]) -> None:
    """FieldError for a value of another type than its field's (`--set max_steps=abc`, a
    recipe's `lr: fast`), among the fields `values` holds; fields that normalise what they
    are given (compile, new_phase, objective) check themselves."""
    for name, value in values.items():
        kinds = KIND_OF.get(name)
        if kinds is None or value is None and type(None) in kinds:
            continue
        kind = next(k for k in kinds if k is not type(None))
        if not _is_a(value, kind):
            raise FieldError(name, value, f"give {KINDS[kind]}"
                                          f"{' or leave it out' if type(None) in kinds else ''}")


def _kinds(hint: Any) -> set[type] | None:
    """The types a field's annotation allows, when it is one of KINDS (or None too)."""
    union = isinstance(hint, UnionType) or typing.get_origin(hint) is typing.Union
    kinds = {typing.get_origin(k) or k for k in (typing.get_args(hint) if union else (hint,))}
    simple = kinds - {type(None)}
    return kinds if len(simple) == 1 and next(iter(simple)) in KINDS else None


def _is_a(value: Any, kind: type) -> bool:
    if isinstance(value, bool) and kind in (int, float):
        return False
    if kind is float:
        return isinstance(value, (int, float))
    if kind is str:
        return isinstance(value, (str, os.PathLike))
    if kind is tuple:
        return isinstance(value, (tuple, list))
    return isinstance(value, kind)


KIND_OF = {name: kinds for name, hint in typing.get_type_hints(PretrainConfig).items()
           if (kinds := _kinds(hint)) is not None}
BATCH_DEFAULTS = {"batch_size": PretrainConfig.batch_size,
                  "micro_batch_size": PretrainConfig.micro_batch_size}


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


def saved_run_config(values: dict[str, Any],
                     where: str = "a checkpoint's state.json") -> PretrainConfig:
    """The run config a checkpoint's state.json (`where`) records, in either spelling
    (fields added since take their defaults); a value it cannot hold is named there."""
    known = {k: v for k, v in values.items() if k in FIELDS or k in legacy_objective_fields()}
    try:
        check_saved(known.get("optimizer"), where)
        return PretrainConfig(**nest_objective(known, "state.json", warn=False))
    except FieldError as err:
        raise RunConfigError(Provenance(Source(FILE, where)).blame(err)) from None
    except OptimizerError as err:
        raise RunConfigError(str(err)) from None


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


def load_run_config(recipe: str | Path | None, overrides: dict[str, Any],
                    sources: dict[str, Source] | None = None) -> PretrainConfig:
    """Recipe (optional: a built-in name or a YAML file) + overrides (None values ignored)
    -> PretrainConfig. Overriding max_steps alone scales the recipe's warm-up with it
    (train.schedule.resolve_warmup). `objective` in the overrides changes the class and
    keeps the recipe's objective fields; `objective.FIELD` sets one field. `model_overrides`
    merge key by key into the recipe's (a recipe's `hidden_dropout_prob: 0.0` survives an
    override of `mem_len`). A micro-batch nobody gave that does not split the batch on the
    launch's ranks is lowered to one that does (train.batch_split).

    `sources`: where each override came from, by its key (a flag, `--set`); one without is
    the caller's. An error about a value names where that value came from
    (litebert.provenance), never the recipe for a value the command gave."""
    where = str(recipe_path(recipe)) if recipe is not None else "pretrain config"
    values = nest_objective(read_recipe(recipe), where) if recipe is not None else {}
    given = {k: v for k, v in overrides.items() if v is not None}
    provenance = _provenance(where if recipe is not None else None, values, given,
                             sources or {})
    try:
        check_types(values)
        check_types(given)
        merged = _merged(values, nest_objective(given, "the overrides"), where)
        batch_split.fit_micro_batches(merged, BATCH_DEFAULTS, provenance,
                                      batch_split.launch_world_size())
        return PretrainConfig(**merged)
    except FieldError as err:
        raise RunConfigError(provenance.blame(err)) from None
    except RunConfigError:
        raise
    except ValueError as err:  # a plan's own steps and --set phases.N (phases.prepare)
        raise RunConfigError(str(err)) from None
    except TypeError as err:
        raise RunConfigError(f"pretrain config: {err}") from None


def _provenance(recipe_file: str | None, values: dict[str, Any], given: dict[str, Any],
                sources: dict[str, Source]) -> Provenance:
    """Where each field comes from: the recipe's fields, then each override's own source
    (the caller's overrides where it names none); the rest are the defaults."""
    provenance = Provenance()
    if recipe_file is not None:
        _record(provenance, values, Source(FILE, f"recipe {recipe_file}"))
    for key, value in given.items():
        _record(provenance, {key: value},
                sources.get(key, Source(GIVEN, "the overrides", key)))
    return provenance


def _record(provenance: Provenance, values: dict[str, Any], source: Source) -> None:
    """Provenance.record, with an objective given by its name alone recorded as
    objective.name (its fields stay where they came from) and the previous release's flat
    objective fields under objective."""
    named = {}
    for key, value in values.items():
        if key == "objective" and isinstance(value, str):
            key = "objective.name"
        elif key in legacy_objective_fields():
            key = f"objective.{key}"
        named[key] = value
    provenance.record(named, source)


def _merged(values: dict[str, Any], given: dict[str, Any], where: str) -> dict[str, Any]:
    """The recipe's fields under the overrides: the objective's merged, phases.N.FIELD set
    and max_steps the phases' sum (scaled by a --max-steps alone: phases.prepare),
    model_overrides merged key by key, and a max_steps alone scaling the recipe's warm-up."""
    dotted = {k.split(".", 1)[1]: given.pop(k) for k in list(given) if k.startswith("objective.")}
    if "objective" in given or dotted:
        given["objective"] = merge_objective(
            merge_objective(values.get("objective", "mlm"), given.get("objective", {})), dotted)
    phase_plan.prepare(values, given, where)
    if isinstance(given.get("model_overrides"), dict):
        given["model_overrides"] = {**values.get("model_overrides", {}),
                                    **given["model_overrides"]}
    if "max_steps" in given:
        recipe_steps = values.get("max_steps", FIELDS["max_steps"].default)
        recipe_warmup = values.get("warmup_steps", FIELDS["warmup_steps"].default)
        _, given["warmup_steps"] = resolve_warmup(
            recipe_steps, recipe_warmup, given["max_steps"], given.get("warmup_steps"))
    return {**values, **given}


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
