"""The optimizers a run can train with: one entry each (OptimizerSpec) in OPTIMIZERS.

Everything that depends on the optimizer reads its entry: the run config (the `optimizer`
option's choices and check), the Trainer (building it, a non-finite step skipped on the
device, compiling its update), the checkpoint state (the state a first update creates;
litebert.train.state) and fine-tuning (`--optimizer`, litebert.tasks.finetune).

A new optimizer is one entry. Its builder and parameter groups are named as
"package.module:function", imported when a run builds it, so that parsers and run configs
read this registry without importing torch; a callable works too. A built-in is an entry in
OPTIMIZERS below; your own is `register_optimizer(OptimizerSpec(...))` in the process that
trains, before its run config is read (docs/contributing.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: this module imports no torch
    import torch
    from torch import nn

# Where a step's "skip" flag is read and the step counts live (OptimizerSpec.on_device).
ALWAYS = "always"  # the update reads `found_inf` on the device and counts there (LAMB)
WHEN_FUSED = "when-fused"  # so when the builder got torch's fused update (AdamW), else never
NEVER = "never"  # the host reads the flag: a sync on CUDA, none on a CPU (computed already)
ON_DEVICE = (ALWAYS, WHEN_FUSED, NEVER)
# Its update's kernels: "fused" (the builder asks torch for one where the device has it,
# foreach otherwise), "foreach" (multi-tensor kernels), "for-loop" (one parameter at a time).
UPDATES = ("fused", "foreach", "for-loop")


class OptimizerError(ValueError):
    """An optimizer name that is not registered here, or a spec that cannot be registered."""


@dataclass(frozen=True)
class OptimizerSpec:
    """One optimizer: what builds it and what its update can do on the device."""

    name: str  # lower case: the run config's and fine-tuning's `optimizer`
    summary: str  # one line for --help and the docs
    # (groups, *, lr, weight_decay, betas, eps) -> torch.optim.Optimizer
    build: str | Callable[..., torch.optim.Optimizer]
    # (model, weight_decay) -> groups: no decay on LayerNorm / bias / 1-D parameters
    # (litebert.train.param_groups); fine-tuning splits them further by layer
    param_groups: str | Callable[..., list[dict]]
    # Per-parameter state its first update creates: "step" a 0-d count, each other name
    # zeros shaped like the parameter (created ahead, litebert.train.state)
    state: tuple[str, ...]
    update: str = "foreach"  # UPDATES
    on_device: str = NEVER  # ON_DEVICE
    # The optimizer's method that compiles its update when the run compiles (called with
    # torch.compile's backend); None: nothing to compile
    compile_hook: str | None = None


OPTIMIZERS: dict[str, OptimizerSpec] = {}


def register_optimizer(spec: OptimizerSpec) -> OptimizerSpec:
    """Add `spec` to OPTIMIZERS; a name taken already is an error."""
    if not spec.name or spec.name != spec.name.lower() or ":" in spec.name:
        raise OptimizerError(f"register_optimizer: name {spec.name!r}: give a lower-case "
                             f"name without ':'")
    if spec.name in OPTIMIZERS:
        raise OptimizerError(f"register_optimizer: optimizer {spec.name!r} is registered "
                             f"already; give yours another name")
    for field, value, allowed in (("update", spec.update, UPDATES),
                                  ("on_device", spec.on_device, ON_DEVICE)):
        if value not in allowed:
            raise OptimizerError(f"register_optimizer {spec.name!r}: {field} {value!r}; "
                                 f"choose from {', '.join(allowed)}")
    OPTIMIZERS[spec.name] = spec
    return spec


register_optimizer(OptimizerSpec(
    "lamb", "LAMB as ALBERT trains with it (Adam moments, a trust ratio per weight)",
    build="litebert.train.lamb:Lamb", param_groups="litebert.train.lamb:lamb_param_groups",
    state=("step", "exp_avg", "exp_avg_sq"), update="foreach", on_device=ALWAYS,
    compile_hook="compile_update"))
register_optimizer(OptimizerSpec(
    "adamw", "torch's AdamW, fused where the device has it",
    build="litebert.train.adamw:fused_adamw",
    param_groups="litebert.train.param_groups:decay_groups",
    state=("step", "exp_avg", "exp_avg_sq"), update="fused", on_device=WHEN_FUSED))


def registered() -> str:
    """The registered names, for a sentence."""
    return ", ".join(OPTIMIZERS)


def described() -> str:
    """Each registered name with its summary, for --help."""
    return "; ".join(f"{spec.name} = {spec.summary}" for spec in OPTIMIZERS.values())


def unknown(name: Any, where: str) -> OptimizerError:
    return OptimizerError(f"{where}: unknown optimizer {name!r}; choose from {registered()} "
                          f"(litebert.train.optimizers.register_optimizer adds one)")


def optimizer_spec(name: str, where: str = "optimizer") -> OptimizerSpec:
    """The entry of `name` (any case)."""
    spec = OPTIMIZERS.get(str(name).lower())
    if spec is None:
        raise unknown(name, where)
    return spec


def _loaded(ref: str | Callable[..., Any], spec: OptimizerSpec) -> Callable[..., Any]:
    """A spec's callable: as given, or `package.module:function` imported now."""
    if callable(ref):
        return ref
    module_name, _, attr = ref.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attr, None)
    except ImportError as err:
        raise OptimizerError(f"optimizer {spec.name!r}: cannot import {module_name} ({err}); "
                             f"is its directory on PYTHONPATH?") from None
    if not callable(found):
        raise OptimizerError(f"optimizer {spec.name!r}: {module_name} has no function "
                             f"{attr!r}; correct its OptimizerSpec")
    return found


