"""PretrainConfig: one pre-training run, read from configs/pretrain/*.yaml plus overrides."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from litebert.config import PRESETS


class RunConfigError(ValueError):
    """A bad recipe file or override; the message names the file/field and the fix."""


@dataclass
class PretrainConfig:
    model: str = "tiny"  # a preset of litebert.config.PRESETS
    model_overrides: dict[str, Any] = field(default_factory=dict)  # AlbertConfig fields
    data: str | None = None  # a directory from `litebert data build`
    out: str = "runs/pretrain"
    # Batch: `batch_size` sequences per optimizer step over all ranks, reached with
    # micro-batches of `micro_batch_size` per rank and gradient accumulation.
    batch_size: int = 32
    micro_batch_size: int = 32
    max_steps: int = 1000
    optimizer: str = "lamb"  # or "adamw"
    lr: float = 0.00176
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-6
    schedule: str = "polynomial"  # polynomial | linear | constant | constant_with_warmup
    warmup_steps: int = 100
    power: float = 1.0
    max_grad_norm: float = 1.0
    precision: str = "auto"  # auto (bf16 on CUDA, fp32 on CPU) | fp32 | bf16 | fp16
    fsdp: bool = False  # shard parameters with torch's fully_shard (large presets, GPUs)
    log_every: int = 10
    eval_every: int = 200
    eval_instances: int = 2000  # held-out instances per evaluation (at most)
    save_every: int = 200
    keep_last: int = 3
    max_nonfinite: int = 10  # non-finite losses in a row that stop the run
    num_workers: int = 0  # DataLoader worker processes
    seed: int = 1234
    resume: str | None = None  # "auto" or a checkpoint directory
    export: bool = True  # write RUN_DIR/export at the end

    def __post_init__(self) -> None:
        self.betas = tuple(self.betas)
        checks = [
            (self.model in PRESETS, "model", f"unknown preset; choose from {', '.join(PRESETS)}"),
            (self.batch_size > 0 and self.micro_batch_size > 0, "batch_size",
             "batch sizes must be positive"),
            (self.max_steps > 0, "max_steps", "must be positive"),
            (self.lr > 0, "lr", "must be positive"),
            (0 <= self.warmup_steps <= self.max_steps, "warmup_steps",
             f"must be in [0, max_steps={self.max_steps}]"),
            (self.optimizer in ("lamb", "adamw"), "optimizer", "choose 'lamb' or 'adamw'"),
            (self.precision in ("auto", "fp32", "bf16", "fp16"), "precision",
             "choose auto, fp32, bf16 or fp16"),
            (min(self.log_every, self.eval_every, self.save_every) > 0, "log_every",
             "log_every, eval_every and save_every must be positive"),
        ]
        for ok, name, why in checks:
            if not ok:
                raise RunConfigError(f"pretrain config {name}={getattr(self, name)!r}: {why}")

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


def load_run_config(path: str | Path | None, overrides: dict[str, Any]) -> PretrainConfig:
    """YAML recipe (optional) + overrides (None values ignored) -> PretrainConfig."""
    values: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            raise RunConfigError(f"{path}: no such recipe file") from None
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
        values.update(loaded)
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return PretrainConfig(**values)
    except TypeError as err:
        raise RunConfigError(f"{path or 'pretrain config'}: {err}") from None


def parse_override(text: str) -> tuple[str, Any]:
    """`--set field=value` with the value parsed as YAML (numbers, lists, dicts)."""
    if "=" not in text:
        raise RunConfigError(f"--set {text}: expected FIELD=VALUE")
    key, raw = text.split("=", 1)
    if key not in FIELDS:
        raise RunConfigError(f"--set {key}: unknown field; known: {', '.join(FIELDS)}")
    return key, yaml.safe_load(raw)
