"""ELECTRA: replaced-token detection (Clark et al., 2020) on the litebert backbone.

A small generator (the backbone's encoder at `generator_size` of the discriminator's width,
FFN and heads) fills the masked slots of a batch by sampling from its MLM head; the
discriminator (any config of a backbone that declares capabilities.embed_encode: ALBERT's
sharing and E != H included) learns, for every real token, whether it was replaced. The
backbone's embedding module (ALBERT's token, position and type embeddings and their
LayerNorm) is one module that both read (the official code's tied "electra/embeddings"
scope); the generator's encoder has its own E -> H_G projection. Loss = gen_weight x
generator MLM (mean over slots) + disc_weight x replaced-token detection (mean over real
tokens), 1 and 50 as in the paper; optionally the data's SOP/NSP task on the
discriminator's first token (ours alone; off by default).

The trained module is `ElectraPretraining`: state-dict keys discriminator.* (transformers'
ElectraForPreTraining names under our layout), generator.encoder.*, generator.predictions.*
and pair_head.*; export writes RUN_DIR/export/discriminator and RUN_DIR/export/generator.
Corruption: litebert.objectives.corruption.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import nn

import litebert.objectives.corruption as C
from litebert.config import ConfigError, ModelConfig
from litebert.data.attention_choice import ATTENTIONS
from litebert.data.heldout import commonest_training_token, open_heldout
from litebert.data.loader import LABEL_KEYS, PretrainingDataset
from litebert.data.manifest import DataManifest
from litebert.distributed import DistInfo
from litebert.files import atomic_write_json
from litebert.model import EncoderForMaskedLM
from litebert.model.backbone import Encoder, FsdpUnits, check_attention
from litebert.model.base import PreTrainedModel
from litebert.model.counts import encoder_flops_per_token, mlm_head_flops_per_token
from litebert.model.heads import MaskedLMHead, SentencePairHead, documents
from litebert.model.hub import ModelFiles, save_extra_heads
from litebert.model.rtd import EncoderForReplacedTokenDetection
from litebert.objectives.base import (
    Batch,
    ObjectiveConfig,
    RunSettings,
    StartSource,
    Stateless,
    own_config,
    run_attention,
    save_tokenizer,
)
from litebert.objectives.configs import ElectraConfig
from litebert.objectives.electra_eval import (
    OBJECTIVE_FIELDS_NAME,
    RTD_HEAD,
    RTD_ROWS,
    evaluate_discriminator,
    sharing_backbone,
)
from litebert.objectives.evaluation import (
    EvalSums,
    add_pair_task,
    evaluating,
    format_table,
    has_weights,
    heldout_batches,
    ratio,
    with_pair_task,
)
from litebert.padding import real_tokens

TASK_OF_LABEL = {key: name for name, key in LABEL_KEYS.items()}  # label key -> "sop" / "nsp"
EVAL_STEP = -1  # the corruption key of held-out evaluation: no training step has it


def generator_config(config: ModelConfig, size: float, layers: float) -> ModelConfig:
    """The generator: `size` of the discriminator's width and FFN, a head per 64 dimensions
    (the official rule), `layers` of its depth; same vocabulary, embeddings, sharing."""
    H = max(1, round(config.hidden_size * size))
    L = max(1, round(config.num_hidden_layers * layers))
    groups = config.num_hidden_groups
    if groups == config.num_hidden_layers or L % groups:
        groups = L if groups == config.num_hidden_layers else 1
    return config.replace(hidden_size=H, intermediate_size=4 * H, num_hidden_layers=L,
                          num_attention_heads=max(1, H // 64), num_hidden_groups=groups)


class ElectraGenerator(PreTrainedModel):
    """The generator without embeddings (it reads the discriminator's): the backbone's encoder
    (with its own E -> H_G projection) and MLM head."""

    encoder: Encoder

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.encoder = sharing_backbone(config).build_encoder(config)
        self.predictions = MaskedLMHead(config)
        self.init_weights()


class PairHead(nn.Module):
    """The data's SOP/NSP task on the discriminator: tanh(dense(h[:, 0])) -> 2 classes."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.classifier = SentencePairHead(config.replace(classifier_dropout_prob=0.0))

    def forward(self, h):  # (B, T, H) -> (B, 2)
        return self.classifier(torch.tanh(self.dense(h[:, 0])))


@dataclass(kw_only=True)  # seven fields: named at every call site
class Corrupting:
    """How batches are corrupted (see litebert.objectives.corruption)."""

    mask_prob: float
    mask_id: int
    temperature: float
    data_masks: bool  # the data's masked positions instead of ELECTRA's uniform draw
    max_seq_length: int  # the data's: the number of slots per row follows from it
    seed: int  # the run's: with the step and the row's tokens, the key of its randomness
    max_predictions: int = 20  # the data's max_predictions_per_seq: the slots of data masks

    def slot_count(self) -> int:
        """N, the slots per row: static for a data directory, so one compiled shape."""
        if self.data_masks:
            return self.max_predictions
        return C.slot_count(self.max_seq_length, self.mask_prob)


@dataclass(kw_only=True)  # nine fields: named at every call site
class ElectraOutput:
    """Shapes fixed by the batch's (B, T) and the N slots per row (Corrupting.slot_count)."""

    generator_logits: torch.Tensor  # (B, N, V) at every slot (an unused one's: at position 0)
    targets: torch.Tensor  # (B, N) the original ids at the slots, 0 at an unused slot
    slot_weights: torch.Tensor  # (B, N) float: 1 = a used slot, 0 = unused (not scored)
    generator_sum: torch.Tensor  # () MLM cross-entropy summed over the used slots
    corrupted: torch.Tensor  # (B, T) the discriminator's input
    logits: torch.Tensor  # (B, T) the discriminator's, > 0 = replaced
    replaced: torch.Tensor  # (B, T) float labels, 1 = replaced
    rtd_sum: torch.Tensor  # () BCE summed over real tokens
    pair_logits: torch.Tensor | None  # (B, 2)


class ElectraPretraining(nn.Module):
    """Generator + discriminator with shared embeddings; one forward corrupts and scores."""

    never_masked: torch.Tensor  # (S,) ids never drawn as slots, a buffer
    step: torch.Tensor  # () int64: the optimizer step that keys the corruption, a buffer

    def __init__(self, config: ModelConfig, gen_config: ModelConfig, corrupting: Corrupting,
                 never_masked: list[int], pair_task: bool):
        super().__init__()
        self.discriminator = EncoderForReplacedTokenDetection(config)
        self.generator = ElectraGenerator(gen_config)
        self.pair_head = PairHead(config) if pair_task else None
        self.corrupting = corrupting
        self.register_buffer("never_masked", torch.tensor(never_masked, dtype=torch.long),
                             persistent=False)  # (S,) [CLS], [SEP], [MASK]
        # On the model's device and written in place (ElectraObjective.begin_step): a compiled
        # forward reads it as an input, so a new step is neither a recompile nor a copy.
        self.register_buffer("step", torch.zeros((), dtype=torch.long), persistent=False)

    def slots(self, ids, real, labels, step: int | torch.Tensor) -> C.Slots:
        """(B, N) slots of the original ids (B, T) with real tokens `real` (B, T)."""
        c = self.corrupting
        keys = C.row_keys(ids, real, c.seed, step)  # (B,)
        if c.data_masks:
            return C.data_slots(ids, labels, keys, c.max_predictions)
        candidates = C.maskable(ids, real, self.never_masked)  # (B, T)
        k = C.slots_per_row(real, candidates, c.mask_prob, c.max_seq_length)  # (B,)
        return C.draw_slots(ids, candidates, k, keys, c.mask_prob, c.max_seq_length)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None,
                step: int | torch.Tensor | None = None, document_ids=None,
                **_pair_labels) -> ElectraOutput:
        """Corrupt the batch (keyed by `step`, by default the `step` buffer; see
        corruption.py), run both models. attention_mask None: no row is padded.
        document_ids: both models attend within documents ((B, T)) or run on the real
        tokens only ((N,)), as the run's `attention` lays the batch out."""
        ids = C.original_ids({"input_ids": input_ids, "labels": labels})  # (B, T)
        real = real_tokens({"input_ids": ids, "attention_mask": attention_mask})  # (B, T)
        slots = self.slots(ids, real, labels, self.step if step is None else step)
        backbone = self.discriminator.backbone  # its embeddings are the generator's too
        h, _ = backbone.encode_with(  # (B, T, H_G)
            self.generator.encoder, C.generator_input(ids, slots, self.corrupting.mask_id),
            attention_mask, token_type_ids, document_ids=document_ids)
        picked = h.gather(1, slots.positions[..., None].expand(-1, -1, h.shape[-1]))
        gen_logits = self.generator.predictions(  # (B, N, V)
            picked, backbone.input_embeddings)
        weights = slots.weights  # (B, N)
        gen_sum = (F.cross_entropy(gen_logits.flatten(0, 1).float(), slots.targets.flatten(),
                                   reduction="none") * weights.flatten()).sum()
        sampled = C.sample(gen_logits.flatten(0, 1), slots.keys.flatten(),
                           self.corrupting.temperature).view_as(slots.positions)  # (B, N)
        fake, replaced = C.replace(ids, slots, sampled)
        out = self.discriminator(fake, attention_mask, token_type_ids,
                                 **documents(document_ids))
        # Padding says nothing about replacement: weight 0.
        rtd = F.binary_cross_entropy_with_logits(out.logits.float(), replaced, reduction="none")
        rtd_sum = (rtd * real.float()).sum()
        pair = self.pair_head(out.last_hidden_state) if self.pair_head is not None else None
        return ElectraOutput(generator_logits=gen_logits, targets=slots.targets,
                             slot_weights=weights, generator_sum=gen_sum, corrupted=fake,
                             logits=out.logits, replaced=replaced, rtd_sum=rtd_sum,
                             pair_logits=pair)


