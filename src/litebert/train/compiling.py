"""torch.compile for the trained module: when (the run's `compile`), how (in place, one full
graph, static shapes) and what a failure tells the user (the option that turns it off).

With the module, a compiled run compiles the optimizer's update where its registry entry
has a compile hook (LAMB's: one fused graph in place of its foreach kernels). The module is
compiled in place (nn.Module.compile), so its state-dict keys, checkpoints and exports are
those of the eager module. It is compiled before DDP wraps it, as torch advises. Under
FSDP, dynamo does not trace fully_shard's hooks (a full graph of the root fails on them), so
each FSDP unit's forward is compiled on its own instead (torchtitan's per-block way) and the
hooks run eagerly between the graphs; the root's embeddings, heads and losses stay eager
there.

`compile: regional` compiles the same way without FSDP: each distinct encoder module (the
objective's fsdp_units: attention and FFN modules) on its own. ALBERT's shared layer is then
one graph for all its layer positions, where the full graph unrolls a copy per position
(12 for albert-base), and a new shape or mode recompiles only the small module graphs; the
embeddings, heads and losses run eagerly between them.

Compiling on a CPU happens only when asked for (auto stays eager there), and is said once
to be a poor bargain there: at the sizes people train on a CPU the compiled steps are
seldom faster than eager ones, and the compile time comes first.

LITEBERT_COMPILE_BACKEND (an environment variable, for tests and debugging) picks another
torch.compile backend than inductor: "aot_eager" traces forward and backward like inductor
but runs them eagerly, so a CPU test proves the graph without paying for C++ compilation.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

import torch
from torch import nn

from litebert.distributed import rank_and_world
from litebert.objectives.configs import CUDA_GRAPH_MODES
from litebert.train.optimizers import OptimizerSpec
from litebert.train.run_config import REGIONAL, RunConfigError

log = logging.getLogger("litebert")

BACKEND_ENV = "LITEBERT_COMPILE_BACKEND"
TURN_OFF = "--no-compile (or `compile: false` in the recipe)"
CPU_NOTE = ("compiling on a CPU, as asked: torch.compile is usually slower than eager there "
            "and costs its compile time first; {turn_off} runs eagerly")
_said: set[str] = set()  # what this process has told the user already


def resolved_compile(setting: bool | str | None, device: torch.device) -> bool:
    """Whether the run compiles: True or a mode compiles, False does not; None (auto)
    compiles on CUDA, not on a CPU, where compiling costs more than it saves on the sizes
    people train there."""
    return device.type == "cuda" if setting is None else setting is not False


def compile_mode(setting: bool | str | None) -> str | None:
    """torch.compile's `mode` for a setting: a named mode, else None (torch's default;
    regional compiles its modules in it)."""
    if isinstance(setting, str) and setting not in ("default", REGIONAL):
        return setting
    return None


def compiles_regions(setting: bool | str | None) -> bool:
    """Whether the setting compiles the encoder's modules one by one (`compile: regional`)
    rather than the whole model in place."""
    return setting == REGIONAL


def replays_cuda_graphs(mode: str | None) -> bool:
    """Whether a compile mode replays CUDA graphs (CUDA graph trees): a replay overwrites the
    previous replay's outputs, so the loop marks where each step begins
    (torch.compiler.cudagraph_mark_step_begin) and nothing may hold a compiled output
    across steps without a copy."""
    return mode in CUDA_GRAPH_MODES


def backend() -> str:
    return os.environ.get(BACKEND_ENV) or "inductor"


# Graphs torch.compile may keep per function. torch's default, 8, is a guard against shapes
# without bound; litebert's are bounded by construction (static widths, unpadded N dynamic),
# yet a pre-training run may still meet up to 9 forms of one forward: a batch unpadded, with a
# mask only (a row of no real token) or with none, in training and in
# evaluation, a smaller last evaluation batch, and the cross evaluation's pairs. 16 leaves
# room; a run past it still stops with compile_errors' sentence.
RECOMPILE_LIMIT = 16


def allow_bounded_recompiles() -> None:
    """Raise torch's graphs-per-function limit to RECOMPILE_LIMIT (never lower it)."""
    config = torch._dynamo.config
    name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    setattr(config, name, max(getattr(config, name), RECOMPILE_LIMIT))


