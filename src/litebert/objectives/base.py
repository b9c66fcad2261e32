"""The Objective protocol: everything the pre-training loop needs to know about what it trains.

The Trainer (litebert.train.pretrain) builds the objective's module, asks it per micro-batch
for the *counts* (denominators) and *sums* of its named loss parts, and divides every sum by
its count over the whole global batch (all micro-batches, all ranks). So the gradient is that
of one big batch however the batch is split, for any objective, and the loop itself names no
loss. Evaluation, FSDP units and export are the objective's too.

An objective is constructed from the run config and the run's training data:
`OBJECTIVES[name](run, data)`; with `data=None` it can only build and export (`litebert
export` reads a checkpoint without the data directory).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn

from litebert.config import AlbertConfig
from litebert.data.loader import PretrainingDataset
from litebert.model import AlbertModel
from litebert.model.albert import AlbertEncoder
from litebert.train.distributed import DistInfo

Batch = dict[str, torch.Tensor]  # a collated micro-batch on the device
FsdpUnits = list[tuple[nn.Module, bool]]  # (module, reshard_after_forward), in sharding order


class RunSettings(Protocol):
    """The fields of the run config (PretrainConfig) that objectives read. A protocol, so this
    package does not import litebert.train.run_config, which imports the registry for the
    `objective` option's choices. An objective that needs more fields adds them here."""

    seed: int
    micro_batch_size: int
    eval_instances: int
    eval_pair_tasks: str
    model_overrides: dict[str, Any]


class Objective(Protocol):
    """A pre-training objective; the Trainer calls nothing else of it."""

    # The loss parts, logged as "<part>_loss" (the unweighted global means), and each part's
    # weight in the total loss that is back-propagated and logged as "loss".
    parts: tuple[str, ...]
    weights: tuple[float, ...]

    def __init__(self, run: RunSettings, data: PretrainingDataset | None = None) -> None: ...

    def build(self, config: AlbertConfig) -> nn.Module:
        """The one module that holds every trained parameter, freshly initialised from the
        global RNG (the Trainer seeds it): the optimizer, DDP/FSDP and checkpoints see only
        this module, so its state-dict keys are the checkpoint's."""
        ...

    def flops_per_token(self, config: AlbertConfig, seq_len: int) -> float:
        """Training FLOPs per input token of the module `build(config)` makes, at sequences
        of `seq_len` (litebert.model.counts): what a study matches when its runs train
        different objectives at equal compute."""
        ...

    def fsdp_units(self, model: nn.Module) -> FsdpUnits:
        """The submodules of `model` (as built) that FSDP shards on their own, before the root;
        a module used at several depths should not be resharded between its uses."""
        ...

    def begin_step(self, step: int) -> None:
        """Called before each optimizer step's micro-batches with the number of steps done:
        an objective whose randomness is keyed by the step (ELECTRA's corruption) keeps it;
        a checkpoint holds the step, so a resumed run sees the same numbers."""
        ...

    def counts(self, batch: Batch) -> torch.Tensor:
        """(P,) float: each part's denominator in this micro-batch (e.g. masked tokens,
        sequences), on the device and without a host sync: the loop sums them over the
        global batch before the first backward."""
        ...

    def loss_sums(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """(P,) float: each part's loss summed over this micro-batch, through `model` (the
        wrapped module: DDP and FSDP need their own forward). Divided by the global counts
        in the loop, so it must be a sum, not a mean."""
        ...

    def evaluate(self, model: nn.Module, info: DistInfo,
                 amp: AbstractContextManager[Any]) -> dict[str, float]:
        """Held-out metrics ("eval_*" keys, with their baselines) over all ranks, each rank
        calling it; {} when there is nothing to evaluate. Leaves the model's mode as it was."""
        ...

    def export(self, model_state: dict[str, torch.Tensor], config: AlbertConfig,
               run_dir: Path, out_dir: Path, unroll: bool = False) -> Path:
        """Model directory(ies) under `out_dir` from the trained state dict (the module of
        `build`, whole), each with the run's tokenizer (RUN_DIR/tokenizer): what one
        fine-tunes or hands to transformers. `unroll`: shared layers written as one copy per
        layer, so a family without sharing (ELECTRA, BERT) keeps its own layout. Returns
        `out_dir`."""
        ...


def backbone_units(backbone: AlbertModel) -> FsdpUnits:
    """FSDP units of one backbone (see encoder_units)."""
    return encoder_units(backbone.encoder)


def encoder_units(encoder: AlbertEncoder) -> FsdpUnits:
    """FSDP units of one encoder: every attention and FFN module. ALBERT applies a shared
    module at several depths; such a module stays unsharded between its uses in one step
    (reshard_after_forward=False), so it is gathered once per forward, not once per layer."""
    shared_attention = len(encoder.attentions) < len(encoder.attention_index)
    shared_ffn = len(encoder.ffns) < len(encoder.ffn_index)
    return ([(m, not shared_attention) for m in encoder.attentions]
            + [(m, not shared_ffn) for m in encoder.ffns])


def save_tokenizer(run_dir: Path, out_dir: Path) -> None:
    """The run's tokenizer beside exported weights: a model directory loads on its own."""
    from litebert.tokenization import Tokenizer

    Tokenizer.from_pretrained(run_dir / "tokenizer").save_pretrained(out_dir)