class ElectraObjective(Stateless):
    """ELECTRA's generator + discriminator (see the module docstring)."""

    Config: ClassVar[type[ObjectiveConfig]] = ElectraConfig
    sampling: ClassVar[str] = "shuffled"
    attentions: ClassVar[tuple[str, ...]] = ATTENTIONS  # both models read the layout

    def __init__(self, run: RunSettings, data: PretrainingDataset | None = None) -> None:
        self.run = run
        self.config: ElectraConfig = own_config(run, type(self))
        c = self.config
        key = data.label_key if data is not None and c.discriminator_pair_task else None
        self.label_key = key
        self.pair = TASK_OF_LABEL[key] if key else None
        self.parts: tuple[str, ...] = ("generator_mlm", "rtd") + (
            (self.pair,) if self.pair else ())
        self.weights: tuple[float, ...] = (c.gen_weight, c.disc_weight) + (
            (1.0,) if key else ())
        self.heldout: PretrainingDataset | None = None
        self.baseline_token = -1
        self.special: dict[str, int] = {}
        self.max_seq_length = 512
        self.max_predictions = 20  # the data's max_predictions_per_seq (slots of data masks)
        self.step = 0  # keys this step's corruption (begin_step)
        # The models this objective built: begin_step writes the step into their buffer.
        self.models: weakref.WeakSet[ElectraPretraining] = weakref.WeakSet()
        self._never: dict[torch.device, torch.Tensor] = {}  # never_masked() per device
        # The generator's shape, when it is known rather than derived from the config (a
        # generator directory read back by eval-pretraining).
        self.generator_shape: ModelConfig | None = None
        if data is not None:
            self.special = dict(data.special_ids)  # the data's tokenizer's ids
            self.max_seq_length = data.config.max_seq_length
            self.max_predictions = data.masking.max_predictions_per_seq
            self.heldout = self.dataset(data.data, "heldout", run.seed)
            self.baseline_token = commonest_training_token(open_heldout(data.data))

    def dataset(self, data: DataManifest, split: str, seed: int) -> PretrainingDataset:
        """The original ids (ELECTRA draws its own slots), or with generator_masking "data"
        the data's masked items (their masks are the slots)."""
        return PretrainingDataset(data, split, seed=seed,
                                  masked=self.config.generator_masking == "data",
                                  attention=run_attention(self.run))

    # ---- training ----------------------------------------------------------------------------

    def generator_config(self, config: ModelConfig) -> ModelConfig:
        if self.generator_shape is not None:
            return self.generator_shape
        return generator_config(config, self.config.generator_size,
                                self.config.generator_layers)

    def never_masked(self) -> list[int]:
        return [self.special[k] for k in ("cls", "sep", "mask") if k in self.special]

    def build(self, config: ModelConfig) -> nn.Module:
        """Generator and discriminator on a backbone that declares embed_encode: the
        generator reads the discriminator's embedding module and runs an encoder of its own
        (ConfigError naming the backbone for any other, or for an attention layout it does
        not read)."""
        sharing_backbone(config)
        check_attention(config, run_attention(self.run))
        c = self.config
        corrupting = Corrupting(mask_prob=c.mask_prob, mask_id=self.special.get("mask", -1),
                                temperature=c.temperature,
                                data_masks=c.generator_masking == "data",
                                max_seq_length=self.max_seq_length, seed=self.run.seed,
                                max_predictions=self.max_predictions)
        model = ElectraPretraining(config, self.generator_config(config), corrupting,
                                   self.never_masked(), pair_task=self.label_key is not None)
        model.step.fill_(self.step)
        self.models.add(model)
        return model

    def start_state(self, config: ModelConfig,
                    sources: Mapping[str, StartSource]) -> dict[str, torch.Tensor]:
        """The "model" directory is the discriminator (any family's encoder; its heads, if it
        has no RTD head, go unused), the "generator" one (a masked LM) gives the generator's
        encoder and MLM head: the inverse of `export`. The generator's own embeddings are
        not read (it shares the discriminator's), so they come back under keys the module
        lacks and are named as unused. A generator of another shape than
        objective.generator_size / generator_layers build is a ConfigError saying so."""
        mapped = {f"discriminator.{k}": v for k, v in sources["model"].state.items()}
        if "generator" not in sources:
            return mapped
        self._check_generator(config, sources["generator"].config)
        encoder = f"backbone.{sharing_backbone(config).encoder_name}."
        for key, value in sources["generator"].state.items():
            if key.startswith(encoder):
                mapped[f"generator.encoder.{key[len(encoder):]}"] = value
            elif key.startswith("predictions."):
                mapped[f"generator.{key}"] = value
            else:
                mapped[f"generator-directory.{key}"] = value
        return mapped

    def _check_generator(self, config: ModelConfig, given: ModelConfig) -> None:
        built = self.generator_config(config)
        fields = ("hidden_size", "num_hidden_layers", "num_attention_heads",
                  "intermediate_size", "embedding_size")
        differ = [f"{k} {getattr(given, k)} there, {getattr(built, k)} here" for k in fields
                  if getattr(given, k) != getattr(built, k)]
        if differ:
            size = given.hidden_size / config.hidden_size
            layers = given.num_hidden_layers / config.num_hidden_layers
            raise ConfigError(
                f"--generator-from: the generator is not the one objective.generator_size="
                f"{self.config.generator_size} and generator_layers="
                f"{self.config.generator_layers} build ({'; '.join(differ)}); for its width "
                f"and depth set objective.generator_size={size:.6g} and "
                f"objective.generator_layers={layers:.6g} (the FFN is 4 x and the heads 1 per "
                f"64 of its width, as ELECTRA's generators have)")

    def begin_step(self, step: int) -> None:
        """The corruption of this optimizer step is keyed by its number, written into the
        step buffer of the models built here (in place, on their device: no host sync, and
        a compiled forward reads it as an input, so no recompile)."""
        self.step = step
        for model in self.models:
            model.step.fill_(step)

    def flops_per_token(self, config: ModelConfig, seq_len: int) -> float:
        """Discriminator (backbone + its H x H and H x 1 head at every token) and generator
        (its backbone + its MLM head at mask_prob of the tokens)."""
        H, gen = config.hidden_size, self.generator_config(config)
        head = 6.0 * (H * H + H)
        return (encoder_flops_per_token(config, seq_len) + head
                + encoder_flops_per_token(gen, seq_len)
                + mlm_head_flops_per_token(gen, self.config.mask_prob))

    def fsdp_units(self, model: nn.Module) -> FsdpUnits:
        """The attention and FFN modules of both encoders (the embeddings stay in the root:
        both models read them)."""
        assert isinstance(model, ElectraPretraining)
        return (model.generator.encoder.fsdp_units()
                + model.discriminator.backbone.fsdp_units())

    def never_on(self, device: torch.device) -> torch.Tensor:
        """(S,) never_masked() on `device`, made once (not copied to the device every call)."""
        if device not in self._never:
            self._never[device] = torch.tensor(self.never_masked(), dtype=torch.long,
                                               device=device)
        return self._never[device]

    def counts(self, batch: Batch) -> torch.Tensor:
        """(P,): generator slots, real tokens, then sequences; no randomness, so they are known
        before the forward that draws the slots."""
        real = real_tokens(batch)  # (B, T)
        if self.config.generator_masking == "data":
            slots = C.data_slot_counts(batch["labels"], self.max_predictions).sum()
        else:
            ids = C.original_ids(batch)
            candidates = C.maskable(ids, real, self.never_on(ids.device))
            slots = C.slots_per_row(real, candidates, self.config.mask_prob,
                                    self.max_seq_length).sum()
        parts = [slots.float(), real.sum().float()]
        if self.label_key:
            parts.append(torch.full_like(parts[0], batch[self.label_key].numel()))
        return torch.stack(parts)

    def loss_sums(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """(P,): generator MLM and RTD sums (and the pair task's); the step is the model's
        buffer (begin_step), so a compiled forward serves every step."""
        out = model(**batch)
        sums = [out.generator_sum, out.rtd_sum]
        if self.label_key:
            sums.append(F.cross_entropy(out.pair_logits.float(), batch[self.label_key],
                                        reduction="sum"))
        return torch.stack(sums)

    # ---- evaluation --------------------------------------------------------------------------

    def evaluate(self, model: nn.Module, info: DistInfo,
                 amp: AbstractContextManager[Any]) -> dict[str, float]:
        """Generator MLM and discriminator RTD metrics on held-out instances, with baselines.
        Every evaluation of a run corrupts with the same key (step -1), so it scores the same
        slots; what changes is what the generator samples there."""
        if self.heldout is None or len(self.heldout) < info.world_size:
            return {}
        sums = EvalSums(info.device)
        with evaluating(model):
            for batch in heldout_batches(self.heldout, self.run.eval_instances,
                                         self.run.micro_batch_size, info):
                with amp:
                    out = model(**batch, step=EVAL_STEP)
                self._add_batch(sums, out, batch)
        return self._result(sums.reduce())

    def _add_batch(self, sums: EvalSums, out: ElectraOutput, batch: Batch) -> None:
        """Evaluation may read shapes back: it sums over the used slots and real tokens
        alone, as it always did, so its losses keep their bits (the training sums weight
        the unused ones 0, equal to ~1e-7)."""
        real = real_tokens(batch).bool()  # (B, T)
        called = (out.logits > 0)[real]  # (R,)
        truth = out.replaced[real]  # (R,) float
        used = out.slot_weights > 0  # (B, N)
        logits, t = out.generator_logits[used].float(), out.targets[used]  # (M, V), (M,)
        rtd_loss = F.binary_cross_entropy_with_logits(out.logits[real].float(), truth,
                                                      reduction="sum")
        truth = truth.bool()
        sums.add(gen_loss=F.cross_entropy(logits, t, reduction="sum"),
                 gen_correct=(logits.argmax(-1) == t).sum(),
                 gen_baseline=(t == self.baseline_token).sum(), gen_slots=t.numel(),
                 rtd_loss=rtd_loss, rtd_correct=(called == truth).sum(),
                 real_tokens=truth.numel(), replaced=truth.sum(), called=called.sum(),
                 caught=(called & truth).sum())
        if self.label_key and out.pair_logits is not None:
            add_pair_task(sums, out.pair_logits, batch[self.label_key])

    def _result(self, s: dict[str, float]) -> dict[str, float]:
        replaced = ratio(s["replaced"], s["real_tokens"])
        result = {"eval_generator_mlm_loss": ratio(s["gen_loss"], s["gen_slots"]),
                  "eval_generator_mlm_accuracy": ratio(s["gen_correct"], s["gen_slots"]),
                  "eval_generator_mlm_baseline_accuracy": ratio(s["gen_baseline"],
                                                                s["gen_slots"]),
                  "eval_rtd_loss": ratio(s["rtd_loss"], s["real_tokens"]),
                  "eval_rtd_accuracy": ratio(s["rtd_correct"], s["real_tokens"]),
                  "eval_rtd_precision": ratio(s["caught"], s["called"]),
                  "eval_rtd_recall": ratio(s["caught"], s["replaced"]),
                  "eval_replaced_fraction": replaced,
                  "eval_rtd_baseline_accuracy": 1 - replaced}  # every token called original
        result["eval_loss"] = (self.config.gen_weight * result["eval_generator_mlm_loss"]
                               + self.config.disc_weight * result["eval_rtd_loss"])
        return with_pair_task(result, s, self.pair)

    @classmethod
    def reads_directory(cls, model: ModelFiles) -> bool:
        """An ELECTRA discriminator: a replaced-token detection head."""
        return has_weights(model, *RTD_HEAD)

    @classmethod
    def evaluate_directory(cls, model: ModelFiles, data_dir: Path, *, instances: int,
                           seed: int, batch_size: int, **options: Any) -> dict[str, Any]:
        """Replaced-token detection of a discriminator directory, its input corrupted by its
        generator (`generator=DIR`, by default the export's sibling ../generator)."""
        return evaluate_discriminator(
            cls, model, data_dir, generator=options.get("generator"),
            instances=instances, seed=seed, batch_size=batch_size)

    @classmethod
    def format_result(cls, result: dict[str, Any]) -> str:
        notes = [f"{result['rtd_instances']:,} held-out instances, corrupted by the "
                 f"generator {result['generator']}",
                 "ELECTRA discriminator: no MLM head, so MLM, SOP and NSP are not scored"]
        return format_table(result, RTD_ROWS, notes)

    # ---- export ------------------------------------------------------------------------------

    def export(self, model_state: dict[str, torch.Tensor], config: ModelConfig,
               run_dir: Path, out_dir: Path, unroll: bool = False) -> Path:
        """out_dir/discriminator (ElectraForPreTraining's layout when the config has one) and
        out_dir/generator (ElectraForMaskedLM's: the shared embeddings copied in), each with
        the run's tokenizer. A discriminator with ALBERT's sharing is written in ALBERT's
        layout (a warning says so) unless `unroll`. Beside the discriminator: the objective's
        fields (OBJECTIVE_FIELDS_NAME: eval-pretraining corrupts as the run did) and a
        trained pair head, ours alone, in our layout (litebert_heads.safetensors)."""
        def part(prefix: str) -> dict[str, torch.Tensor]:
            return {k[len(prefix):]: v for k, v in model_state.items() if k.startswith(prefix)}

        discriminator = EncoderForReplacedTokenDetection(config)
        discriminator.load_state_dict(part("discriminator."))
        generator = EncoderForMaskedLM(self.generator_config(config))
        names = sharing_backbone(config)  # where its two modules' keys are in a backbone
        embeddings = {f"backbone.{names.embeddings_name}.{k}": v
                      for k, v in part(f"discriminator.backbone.{names.embeddings_name}.").items()}
        encoder = {f"backbone.{names.encoder_name}.{k}": v
                   for k, v in part("generator.encoder.").items()}
        head = {f"predictions.{k}": v for k, v in part("generator.predictions.").items()}
        generator.load_state_dict({**embeddings, **encoder, **head})
        for name, model in (("discriminator", discriminator), ("generator", generator)):
            model.save_pretrained(out_dir / name, unroll=unroll)
            save_tokenizer(run_dir, out_dir / name)
        fields = {k: v for k, v in dataclasses.asdict(self.config).items() if k != "name"}
        atomic_write_json(out_dir / "discriminator" / OBJECTIVE_FIELDS_NAME, fields)
        pair = {k: v for k, v in model_state.items() if k.startswith("pair_head.")}
        if pair:
            save_extra_heads(out_dir / "discriminator", pair, "ELECTRA's discriminator has no "
                             "sentence-pair head in transformers")
        return out_dir
