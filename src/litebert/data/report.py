"""`litebert data inspect` and `litebert data stats`: look at a built data directory.

`stats` measures the pairs of every instance with static pairs; with dynamic pairs, which
exist only when an item is read, those of a sample (`pairs_sampled`) drawn as at epoch 0.
`cross_document_fraction` is the share of pairs whose B comes from another document than
their A: nsp's negatives, and for sop the one-sentence chunks that
sop_single_sentence='random' pairs with another document (always label 1).

`disk` (every packing, XLNet's too): the bytes of each file the manifest records and its
bytes per token of the corpus, the arrays first, then the tokenizer copy as one line.

`padding_fraction` (every packing) is the share of pad positions when every instance is
padded to max_seq_length: 1 - tokens in instances / (instances * max_seq_length), over all
instances (static pairs, packed text) or the sample (dynamic pairs). Packed splits also
report `documents_per_instance`, the mean number of documents an instance holds text of.

XLNet's stream directories (`--packing streams`) have no instances here: their items are made
by the objectives layer, so their reports are litebert.objectives.plm_report's, which also
picks the reporter of a directory for the CLI.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from litebert.data.arrays import memmap as _memmap
from litebert.data.loader import PretrainingDataset
from litebert.data.manifest import DataManifest, as_data
from litebert.data.masking import word_spans
from litebert.data.packing import separator_positions
from litebert.tokenization import Tokenizer


def describe(dataset: PretrainingDataset, index: int, tokenizer) -> str:
    """One instance as text: pieces, masked ones as [[MASK->orig]], [[rand->orig]] or
    [[=orig]], and its label. Packed text starts a line at every document it moves on to,
    after the separator: `[SEP] | doc 2 | ...`."""
    item = dataset[index]
    ids, labels = item["input_ids"].tolist(), item["labels"].tolist()
    pieces = tokenizer.convert_ids_to_tokens(ids)
    originals = tokenizer.convert_ids_to_tokens([x if x >= 0 else 0 for x in labels])
    shown = []
    for piece, label, original in zip(pieces, labels, originals, strict=True):
        if label == -100:
            shown.append(piece)
        elif piece == original:
            shown.append(f"[[={original}]]")
        else:
            shown.append(f"[[{piece}->{original}]]")
    head = f"#{index} ({len(ids)} tokens, {sum(x != -100 for x in labels)} to predict"
    if dataset.label_key:
        head += f", {dataset.label_key}={int(item[dataset.label_key])}"
    if dataset.packed is not None:
        spans = dataset.packed.spans_of(index)
        head += f", text of {len(spans)} document{'s' if len(spans) > 1 else ''}"
        for k, sep in enumerate(separator_positions(
                spans[:, 1], dataset.template.a_offset()).tolist(), start=2):
            shown[sep] += f"\n| doc {k} |"  # the separator ends its line
    return head + ")\n" + " ".join(shown)


def inspect_instances(data: DataManifest | str | Path, split: str, n: int) -> Iterator[str]:
    """describe() of the first n instances of a split, each with the directory's own
    tokenizer (the pieces as the data was built)."""
    dataset = PretrainingDataset(data, split)
    tokenizer = Tokenizer.from_pretrained(dataset.directory / "tokenizer")
    for i in range(min(n, len(dataset))):
        yield describe(dataset, i, tokenizer)


def stats(data: DataManifest | str | Path, sample: int = 2000,
          seed: int = 0) -> dict[str, Any]:
    """Counts from the manifest plus label balance, lengths and masking measured on a sample."""
    data = as_data(data)
    train, manifest = PretrainingDataset(data, "train"), data.content
    out: dict[str, Any] = {"config": manifest["config"], "counts": manifest["counts"],
                           "corpus": manifest["corpus"], "disk": disk_usage(manifest),
                           "splits": {}}
    for split in ("train", "heldout"):
        ds = train if split == "train" else PretrainingDataset(data, split)
        entry: dict[str, Any] = {"instances": len(ds)}
        if len(ds):
            entry.update(_instance_stats(ds, sample, seed))
        out["splits"][split] = entry
    if len(train):
        out["masking"] = _masking_stats(train, sample, seed)
    return out


def disk_usage(manifest: dict[str, Any]) -> dict[str, dict[str, float]]:
    """{file: {"bytes", "bytes_per_token"}} of the files the manifest records, largest first,
    the tokenizer's files summed as "tokenizer/", then "total"; per token of the corpus."""
    tokens = max(int(manifest["counts"]["tokens"]), 1)
    sizes: dict[str, int] = {}
    for name, record in manifest.get("files", {}).items():
        key = "tokenizer/" if name.startswith("tokenizer/") else name
        sizes[key] = sizes.get(key, 0) + int(record["size"])
    ordered = sorted(sizes.items(), key=lambda kv: (kv[0] == "tokenizer/", -kv[1]))
    ordered.append(("total", sum(sizes.values())))
    return {name: {"bytes": size, "bytes_per_token": round(size / tokens, 4)}
            for name, size in ordered}


