"""MLM + the data's sentence-pair task (SOP or NSP): ALBERT's pre-training objective.

The module is EncoderForPreTraining: its state-dict keys are the checkpoint's and the exported
model's (transformers' EncoderForPreTraining layout). Loss parts: "mlm" (summed over masked
tokens) and the data's pair task, "sop" or "nsp" (summed over sequences), weights 1 and 1;
data built with objective "none" has MLM alone. A training micro-batch is scored at its
static prediction slots (litebert.data.loader.prediction_slots): counts and sums stay on the
device with one shape per data directory, so torch.compile(fullgraph=True) takes them whole.
Metric names are those of every run so far:
mlm_loss, sop_loss / nsp_loss, eval_mlm_accuracy, eval_sop_accuracy, ..., eval_loss.
Evaluation of a run and of an exported directory: litebert.objectives.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from litebert.config import ModelConfig
from litebert.data.attention_choice import ATTENTIONS
from litebert.data.heldout import EvalSet, commonest_training_token, draw_eval_set, open_heldout
from litebert.data.loader import LABEL_KEYS, SLOT_KEYS, PretrainingDataset
from litebert.data.manifest import DataManifest
from litebert.distributed import DistInfo
from litebert.families import family
from litebert.model import EncoderForMaskedLM, EncoderForPreTraining
from litebert.model.backbone import FsdpUnits, backbone_class, check_attention
from litebert.model.counts import encoder_flops_per_token, mlm_head_flops_per_token
from litebert.model.hub import ModelFiles, save_extra_heads
from litebert.model.outputs import MaskedLMOutput
from litebert.objectives.base import (
    Batch,
    ObjectiveConfig,
    RunSettings,
    StartSource,
    Stateless,
    one_model_state,
    own_config,
    run_attention,
    save_tokenizer,
)
from litebert.objectives.configs import MLMConfig
from litebert.objectives.evaluation import (
    EvalSums,
    add_pair_task,
    evaluating,
    format_table,
    has_weights,
    heldout_batches,
    with_pair_task,
)
from litebert.objectives.mlm_eval import (
    MLM_HEAD,
    TABLE_ROWS,
    add_mlm,
    cross_eval_metrics,
    evaluate_pretraining,
    mlm_metrics,
    table_notes,
)

log = logging.getLogger("litebert")

TASK_OF_LABEL = {key: name for name, key in LABEL_KEYS.items()}  # label key -> "sop" / "nsp"
class MLMObjective(Stateless):
    """MLM with the data's SOP/NSP task (see the module docstring)."""

    Config: ClassVar[type[ObjectiveConfig]] = MLMConfig
    sampling: ClassVar[str] = "shuffled"
    attentions: ClassVar[tuple[str, ...]] = ATTENTIONS  # its dataset lays batches out for all

    def __init__(self, run: RunSettings, data: PretrainingDataset | None = None) -> None:
        self.run = run
        self.config: MLMConfig = own_config(run, type(self))
        self.label_key = data.label_key if data is not None else None  # the pair label's key
        self.pair = TASK_OF_LABEL[self.label_key] if self.label_key else None  # "sop" / "nsp"
        self.parts: tuple[str, ...] = ("mlm", self.pair) if self.pair else ("mlm",)
        self.weights: tuple[float, ...] = (1.0,) * len(self.parts)
        self.heldout: PretrainingDataset | None = None  # None: build and export only
        self.baseline_token = -1  # the MLM baseline predicts it at every masked token
        self.cross_set: EvalSet | None = None  # eval_pair_tasks "both": drawn once per run
        self.masked_share = 0.15  # of the tokens the MLM head scores: the data's, once read
        if data is not None:
            held = open_heldout(data.data)
            self.heldout = self.dataset(data.data, "heldout", run.seed)
            self.masked_share = self.heldout.config.masked_lm_prob
            # The same baseline token as `litebert eval-pretraining`: one rule for both.
            self.baseline_token = commonest_training_token(held)
            if self.config.eval_pair_tasks == "both":
                self.cross_set = draw_eval_set(held, instances=run.eval_instances,
                                               seed=run.seed, batch_size=run.micro_batch_size,
                                               width=held.config.max_seq_length)

    def dataset(self, data: DataManifest, split: str, seed: int) -> PretrainingDataset:
        """The data's pairs (or packed text) with its masks: the MLM targets."""
        return PretrainingDataset(data, split, seed=seed, attention=run_attention(self.run))

    # ---- training ----------------------------------------------------------------------------

    def build(self, config: ModelConfig) -> nn.Module:
        """Pre-training runs without dropout, as in the paper and the official code (whose
        SOP head has none); the exported config keeps classifier_dropout_prob for
        fine-tuning. A recipe that sets it in model_overrides gets what it asks for. A
        backbone that cannot read the run's attention layout is a ConfigError."""
        check_attention(config, run_attention(self.run))
        if "classifier_dropout_prob" not in self.run.model_overrides:
            config = config.replace(classifier_dropout_prob=0.0)
        if self.pair is None and not backbone_class(config).capabilities.pooler:
            return EncoderForMaskedLM(config)  # MLM alone on a backbone without a pooler
        return EncoderForPreTraining(config)

    def start_state(self, config: ModelConfig,
                    sources: Mapping[str, StartSource]) -> dict[str, torch.Tensor]:
        """The module's keys are the canonical ones: the directory's tensors as they are."""
        return one_model_state(sources, type(self))

    def flops_per_token(self, config: ModelConfig, seq_len: int) -> float:
        """The backbone, and the MLM head at the data's masked share (the pair head, one
        H x 2 product per sequence, is left out)."""
        return (encoder_flops_per_token(config, seq_len)
                + mlm_head_flops_per_token(config, self.masked_share))

    def fsdp_units(self, model: nn.Module) -> FsdpUnits:
        """The backbone's own units (its attention and FFN modules)."""
        assert isinstance(model, EncoderForPreTraining | EncoderForMaskedLM)
        return model.backbone.fsdp_units()

    def begin_step(self, step: int) -> None:
        """Nothing: the data's masks are drawn by the loader, keyed per item."""

    def counts(self, batch: Batch) -> torch.Tensor:
        """(P,): masked tokens (the used prediction slots), then sequences (the pair task's
        denominator); nothing is read back to the host."""
        masked = batch["masked_weights"].sum().float()  # ()
        if self.label_key is None:
            return masked[None]
        sequences = torch.full((), batch[self.label_key].numel(), dtype=torch.float32,
                               device=masked.device)
        return torch.stack([masked, sequences])

    def loss_sums(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """(P,): the model's mean losses times their counts. The head scores the batch's
        prediction slots and returns the mean over the used ones (0 when there are none);
        multiplying back costs nothing, where a second cross-entropy over the (B, P, V)
        logits would not."""
        out = model(**batch)
        counts = self.counts(batch)  # (P,)
        mlm = out.loss if isinstance(out, MaskedLMOutput) else out.mlm_loss
        assert mlm is not None  # the batch's prediction slots always give one
        means = [mlm] + ([out.sop_loss] if self.label_key else [])
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
        sums = EvalSums(info.device)
        with evaluating(model):
            for batch in heldout_batches(self.heldout, self.run.eval_instances,
                                         self.run.micro_batch_size, info):
                # The labels path: logits (N, V) at the masked tokens, which add_mlm scores
                # as `eval-pretraining` does (evaluation is not the step that compiles).
                inputs = {k: v for k, v in batch.items() if k not in SLOT_KEYS}
                with amp:
                    out = model(**inputs)
                self._add_batch(sums, out, batch)
        result = self._result(sums.reduce())
        if self.cross_set is not None and self.cross_set.batches:
            result.update(cross_eval_metrics(model, self.cross_set, info, amp))
        return result

    def _add_batch(self, sums: EvalSums, out: Any, batch: Batch) -> None:
        logits = out.logits if isinstance(out, MaskedLMOutput) else out.prediction_logits
        assert logits is not None  # the labels path always scores the masked tokens
        add_mlm(sums, logits, batch["labels"], self.baseline_token)
        if self.label_key:  # logits (B, 2), labels (B,)
            add_pair_task(sums, out.sop_logits, batch[self.label_key])

    def _result(self, s: dict[str, float]) -> dict[str, float]:
        """The metrics from the named sums (all ranks)."""
        result = mlm_metrics(s, prefix="eval_")
        result["eval_loss"] = result["eval_mlm_loss"]
        return with_pair_task(result, s, self.pair)

    @classmethod
    def reads_directory(cls, model: ModelFiles) -> bool:
        """A directory with an MLM head (a pre-training or masked-LM model)."""
        return has_weights(model, *MLM_HEAD)

    @classmethod
    def evaluate_directory(cls, model: ModelFiles, data_dir: Path, *, instances: int,
                           seed: int, batch_size: int, **options: Any) -> dict[str, Any]:
        """MLM, SOP and NSP accuracy on the held-out documents (the paper's Table 5)."""
        unused = sorted(f"--{k} {v}" for k, v in options.items() if v is not None)
        if unused:  # unused, it would suggest that something else was scored
            raise ValueError(f"{', '.join(unused)}: only apply to other objectives' models "
                             f"(a generator to an ELECTRA discriminator); {model.directory} has an "
                             f"MLM head and is scored on MLM, SOP and NSP")
        return evaluate_pretraining(model, data_dir, instances=instances, seed=seed,
                                    batch_size=batch_size)

    @classmethod
    def format_result(cls, result: dict[str, Any]) -> str:
        return format_table(result, TABLE_ROWS, table_notes(result))

    # ---- export ------------------------------------------------------------------------------

    def export(self, model_state: dict[str, torch.Tensor], config: ModelConfig,
               run_dir: Path, out_dir: Path, unroll: bool = False) -> Path:
        """One EncoderForPreTraining directory in the config's family layout (the exported
        config keeps the preset's dropout), the run's tokenizer beside it. A family without
        a pre-training class holding a pair head (ELECTRA, RoBERTa) gets its masked LM in
        its transformers layout, and a trained pair head and pooler are kept beside it in
        litebert's layout (EXTRA_HEADS_NAME): litebert loads and scores them."""
        kept: dict[str, torch.Tensor] = {}
        model: EncoderForPreTraining | EncoderForMaskedLM
        if "EncoderForPreTraining" in family(config.model_type).class_names \
                and backbone_class(config).capabilities.pooler:
            model = EncoderForPreTraining(config)
        else:  # no such class, or a backbone without a pooler (MLM alone, ModernBERT)
            heads = ("sop_classifier.", "backbone.pooler.")
            kept = {k: v for k, v in model_state.items() if k.startswith(heads)}
            model_state = {k: v for k, v in model_state.items() if not k.startswith(heads)}
            model = EncoderForMaskedLM(config)
        model.load_state_dict(model_state)
        model.save_pretrained(out_dir, unroll=unroll)
        if kept and self.pair is not None:  # MLM alone never trains the pair head
            save_extra_heads(out_dir, kept, f"transformers' {config.model_type} has no "
                             f"pre-training class with a {self.pair} head")
        save_tokenizer(run_dir, out_dir)
        return out_dir
