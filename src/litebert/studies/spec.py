"""A study is data: the runs of one of the paper's experiments, read from YAML.

A spec names a corpus (a built-in source such as "bbc-news", or a path), a tokenizer
vocabulary, shared BuildConfig and PretrainConfig overrides on top of a recipe, one
`budget` (steps, batch_size) for every run, `quick` overrides for a run of a few minutes,
the evaluations and the runs themselves, each with the paper's figures for its row.

Merging, for one run: data = spec.data | quick.data | run.data; pretrain likewise, with
`model_overrides` merged key by key, so `quick` can shrink the model while each run keeps
the setting it ablates. `embedding_size: hidden` stands for E = H of the resolved model.
Every key and value is checked when the file is read: an error names the file and the field.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from litebert.config import PRESETS, ConfigError, ModelConfig
from litebert.data.builder import BuildConfig
from litebert.files import named_yaml, yaml_names
from litebert.objectives import TrainingObjective, resolve
from litebert.train.run_config import (
    PretrainConfig,
    RunConfigError,
    check_fields,
    flow_yaml,
    legacy_objective_fields,
    load_run_config,
    merge_objective,
    nest_objective,
)

log = logging.getLogger("litebert")

SPEC_DIR = Path(__file__).resolve().parent / "specs"  # package data
EVALUATIONS = ("pretraining", "similarity", "probes")
TOP_KEYS = {"name", "title", "paper", "corpus", "vocab_size", "tokenizer", "data", "recipe",
            "pretrain", "budget", "quick", "evaluations", "probes", "runs"}
RUN_KEYS = {"name", "tokenizer", "data", "pretrain", "paper"}
# The tokenizer kinds a study trains (`litebert tokenizer train --kind`), one per kind, shared
# by the runs that name it: ALBERT's SentencePiece layout, or XLNet's (its template puts <cls>
# last and pads on the left, which an XLNet backbone reads).
TOKENIZER_KINDS = ("sentencepiece", "xlnet")
QUICK_KEYS = {"budget", "data", "pretrain", "vocab_size", "probes"}
BUDGET_KEYS = {"steps", "batch_size"}
# budget.match: "steps" (every run trains `steps`) or "flops" (the first run trains `steps`,
# every other run as many steps as give it the same training FLOPs: objectives compared at
# equal compute; litebert.model.counts).
MATCHES = ("steps", "flops")


class StudyError(ValueError):
    """A bad study file or request; the message names the file and the field."""


@dataclass(frozen=True)
class RunSpec:
    name: str
    tokenizer: str = ""  # a kind of TOKENIZER_KINDS; "" = the study's
    data: dict[str, Any] = field(default_factory=dict)  # BuildConfig overrides
    pretrain: dict[str, Any] = field(default_factory=dict)  # PretrainConfig overrides
    paper: dict[str, Any] = field(default_factory=dict)  # the paper's figures for this row


@dataclass(frozen=True)
class StudySpec:
    name: str
    title: str
    paper: str  # where in the paper, e.g. "Table 5"
    corpus: str  # a built-in source name or a path
    vocab_size: int
    data: dict[str, Any]
    recipe: str
    pretrain: dict[str, Any]
    budget: dict[str, int]
    quick: dict[str, Any]
    evaluations: list[str]
    probes: list[dict[str, Any]]
    runs: list[RunSpec]
    source: str = ""  # the YAML file it was read from
    tokenizer: str = "sentencepiece"  # the kind of TOKENIZER_KINDS a run takes by default

    def run_tokenizer(self, run: RunSpec) -> str:
        return run.tokenizer or self.tokenizer

    def run(self, name: str) -> RunSpec:
        for r in self.runs:
            if r.name == name:
                return r
        raise StudyError(f"{self.source}: no run {name!r}; runs: "
                         f"{', '.join(r.name for r in self.runs)}")

    def resolved(self, quick: bool) -> StudySpec:
        """This spec with `quick`'s overrides applied (and `quick` emptied) when asked."""
        if not quick:
            return self
        q = self.quick
        return dataclasses.replace(
            self, data={**self.data, **q.get("data", {})},
            pretrain=merge_pretrain(self.pretrain, q.get("pretrain", {})),
            budget={**self.budget, **q.get("budget", {})},
            probes=list(q.get("probes", self.probes)),  # fewer seeds and steps when quick
            vocab_size=q.get("vocab_size", self.vocab_size), quick={})

    def run_data(self, run: RunSpec) -> dict[str, Any]:
        return {**self.data, **run.data}

    def run_pretrain(self, run: RunSpec) -> dict[str, Any]:
        return merge_pretrain(self.pretrain, run.pretrain)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def merge_pretrain(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """base | top, with model_overrides merged key by key and the objective as
    litebert.train.run_config.merge_objective merges it (a name keeps the fields); the
    previous release's flat objective fields nested (parse_spec warned about them)."""
    base, top = nest_objective(base, "study", warn=False), nest_objective(top, "study", warn=False)
    merged = {**base, **top}
    models = {**base.get("model_overrides", {}), **top.get("model_overrides", {})}
    if models:
        merged["model_overrides"] = models
    if "objective" in base and "objective" in top:
        merged["objective"] = merge_objective(base["objective"], top["objective"])
    return merged


def warn_flat_objective(spec: StudySpec) -> None:
    """One warning for a study file in the previous release's spelling (objective fields at
    the top level of a pretrain section), showing each section's nested spelling."""
    sections = [("pretrain", spec.pretrain), ("quick.pretrain", spec.quick["pretrain"])]
    sections += [(f"runs[{i}].pretrain", r.pretrain) for i, r in enumerate(spec.runs)]
    flat = [(where, values) for where, values in sections
            if set(values) & legacy_objective_fields()]
    if flat:
        nested = [(where, nest_objective(values, spec.source, warn=False)["objective"])
                  for where, values in flat]
        shown = "; ".join(f"{where}: objective: {flow_yaml(value)}" for where, value in nested)
        log.warning("%s: objective fields at the top level of a pretrain section (the previous "
                    "release's spelling); write them nested: %s", spec.source, shown)


# ---- reading -------------------------------------------------------------------------------

def builtin_names() -> list[str]:
    return yaml_names(SPEC_DIR)


def spec_path(name_or_path: str | Path) -> Path:
    path = named_yaml(name_or_path, SPEC_DIR)
    if path is not None:
        return path
    raise StudyError(f"{name_or_path}: no such study file and no built-in study of that name; "
                     f"built-in: {', '.join(builtin_names())} (see `litebert study list`)")


def load_spec(name_or_path: str | Path) -> StudySpec:
    """A built-in study by name, or a YAML file; checked (see `validate`)."""
    path = spec_path(name_or_path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise StudyError(f"{path}: invalid YAML ({err})") from None
    spec = parse_spec(raw, str(path))
    validate(spec)
    return spec


def _mapping(value: Any, where: str, known: set[str] | None = None) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise StudyError(f"{where}: expected a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - known) if known is not None else []
    if unknown:
        raise StudyError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}; known: "
                         f"{', '.join(sorted(known or ()))}")
    return dict(value)


def _text(raw: dict, key: str, where: str, default: str | None = None) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str) or not value:
        raise StudyError(f"{where} field {key}: expected a non-empty string, got {value!r}")
    return value


