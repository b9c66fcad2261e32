"""`litebert data inspect` and `litebert data stats` on every data directory, XLNet's
streams (`--packing streams`) included.

A stream directory holds no instances: its items exist only when PLMDataset cuts a window
out of the stream and draws its A/B pair, targets and order. So its reports live here,
next to PLMDataset (the data layer may not import objectives), and `reporter_for` is the
one place that picks a directory's reporter from its manifest's packing; every other
packing keeps litebert.data.report's, unchanged.

Items are read as training reads them at epoch 0 (the data's seed, the objective's default
K = 6, max_span 5, forwards; bi_data's backward half is the same windows reversed):

- inspect: a header `#i (T tokens, P targets, next_sentence_label=L, reuse R)`, then one line
  per part, `| reuse |`, `| A |` (ending with its <sep>) and `| B |` (<sep> <cls>), targets
  as [[piece]];
- stats: the manifest's config and counts; per split the stream's own numbers
  (litebert.data.streams.measure_stream) and, on a seeded sample of windows, targets per
  window, the share of targets in spans of >= 2 words (replayed from each item's
  Generator, so single-token fills that happen to sit side by side are not taken for a
  span), the share of random B (next_sentence_label 1) and the mean lengths of A and B.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from litebert.data import report
from litebert.data.build_config import SPLITS
from litebert.data.manifest import DataManifest, as_data
from litebert.data.streams import end_of_document_id, measure_stream
from litebert.objectives.plm_data import PLMDataset
from litebert.tokenization import Tokenizer


class Reporter(NamedTuple):
    """What the two commands call: inspect(directory, split, n) yields one text block per
    item; stats(directory, sample, seed) is the JSON-ready report."""

    inspect: Callable[[DataManifest | str | Path, str, int], Iterator[str]]
    stats: Callable[..., dict[str, Any]]


def reporter_for(data: DataManifest | str | Path) -> Reporter:
    """The reporter of a data directory (its manifest as read, or its directory), by the
    packing its build config records; DataError when the directory holds no manifest."""
    return REPORTERS.get(as_data(data).config.packing, INSTANCES)


# ---- inspect ---------------------------------------------------------------------------------

def inspect_windows(data: DataManifest | str | Path, split: str, n: int) -> Iterator[str]:
    """describe_window() of the first n windows of a split at epoch 0."""
    dataset = PLMDataset(data, split)
    tokenizer = Tokenizer.from_pretrained(dataset.directory / "tokenizer")
    for i in range(min(n, len(dataset))):
        yield describe_window(dataset, i, tokenizer)


def describe_window(dataset: PLMDataset, index: int, tokenizer) -> str:
    """One item as text: a line for the reused part, A with its <sep>, and B with <sep>
    <cls>, each opened by its marker so the pieces read back unambiguously; targets as
    [[piece]]."""
    item = dataset[index]
    ids, types = item["input_ids"].tolist(), item["token_type_ids"]  # (T,) each
    targets = item["is_target"].tolist()  # (T,) bool
    shown = [f"[[{piece}]]" if hit else piece
             for piece, hit in zip(tokenizer.convert_ids_to_tokens(ids), targets, strict=True)]
    r = dataset.reuse_len
    b0 = int((types == 0).sum())  # reuse + A + <sep>: where B begins
    head = (f"#{index} ({len(ids)} tokens, {sum(targets)} targets, next_sentence_label="
            f"{int(item['next_sentence_label'])}, reuse {r})")
    parts = (("reuse", shown[:r]), ("A", shown[r:b0]), ("B", shown[b0:]))
    return "\n".join([head] + [" ".join([f"| {name} |", *pieces]) for name, pieces in parts])


# ---- stats -----------------------------------------------------------------------------------

def stream_stats(data: DataManifest | str | Path, sample: int = 2000,
                 seed: int = 0) -> dict[str, Any]:
    """The manifest's config and counts, and per split measure_stream's numbers plus
    window_stats on a sample of its windows."""
    data = as_data(data)  # DataError first if a file is damaged
    train, manifest = PLMDataset(data, "train"), data.content
    eod = end_of_document_id(Tokenizer.from_pretrained(data.directory / "tokenizer"))
    out: dict[str, Any] = {"config": manifest["config"], "counts": manifest["counts"],
                           "corpus": manifest["corpus"], "disk": report.disk_usage(manifest),
                           "items": {"epoch": 0, "seed": train.seed,
                                     "num_predict": train.num_predict,
                                     "perm_size": train.perm_size, **train.spans},
                           "splits": {}}
    for split in SPLITS:
        ds = train if split == "train" else PLMDataset(data, split)
        entry = measure_stream(ds.stream, eod, ds.seq_len, ds.reuse_len)
        if len(ds):
            entry.update(window_stats(ds, sample, seed))
        out["splits"][split] = entry
    return out


def window_stats(ds: PLMDataset, sample: int, seed: int) -> dict[str, Any]:
    """Targets, spans, label balance and A/B lengths of a seeded sample of items."""
    chosen = np.random.default_rng(seed).choice(len(ds), size=min(sample, len(ds)),
                                                replace=False)
    targets, multiword, labels, a_lengths, b_lengths = [], 0, [], [], []
    for i in chosen.tolist():
        item = ds[i]
        targets.append(int(item["is_target"].sum()))
        _, spans = replay_targets(ds, i)
        multiword += sum(end - begin for begin, end, words in spans if words >= 2)
        labels.append(int(item["next_sentence_label"]))
        types = item["token_type_ids"].numpy()  # (T,) 0 reuse A <sep>, 1 B <sep>, 2 <cls>
        a_lengths.append(int((types == 0).sum()) - ds.reuse_len - 1)
        b_lengths.append(int((types == 1).sum()) - 1)
    return {"windows_sampled": len(chosen),
            "targets_per_window": round(float(np.mean(targets)), 3),
            "multiword_target_fraction": round(multiword / max(sum(targets), 1), 4),
            "random_b_fraction": round(float(np.mean(labels)), 4),
            "mean_a_length": round(float(np.mean(a_lengths)), 2),
            "mean_b_length": round(float(np.mean(b_lengths)), 2)}


def replay_targets(ds: PLMDataset, index: int
                   ) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """(is_target (T,) bool, spans [(begin, end, words)] in item positions) of item `index`:
    its Generator drawn again in __getitem__'s order (the layout, then the targets, by the
    same PLMDataset.draw_targets), so the spans are told from the single-token fill, which
    may sit side by side and look like one."""
    rng = ds.item_rng(index)
    _, _, words, functional, _ = ds.layout(index, rng)  # (T,) each
    is_target, spans = ds.draw_targets(words, functional, rng, ds.window(index)[0].reverse)
    return is_target, [(begin, end, int(words[begin:end].sum())) for begin, end in spans]


# Packings whose directories need a reporter of their own; any other: instances.
INSTANCES = Reporter(report.inspect_instances, report.stats)
REPORTERS = {"streams": Reporter(inspect_windows, stream_stats)}
