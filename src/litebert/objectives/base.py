"""The objective protocols: everything the pre-training loop needs to know about what it trains.

`TrainingObjective` is what the loop trains with, `EvaluationObjective` what evaluates and
exports, and `Objective` both (every registered objective; the Trainer uses both halves).
An objective owns, and the Trainer (litebert.train.trainer) names none of:
- its config: a dataclass of its own fields (`Config`, a subclass of ObjectiveConfig), nested
  in the run config as `objective:` (`{name: electra, temperature: 4.0}` in a recipe,
  `--objective electra --set objective.temperature=4` on the command line);
- its batches: which items a data directory gives it (`dataset`) and how they are sampled
  (`sampling`: shuffled instances, or per-row streams that continue from step to step,
  mirrored or not);
- its module (`build`), loss parts as *sums and counts* (the loop divides every sum by its
  count over the whole global batch, so the gradient is that of one big batch however the
  batch is split), FSDP units and FLOPs per token;
- its state carried across steps (`state_dict` / `load_state_dict`, saved in every checkpoint
  for every rank, so a resumed run continues bit for bit);
- its evaluation, during a run (`evaluate`) and on an exported directory
  (`reads_directory` / `evaluate_directory` / `format_result`: one dispatch,
  litebert.objectives.evaluate_directory, for `eval-pretraining` and studies);
- its export to model directories.

An objective is constructed from the run config and the run's training data:
`cls(run, data)`, its fields in `run.objective`, `data` the directory's training split as
built (instances, or XLNet's streams: `TrainingData`); with `data=None` it can only build and
export (`litebert export` reads a checkpoint without the data directory). Nothing may depend
on its module path or registry name: a user's class loads as `--objective package.module:Class`.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, ClassVar, Protocol

import torch
from torch import nn

from litebert.config import ConfigError, ModelConfig
from litebert.data.loader import PretrainingDataset, StreamData
from litebert.data.manifest import DataManifest
from litebert.distributed import DistInfo
from litebert.model.backbone import FsdpUnits
from litebert.model.hub import ModelFiles
from litebert.objectives.configs import CUDA_GRAPH_MODES, ObjectiveConfig
from litebert.tokenization import Tokenizer

Batch = dict[str, torch.Tensor]  # a collated micro-batch on the device
# Objective.sampling (litebert.data.loader.sampler_for); "mirrored-streams": streams whose
# micro-batches read half of their rows forwards and half backwards (XLNet's bi_data).
SAMPLINGS = ("shuffled", "streams", "mirrored-streams")


class Items(Protocol):
    """What an objective's `dataset` gives the loop: indexed items, collated into micro-batches
    (PretrainingDataset, litebert.objectives.plm_data.PLMDataset, ...)."""

    directory: Path

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]: ...

    def set_epoch(self, epoch: int) -> None: ...

    def collate(self, items: list[dict[str, torch.Tensor]]) -> Batch: ...


TrainingData = PretrainingDataset | StreamData  # a directory's training split, as built


class StartSource(Protocol):
    """A model directory a run starts from, as objectives see it (train/start_from.py's
    SourceModel): its config and its tensors under our canonical keys."""

    @property
    def config(self) -> ModelConfig: ...

    @property
    def state(self) -> dict[str, torch.Tensor]: ...


class RunSettings(Protocol):
    """The fields of the run config (PretrainConfig) that objectives read. A protocol, so this
    package does not import litebert.train."""

    seed: int
    micro_batch_size: int
    eval_instances: int
    model_overrides: dict[str, Any]
    objective: Any  # this objective's Config
    # Optional, so settings made elsewhere (eval-pretraining's) need not have them: `attention`
    # and `compile`, PretrainConfig's run options; read them with run_attention(run) and
    # run_replays_cuda_graphs(run).


class TrainingObjective(Protocol):
    """What the pre-training loop trains with: the objective's fields, its batches, its module,
    loss parts as sums and counts, FSDP units, FLOPs and state across steps. The Trainer
    (litebert.train.trainer) calls these in its steps; the run config's checks and studies'
    compute matching read `attentions`, `Config` and `flops_per_token`."""

    Config: ClassVar[type[ObjectiveConfig]]  # its fields, nested under `objective:`
    # The run options `attention` its dataset lays batches out for
    # (litebert.data.attention_layout.ATTENTIONS); ("full",) for none but the default.
    attentions: ClassVar[tuple[str, ...]]

    @property
    def sampling(self) -> str:
        """One of SAMPLINGS: a class attribute, or set per instance from the config."""
        ...

    # The loss parts, logged as "<part>_loss" (the unweighted global means), and each part's
    # weight in the total loss that is back-propagated and logged as "loss".
    parts: tuple[str, ...]
    weights: tuple[float, ...]

    def __init__(self, run: RunSettings, data: TrainingData | None = None) -> None: ...

    def dataset(self, data: DataManifest, split: str, seed: int) -> Items:
        """The items this objective reads from a data directory, its manifest as read once
        (the directory itself stays objective-neutral): MLM-masked pairs, unmasked ids for a
        corruption of its own, ..."""
        ...

    def build(self, config: ModelConfig) -> nn.Module:
        """The one module that holds every trained parameter, freshly initialised from the
        global RNG (the Trainer seeds it): the optimizer, DDP/FSDP and checkpoints see only
        this module, so its state-dict keys are the checkpoint's."""
        ...

    def start_state(self, config: ModelConfig,
                    sources: Mapping[str, StartSource]) -> dict[str, torch.Tensor]:
        """A run that starts from model directories (`--from`): their weights under the keys
        of `build(config)`'s module. `sources` holds each directory's config and tensors
        (under our canonical keys, litebert.model.hub.read_canonical) by role: "model", and
        "generator" for an objective that trains a second model; a ConfigError when one
        cannot be what the objective builds. Keys the module lacks may be returned: the
        loader names them as unused, so nothing of a directory goes unmentioned."""
        ...

    def flops_per_token(self, config: ModelConfig, seq_len: int) -> float:
        """Training FLOPs per input token of the module `build(config)` makes (what a study
        matches when its runs train different objectives at equal compute)."""
        ...

    def fsdp_units(self, model: nn.Module) -> FsdpUnits:
        """The submodules of `model` (as built) that FSDP shards on their own, before the root."""
        ...

    def begin_step(self, step: int) -> None:
        """Called before each optimizer step's micro-batches with the number of steps done."""
        ...

    def counts(self, batch: Batch) -> torch.Tensor:
        """(P,) float: each part's denominator in this micro-batch, on the device and without a
        host sync: the loop sums them over the global batch before the first backward."""
        ...

    def loss_sums(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """(P,) float: each part's loss summed over this micro-batch, through `model` (the
        wrapped module: DDP and FSDP need their own forward)."""
        ...

    def state_dict(self) -> dict[str, torch.Tensor]:
        """What this rank's objective carries from one step to the next (memories, ...);
        {} for none. Saved with every checkpoint, one file per rank."""
        ...

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None: ...


class EvaluationObjective(Protocol):
    """What an objective says about a model rather than trains: held-out metrics during a run
    (`evaluate`, the Trainer at eval_every steps), the metrics of an exported directory (the
    class methods: one dispatch, litebert.objectives.evaluate_directory, for
    `eval-pretraining` and studies), and the export of a trained state dict to model
    directories (the Trainer at the end, `litebert export`)."""

    def evaluate(self, model: nn.Module, info: DistInfo,
                 amp: AbstractContextManager[Any]) -> dict[str, float]:
        """Held-out metrics ("eval_*" keys, with their baselines) over all ranks, each rank
        calling it; {} when there is nothing to evaluate. Leaves the model's mode as it was."""
        ...

    @classmethod
    def reads_directory(cls, model: ModelFiles) -> bool:
        """Whether `evaluate_directory` scores this exported model directory (its
        config.json as the dispatch read it, once)."""
        ...

    @classmethod
    def evaluate_directory(cls, model: ModelFiles, data_dir: Path, *, instances: int,
                           seed: int, batch_size: int, **options: Any) -> dict[str, Any]:
        """The objective's metrics of an exported directory on a data directory's held-out
        part, drawn from `seed` (`litebert eval-pretraining`, studies)."""
        ...

    @classmethod
    def format_result(cls, result: dict[str, Any]) -> str:
        """evaluate_directory's result as a small table for a terminal."""
        ...

    def export(self, model_state: dict[str, torch.Tensor], config: ModelConfig,
               run_dir: Path, out_dir: Path, unroll: bool = False) -> Path:
        """Model directory(ies) under `out_dir` from the trained state dict (the module of
        `build`, whole), each with the run's tokenizer (RUN_DIR/tokenizer). Returns out_dir."""
        ...


class Objective(TrainingObjective, EvaluationObjective, Protocol):
    """A pre-training objective: both protocols. What the registry holds and a run's Trainer
    uses (it trains, evaluates and exports); other users type against the half they call."""


def missing_members(cls: type) -> list[str]:
    """The methods and class attributes of Objective that `cls` lacks (its instance
    attributes, parts and weights, cannot be checked before it is made)."""
    wanted = [name for protocol in (TrainingObjective, EvaluationObjective)
              for name in (*vars(protocol), *vars(protocol).get("__annotations__", {}))
              if not name.startswith("_") and name not in ("parts", "weights", "sampling")]
    return [name for name in wanted if not hasattr(cls, name)]


def run_attention(run: RunSettings) -> str:
    """The run's `attention` (litebert.data.attention_layout.ATTENTIONS); "full" for settings
    without one."""
    return getattr(run, "attention", "full")


def run_replays_cuda_graphs(run: RunSettings) -> bool:
    """Whether the run's `compile` replays CUDA graphs: what an objective keeps of a compiled
    output from one call to the next (XLNet's memories) must then be a copy. False for
    settings without one."""
    return getattr(run, "compile", None) in CUDA_GRAPH_MODES


def own_config(run: RunSettings, objective: type) -> Any:
    """`run.objective`, checked to be `objective`'s Config (a run config made for another
    objective would otherwise fail later on a missing field)."""
    config_class = objective.Config  # type: ignore[attr-defined]
    if not isinstance(run.objective, config_class):
        raise TypeError(f"{objective.__name__} needs objective fields of "
                        f"{config_class.__name__}, the run config has "
                        f"{type(run.objective).__name__}: set objective.name")
    return run.objective


class Stateless:
    """state_dict / load_state_dict of an objective that carries nothing across steps."""

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        if state:
            raise ValueError(f"{type(self).__name__} carries no state across steps, but the "
                             f"checkpoint holds {', '.join(sorted(state))}")


def one_model_state(sources: Mapping[str, StartSource],
                    objective: type) -> dict[str, torch.Tensor]:
    """start_state of an objective whose module is one model under our canonical keys (its
    state-dict keys are the exported directory's): the "model" directory's, as it is."""
    others = sorted(set(sources) - {"model"})
    if others:
        raise ConfigError(f"--generator-from: {objective.__name__} trains one model; a "
                          f"{' or '.join(others)} directory is for ELECTRA's objective")
    return dict(sources["model"].state)


def save_tokenizer(run_dir: Path, out_dir: Path) -> None:
    """The run's tokenizer beside exported weights: a model directory loads on its own."""
    Tokenizer.from_pretrained(run_dir / "tokenizer").save_pretrained(out_dir)
