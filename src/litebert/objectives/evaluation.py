"""What every objective's evaluation shares: named sums reduced once over all ranks, the one
held-out loop, and the checks of a model directory against a data directory.

An objective evaluates twice over: during a run (`Objective.evaluate`, every eval_every steps,
on every rank) and on an exported directory (`Objective.evaluate_directory`, `litebert
eval-pretraining` and studies). Both add their per-batch figures to an `EvalSums` by name and
turn the reduced sums into metrics; neither indexes a vector of sums by position.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from torch import nn

from litebert.compat import check_model_reads
from litebert.data.attention_layout import mark_tokens_dynamic
from litebert.data.heldout import HeldoutDocuments, open_heldout
from litebert.data.integrity import DataError
from litebert.distributed import DistInfo, all_reduce_sum
from litebert.model import CheckpointError
from litebert.model.backbone import backbone_class
from litebert.model.hub import (
    WEIGHTS_INDEX_NAME,
    WEIGHTS_NAME,
    ModelFiles,
    external_key,
    extra_head_keys,
    read_weights,
)
from litebert.tokenization import Tokenizer, TokenizerError

log = logging.getLogger("litebert")

Batch = dict[str, torch.Tensor]
Rows = tuple[tuple[str, str | None], ...]  # (metric, its baseline or None), for format_table


class EvalSums:
    """Named running sums, kept on the device (no host sync per batch) and reduced over the
    ranks in one all-reduce. Every rank must add the same names (the same code path does)."""

    def __init__(self, device: torch.device):
        self.device = device
        self.values: dict[str, torch.Tensor] = {}

    def add(self, **parts: torch.Tensor | float | int) -> None:
        for name, value in parts.items():
            value = torch.as_tensor(value, device=self.device).to(torch.float64)
            self.values[name] = self.values[name] + value if name in self.values else value

    def reduce(self) -> dict[str, float]:
        """The sums over every rank, by name (one host sync)."""
        names = sorted(self.values)
        if not names:
            return {}
        totals = all_reduce_sum(torch.stack([self.values[n] for n in names])).tolist()
        return dict(zip(names, totals, strict=True))


def ratio(part: float, whole: float) -> float:
    """part / max(whole, 1): a metric of nothing scored (0 of 0) is 0, not NaN."""
    return part / max(whole, 1)


def majority_share(ones: float, count: float) -> float:
    """The accuracy of always answering a 2-way task's commoner label."""
    share = ratio(ones, count)
    return max(share, 1 - share)


def add_pair_task(sums: EvalSums, logits: torch.Tensor, labels: torch.Tensor) -> None:
    """A sentence-pair task's figures of one batch: logits (B, 2), labels (B,)."""
    logits = logits.float()
    sums.add(pair_loss=torch.nn.functional.cross_entropy(logits, labels, reduction="sum"),
             pair_correct=(logits.argmax(-1) == labels).sum(), pair_count=labels.numel(),
             pair_ones=labels.sum())


def pair_task_metrics(s: dict[str, float], name: str) -> dict[str, float]:
    """eval_{name}_loss, _accuracy and _baseline_accuracy (the majority label's share)."""
    return {f"eval_{name}_loss": ratio(s["pair_loss"], s["pair_count"]),
            f"eval_{name}_accuracy": ratio(s["pair_correct"], s["pair_count"]),
            f"eval_{name}_baseline_accuracy": majority_share(s["pair_ones"], s["pair_count"])}


def with_pair_task(result: dict[str, float], s: dict[str, float],
                   name: str | None) -> dict[str, float]:
    """`result` with the sentence-pair task `name`'s figures (pair_task_metrics) added and its
    loss added to eval_loss; as it is when the run has no pair task (None)."""
    if name:
        result.update(pair_task_metrics(s, name))
        result["eval_loss"] += result[f"eval_{name}_loss"]
    return result


