"""MLM + the data's sentence-pair task (SOP or NSP): ALBERT's pre-training objective.

The module is AlbertForPreTraining: its state-dict keys are the checkpoint's and the exported
model's (transformers' AlbertForPreTraining layout). Loss parts: "mlm" (summed over masked
tokens) and the data's pair task, "sop" or "nsp" (summed over sequences), weights 1 and 1;
data built with objective "none" has MLM alone. Metric names are those of every run so far:
mlm_loss, sop_loss / nsp_loss, eval_mlm_accuracy, eval_sop_accuracy, ..., eval_loss.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from litebert.config import AlbertConfig
from litebert.data.loader import LABEL_KEYS, PretrainingDataset
from litebert.families import family
from litebert.model import AlbertForMaskedLM, AlbertForPreTraining
from litebert.model.counts import encoder_flops_per_token, mlm_head_flops_per_token
from litebert.objectives.base import Batch, FsdpUnits, RunSettings, backbone_units, save_tokenizer
from litebert.train.distributed import DistInfo, all_reduce_sum
from litebert.train.evaluation import (
    EvalSet,
    commonest_training_token,
    cross_eval_metrics,
    draw_eval_set,
    open_heldout,
)

log = logging.getLogger("litebert")

IGNORE = -100  # labels of tokens that are not predicted
PAIR_TASKS = {key: name for name, key in LABEL_KEYS.items()}  # label key -> "sop" / "nsp"


class MLMObjective:
    """MLM with the data's SOP/NSP task (see the module docstring)."""

    def __init__(self, run: RunSettings, data: PretrainingDataset | None = None) -> None:
        self.run = run
        self.label_key = data.label_key if data is not None else None  # the pair label's key
        self.pair = PAIR_TASKS[self.label_key] if self.label_key else None  # "sop" / "nsp"
        self.parts: tuple[str, ...] = ("mlm", self.pair) if self.pair else ("mlm",)
        self.weights: tuple[float, ...] = (1.0,) * len(self.parts)
        self.heldout: PretrainingDataset | None = None  # None: build and export only
        self.baseline_token = -1  # the MLM baseline predicts it at every masked token
        self.cross_set: EvalSet | None = None  # eval_pair_tasks "both": drawn once per run
        self.masked_share = 0.15  # of the tokens the MLM head scores: the data's, once read
        if data is not None:
            held = open_heldout(data.directory)
            self.heldout = PretrainingDataset(data.directory, "heldout", seed=run.seed)
            self.masked_share = self.heldout.config.masked_lm_prob
            # The same baseline token as `litebert eval-pretraining`: one rule for both.
            self.baseline_token = commonest_training_token(held)
            if run.eval_pair_tasks == "both":
                self.cross_set = draw_eval_set(held, instances=run.eval_instances,
                                               seed=run.seed, batch_size=run.micro_batch_size)

    # ---- training ----------------------------------------------------------------------------

    def build(self, config: AlbertConfig) -> nn.Module:
        """Pre-training runs without dropout, as in the paper and the official code (whose
        SOP head has none); the exported config keeps classifier_dropout_prob for
        fine-tuning. A recipe that sets it in model_overrides gets what it asks for."""
        if "classifier_dropout_prob" not in self.run.model_overrides:
            config = config.replace(classifier_dropout_prob=0.0)
        return AlbertForPreTraining(config)

    def flops_per_token(self, config: AlbertConfig, seq_len: int) -> float:
        """The backbone, and the MLM head at the data's masked share (the pair head, one
        H x 2 product per sequence, is left out)."""
        predicted = self.masked_share
        return (encoder_flops_per_token(config, seq_len)
                + mlm_head_flops_per_token(config, predicted))

    def fsdp_units(self, model: nn.Module) -> FsdpUnits:
        """The attention and FFN modules of the one backbone."""
        assert isinstance(model, AlbertForPreTraining)
        return backbone_units(model.albert)

    def begin_step(self, step: int) -> None:
        """Nothing: the data's masks are drawn by the loader, keyed per item."""

    def counts(self, batch: Batch) -> torch.Tensor:
        """(P,): masked tokens, then sequences (the pair task's denominator)."""
        masked = (batch["labels"] != IGNORE).sum().float()  # ()
        if self.label_key is None:
            return masked[None]
        sequences = torch.full((), batch[self.label_key].numel(), dtype=torch.float32,
                               device=masked.device)
        return torch.stack([masked, sequences])

    def loss_sums(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """(P,): the model's mean losses times their counts. The head already returns the
        mean over this micro-batch's masked tokens (0 when there are none); multiplying back
        costs nothing, where a second cross-entropy over the (N, V) logits would not."""
        out = model(**batch)
        counts = self.counts(batch)  # (P,)
        means = [out.mlm_loss] + ([out.sop_loss] if self.label_key else [])
        return torch.stack(means).float() * counts.clamp(min=1)

    # ---- evaluation --------------------------------------------------------------------------

    def evaluate(self, model: nn.Module, info: DistInfo,
                 amp: AbstractContextManager[Any]) -> dict[str, float]:
        """The data's own held-out metrics; with eval_pair_tasks "both" the SOP and NSP
        accuracies (and baselines) of the run's fixed cross-evaluation set replace the own
        task's, so a SOP run also reports NSP and the other way round (eval_*_loss and
        eval_loss stay those of the own instances)."""
        if self.heldout is None or len(self.heldout) < info.world_size:
            return {}  # every rank must score as many batches: none without an instance each
        result = self.evaluate_heldout(model, info, amp)
        if self.cross_set is not None and self.cross_set.batches:
            result.update(cross_eval_metrics(model, self.cross_set, info, amp))
        return result

    @torch.no_grad()
    def evaluate_heldout(self, model: nn.Module, info: DistInfo,
                         amp: AbstractContextManager[Any]) -> dict[str, float]:
        """MLM loss/accuracy and SOP/NSP loss/accuracy on held-out instances, with baselines."""
        assert self.heldout is not None
        was_training = model.training
        model.eval()
        per_rank = min(len(self.heldout), self.run.eval_instances) // info.world_size
        mine = list(range(info.rank, per_rank * info.world_size, info.world_size))
        size = self.run.micro_batch_size
        # Kept on the device: one host sync for the whole evaluation, not one per batch.
        sums = torch.zeros(8, dtype=torch.float64, device=info.device)
        for i in range(0, len(mine), size):
            batch = self.heldout.collate([self.heldout[j] for j in mine[i:i + size]])
            batch = {k: v.to(info.device) for k, v in batch.items()}
            with amp:
                out = model(**batch)
            parts = self._eval_sums(out, batch, info.device)
            sums[:len(parts)] += parts
        totals: list[float] = all_reduce_sum(sums).tolist()
        model.train(was_training)
        return self._eval_result(totals)

    def _eval_sums(self, out: Any, batch: Batch, device: torch.device) -> torch.Tensor:
        """This batch's mlm loss, correct, baseline correct, count; then, with a pair task,
        its loss, correct, count and label-1 count."""
        target = batch["labels"][batch["labels"] != IGNORE]  # (N,)
        logits = out.prediction_logits.float()  # (N, V): the head scores masked tokens only
        parts = [F.cross_entropy(logits, target, reduction="sum"),
                 (logits.argmax(-1) == target).sum(), (target == self.baseline_token).sum(),
                 torch.tensor(target.numel(), device=device)]
        if self.label_key:
            labels = batch[self.label_key]  # (B,)
            pair = out.sop_logits.float()  # (B, 2)
            parts += [F.cross_entropy(pair, labels, reduction="sum"),
                      (pair.argmax(-1) == labels).sum(),
                      torch.tensor(labels.numel(), device=device), labels.sum()]
        return torch.stack([p.to(torch.float64) for p in parts])

    def _eval_result(self, sums: list[float]) -> dict[str, float]:
        """The metrics from the summed counts (all ranks)."""
        result = {"eval_mlm_loss": sums[0] / max(sums[3], 1),
                  "eval_mlm_accuracy": sums[1] / max(sums[3], 1),
                  "eval_mlm_baseline_accuracy": sums[2] / max(sums[3], 1)}
        result["eval_loss"] = result["eval_mlm_loss"]
        if self.pair:
            name = self.pair
            ones = sums[7] / max(sums[6], 1)
            result[f"eval_{name}_loss"] = sums[4] / max(sums[6], 1)
            result[f"eval_{name}_accuracy"] = sums[5] / max(sums[6], 1)
            result[f"eval_{name}_baseline_accuracy"] = max(ones, 1 - ones)  # majority label
            result["eval_loss"] += result[f"eval_{name}_loss"]
        return result

    # ---- export ------------------------------------------------------------------------------

    def export(self, model_state: dict[str, torch.Tensor], config: AlbertConfig,
               run_dir: Path, out_dir: Path, unroll: bool = False) -> Path:
        """One transformers-format AlbertForPreTraining directory (the exported config keeps
        the preset's dropout), the run's tokenizer beside it. A family without a pre-training
        class holding a pair head (RoBERTa) gets its masked LM: the pair head and the pooler,
        which MLM alone never trains, are left out (with a note when a pair task ran)."""
        model: AlbertForPreTraining | AlbertForMaskedLM = AlbertForPreTraining(config)
        if "AlbertForPreTraining" not in family(config.model_type).class_names:
            dropped = ("sop_classifier.", "albert.pooler.")
            if self.pair is not None:
                log.warning("%s has no pre-training class with a %s head: %s exports its "
                            "masked LM only", config.model_type, self.pair, out_dir)
            model_state = {k: v for k, v in model_state.items() if not k.startswith(dropped)}
            model = AlbertForMaskedLM(config)
        model.load_state_dict(model_state)
        model.save_pretrained(out_dir, unroll=unroll)
        save_tokenizer(run_dir, out_dir)
        return out_dir