def parse_spec(raw: Any, source: str) -> StudySpec:
    """The StudySpec of a YAML document (keys and types checked, values not yet)."""
    raw = _mapping(raw, source, TOP_KEYS)
    runs_raw = raw.get("runs")
    if not isinstance(runs_raw, list) or not runs_raw:
        raise StudyError(f"{source} field runs: expected a non-empty list of runs")
    runs = [_parse_run(r, f"{source} field runs[{i}]") for i, r in enumerate(runs_raw)]
    evaluations = raw.get("evaluations", ["pretraining"])
    if not isinstance(evaluations, list) or any(e not in EVALUATIONS for e in evaluations):
        raise StudyError(f"{source} field evaluations: {evaluations!r}; give a list from "
                         f"{', '.join(EVALUATIONS)}")
    probes = raw.get("probes") or []
    if not isinstance(probes, list) or not all(isinstance(p, dict) for p in probes):
        raise StudyError(f"{source} field probes: expected a list of mappings")
    quick = _mapping(raw.get("quick"), f"{source} field quick", QUICK_KEYS)
    if not isinstance(quick.get("probes", []), list):
        raise StudyError(f"{source} field quick.probes: expected a list of mappings")
    for key in ("data", "pretrain", "budget"):
        quick[key] = _mapping(quick.get(key), f"{source} field quick.{key}")
    spec = StudySpec(
        name=_text(raw, "name", source), title=_text(raw, "title", source, raw.get("name")),
        paper=str(raw.get("paper", "")), corpus=_text(raw, "corpus", source, "bbc-news"),
        vocab_size=raw.get("vocab_size", 10000),
        data=_mapping(raw.get("data"), f"{source} field data"),
        recipe=_text(raw, "recipe", source, "tiny-cpu"),
        pretrain=_mapping(raw.get("pretrain"), f"{source} field pretrain"),
        budget=_mapping(raw.get("budget"), f"{source} field budget", BUDGET_KEYS | {"match"}),
        quick=quick, evaluations=list(evaluations), probes=list(probes), runs=runs,
        source=source, tokenizer=_kind(raw.get("tokenizer", "sentencepiece"),
                                       f"{source} field tokenizer"))
    warn_flat_objective(spec)
    return spec


