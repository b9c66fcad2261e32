"""The held-out documents of a data directory, and the paper's cross-evaluation set drawn
from them (data only: no model here; the MLM objective scores them, litebert.objectives.mlm_eval).

- `open_heldout`: the memory-mapped arrays and the held-out split of a data directory.
- `commonest_training_token`: what an MLM baseline predicts at every masked token.
- `draw_eval_set`: SOP pairs and NSP pairs built from the SAME held-out documents with the
  reference's pairing (`document_instances`), masked with the data's MaskingConfig, all of it
  drawn once from `seed`: every model scored with one seed sees the same examples. One
  departure from the reference data: SOP keeps only pairs of two parts of one document (see
  `_own_document`), so SOP accuracy measures order, not a change of topic.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from litebert.data.blocks import DirectoryChecks
from litebert.data.build_config import BuildConfig
from litebert.data.instances import InstanceConfig, document_instances
from litebert.data.integrity import DataError
from litebert.data.manifest import DataManifest, as_data
from litebert.data.masking import MaskingConfig, mask_tokens
from litebert.data.splits import assemble, split_documents
from litebert.data.word_starts import WordStarts
from litebert.padding import pad_batch
from litebert.tokenization import Tokenizer
from litebert.tokenization.base import PairTemplate

PAIR_TASKS = ("sop", "nsp")  # the cross-evaluation's pair tasks: task ids 0 and 1 of its rows

# ---- the held-out documents of a data directory ----------------------------------------------

@dataclass(frozen=True)
class HeldoutDocuments:
    """What the cross evaluation reads of a data directory (arrays memory-mapped)."""

    directory: Path
    config: BuildConfig
    data: DataManifest  # the manifest as read (its counts: the recorded baseline token)
    tokens: np.ndarray  # (N,) token ids of the whole corpus
    word_starts: WordStarts  # [a:b] -> (b - a,) bool
    offsets: np.ndarray  # (S + 1,) int64 token offset of every sentence, then N
    docs: np.ndarray  # (D_heldout, 2) first and one-past-last sentence of each held-out doc
    masking: MaskingConfig
    specials: tuple[int, int, int]  # [CLS], [SEP], [PAD]
    template: PairTemplate  # the tokenizer's: [CLS] A [SEP] B [SEP] or <s> A </s></s> B </s>
    special_mask: np.ndarray  # (V,) bool: ids that stand for no text
    vocab_size: int


def open_heldout(data_dir: DataManifest | str | Path) -> HeldoutDocuments:
    """The held-out documents of a data directory, its manifest as read or read here
    (DataError naming the file when it cannot be)."""
    if not isinstance(data_dir, DataManifest) and not Path(data_dir).is_dir():
        raise DataError(f"{data_dir}: no such data directory (build one with "
                        f"`litebert data build`)")
    data = as_data(data_dir)  # sizes checked: a file cut short is an error naming it
    d, manifest, config = data.directory, data.content, data.config
    tokenizer = Tokenizer.from_pretrained(d / "tokenizer")
    checks = DirectoryChecks(d, manifest, len(tokenizer))  # each block verified as first read
    offsets = checks.open("sentences.bin", np.int64)
    starts = checks.open("documents.bin", np.int64)
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
    tokens = checks.open("tokens.bin", manifest["counts"]["token_dtype"], ids=True)
    return HeldoutDocuments(
        directory=d, config=config, data=data, tokens=tokens,
        word_starts=WordStarts(tokens, offsets, tokenizer.word_start_ids), offsets=offsets,
        docs=bounds[heldout], masking=config.masks(tokenizer),
        specials=(int(specials[0]), int(specials[1]), int(specials[2])),
        template=tokenizer.template,
        special_mask=np.asarray(tokenizer.special_mask),
        vocab_size=int(manifest.get("tokenizer", {}).get("vocab_size", len(tokenizer))))


def commonest_training_token(held: HeldoutDocuments) -> int:
    """The commonest token of the training split, specials excluded: the MLM baseline
    predicts it everywhere. `data build` records it in the manifest's counts (from its token
    histogram); a directory built before that is scanned: all tokens minus the held-out
    documents' (contiguous spans)."""
    recorded = held.data.counts.get("commonest_training_token")
    if recorded is not None:
        return int(recorded)
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
               for t in PAIR_TASKS}
    found: dict[str, list[np.ndarray]] = {t: [] for t in PAIR_TASKS}
    counts = dict.fromkeys(PAIR_TASKS, 0)
    used: list[int] = []
    for doc in order:
        new = {t: document_instances(doc, held.offsets, held.docs, configs[t],
                                     np.random.default_rng([seed, 1 + i, doc]))
               for i, t in enumerate(PAIR_TASKS)}
        new["sop"] = _own_document(new["sop"], held, doc)
        if used and any(counts[t] + len(new[t]) > instances for t in PAIR_TASKS):
            break
        for t in PAIR_TASKS:
            found[t].append(new[t])
            counts[t] += len(new[t])
        used.append(doc)
    rows = {t: np.concatenate(found[t])[:instances] if found[t] else np.zeros((0, 5), np.int64)
            for t in PAIR_TASKS}
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
                  batch_size: int = 32, width: int | None = None) -> EvalSet:
    """The cross-evaluation set of `held`: everything drawn once from `seed`. Each batch is
    padded to its longest pair rounded up to 8 (`eval-pretraining`), or to `width` (a
    training run's evaluation: one shape for a compiled model, which would compile a graph
    per width, up to max_seq_length / 8 of them, past torch's limit per function; padding
    is masked, so the scores stay)."""
    if instances < 1 or batch_size < 1:
        raise ValueError(f"instances={instances}, batch_size={batch_size}: must be positive")
    rows, documents = draw_pairs(held, instances, seed)
    examples = [x for i, t in enumerate(PAIR_TASKS) for x in _examples(held, rows[t], i, seed)]
    # Batches of similar length: little padding (a stable sort keeps the order reproducible).
    order = sorted(range(len(examples)), key=lambda i: len(examples[i]["input_ids"]))
    batches = [pad_batch([examples[i] for i in order[s:s + batch_size]], held.specials[2],
                         width=width)
               for s in range(0, len(order), batch_size)]
    return EvalSet(batches=batches, rows=rows, documents=documents)