def compile_in_place(model: nn.Module, mode: str | None = None,
                     dynamic: bool | None = False) -> None:
    """One full graph (a graph break is an error, not a slow path) per shape the run feeds.
    dynamic False: static shapes, as the pre-training collators pad each data directory to
    one length; None: torch's automatic dynamic shapes, for fine-tuning's length-bucketed
    batches (the first shape static, the dimensions that then change symbolic)."""
    log.info("compiling the model (torch.compile, backend %s%s); turn it off with %s",
             backend(), f", mode {mode}" if mode else "", TURN_OFF)
    note_cpu(model)
    allow_bounded_recompiles()
    with compile_errors(True):  # an unknown LITEBERT_COMPILE_BACKEND fails here already
        model.compile(fullgraph=True, dynamic=dynamic, backend=backend(), mode=mode)


def compile_units(units, mode: str | None = None) -> None:
    """Each unit's forward compiled on its own (one full graph each), once however many
    layer positions share it: FSDP's way, so fully_shard's hooks, which dynamo does not
    trace, run eagerly around them, and `compile: regional`'s."""
    log.info("compiling %d encoder modules one by one (torch.compile, backend %s); turn it "
             "off with %s", len(units), backend(), TURN_OFF)
    for module, _ in units[:1]:
        note_cpu(module)
    allow_bounded_recompiles()
    for module, _ in units:
        module.forward = torch.compile(module.forward, fullgraph=True, dynamic=False,
                                       backend=backend(), mode=mode)


def note_cpu(module: nn.Module) -> None:
    """Warn once per process (rank 0's) when the module compiled lives on a CPU."""
    first = next(module.parameters(), None)
    if first is None or first.device.type != "cpu" or "cpu" in _said:
        return
    _said.add("cpu")
    if rank_and_world()[0] == 0:
        log.warning(CPU_NOTE.format(turn_off=TURN_OFF))


def compile_optimizer(optimizer: torch.optim.Optimizer, spec: OptimizerSpec) -> None:
    """The optimizer's update compiled by its registry entry's hook (LAMB's: one graph per
    parameter bucket, Lamb.compile_update); an entry without one (AdamW: a CUDA run builds
    torch's fused AdamW already) runs its update as built."""
    if spec.compile_hook is not None:
        log.info("compiling %s's update (torch.compile, backend %s)", spec.name, backend())
        getattr(optimizer, spec.compile_hook)(backend())


# The recompile limit's exception, by torch release (FailOnCacheLimitHit before 2.6).
LIMIT_ERRORS = ("FailOnRecompileLimitHit", "FailOnCacheLimitHit")


def compile_failures() -> tuple[type[BaseException], ...]:
    """What torch.compile raises when it cannot go on: dynamo's errors (a graph break under
    fullgraph, an unsupported op, the backend's failure wrapped) and the recompile limit
    (FailOnRecompileLimitHit, which is no TorchDynamoException: a function that met more
    shapes, modes or flags than torch._dynamo.config.recompile_limit graphs allow)."""
    exc = torch._dynamo.exc
    return (exc.TorchDynamoException,
            *(getattr(exc, name) for name in LIMIT_ERRORS if hasattr(exc, name)))


def failure_sentence(err: BaseException) -> str:
    """One sentence for a compile failure: what failed, and the way back to eager."""
    text = str(err).strip()
    first = text.splitlines()[0] if text else type(err).__name__
    if type(err).__name__ in LIMIT_ERRORS:
        config = torch._dynamo.config
        limit = getattr(config, "recompile_limit", None) or config.cache_size_limit
        return (f"torch.compile stopped at its limit of {limit} graphs for one function "
                f"({first}): the run fed it more input shapes than it may compile; train "
                f"eagerly with {TURN_OFF}, and set TORCH_LOGS=recompiles to see which inputs "
                f"changed")
    return (f"torch.compile failed ({type(err).__name__}: {first}); train eagerly with "
            f"{TURN_OFF}, or set TORCH_LOGS=graph_breaks,recompiles to see where")


@contextlib.contextmanager
def compile_errors(enabled: bool) -> Iterator[None]:
    """A torch.compile failure (dynamo, a graph break, the backend, the recompile limit) as a
    RunConfigError that names the way back to eager; compilation happens at the first step
    and evaluation, and again at each new shape."""
    if not enabled:
        yield
        return
    try:
        yield
    except compile_failures() as err:
        raise RunConfigError(failure_sentence(err)) from err
