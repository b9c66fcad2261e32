"""Pre-training evaluation on held-out documents: the paper's cross evaluation.

- `evaluate_pretraining`: any pre-trained model on any data directory, as in the paper's
  Table 5: MLM, SOP and NSP accuracy of one model, whatever inter-sentence loss it was
  trained with. SOP pairs and NSP pairs are built from the SAME held-out documents with the
  reference's pairing (`document_instances`), masked with the data's MaskingConfig, and all
  of it is drawn once from `seed`: every model scored with one seed sees the same examples.
  Both pair sets are scored by the model's one 2-way head (label 1 = swapped for SOP, a
  random B for NSP); MLM is scored on the masked tokens of both sets (masked inputs, as in
  training and in BERT's run_pretraining eval, so one forward pass gives every metric).
  One departure from the reference data: SOP keeps only pairs of two parts of one document
  (see `_own_document`), so SOP accuracy measures order, not a change of topic.
- `load_for_evaluation`: a model directory (ours, transformers ALBERT or BERT) and whether its
  checkpoint holds a trained pair head; a freshly initialised one is never scored.
- `is_discriminator`: an ELECTRA discriminator directory (no MLM head), which
  `eval-pretraining` scores on replaced-token detection instead, with its generator:
  litebert.train.rtd_evaluation (it builds on this module, not the other way round).

With `eval_pair_tasks: both` the MLM objective (litebert.objectives.mlm, where its periodic
evaluation on the data's own held-out instances lives) draws such a set once per run
(`draw_eval_set`) and logs its SOP and NSP accuracies at every evaluation
(`cross_eval_metrics`), with the MLM baseline token of `commonest_training_token`.
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from litebert.compat import check_model_reads
from litebert.data.builder import BuildConfig, _memmap, assemble, split_documents
from litebert.data.instances import InstanceConfig, document_instances
from litebert.data.integrity import DataError, open_manifest
from litebert.data.masking import MaskingConfig, mask_tokens
from litebert.model import AlbertForPreTraining, CheckpointError
from litebert.padding import pad_batch
from litebert.tokenization.base import PairTemplate
from litebert.train.distributed import DistInfo, all_reduce_sum

log = logging.getLogger("litebert")

TASKS = ("sop", "nsp")  # task ids 0 and 1 of an EvalSet's rows
# The keys of evaluate_pretraining's result (and of `eval-pretraining --out`), in order.
RESULT_KEYS = ("mlm_accuracy", "mlm_loss", "mlm_baseline_accuracy", "sop_accuracy",
               "sop_baseline_accuracy", "nsp_accuracy", "nsp_baseline_accuracy",
               "mlm_tokens", "sop_pairs", "nsp_pairs", "has_pair_head")
# What score() sums over a set (and over ranks): MLM at masked tokens, then per task the
# correct predictions, the pairs and the pairs labelled 1.
_SUMS = ("mlm_loss", "mlm_correct", "mlm_baseline", "mlm_tokens",
         "sop_correct", "sop_pairs", "sop_ones", "nsp_correct", "nsp_pairs", "nsp_ones")
_MODEL_INPUTS = ("input_ids", "token_type_ids", "attention_mask", "labels")


# ---- the held-out documents of a data directory ----------------------------------------------

@dataclass(frozen=True)
class HeldoutDocuments:
    """What the cross evaluation reads of a data directory (arrays memory-mapped)."""

    directory: Path
    config: BuildConfig
    tokens: np.ndarray  # (N,) token ids of the whole corpus
    word_starts: np.ndarray  # (N,) bool
    offsets: np.ndarray  # (S + 1,) int64 token offset of every sentence, then N
    docs: np.ndarray  # (D_heldout, 2) first and one-past-last sentence of each held-out doc
    masking: MaskingConfig
    specials: tuple[int, int, int]  # [CLS], [SEP], [PAD]
    template: PairTemplate  # the tokenizer's: [CLS] A [SEP] B [SEP] or <s> A </s></s> B </s>
    special_mask: np.ndarray  # (V,) bool: ids that stand for no text
    vocab_size: int


def open_heldout(data_dir: str | Path) -> HeldoutDocuments:
    """The held-out documents of `data_dir` (DataError naming the file when it cannot be)."""
    from litebert.tokenization import Tokenizer

    d = Path(data_dir)
    if not d.is_dir():
        raise DataError(f"{d}: no such data directory (build one with `litebert data build`)")
    manifest = open_manifest(d)  # sizes checked: a file cut short is an error naming it
    config = BuildConfig(**manifest["config"])
    tokenizer = Tokenizer.from_pretrained(d / "tokenizer")
    offsets = _memmap(d / "sentences.bin", np.int64)
    starts = _memmap(d / "documents.bin", np.int64)
    bounds = np.stack([starts[:-1], starts[1:]], axis=1)  # (D, 2) sentence ranges
    heldout = split_documents(len(bounds), config)  # the split `build` made, from its seed
    expected = manifest.get("splits", {}).get("heldout", {}).get("documents")
    if expected is not None and expected != int(heldout.sum()):
        raise DataError(f"{d / 'manifest.json'}: {expected} held-out documents recorded, but "
                        f"the split of its config gives {int(heldout.sum())}; rebuild with "
                        f"this version of `litebert data build`")
    specials = (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id or 0)
    if specials[0] is None or specials[1] is None:
        raise DataError(f"{d / 'tokenizer'}: the tokenizer has no [CLS] or [SEP] id")
    return HeldoutDocuments(
        directory=d, config=config,
        tokens=_memmap(d / "tokens.bin", manifest["counts"]["token_dtype"]),
        word_starts=_memmap(d / "word_starts.bin", np.uint8).view(bool), offsets=offsets,
        docs=bounds[heldout], masking=config.masks(tokenizer),
        specials=(int(specials[0]), int(specials[1]), int(specials[2])),
        template=tokenizer.template,
        special_mask=np.asarray(tokenizer.special_mask),
        vocab_size=int(manifest.get("tokenizer", {}).get("vocab_size", len(tokenizer))))


def commonest_training_token(held: HeldoutDocuments) -> int:
    """The commonest token of the training split, specials excluded: the MLM baseline
    predicts it everywhere. All tokens minus the held-out documents' (contiguous spans)."""
    size = held.vocab_size  # the manifest's: check_compatible holds the model to it

    def count(values: np.ndarray) -> np.ndarray:  # (size,); an id beyond it counts nowhere
        return np.bincount(values, minlength=size)[:size]

    step = 1 << 24  # chunked: memory stays flat on a large corpus
    counts = sum((count(held.tokens[i:i + step]) for i in range(0, len(held.tokens), step)),
                 np.zeros(size, dtype=np.int64))
    for first, last in held.docs.tolist():  # one slice per held-out document
        counts -= count(held.tokens[held.offsets[first]:held.offsets[last]])
    special = np.flatnonzero(held.special_mask)
    counts[special[special < size]] = -1
    return int(counts.argmax())