def default_groups(name: str, model: nn.Module, weight_decay: float) -> list[dict]:
    """The model's parameter groups as optimizer `name` splits them."""
    spec = optimizer_spec(name)
    return _loaded(spec.param_groups, spec)(model, weight_decay)


def build_optimizer(name: str, model: nn.Module, lr: float, weight_decay: float = 0.01,
                    betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-6,
                    param_groups: list[dict] | None = None) -> torch.optim.Optimizer:
    """Registered optimizer `name` over the model's default groups (default_groups).

    param_groups: groups to optimise instead, e.g. that split refined further (fine-tuning's
    layer-wise lr decay, litebert.tasks.layer_decay); a group may set its own `lr`. Build
    them from default_groups of the same name (LAMB's carry their `trust_ratio`)."""
    spec = optimizer_spec(name, "build_optimizer")
    groups = default_groups(name, model, weight_decay) if param_groups is None else param_groups
    return _loaded(spec.build, spec)(groups, lr=lr, weight_decay=weight_decay,
                                     betas=tuple(betas), eps=eps)


def skips_on_device(spec: OptimizerSpec, optimizer: torch.optim.Optimizer) -> bool:
    """Whether `optimizer.found_inf` (a 0-d float on the device, nonzero = skip; what torch's
    GradScaler sets) makes its step a no-op without the host reading it."""
    if spec.on_device == WHEN_FUSED:
        return bool(getattr(optimizer, "_step_supports_amp_scaling", False))  # torch's fused
    return spec.on_device == ALWAYS


def steps_on_device(spec: OptimizerSpec, group: dict) -> bool:
    """Whether the group's step counts live on the parameters' device (else on the CPU)."""
    if spec.on_device == WHEN_FUSED:
        return bool(group.get("fused") or group.get("capturable"))
    return spec.on_device == ALWAYS


def step_if(spec: OptimizerSpec, optimizer: torch.optim.Optimizer,
            finite: torch.Tensor) -> None:
    """optimizer.step() when `finite` (a 0-d bool on the device) holds, without the host
    reading it where the optimizer can skip on the device (skips_on_device); elsewhere the
    host reads the flag, which on a CPU is no sync, as the CPU has computed it already."""
    if skips_on_device(spec, optimizer):
        optimizer.found_inf = (~finite).float()  # type: ignore[attr-defined]
        optimizer.step()
    elif bool(finite):
        optimizer.step()


def check_saved(saved: str | None, where: str) -> None:
    """A checkpoint's optimizer (its run config's; None where it records none) must be
    registered in this process to be resumed or read."""
    if saved is not None and str(saved).lower() not in OPTIMIZERS:
        raise OptimizerError(
            f"{where} was written with optimizer {saved!r}, which is not registered here "
            f"(registered: {registered()}); register it with "
            f"litebert.train.optimizers.register_optimizer before the run starts, or pass "
            f"--restart to start over with one of these")


def check_resumable(saved: str | None, run: str, where: str) -> None:
    """The checkpoint's optimizer state is the run's optimizer's (None: a checkpoint that
    records none, which resumes as before)."""
    check_saved(saved, where)
    if saved is not None and str(saved).lower() != run.lower():
        raise OptimizerError(
            f"{where} holds the state of optimizer {saved!r} and this run trains with "
            f"{run!r}; continue it with --optimizer {saved}, or pass --restart to start over "
            f"with {run}")
