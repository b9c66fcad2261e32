"""`BuildConfig`: every option of `litebert data build`, and the names a data directory's
format is known by. Its own module, so the two passes of the build (litebert.data.builder,
litebert.data.splits) and the readers of a directory share it without importing each other."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from litebert.data.instances import InstanceConfig
from litebert.data.masking import MaskingConfig
from litebert.data.packing import PACKING_ALIASES, PACKINGS, packing_name
from litebert.options import option
from litebert.readers import FORMATS
from litebert.tokenization.base import PairTemplate

FORMAT = "litebert-pretraining-data"
# 2: the manifest records files; random replacements skip every special id. 3: word starts
# derived, not stored (no word_starts.bin); token_counts.bin; a content-based cache key.
VERSION = 3
SPLITS = ("train", "heldout")


@dataclass(frozen=True)
class BuildConfig:
    # `litebert data build --help` is generated from these help texts (litebert.options).
    max_seq_length: int = option(512, "tokens per instance, [CLS] and [SEP]s included")
    objective: str = option(
        "sop", "sentence-pair task: sentence order (ALBERT), next sentence (BERT) or none",
        choices=("sop", "nsp", "none"))
    masking: str = option(
        "dynamic", "dynamic: new masks every epoch; static: drawn once per dupe copy, at "
        "build time", choices=("dynamic", "static"))
    dupe_factor: int = option(
        1, "copies of every document's instances, each paired and masked anew")
    short_seq_prob: float = option(
        0.1, "probability of a shorter instance (as BERT, to match fine-tuning lengths; "
        "packing 'pairs' only: packed instances are always filled, as RoBERTa's)")
    masked_lm_prob: float = option(0.15, "share of the tokens masked")
    max_predictions_per_seq: int = option(20, "masked tokens per instance, at most")
    max_ngram: int = option(3, "longest masked n-gram of whole words (ALBERT's n-gram masking)")
    heldout_fraction: float = option(0.01, "share of the documents held out for evaluation")
    seed: int = option(12345, "seed of the split, the pairs and the static masks")
    format: str = option(
        "auto", "corpus format (see litebert.readers): auto decides per input by its bytes "
        "and name; bert and paragraphs are text, jsonl JSON lines, parquet Parquet files, "
        "arrow the folders of datasets' save_to_disk (and .arrow files)", choices=FORMATS)
    text_field: str = option("text", "JSON lines, Parquet and Arrow: the field (column) holding "
                                     "a document's text")
    # Added after format version 2: see LATER_FIELDS.
    pairs: str = option(
        "static", "static: each chunk's A/B split, order and NSP partner drawn once, at build "
        "time (the reference); dynamic: drawn anew every epoch when an item is read, so the "
        "pair head cannot memorise the pairs (needs --masking dynamic)",
        choices=("static", "dynamic"))
    sop_single_sentence: str = option(
        "random", "sop, chunks of one sentence: random: B from another document, label 1 "
        "(the reference; mixes topic into SOP); skip: no instance (sop only)",
        choices=("random", "skip"))
    packing: str = option(
        "pairs", "pairs: segment pairs (sop, nsp or none); full-sentences: contiguous "
        "sentences up to max_seq_length, crossing documents with a separator between them; "
        "doc-sentences: the same within one document (RoBERTa; both need --objective none); "
        "streams: one stream of the split's documents, each closed by <eod>, read as XLNet's "
        "windows by objective plm (needs --objective none, dynamic masking, dupe_factor 1); "
        "xlnet: the previous release's name of streams, still accepted",
        choices=(*PACKINGS, *PACKING_ALIASES))
    reuse_len: int | None = option(
        None, "packing streams: tokens at the start of each window whose states the next window "
        "reuses as memory; a window starts every reuse_len tokens", shown="max_seq_length // 2")

    def __post_init__(self) -> None:
        # An earlier name (a previous release's manifest, recipe or --packing) is today's.
        object.__setattr__(self, "packing", packing_name(self.packing))
        _ = self.instances  # constructing it validates the pair options
        self._check_packing()
        if self.masking not in ("dynamic", "static"):
            raise ValueError(f"masking={self.masking!r}: choose 'dynamic' or 'static'")
        if self.pairs not in ("static", "dynamic"):
            raise ValueError(f"pairs={self.pairs!r}: choose 'static' or 'dynamic'")
        if self.pairs == "dynamic" and self.masking == "static":
            raise ValueError("pairs='dynamic' needs masking='dynamic': static masks are drawn "
                             "at build time for a fixed pair, and dynamic pairs exist only when "
                             "an item is read")
        if self.dupe_factor < 1:
            raise ValueError(f"dupe_factor={self.dupe_factor}: must be at least 1")
        if not 0.0 <= self.heldout_fraction < 1.0:
            raise ValueError(f"heldout_fraction={self.heldout_fraction}: must be in [0, 1)")

    def _check_packing(self) -> None:
        if self.packing not in PACKINGS:
            raise ValueError(f"packing={self.packing!r}: choose from {PACKINGS}")
        if self.reuse_len is not None and self.packing != "streams":
            raise ValueError(f"reuse_len={self.reuse_len} applies to packing='streams' only "
                             f"(--packing streams); leave it out for "
                             f"packing={self.packing!r}")
        if self.packing == "pairs":
            return
        if self.packing == "streams":
            self._check_streams()
        if self.objective != "none":
            raise ValueError(
                f"packing={self.packing!r} needs objective='none' (--objective none), not "
                f"{self.objective!r}: a packed instance is one stretch of text with no sentence "
                "pair to label; for sop or nsp keep --packing pairs")
        if self.pairs != "static":
            raise ValueError(f"pairs={self.pairs!r} draws sentence pairs, which "
                             f"packing={self.packing!r} has none of; leave --pairs static")

    def _check_streams(self) -> None:
        """XLNet's windows: A and B, their label and the targets are drawn when an item is
        read (litebert.objectives.plm_data), from the one stream of each split."""
        if self.objective != "none" or self.pairs != "static":
            raise ValueError(f"packing='streams' needs objective='none' and pairs='static' "
                             f"(--objective none), not {self.objective!r} and {self.pairs!r}: "
                             "XLNet's A and B and their next-sentence label are drawn when a "
                             "window is read (objective plm), not at build time")
        if self.masking != "dynamic":
            raise ValueError("packing='streams' draws its prediction targets every epoch when an "
                             "item is read; static masks are MLM's: leave --masking dynamic")
        if self.dupe_factor != 1:
            raise ValueError(f"dupe_factor={self.dupe_factor}: packing='streams' writes each "
                             "split's stream once (its pairs and targets are drawn anew every "
                             "epoch); leave --dupe-factor 1")
        reuse = self.reuse_length
        if not 0 < reuse < self.max_seq_length - 3:
            raise ValueError(f"reuse_len={reuse}: must be positive and below max_seq_length - 3 "
                             f"= {self.max_seq_length - 3}, to leave room for A <sep> B <sep> "
                             f"<cls>")

    @property
    def packed(self) -> bool:
        """Instances are packed text (full-sentences, doc-sentences), not segment pairs
        (nor XLNet's streams)."""
        return self.packing in ("full-sentences", "doc-sentences")

    @property
    def reuse_length(self) -> int:
        """packing streams: reuse_len, by default half of max_seq_length (the official 256 of
        512)."""
        return self.max_seq_length // 2 if self.reuse_len is None else self.reuse_len

    @property
    def instances(self) -> InstanceConfig:
        """The pair options, with room for [CLS] A [SEP] B [SEP] (see instance_config)."""
        return InstanceConfig(self.max_seq_length, self.objective, self.short_seq_prob,
                              self.sop_single_sentence)

    def instance_config(self, template: PairTemplate) -> InstanceConfig:
        """The pair options with room for the template's special tokens of a pair (3, or
        RoBERTa's 4): what the instances of a directory are built and drawn with."""
        return dataclasses.replace(self.instances, specials=template.num_special(True))

    def masks(self, tokenizer) -> MaskingConfig:
        return MaskingConfig(mask_token_id=tokenizer.mask_token_id,
                             replacement_ids=tokenizer.replacement_ids,
                             masked_lm_prob=self.masked_lm_prob,
                             max_predictions_per_seq=self.max_predictions_per_seq,
                             max_ngram=self.max_ngram)