# ---- the evaluation set: SOP and NSP pairs of the same documents, masked ---------------------

@dataclass
class EvalSet:
    """Masked SOP and NSP pairs of the same held-out documents, padded into batches."""

    # Each batch: input_ids, token_type_ids, attention_mask, labels (B, W) (labels -100 where
    # not predicted); pair_label (B,); task (B,) 0 = SOP, 1 = NSP. Sorted by length.
    batches: list[dict[str, torch.Tensor]]
    rows: dict[str, np.ndarray]  # task -> (n, 5) a_start, a_len, b_start, b_len, label
    documents: np.ndarray  # (k,) indices into the held-out documents, in drawing order

    def pairs(self, task: str) -> int:
        return len(self.rows[task])


def draw_pairs(held: HeldoutDocuments, instances: int, seed: int
               ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """SOP and NSP instance rows of the same held-out documents, at most `instances` each.

    Documents are taken whole, in an order drawn from `seed`, while both sets stay within
    `instances` (a first document larger than that alone is cut). Each document's pairs
    come from its own generator (seed, task, document): they do not depend on `instances`.
    SOP keeps only pairs of two parts of one document (see _own_document).
    """
    order = np.random.default_rng([seed, 0]).permutation(len(held.docs)).tolist()
    configs = {t: InstanceConfig(held.config.max_seq_length, t, held.config.short_seq_prob,
                                 specials=held.template.num_special(True))
               for t in TASKS}
    found: dict[str, list[np.ndarray]] = {t: [] for t in TASKS}
    counts = dict.fromkeys(TASKS, 0)
    used: list[int] = []
    for doc in order:
        new = {t: document_instances(doc, held.offsets, held.docs, configs[t],
                                     np.random.default_rng([seed, 1 + i, doc]))
               for i, t in enumerate(TASKS)}
        new["sop"] = _own_document(new["sop"], held, doc)
        if used and any(counts[t] + len(new[t]) > instances for t in TASKS):
            break
        for t in TASKS:
            found[t].append(new[t])
            counts[t] += len(new[t])
        used.append(doc)
    rows = {t: np.concatenate(found[t])[:instances] if found[t] else np.zeros((0, 5), np.int64)
            for t in TASKS}
    return rows, np.asarray(used, dtype=np.int64)


def _own_document(rows: np.ndarray, held: HeldoutDocuments, doc: int) -> np.ndarray:
    """The rows whose B lies in document `doc`. The reference pairs a chunk of one sentence
    with a B from another document, labelled 1 also for SOP; scored as SOP that rewards
    spotting a change of topic (what NSP learns), not order, and would blur the very
    contrast Table 5 measures. Every SOP pair left is in order (0) or swapped (1)."""
    lo, hi = held.offsets[held.docs[doc, 0]], held.offsets[held.docs[doc, 1]]
    return rows[(rows[:, 2] >= lo) & (rows[:, 2] < hi)]


def _examples(held: HeldoutDocuments, rows: np.ndarray, task: int, seed: int) -> list[dict]:
    """The template's input of each row ([CLS] A [SEP] B [SEP] or RoBERTa's), masked with
    a generator of its own (seed, task, row): the masks do not depend on the batch size or
    on the other rows."""
    out = []
    for i, row in enumerate(rows):
        ids, types, starts, maskable = assemble(held.tokens, held.word_starts, row,
                                                held.template)
        rng = np.random.default_rng([seed, 3, task, i])
        ids, labels, _ = mask_tokens(ids, starts, maskable, held.masking, rng)
        out.append({"input_ids": ids, "token_type_ids": types,
                    "attention_mask": np.ones(len(ids), dtype=np.int64), "labels": labels,
                    "pair_label": int(row[4]), "task": task})
    return out


def draw_eval_set(held: HeldoutDocuments, *, instances: int = 2000, seed: int = 0,
                  batch_size: int = 32) -> EvalSet:
    """The cross-evaluation set of `held`: everything drawn once from `seed`."""
    if instances < 1 or batch_size < 1:
        raise ValueError(f"instances={instances}, batch_size={batch_size}: must be positive")
    rows, documents = draw_pairs(held, instances, seed)
    examples = [x for i, t in enumerate(TASKS) for x in _examples(held, rows[t], i, seed)]
    # Batches of similar length: little padding (a stable sort keeps the order reproducible).
    order = sorted(range(len(examples)), key=lambda i: len(examples[i]["input_ids"]))
    batches = [pad_batch([examples[i] for i in order[s:s + batch_size]], held.specials[2])
               for s in range(0, len(order), batch_size)]
    return EvalSet(batches=batches, rows=rows, documents=documents)


# ---- scoring ---------------------------------------------------------------------------------

def _batch_sums(model: nn.Module, batch: dict[str, torch.Tensor], baseline_token: int,
                device: torch.device, amp) -> torch.Tensor:
    """This batch's share of _SUMS, on the device (no host sync per batch)."""
    inputs = {k: batch[k].to(device, non_blocking=True) for k in _MODEL_INPUTS}
    with amp:
        out = model(**inputs)
    labels = inputs["labels"]
    target = labels[labels != -100]  # (N,) in the order of the head's (N, V) logits
    logits = getattr(out, "prediction_logits", None)
    logits = (out.logits if logits is None else logits).float()  # (N, V): MaskedLM or PreTraining
    parts = [F.cross_entropy(logits, target, reduction="sum"),
             (logits.argmax(-1) == target).sum(), (target == baseline_token).sum(),
             torch.tensor(target.numel(), device=device)]
    task, label = batch["task"].to(device), batch["pair_label"].to(device)  # (B,), (B,)
    pair_logits = getattr(out, "sop_logits", None)  # (B, 2); none for AlbertForMaskedLM
    right = pair_logits.argmax(-1) == label if pair_logits is not None \
        else torch.zeros_like(label, dtype=torch.bool)
    for t in range(len(TASKS)):
        mine = task == t
        parts += [(right & mine).sum(), mine.sum(), (label * mine).sum()]
    return torch.stack([p.to(torch.float64) for p in parts])


@torch.no_grad()
def score(model: nn.Module, eval_set: EvalSet, baseline_token: int, *, device: torch.device,
          amp=None, rank: int = 0, world_size: int = 1) -> dict[str, float]:
    """_SUMS over `eval_set` (over all ranks: rank r scores batches r, r + world, ...)."""
    was_training = model.training
    model.eval()
    amp = amp if amp is not None else contextlib.nullcontext()
    sums = torch.zeros(len(_SUMS), dtype=torch.float64, device=device)
    batches = eval_set.batches
    mine = batches[rank::world_size]
    # Every rank runs as many forward passes (FSDP gathers parameters in each): a rank with
    # one batch fewer scores batch 0 again and does not count it.
    for i in range(-(-len(batches) // world_size)):
        part = _batch_sums(model, mine[i] if i < len(mine) else batches[0], baseline_token,
                           device, amp)
        if i < len(mine):
            sums += part
    model.train(was_training)
    return dict(zip(_SUMS, all_reduce_sum(sums).tolist(), strict=True))


def pretraining_metrics(sums: dict[str, float], has_pair_head: bool) -> dict[str, Any]:
    """RESULT_KEYS from score()'s sums. Without a pair head the pair accuracies are None;
    the baselines (the majority label's share of each set) are the data's, still given."""
    tokens = int(sums["mlm_tokens"])
    result: dict[str, Any] = {
        "mlm_accuracy": sums["mlm_correct"] / tokens if tokens else None,
        "mlm_loss": sums["mlm_loss"] / tokens if tokens else None,
        "mlm_baseline_accuracy": sums["mlm_baseline"] / tokens if tokens else None}
    for t in TASKS:
        pairs = sums[f"{t}_pairs"]
        ones = sums[f"{t}_ones"] / max(pairs, 1)
        result[f"{t}_accuracy"] = sums[f"{t}_correct"] / pairs \
            if pairs and has_pair_head else None
        result[f"{t}_baseline_accuracy"] = max(ones, 1 - ones) if pairs else None
    result.update(mlm_tokens=tokens, sop_pairs=int(sums["sop_pairs"]),
                  nsp_pairs=int(sums["nsp_pairs"]), has_pair_head=has_pair_head)
    return {k: result[k] for k in RESULT_KEYS}


def cross_eval_metrics(model: nn.Module, eval_set: EvalSet, info: DistInfo,
                       amp=None) -> dict[str, float]:
    """The Trainer's cross evaluation: eval_{sop,nsp}_accuracy and their baselines."""
    sums = score(model, eval_set, -1, device=info.device, amp=amp, rank=info.rank,
                 world_size=info.world_size)
    result = pretraining_metrics(sums, has_pair_head=True)
    return {f"eval_{k}": float(result[k]) for t in TASKS
            for k in (f"{t}_accuracy", f"{t}_baseline_accuracy") if result[k] is not None}


# ---- any model directory on any data directory -----------------------------------------------

# Our keys of the heads; hub.external_key maps them to a file's layout (ALBERT, BERT, ours).
_MLM_KEY = "predictions.dense.weight"
_PAIR_KEYS = ("sop_classifier.classifier.weight", "albert.pooler.weight")
_RTD_KEY = "discriminator_predictions.dense.weight"  # ELECTRA's discriminator


def checkpoint_keys(directory: Path) -> tuple[set[str], Path]:
    """The tensor names of a model directory's weights, and the file they are listed in
    (safetensors: from the headers only, no tensor read)."""
    from safetensors import safe_open

    from litebert.model.hub import WEIGHTS_INDEX_NAME, WEIGHTS_NAME, read_weights

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


def is_discriminator(directory: Path) -> bool:
    """Whether a model directory's weights hold ELECTRA's replaced-token detection head
    (headers only). A path that is no directory is not one: the MLM path names the error."""
    from litebert.model.hub import external_key, read_config

    if not directory.is_dir():
        return False
    keys, _ = checkpoint_keys(directory)
    return external_key(_RTD_KEY, read_config(directory)) in keys


def load_for_evaluation(directory: str | Path) -> tuple[AlbertForPreTraining, bool]:
    """(model, has_pair_head) of a model directory. The pair head counts as present when the
    checkpoint holds both the pooler and the 2-way classifier (an AlbertForMaskedLM export or
    a BERT MLM-only model has neither); without an MLM head there is nothing to evaluate."""
    from litebert.model.hub import external_key, read_config

    directory = Path(directory)
    if not directory.is_dir():
        raise CheckpointError(f"{directory}: no such model directory")
    config = read_config(directory)
    keys, source = checkpoint_keys(directory)
    if external_key(_MLM_KEY, config) not in keys:
        hint = (" (an ELECTRA discriminator: litebert.train.rtd_evaluation, `litebert "
                "eval-pretraining`, scores its replaced-token detection)"
                if external_key(_RTD_KEY, config) in keys else "")
        raise CheckpointError(f"{source}: no MLM head ({external_key(_MLM_KEY, config)}); "
                              f"pre-training evaluation needs a pre-training or masked-LM "
                              f"model{hint}")
    has_pair_head = all(external_key(k, config) in keys for k in _PAIR_KEYS)
    model = AlbertForPreTraining.from_pretrained(directory)
    if not has_pair_head:
        log.info("%s: no trained sentence-pair head in %s; SOP and NSP are not scored",
                 directory, source.name)
    return model, has_pair_head


def check_compatible(config, held: HeldoutDocuments, model_name: str) -> None:
    """The model can read the data: same vocabulary size, positions for the longest input."""
    manifest = held.directory / "manifest.json"
    if config.vocab_size != held.vocab_size:
        raise DataError(f"{model_name} has vocab_size {config.vocab_size}, but {manifest} was "
                        f"built with a tokenizer of {held.vocab_size} ids "
                        f"({held.directory / 'tokenizer'}); evaluate on data built with the "
                        f"model's own tokenizer")
    from litebert.tokenization import Tokenizer

    # Padding id and pair template (one token type cannot read ALBERT's typed pairs).
    check_model_reads(config, Tokenizer.from_pretrained(held.directory / "tokenizer"),
                      model_name, str(held.directory / "tokenizer"))
    if held.config.max_seq_length > config.max_sequence_length:
        raise DataError(f"{manifest}: max_seq_length {held.config.max_seq_length} exceeds "
                        f"the {config.max_sequence_length} positions of {model_name} "
                        f"(max_position_embeddings {config.max_position_embeddings}); rebuild "
                        f"the data with a shorter --max-seq-length")


def warn_other_tokenizer(model_dir: Path, held: HeldoutDocuments) -> None:
    """Same size is not same vocabulary: say so when the model ships another tokenizer
    (any kind: the fingerprint covers the vocabulary files and the text settings)."""
    from litebert.tokenization import Tokenizer, TokenizerError

    try:
        ours = Tokenizer.from_pretrained(model_dir)
    except TokenizerError:
        return  # a directory without tokenizer files: nothing to compare
    theirs = Tokenizer.from_pretrained(held.directory / "tokenizer")
    if ours.fingerprint != theirs.fingerprint:
        log.warning("%s differs from %s: the model and the data use different "
                    "tokenizers; the scores mean little", ours.path, theirs.path)


def evaluate_pretraining(model: nn.Module | str | Path, data_dir: str | Path, *,
                         instances: int = 2000, seed: int = 0, batch_size: int = 32,
                         has_pair_head: bool | None = None) -> dict[str, Any]:
    """MLM, SOP and NSP accuracy of `model` on the held-out documents of `data_dir`, with
    baselines; the keys are RESULT_KEYS.

    model: an AlbertForPreTraining (or AlbertForMaskedLM) module, scored on its device, or
    a model directory (loaded with `load_for_evaluation`, on CUDA when there is one).
    instances: SOP pairs and NSP pairs, at most, each (whole documents, see draw_pairs).
    has_pair_head: None detects it (from the checkpoint, or the module's class); without
    one, sop_accuracy and nsp_accuracy are None rather than a random head's score.
    """
    name = "the model"
    if isinstance(model, (str, Path)):
        model_dir = Path(model)
        name = str(model_dir / "config.json")
        model, detected = load_for_evaluation(model_dir)
        model.to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
        has_pair_head = detected if has_pair_head is None else has_pair_head
        held = open_heldout(data_dir)
        warn_other_tokenizer(model_dir, held)
    else:
        held = open_heldout(data_dir)
    if has_pair_head is None:
        has_pair_head = hasattr(model, "sop_classifier")
    check_compatible(model.config, held, name)
    if len(held.docs) == 0:
        raise DataError(f"{held.directory / 'manifest.json'}: no held-out documents "
                        f"(heldout_fraction={held.config.heldout_fraction}); rebuild with "
                        f"--heldout-fraction above 0")
    eval_set = draw_eval_set(held, instances=instances, seed=seed, batch_size=batch_size)
    device = next(model.parameters()).device
    sums = score(model, eval_set, commonest_training_token(held), device=device)
    return pretraining_metrics(sums, bool(has_pair_head))


# Rows of format_table: (metric, its baseline or None), for MLM models and for ELECTRA
# discriminators (whose result has the RTD keys and no MLM figures).
_MLM_ROWS = (("mlm_accuracy", "mlm_baseline_accuracy"), ("mlm_loss", None),
             ("sop_accuracy", "sop_baseline_accuracy"), ("nsp_accuracy", "nsp_baseline_accuracy"))
_RTD_ROWS = (("rtd_accuracy", "rtd_baseline_accuracy"), ("rtd_precision", None),
             ("rtd_recall", None), ("rtd_loss", None), ("replaced_fraction", None),
             ("generator_mlm_accuracy", "generator_mlm_baseline_accuracy"),
             ("generator_mlm_loss", None))


def format_table(result: dict[str, Any]) -> str:
    """evaluate_pretraining's (or rtd_evaluation.evaluate_discriminator's) result as a small
    table: metric, value, baseline."""
    def cell(value: Any) -> str:
        return "-" if value is None else f"{value:.4f}"

    rtd = "rtd_accuracy" in result
    rows = _RTD_ROWS if rtd else _MLM_ROWS
    width = max(14, max(len(name) for name, _ in rows) + 2)
    lines = [f"{'metric':<{width}} {'value':>8} {'baseline':>9}"]
    for name, baseline in rows:
        lines.append(f"{name:<{width}} {cell(result[name]):>8} "
                     f"{cell(result[baseline] if baseline else None):>9}")
    if rtd:
        lines.append(f"{result['rtd_instances']:,} held-out instances, corrupted by the "
                     f"generator {result['generator']}")
        lines.append("ELECTRA discriminator: no MLM head, so MLM, SOP and NSP are not scored")
        return "\n".join(lines)
    lines.append(f"{result['mlm_tokens']:,} masked tokens, {result['sop_pairs']:,} SOP pairs, "
                 f"{result['nsp_pairs']:,} NSP pairs")
    if not result["has_pair_head"]:
        lines.append("no trained sentence-pair head in the checkpoint: SOP and NSP not scored")
    return "\n".join(lines)