@contextlib.contextmanager
def evaluating(model: nn.Module) -> Iterator[None]:
    """Eval mode and no gradients inside; the model's mode as it was afterwards."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


def heldout_batches(dataset: Any, instances: int, batch_size: int,
                    info: DistInfo) -> Iterator[Batch]:
    """This rank's share of the first `instances` held-out items, collated and on the device.
    Every rank gets as many batches (FSDP gathers parameters in every forward pass); an
    unpadded N is marked dynamic, as in the training step (a compiled model then compiles
    no graph per N; an eager one ignores the mark)."""
    per_rank = min(len(dataset), instances) // info.world_size
    mine = list(range(info.rank, per_rank * info.world_size, info.world_size))
    for i in range(0, len(mine), batch_size):
        batch = dataset.collate([dataset[j] for j in mine[i:i + batch_size]])
        yield mark_tokens_dynamic({k: v.to(info.device) for k, v in batch.items()})


# ---- a model directory on a data directory ---------------------------------------------------

def checkpoint_keys(directory: Path) -> tuple[set[str], Path]:
    """The tensor names of a model directory's weights, and the file they are listed in
    (safetensors: from the headers only, no tensor read)."""
    single, index = directory / WEIGHTS_NAME, directory / WEIGHTS_INDEX_NAME
    try:
        if single.is_file():
            with safe_open(str(single), framework="pt") as f:
                return set(f.keys()), single
        if index.is_file():
            return set(json.loads(index.read_text())["weight_map"]), index
    except Exception as err:  # a damaged header or index
        raise CheckpointError(f"{single if single.is_file() else index}: unreadable "
                              f"({err})") from None
    state, source = read_weights(directory)  # pytorch_model.bin, or the error naming files
    return set(state), source


def has_weights(model: ModelFiles, *keys: str) -> bool:
    """Whether a model directory holds every one of our canonical `keys`: in its weights file
    (under the layout's name) or among the heads kept beside it (EXTRA_HEADS_NAME)."""
    found, _ = checkpoint_keys(model.directory)
    kept = extra_head_keys(model.directory)
    return all(external_key(k, model.config) in found or k in kept for k in keys)


def eval_device() -> torch.device:
    """Where a model directory is scored in this one process: CUDA when there is one."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def heldout_for(model: ModelFiles, data_dir: str | Path) -> HeldoutDocuments:
    """The held-out documents of `data_dir`, checked readable by the model directory
    (check_compatible on its config; another tokenizer is a warning)."""
    held = open_heldout(data_dir)  # DataError naming the directory when it is none
    check_compatible(model.config, held, str(model.directory / "config.json"))
    warn_other_tokenizer(model.directory, held)
    return held


def no_heldout(held: HeldoutDocuments, what: str) -> DataError:
    """The error for data without held-out `what` (documents, instances) to score."""
    return DataError(f"{held.directory / 'manifest.json'}: no held-out {what} "
                     f"(heldout_fraction={held.config.heldout_fraction}); rebuild with "
                     f"--heldout-fraction above 0")


def evaluate_alone(objective: Any, model: nn.Module) -> dict[str, float]:
    """objective.evaluate of `model` in this one process (rank 0 of 1), on eval_device()."""
    device = eval_device()
    return objective.evaluate(model.to(device), DistInfo(0, 1, 0, device),
                              contextlib.nullcontext())


def check_compatible(config, held: HeldoutDocuments, model_name: str) -> None:
    """The model can read the data: same vocabulary size, positions for the longest input."""
    manifest = held.directory / "manifest.json"
    if config.vocab_size != held.vocab_size:
        raise DataError(f"{model_name} has vocab_size {config.vocab_size}, but {manifest} was "
                        f"built with a tokenizer of {held.vocab_size} ids "
                        f"({held.directory / 'tokenizer'}); evaluate on data built with the "
                        f"model's own tokenizer")
    # Padding id and pair template (one token type cannot read ALBERT's typed pairs).
    check_model_reads(config, Tokenizer.from_pretrained(held.directory / "tokenizer"),
                      model_name, str(held.directory / "tokenizer"),
                      reader=backbone_class(config))
    if held.config.max_seq_length > config.max_sequence_length:
        raise DataError(f"{manifest}: max_seq_length {held.config.max_seq_length} exceeds "
                        f"the {config.max_sequence_length} positions of {model_name} "
                        f"(max_position_embeddings {config.max_position_embeddings}); rebuild "
                        f"the data with a shorter --max-seq-length")


def warn_other_tokenizer(model_dir: Path, held: HeldoutDocuments) -> None:
    """Same size is not same vocabulary: say so when the model ships another tokenizer
    (any kind: the fingerprint covers the vocabulary files and the text settings)."""
    try:
        ours = Tokenizer.from_pretrained(model_dir)
    except TokenizerError:
        return  # a directory without tokenizer files: nothing to compare
    theirs = Tokenizer.from_pretrained(held.directory / "tokenizer")
    if ours.fingerprint != theirs.fingerprint:
        log.warning("%s differs from %s: the model and the data use different "
                    "tokenizers; the scores mean little", ours.path, theirs.path)


def format_table(result: dict[str, Any], rows: Rows, notes: list[str]) -> str:
    """An evaluation's result as a small table (metric, value, baseline), then `notes`."""
    def cell(value: Any) -> str:
        return "-" if value is None else f"{value:.4f}"

    width = max(14, max(len(name) for name, _ in rows) + 2)
    lines = [f"{'metric':<{width}} {'value':>8} {'baseline':>9}"]
    for name, baseline in rows:
        lines.append(f"{name:<{width}} {cell(result.get(name)):>8} "
                     f"{cell(result.get(baseline) if baseline else None):>9}")
    return "\n".join(lines + notes)
