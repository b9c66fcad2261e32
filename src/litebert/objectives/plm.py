"""Permutation language modelling: XLNet's objective (Yang et al., 2019) on any backbone with
two streams (capabilities.two_stream: models/xlnet/model.py's, ALBERT-XLNet included, with memories;
models/modernbert/model.py's, without).

Each batch row reads one stream of text that continues from step to step (sampling
"streams"): a window is `reuse_len` tokens carried over from the previous window, then
A <sep> B <sep> <cls> (litebert.objectives.plm_data). About 1/K of each window's tokens are
targets (n-gram spans over whole words), predicted in a random factorisation order: the
query stream of each target sees the non-targets and the targets before it in that order,
never itself. Only the targets' query stream is computed and only their logits
(EncoderForPermutationLM with `target_positions`). Loss = mean cross-entropy over the targets
of the global batch.

Memories: every layer caches the states of the window's reused part, and the next window of
the same row attends to them (Transformer-XL recurrence). They start as zeros of `mem_len`
rows, as in the official code, so every step has the same shapes, and are kept in the dtype
the forward computes in (bf16 under a bf16 autocast: half of fp32's bytes, and the model reads
them in bf16 anyway). They are this objective's state, one (L, M, B, H) set per micro-batch of
a step, but checkpoints leave them out unless `checkpoint_memories` is set: at the paper's
scale they outweigh the model and optimizer many times over (docs/pretraining.md), and state
per rank ties a resume to the number of processes. A resume without them starts them at zero,
as the first step does: each stream loses the memory's context for the first window (and the
part of it that window does not refill for the next); with them a killed run resumes bit for
bit.

"+NSP" (objective.nsp, the paper's Table 6 ablation; XLNet trains without it): a pair head
on the <cls> summary also predicts the data's next_sentence_label (B from a random place),
its loss the mean over sequences added to the PLM's; evaluations add eval_nsp_accuracy and
eval_nsp_loss, and the export keeps the head beside the XLNetLMHeadModel weights
(litebert_heads.safetensors), which transformers' class cannot hold.

Metrics: plm_loss (and nsp_loss) during training; eval_plm_loss, eval_plm_accuracy and
eval_plm_baseline_accuracy (the commonest training token guessed at every target) on the
held-out windows, read in stream order with memories as in training, from the same seed at
every evaluation. The export is an EncoderForPermutationLM directory: transformers'
XLNetLMHeadModel layout for an XLNet config, litebert's for an ALBERT-XLNet or a ModernBERT.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from litebert.config import ConfigError, ModelConfig, read_json_object
from litebert.data.heldout import HeldoutDocuments, commonest_training_token, open_heldout
from litebert.data.integrity import DataError
from litebert.data.loader import StreamSampler
from litebert.data.manifest import DataManifest
from litebert.distributed import DistInfo, rank_and_world
from litebert.files import atomic_write_json
from litebert.model import EncoderForPermutationLM
from litebert.model.backbone import FsdpUnits, backbone_class, two_stream_class
from litebert.model.hub import ModelFiles, extra_heads, save_extra_heads
from litebert.models.xlnet.model import compute_dtype
from litebert.objectives.base import (
    Batch,
    ObjectiveConfig,
    RunSettings,
    StartSource,
    TrainingData,
    one_model_state,
    own_config,
    run_replays_cuda_graphs,
    save_tokenizer,
)
from litebert.objectives.configs import PLMConfig
from litebert.objectives.evaluation import (
    EvalSums,
    add_pair_task,
    evaluate_alone,
    evaluating,
    format_table,
    has_weights,
    heldout_for,
    ratio,
    with_pair_task,
)
from litebert.objectives.plm_data import PLMDataset, perm_mask

IGNORE = -100
LM_HEAD = ("lm_loss.bias",)  # the key a directory with a permutation-LM head holds
PAIR_HEAD = ("backbone.pooler.", "sop_classifier.")  # the "+NSP" pair head's keys
OBJECTIVE_FIELDS_NAME = "litebert_objective.json"  # the run's PLM fields, beside an export
# What the objective asks of its backbone (capabilities.two_stream), for the error without it.
NEEDS = "objective plm predicts each target from a query stream in a factorisation order"
TABLE_ROWS = (("plm_accuracy", "plm_baseline_accuracy"), ("plm_loss", None))
NSP_ROWS = (("nsp_accuracy", "nsp_baseline_accuracy"), ("nsp_loss", None))

log = logging.getLogger("litebert")


class PLMObjective:
    """XLNet's permutation LM (see the module docstring)."""

    Config: ClassVar[type[ObjectiveConfig]] = PLMConfig
    attentions: ClassVar[tuple[str, ...]] = ("full",)  # two streams mask by permutation

    def __init__(self, run: RunSettings, data: TrainingData | HeldoutDocuments | None = None
                 ) -> None:
        self.run = run
        self.config: PLMConfig = own_config(run, type(self))
        self.sampling = "mirrored-streams" if self.config.bi_data else "streams"
        self.parts: tuple[str, ...] = ("plm", "nsp") if self.config.nsp else ("plm",)
        self.weights: tuple[float, ...] = (1.0,) * len(self.parts)
        if self.config.bi_data and run.micro_batch_size % 2:
            raise ConfigError(f"objective.bi_data reads half of each micro-batch backwards: "
                              f"micro_batch_size={run.micro_batch_size} must be even")
        self.mems: list[tuple[torch.Tensor, ...] | None] = []  # one per micro-batch group
        # A CUDA graph's next replay overwrites its outputs: memories kept then are copies.
        self.copy_memories = run_replays_cuda_graphs(run)
        self.group = 0  # the micro-batch of this step that loss_sums sees next
        self.mem_len = 0  # the model's, known once built
        self.shape = (0, 0, 0)  # (layer positions, mem_len, H): one memory per layer applied
        self.heldout: PLMDataset | None = None
        self.reuse_len = 0  # the data's: the window's first tokens, whose states are memory
        self.baseline_token = -1
        if data is not None:
            self.heldout = self.dataset(data.data, "heldout", run.seed)
            self.reuse_len = self.heldout.reuse_len
            self.baseline_token = commonest_training_token(open_heldout(data.data))

    def dataset(self, data: DataManifest, split: str, seed: int) -> PLMDataset:
        """Windows of the data's streams (`--packing streams`) with targets and orders drawn
        per epoch."""
        c = self.config
        return PLMDataset(data, split, seed=seed, mask_alpha=c.prediction_k,
                          perm_size=c.perm_size or None, max_span=c.max_span,
                          bi_data=c.bi_data)

    # ---- training ----------------------------------------------------------------------------

    def model_config(self, config: ModelConfig, reuse_len: int | None) -> ModelConfig:
        """The config trained (`trained_fields`): the data's reuse_len, the objective's
        bi_data, and a pooler for the pair head with nsp."""
        return config.replace(**trained_fields(config, reuse_len, self.config.bi_data,
                                               self.config.nsp))

    def build(self, config: ModelConfig) -> nn.Module:
        reuse = self.heldout.reuse_len if self.heldout is not None \
            else config.backbone_fields().get("reuse_len")
        return EncoderForPermutationLM(self.adopt(self.model_config(config, reuse)))

    def adopt(self, config: ModelConfig) -> ModelConfig:
        """Check that `config`'s backbone can be trained so and take its memory shape."""
        backbone = two_stream_class(config, NEEDS)
        memory = config.backbone_fields()  # a two-stream backbone's: XLNet's memory fields
        mem_len = memory.get("mem_len") or 0
        if mem_len and not backbone.capabilities.memories:
            raise ConfigError(f"mem_len={mem_len}: backbone {config.backbone!r} keeps "
                              f"no memories (capabilities.memories is False); set mem_len 0")
        self.mem_len = mem_len
        self.reuse_len = memory.get("reuse_len") or self.reuse_len
        self.shape = (config.num_layer_positions, self.mem_len, config.hidden_size)
        return config

    def start_state(self, config: ModelConfig,
                    sources: Mapping[str, StartSource]) -> dict[str, torch.Tensor]:
        """EncoderForPermutationLM's keys are the canonical ones: the directory's as they are."""
        return one_model_state(sources, type(self))

    def flops_per_token(self, config: ModelConfig, seq_len: int) -> float:
        """The content stream over every token, and per target (1/K of the tokens) the
        query stream and the LM head (its H->E projection when E < H, then E x V)."""
        backbone = two_stream_class(config, NEEDS)
        per_target = 6.0 * config.embedding_size * config.vocab_size
        if config.embedding_size != config.hidden_size:
            per_target += 6.0 * config.hidden_size * config.embedding_size
        per_target += backbone.query_stream_flops_per_target(config, seq_len)
        return backbone.flops_per_token(config, seq_len) + per_target / self.config.prediction_k

    def fsdp_units(self, model: nn.Module) -> FsdpUnits:
        assert isinstance(model, EncoderForPermutationLM)
        return model.backbone.fsdp_units()

    def begin_step(self, step: int) -> None:
        self.group = 0

    def counts(self, batch: Batch) -> torch.Tensor:
        """(P,): the targets of this micro-batch (padded target slots weigh 0), then with
        nsp its sequences."""
        targets = batch["target_weights"].sum().float()  # ()
        if not self.config.nsp:
            return targets[None]
        sequences = torch.full((), batch["input_ids"].shape[0], dtype=torch.float32,
                               device=targets.device)
        return torch.stack((targets, sequences))

    def loss_sums(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """(P,): the cross-entropy summed over the micro-batch's targets (and with nsp over
        its sequences); the micro-batch's memories are read and replaced."""
        group, self.group = self.group, self.group + 1
        dtype = memory_dtype(batch["input_ids"].device)
        out = self._forward(model, batch, self._memories(group, batch, dtype))
        if self.mem_len:
            self.mems[group] = self.kept(out.mems, dtype)
        plm = out.loss.float() * batch["target_weights"].sum().float().clamp(min=1)
        if not self.config.nsp:
            return plm[None]
        pair = F.cross_entropy(out.sop_logits.float(), batch["next_sentence_label"],
                               reduction="sum")
        return torch.stack((plm, pair))

    def _forward(self, model: nn.Module, batch: Batch, mems: tuple[torch.Tensor, ...] | None):
        """The model on a batch's targets: logits (B, P, V), mean loss, new memories."""
        order = perm_mask(batch["perm_rank"], batch["is_target"], batch["is_functional"],
                          self.reuse_len)  # (B, T, T)
        labels = batch["target_ids"].masked_fill(batch["target_weights"] == 0, IGNORE)
        return model(batch["input_ids"], token_type_ids=batch["token_type_ids"],
                     perm_mask=order, target_positions=batch["target_positions"], mems=mems,
                     use_mems=bool(self.mem_len), labels=labels)

    def kept(self, mems: tuple[torch.Tensor, ...], dtype: torch.dtype
             ) -> tuple[torch.Tensor, ...]:
        """New memories (M, B, H) as the next window reads them, in `dtype`: copies under
        CUDA graphs (the next replay would overwrite the outputs themselves), else the
        outputs (cast where the last layer's input came out in another dtype). The model
        has detached them already: no gradient crosses windows."""
        return tuple(m.to(dtype, copy=self.copy_memories) for m in mems)

    def _memories(self, group: int, batch: Batch, dtype: torch.dtype
                  ) -> tuple[torch.Tensor, ...] | None:
        """Group `group`'s memories: zeros of (mem_len, B, H) per layer at the start, as the
        official code, so every step has the same shapes."""
        if not self.mem_len:
            return None
        while len(self.mems) <= group:
            self.mems.append(None)
        mems, device = self.mems[group], batch["input_ids"].device
        if mems is None:
            B = batch["input_ids"].shape[0]
            mems = self.mems[group] = zero_memories(self.shape, B, device, dtype)
        elif mems[0].device != device or mems[0].dtype != dtype:  # restored from a checkpoint
            mems = self.mems[group] = tuple(m.to(device, dtype) for m in mems)
        return mems

    # ---- evaluation --------------------------------------------------------------------------

    def evaluate(self, model: nn.Module, info: DistInfo,
                 amp: AbstractContextManager[Any]) -> dict[str, float]:
        """eval_plm_* on the first eval_instances held-out windows (all ranks)."""
        rows = self.run.micro_batch_size
        if self.heldout is None or len(self.heldout) < rows * info.world_size:
            return {}  # every rank must score as many batches
        return _PLMEvaluation(self, self.heldout, self.run.eval_instances, rows).run(
            model, info, amp)

    @classmethod
    def reads_directory(cls, model: ModelFiles) -> bool:
        """A directory with a permutation-LM head (an XLNetLMHeadModel or ours)."""
        return has_weights(model, *LM_HEAD)

    @classmethod
    def evaluate_directory(cls, model: ModelFiles, data_dir: Path, *, instances: int,
                           seed: int, batch_size: int, **options: Any) -> dict[str, Any]:
        """PLM accuracy and loss of an exported directory on the data's held-out windows,
        with the objective fields its run recorded (the defaults where none are)."""
        unused = sorted(f"--{k} {v}" for k, v in options.items() if v is not None)
        if unused:
            raise ValueError(f"{', '.join(unused)}: do not apply to a permutation-LM model "
                             f"({model.directory})")
        model_dir = model.directory
        held = heldout_for(model, data_dir)
        settings = _Settings(seed, batch_size, instances, recorded_fields(model_dir), {})
        objective = cls(settings, held)
        # A "+NSP" run's pair head is read back from beside the weights when it is there.
        pair = settings.objective.nsp and bool(extra_heads(model_dir, "sop_classifier."))
        objective.config = dataclasses.replace(objective.config, nsp=pair)
        lm = EncoderForPermutationLM.from_pretrained(model_dir, files=model, use_pooler=pair)
        objective.adopt(lm.config)
        metrics = evaluate_alone(objective, lm)
        if not metrics:
            raise DataError(f"{held.directory}: fewer held-out windows than one batch of "
                            f"{batch_size}; lower --batch-size or rebuild with a larger "
                            f"--heldout-fraction")
        return {k.removeprefix("eval_"): v for k, v in metrics.items() if k != "eval_loss"}

    @classmethod
    def format_result(cls, result: dict[str, Any]) -> str:
        rows = TABLE_ROWS + (NSP_ROWS if "nsp_accuracy" in result else ())
        return format_table(result, rows, [f"{int(result['plm_targets'])} held-out "
                                           "targets, memories as in training"])

    # ---- export ------------------------------------------------------------------------------

    def export(self, model_state: dict[str, torch.Tensor], config: ModelConfig,
               run_dir: Path, out_dir: Path, unroll: bool = False) -> Path:
        """One EncoderForPermutationLM directory (transformers' XLNetLMHeadModel layout for an
        XLNet config) with the run's tokenizer and PLM fields. bi_data is a training
        arrangement of the batch: the exported config has it off, as fine-tuning wants. The
        "+NSP" pair head (pooler and classifier) is kept beside the weights: no transformers
        XLNet class holds it, and the config stays one that transformers reads."""
        reuse = self.heldout.reuse_len if self.heldout is not None \
            else config.backbone_fields().get("reuse_len")
        pair = {k: v for k, v in model_state.items() if k.startswith(PAIR_HEAD)}
        model = EncoderForPermutationLM(config.replace(**trained_fields(config, reuse, False,
                                                                       False)))
        model.load_state_dict({k: v for k, v in model_state.items() if k not in pair})
        model.save_pretrained(out_dir, unroll=unroll)
        if pair:
            save_extra_heads(out_dir, pair, "the '+NSP' ablation's pair head, which "
                             "transformers' XLNetLMHeadModel has no place for")
        save_tokenizer(run_dir, out_dir)
        atomic_write_json(out_dir / OBJECTIVE_FIELDS_NAME, dataclasses.asdict(self.config))
        return out_dir

    # ---- state -------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, torch.Tensor]:
        """With checkpoint_memories, every group's memories, (L, M, B, H) each, on the CPU
        in their dtype; else nothing (the checkpoint gets no file of this objective's)."""
        if not self.config.checkpoint_memories:
            return {}
        return {f"mems.{g}": torch.stack(m).cpu() for g, m in enumerate(self.mems)
                if m is not None}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Called on resume only: the saved memories with checkpoint_memories, else none
        (they start at zero, which the log says once)."""
        groups = sorted(int(k.split(".")[1]) for k in state if k.startswith("mems."))
        unknown = sorted(k for k in state if not k.startswith("mems."))
        if unknown:
            raise ValueError(f"PLMObjective: the checkpoint holds {', '.join(unknown)}, which "
                             f"this objective does not carry")
        self.mems = []
        if not (groups and self.config.checkpoint_memories):
            self._note_lost_memories(bool(groups))
            return
        self.mems = [None] * (max(groups) + 1)
        for g in groups:
            self.mems[g] = tuple(check_rows(state[f"mems.{g}"], self.run.micro_batch_size))

    def _note_lost_memories(self, saved: bool) -> None:
        """One line on rank 0: a resume without memories reads one window less context."""
        if not self.mem_len or rank_and_world()[0] != 0:
            return
        why = ("objective.checkpoint_memories is false here" if saved else
               "the checkpoint holds none: objective.checkpoint_memories was false")
        log.info("resumed without XLNet memories (%s): the first window of each stream reads "
                 "zeros, as at the start of the run", why)


def trained_fields(config: ModelConfig, reuse_len: int | None, bi_data: bool,
                   nsp: bool) -> dict[str, Any]:
    """The fields a PLM model of `config` is built with: use_pooler for the "+NSP" pair head,
    and the backbone's own fields that this objective sets, where its config has them:
    XLNet's reuse_len (the part of a window whose states become memory) and bi_data,
    ModernBERT's query_stream (its mask_emb). ConfigError for what the backbone lacks."""
    own = config.backbone_fields()
    if nsp and not backbone_class(config).capabilities.pooler:
        raise ConfigError(f"objective.nsp=true predicts from the backbone's pooler, which "
                          f"backbone {config.backbone!r} has not (capabilities.pooler is "
                          f"False): set objective.nsp false")
    if bi_data and "bi_data" not in own:
        raise ConfigError(f"objective.bi_data=true needs a backbone with a bi_data field "
                          f"(e.g. xlnet), and backbone {config.backbone!r} has none: set "
                          f"objective.bi_data false")
    wanted = {"reuse_len": reuse_len, "bi_data": bi_data, "query_stream": True}
    return {**{k: v for k, v in wanted.items() if k in own}, "use_pooler": nsp}


def zero_memories(shape: tuple[int, int, int], rows: int, device: torch.device,
                  dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, ...]:
    """One (M, B, H) tensor of zeros per layer position: the memories before the first window."""
    layers, mem_len, hidden = shape
    return tuple(torch.zeros(mem_len, rows, hidden, device=device, dtype=dtype)
                 for _ in range(layers))


def memory_dtype(device: torch.device) -> torch.dtype:
    """The dtype memories are kept in: the one the forward computes in. The loop runs
    loss_sums and evaluate inside the run's autocast (bf16 when its precision resolves to
    bf16, fp16 under fp16, none under fp32), so that autocast's dtype is the run's compute
    dtype; this package sits below litebert.train and does not resolve precision itself."""
    return compute_dtype(device, torch.float32)


def check_rows(mems: torch.Tensor, rows: int) -> tuple[torch.Tensor, ...]:
    """Saved memories (L, M, B, H) as one (M, B, H) tensor per layer; B must be this run's
    micro-batch, whose rows read the streams they were saved for."""
    if mems.shape[2] != rows:
        raise ValueError(f"the checkpoint's XLNet memories are for micro-batches of "
                         f"{mems.shape[2]} rows, this run's have {rows}: resume with "
                         f"micro_batch_size={mems.shape[2]}, or with "
                         f"objective.checkpoint_memories=false to start them at zero")
    return tuple(mems.unbind(0))


class _PLMEvaluation:
    """Held-out windows in stream order, `rows` streams read side by side with memories, the
    first `instances` windows; the same windows, targets and orders at every call."""

    def __init__(self, objective: PLMObjective, data: PLMDataset, instances: int, rows: int):
        self.objective, self.data, self.instances, self.rows = objective, data, instances, rows

    def batches(self, info: DistInfo):
        mirrored = self.objective.sampling == "mirrored-streams"
        sampler = StreamSampler(len(self.data), info.rank, info.world_size, self.rows,
                                mirrored=mirrored)
        order = list(sampler)
        steps = min(len(order) // self.rows,
                    -(-self.instances // (self.rows * info.world_size)))
        self.data.set_epoch(0)
        for s in range(steps):
            items = [self.data[i] for i in order[s * self.rows:(s + 1) * self.rows]]
            yield {k: v.to(info.device) for k, v in self.data.collate(items).items()}

    def run(self, model: nn.Module, info: DistInfo, amp: AbstractContextManager[Any]):
        objective, sums = self.objective, EvalSums(info.device)
        mems = None
        with evaluating(model):
            for batch in self.batches(info):
                with amp:  # memories in the dtype training keeps them in
                    dtype = memory_dtype(info.device)
                    if objective.mem_len and mems is None:
                        mems = zero_memories(objective.shape, self.rows, info.device, dtype)
                    out = objective._forward(model, batch, mems)
                mems = objective.kept(out.mems, dtype) if objective.mem_len else None
                add_plm(sums, out.logits, batch, objective.baseline_token)
                if objective.config.nsp:
                    add_pair_task(sums, out.sop_logits, batch["next_sentence_label"])
        return plm_metrics(sums.reduce())


def add_plm(sums: EvalSums, logits: torch.Tensor, batch: Batch, baseline_token: int) -> None:
    """One batch's target figures: logits (B, P, V) at the target slots."""
    weights = batch["target_weights"].flatten()  # (B * P,)
    target = batch["target_ids"].flatten()
    logits = logits.flatten(0, 1).float()  # (B * P, V)
    loss = F.cross_entropy(logits, target, reduction="none")
    sums.add(plm_loss=(loss * weights).sum(),
             plm_correct=((logits.argmax(-1) == target) * weights).sum(),
             plm_baseline=((target == baseline_token) * weights).sum(),
             plm_targets=weights.sum())


def plm_metrics(s: dict[str, float]) -> dict[str, float]:
    if not s:
        return {}
    loss = ratio(s["plm_loss"], s["plm_targets"])
    metrics = {"eval_plm_loss": loss, "eval_loss": loss,
               "eval_plm_accuracy": ratio(s["plm_correct"], s["plm_targets"]),
               "eval_plm_baseline_accuracy": ratio(s["plm_baseline"], s["plm_targets"]),
               "eval_plm_targets": s["plm_targets"]}
    return with_pair_task(metrics, s, "nsp" if "pair_count" in s else None)


@dataclass
class _Settings:
    """A run's settings as eval-pretraining gives them (RunSettings)."""

    seed: int
    micro_batch_size: int
    eval_instances: int
    objective: Any
    model_overrides: dict[str, Any]


def recorded_fields(model_dir: Path) -> PLMConfig:
    """The PLM fields the directory's run trained with (its export records them), else the
    defaults (a directory from transformers)."""
    path = model_dir / OBJECTIVE_FIELDS_NAME
    recorded = read_json_object(path) if path.is_file() else {}
    known = {f.name for f in dataclasses.fields(PLMConfig)}
    return PLMConfig(**{k: v for k, v in recorded.items() if k in known and k != "name"})
