"""The MLM objective's evaluation: MLM on its own held-out instances, and the paper's cross
evaluation (Table 5): MLM, SOP and NSP accuracy of one model on SOP pairs and NSP pairs of
the same held-out documents (litebert.data.heldout draws them), whatever inter-sentence loss
the model was trained with. Both pair sets are scored by the model's one 2-way head (label
1 = swapped for SOP, a random B for NSP); MLM is scored on the masked tokens of both sets.

`evaluate_pretraining` scores a model directory (or module) on a data directory: what
`litebert eval-pretraining` and studies call for any model with an MLM head.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from litebert.data.heldout import (
    PAIR_TASKS,
    EvalSet,
    commonest_training_token,
    draw_eval_set,
    open_heldout,
)
from litebert.distributed import DistInfo
from litebert.model import CheckpointError, EncoderForMaskedLM, EncoderForPreTraining
from litebert.model.backbone import backbone_class
from litebert.model.hub import ModelFiles, external_key, read_model_files
from litebert.objectives.evaluation import (
    EvalSums,
    Rows,
    check_compatible,
    eval_device,
    evaluating,
    has_weights,
    majority_share,
    no_heldout,
    ratio,
    warn_other_tokenizer,
)

log = logging.getLogger("litebert")

IGNORE = -100  # labels of tokens that are not predicted
# The keys of evaluate_pretraining's result (and of `eval-pretraining --out`), in order.
RESULT_KEYS = ("mlm_accuracy", "mlm_loss", "mlm_baseline_accuracy", "sop_accuracy",
               "sop_baseline_accuracy", "nsp_accuracy", "nsp_baseline_accuracy",
               "mlm_tokens", "sop_pairs", "nsp_pairs", "has_pair_head")
TABLE_ROWS: Rows = (("mlm_accuracy", "mlm_baseline_accuracy"), ("mlm_loss", None),
                    ("sop_accuracy", "sop_baseline_accuracy"),
                    ("nsp_accuracy", "nsp_baseline_accuracy"))
_MODEL_INPUTS = ("input_ids", "token_type_ids", "attention_mask", "labels")
# Our keys of the heads (hub.external_key maps them to a file's layout).
MLM_HEAD = ("predictions.dense.weight",)
PAIR_HEAD = ("sop_classifier.classifier.weight", "backbone.pooler.weight")


def add_mlm(sums: EvalSums, logits: torch.Tensor, labels: torch.Tensor,
            baseline_token: int) -> None:
    """MLM figures of one batch: `logits` (N, V) at the N positions where labels != -100."""
    target = labels[labels != IGNORE]  # (N,) in the order of the head's rows
    logits = logits.float()
    sums.add(mlm_loss=F.cross_entropy(logits, target, reduction="sum"),
             mlm_correct=(logits.argmax(-1) == target).sum(),
             mlm_baseline=(target == baseline_token).sum(), mlm_tokens=target.numel())


def mlm_metrics(s: dict[str, float], prefix: str = "") -> dict[str, float]:
    return {f"{prefix}mlm_loss": ratio(s["mlm_loss"], s["mlm_tokens"]),
            f"{prefix}mlm_accuracy": ratio(s["mlm_correct"], s["mlm_tokens"]),
            f"{prefix}mlm_baseline_accuracy": ratio(s["mlm_baseline"], s["mlm_tokens"])}


# ---- the cross-evaluation set ----------------------------------------------------------------

def _add_cross_batch(sums: EvalSums, model: nn.Module, batch: dict[str, torch.Tensor],
                     baseline_token: int, device: torch.device, amp, count: bool) -> None:
    inputs = {k: batch[k].to(device, non_blocking=True) for k in _MODEL_INPUTS}
    with amp:
        out = model(**inputs)
    if not count:  # a pass only to keep ranks in step (see score)
        return
    logits = getattr(out, "prediction_logits", None)
    add_mlm(sums, out.logits if logits is None else logits, inputs["labels"], baseline_token)
    task, label = batch["task"].to(device), batch["pair_label"].to(device)  # (B,), (B,)
    pair_logits = getattr(out, "sop_logits", None)  # (B, 2); none for EncoderForMaskedLM
    right = pair_logits.argmax(-1) == label if pair_logits is not None \
        else torch.zeros_like(label, dtype=torch.bool)
    for t, name in enumerate(PAIR_TASKS):
        mine = task == t
        sums.add(**{f"{name}_correct": (right & mine).sum(), f"{name}_pairs": mine.sum(),
                    f"{name}_ones": (label * mine).sum()})


def score(model: nn.Module, eval_set: EvalSet, baseline_token: int, *, device: torch.device,
          amp=None, rank: int = 0, world_size: int = 1) -> dict[str, float]:
    """The named sums over `eval_set`, over all ranks (rank r scores batches r, r + world...)."""
    amp = amp if amp is not None else contextlib.nullcontext()
    sums = EvalSums(device)
    batches = eval_set.batches
    mine = batches[rank::world_size]
    with evaluating(model):
        # Every rank runs as many forward passes (FSDP gathers parameters in each): a rank
        # with one batch fewer runs batch 0 again and does not count it.
        for i in range(-(-len(batches) // world_size)):
            batch = mine[i] if i < len(mine) else batches[0]
            _add_cross_batch(sums, model, batch, baseline_token, device, amp, i < len(mine))
    return sums.reduce()


def pretraining_metrics(sums: dict[str, float], has_pair_head: bool) -> dict[str, Any]:
    """RESULT_KEYS from score()'s sums. Without a pair head the pair accuracies are None;
    the baselines (the majority label's share of each set) are the data's, still given."""
    tokens = int(sums.get("mlm_tokens", 0))
    result: dict[str, Any] = dict(mlm_metrics(sums)) if tokens else dict.fromkeys(
        ("mlm_loss", "mlm_accuracy", "mlm_baseline_accuracy"))
    for t in PAIR_TASKS:
        pairs = sums.get(f"{t}_pairs", 0)
        result[f"{t}_accuracy"] = sums[f"{t}_correct"] / pairs \
            if pairs and has_pair_head else None
        result[f"{t}_baseline_accuracy"] = majority_share(sums[f"{t}_ones"], pairs) \
            if pairs else None
    result.update(mlm_tokens=tokens, sop_pairs=int(sums.get("sop_pairs", 0)),
                  nsp_pairs=int(sums.get("nsp_pairs", 0)), has_pair_head=has_pair_head)
    return {k: result[k] for k in RESULT_KEYS}


def cross_eval_metrics(model: nn.Module, eval_set: EvalSet, info: DistInfo,
                       amp=None) -> dict[str, float]:
    """The Trainer's cross evaluation: eval_{sop,nsp}_accuracy and their baselines."""
    sums = score(model, eval_set, -1, device=info.device, amp=amp, rank=info.rank,
                 world_size=info.world_size)
    result = pretraining_metrics(sums, has_pair_head=True)
    return {f"eval_{k}": float(result[k]) for t in PAIR_TASKS
            for k in (f"{t}_accuracy", f"{t}_baseline_accuracy") if result[k] is not None}


# ---- any model directory on any data directory -----------------------------------------------

def load_for_evaluation(
        source: str | Path | ModelFiles) -> tuple[EncoderForPreTraining | EncoderForMaskedLM, bool]:
    """(model, has_pair_head) of a model directory (or its config.json as read already). The
    pair head counts as present when the directory holds both the pooler and the 2-way
    classifier (in its weights or kept beside them, litebert.model.hub.EXTRA_HEADS_NAME);
    without an MLM head there is nothing to score."""
    if not isinstance(source, ModelFiles) and not Path(source).is_dir():
        raise CheckpointError(f"{source}: no such model directory")
    # config.json, once: the checks and the loading take it
    files = source if isinstance(source, ModelFiles) else read_model_files(source)
    directory = files.directory
    if not has_weights(files, *MLM_HEAD):
        head = external_key(MLM_HEAD[0], files.config)
        raise CheckpointError(f"{directory}: no MLM head ({head}); MLM evaluation needs a "
                              f"pre-training or masked-LM model (an ELECTRA discriminator is "
                              f"scored on replaced-token detection: `litebert "
                              f"eval-pretraining`)")
    has_pair_head = has_weights(files, *PAIR_HEAD)
    model: EncoderForPreTraining | EncoderForMaskedLM
    if backbone_class(files.config).capabilities.pooler:
        model = EncoderForPreTraining.from_pretrained(directory, files=files)
    else:  # no pooler, so no pair head to load (ModernBERT): the masked LM alone
        model = EncoderForMaskedLM.from_pretrained(directory, files=files)
    if not has_pair_head:
        log.info("%s: no trained sentence-pair head; SOP and NSP are not scored", directory)
    return model, has_pair_head


def evaluate_pretraining(model: nn.Module | str | Path | ModelFiles, data_dir: str | Path, *,
                         instances: int = 2000, seed: int = 0, batch_size: int = 32,
                         has_pair_head: bool | None = None) -> dict[str, Any]:
    """MLM, SOP and NSP accuracy of `model` on the held-out documents of `data_dir`, with
    baselines; the keys are RESULT_KEYS.

    model: an EncoderForPreTraining (or EncoderForMaskedLM) module, scored on its device, or
    a model directory or its config.json as read (model.hub.ModelFiles), loaded with
    `load_for_evaluation`, on CUDA when there is one.
    instances: SOP pairs and NSP pairs, at most, each (whole documents, see draw_pairs).
    has_pair_head: None detects it (from the checkpoint, or the module's class); without
    one, sop_accuracy and nsp_accuracy are None rather than a random head's score.
    """
    name = "the model"
    held = open_heldout(data_dir)
    if isinstance(model, (str, Path, ModelFiles)):
        model_dir = model.directory if isinstance(model, ModelFiles) else Path(model)
        name = str(model_dir / "config.json")
        model, detected = load_for_evaluation(model)
        model.to(eval_device())
        has_pair_head = detected if has_pair_head is None else has_pair_head
        warn_other_tokenizer(model_dir, held)
    if has_pair_head is None:
        has_pair_head = hasattr(model, "sop_classifier")
    check_compatible(model.config, held, name)
    if len(held.docs) == 0:
        raise no_heldout(held, "documents")
    eval_set = draw_eval_set(held, instances=instances, seed=seed, batch_size=batch_size)
    device = next(model.parameters()).device
    sums = score(model, eval_set, commonest_training_token(held), device=device)
    return pretraining_metrics(sums, bool(has_pair_head))


def table_notes(result: dict[str, Any]) -> list[str]:
    notes = [f"{result['mlm_tokens']:,} masked tokens, {result['sop_pairs']:,} SOP pairs, "
             f"{result['nsp_pairs']:,} NSP pairs"]
    if not result["has_pair_head"]:
        notes.append("no trained sentence-pair head in the checkpoint: SOP and NSP not scored")
    return notes