def _parse_run(raw: Any, where: str) -> RunSpec:
    raw = _mapping(raw, where, RUN_KEYS)
    name = _text(raw, "name", where)
    if "/" in name or name.startswith("."):
        raise StudyError(f"{where} field name: {name!r} must be usable as a directory name")
    kind = _kind(raw["tokenizer"], f"{where}.tokenizer") if "tokenizer" in raw else ""
    return RunSpec(name=name, tokenizer=kind, data=_mapping(raw.get("data"), f"{where}.data"),
                   pretrain=_mapping(raw.get("pretrain"), f"{where}.pretrain"),
                   paper=_mapping(raw.get("paper"), f"{where}.paper"))


def _kind(value: Any, where: str) -> str:
    if value not in TOKENIZER_KINDS:
        raise StudyError(f"{where}: {value!r}; choose from {', '.join(TOKENIZER_KINDS)}")
    return str(value)


# ---- checking values -----------------------------------------------------------------------

def validate(spec: StudySpec) -> None:
    """Every run's BuildConfig and PretrainConfig (full and quick) can be built."""
    where = spec.source
    names = [r.name for r in spec.runs]
    if len(set(names)) != len(names):
        raise StudyError(f"{where} field runs: run names repeat ({', '.join(names)})")
    if "probes" in spec.evaluations and not spec.probes:
        raise StudyError(f"{where} field probes: evaluation 'probes' needs at least one probe")
    for quick in (False, True):
        s = spec.resolved(quick)
        label = " (with quick)" if quick else ""
        _check_budget(s, f"{where} field budget{label}")
        if not isinstance(s.vocab_size, int) or s.vocab_size < 10:
            raise StudyError(f"{where} field vocab_size{label}: {s.vocab_size!r}; give an "
                             f"integer of at least 10")
        for i, run in enumerate(s.runs):
            run_where = f"{where} field runs[{i}] ({run.name}){label}"
            build_config(s.run_data(run), f"{run_where}.data")
            pretrain_config(s, run, {"data": "unused", "out": "unused"}, f"{run_where}.pretrain")


def _check_budget(spec: StudySpec, where: str) -> None:
    if spec.budget.get("match", "steps") not in MATCHES:
        raise StudyError(f"{where}.match: {spec.budget['match']!r}; choose from "
                         f"{', '.join(MATCHES)}")
    for key in sorted(BUDGET_KEYS):
        value = spec.budget.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise StudyError(f"{where}.{key}: {value!r}; give a positive integer")


def build_config(values: dict[str, Any], where: str) -> BuildConfig:
    """The BuildConfig of `values` (errors name `where` and the field)."""
    known = {f.name for f in dataclasses.fields(BuildConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise StudyError(f"{where}: unknown field(s) {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(known))}")
    try:
        return BuildConfig(**values)
    except (TypeError, ValueError) as err:
        raise StudyError(f"{where}: {err}") from None


def pretrain_config(spec: StudySpec, run: RunSpec, extra: dict[str, Any],
                    where: str) -> PretrainConfig:
    """The PretrainConfig of one run: recipe + spec + run + budget + `extra` (data, out...)."""
    values = spec.run_pretrain(run)
    try:
        check_fields(values, where)  # the previous release's flat objective fields too
    except RunConfigError as err:
        raise StudyError(str(err)) from None
    values["max_steps"] = spec.budget.get("steps")
    values["batch_size"] = spec.budget.get("batch_size")
    # One forward pass per step unless the spec asks otherwise: the budget is in sequences.
    values.setdefault("micro_batch_size", values["batch_size"])
    try:
        cfg = load_run_config(spec.recipe, {**values, **extra})
        models = resolve_model_overrides(cfg.model, cfg.model_overrides)
        ModelConfig.from_preset(cfg.model, **models)
    except (RunConfigError, ConfigError, TypeError, ValueError) as err:
        raise StudyError(f"{where}: {err}") from None
    cfg.model_overrides = models
    if spec.budget.get("match") == "flops" and run is not spec.runs[0]:
        first = pretrain_config(spec, spec.runs[0], extra, where)
        ratio = step_flops(spec, spec.runs[0], first) / step_flops(spec, run, cfg)
        cfg.max_steps = max(1, round(cfg.max_steps * ratio))
    return cfg


def step_flops(spec: StudySpec, run: RunSpec, cfg: PretrainConfig) -> float:
    """Training FLOPs per token of one run's objective and model, at the data's length."""
    length = build_config(spec.run_data(run), spec.source).max_seq_length
    config = ModelConfig.from_preset(cfg.model, vocab_size=spec.vocab_size,
                                      **cfg.model_overrides)
    objective: TrainingObjective = resolve(cfg.objective.name)(cfg)
    return objective.flops_per_token(config, length)


def resolve_model_overrides(preset: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """`embedding_size: hidden` -> the resolved hidden size (E = H, whatever H `quick` sets)."""
    out = dict(overrides)
    if out.get("embedding_size") == "hidden":
        out["embedding_size"] = out.get("hidden_size", PRESETS[preset]["hidden_size"])
    return out