def _instance_stats(ds: PretrainingDataset, sample: int, seed: int) -> dict[str, Any]:
    """Lengths and padding of the instances; label balance and cross-document share of
    pairs, documents per instance of packed text."""
    entry: dict[str, Any] = {}
    if ds.packed is not None:
        lengths = ds.packed.lengths()  # (I,)
    else:
        rows = _pairs(ds, sample, seed, entry)  # (n, 5)
        template = ds.template
        lengths = rows[:, 1] + rows[:, 3] + np.where(
            rows[:, 3] > 0, template.num_special(True), template.num_special(False))
    size = ds.config.max_seq_length
    entry.update(mean_length=round(float(lengths.mean()), 2),
                 below_max_length=round(float(np.mean(lengths < size)), 4))
    if ds.packed is not None:
        entry["documents_per_instance"] = round(float(np.diff(ds.packed.index).mean()), 3)
    elif ds.label_key:
        entry.update(_label_stats(ds, rows))
    entry["padding_fraction"] = round(1.0 - float(lengths.sum()) / (len(lengths) * size), 4)
    return entry


def _pairs(ds: PretrainingDataset, sample: int, seed: int, entry: dict[str, Any]) -> np.ndarray:
    """Every pair (static pairs) or a sample drawn as at epoch 0 (dynamic pairs, noted in
    entry["pairs_sampled"]), as (n, 5) FIELDS."""
    if ds.rows is not None:
        return np.asarray(ds.rows)  # (I, 5)
    chosen = _sample(len(ds), sample, seed)
    entry["pairs_sampled"] = len(chosen)
    return np.stack([ds.pair(i) for i in chosen.tolist()])  # (sample, 5)


def _label_stats(ds: PretrainingDataset, rows: np.ndarray) -> dict[str, Any]:
    """Label balance and cross-document share of pairs (n, 5)."""
    cross = _document_of(ds, rows[:, 0]) != _document_of(ds, rows[:, 2])
    entry = {"label_1_fraction": round(float(rows[:, 4].mean()), 4),
             "cross_document_fraction": round(float(cross.mean()), 4)}
    if not cross.all():  # sop: the order task alone, ~0.5
        entry["label_1_fraction_same_document"] = round(float(rows[~cross, 4].mean()), 4)
    return entry


def _document_of(ds: PretrainingDataset, positions: np.ndarray) -> np.ndarray:
    """Document (a row of documents.bin) of each token position."""
    sentence = np.searchsorted(ds.offsets, positions, side="right") - 1
    firsts = _memmap(ds.directory / "documents.bin", np.int64)  # (D + 1,) first sentences
    return np.searchsorted(firsts, sentence, side="right") - 1


def _sample(length: int, sample: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).choice(length, size=min(sample, length), replace=False)


def _masking_stats(ds: PretrainingDataset, sample: int, seed: int) -> dict[str, Any]:
    chosen = _sample(len(ds), sample, seed)
    maskable = masked = as_mask = kept = words = whole = 0
    per_instance = []
    for i in chosen.tolist():
        item = ds[i]
        ids, labels = item["input_ids"].numpy(), item["labels"].numpy()
        original, _, starts, can = ds.inputs(i)
        hit = labels != -100
        maskable += int(can.sum())
        masked += int(hit.sum())
        per_instance.append(int(hit.sum()))
        as_mask += int((ids[hit] == ds.masking.mask_token_id).sum())
        kept += int(((ids[hit] == original[hit]) & (ids[hit] != ds.masking.mask_token_id)).sum())
        for s, e in zip(*word_spans(starts, can), strict=True):
            if hit[s:e].any():
                words += 1
                whole += int(hit[s:e].all())
    return {
        "sampled_instances": len(chosen),
        "mask_rate": round(masked / max(maskable, 1), 4),
        "masked_per_instance_mean": round(float(np.mean(per_instance)), 2),
        "masked_per_instance_max": int(np.max(per_instance)),
        "replaced_by_mask": round(as_mask / max(masked, 1), 4),
        "kept": round(kept / max(masked, 1), 4),
        "random": round((masked - as_mask - kept) / max(masked, 1), 4),
        "whole_word_fraction": round(whole / max(words, 1), 4),
    }
