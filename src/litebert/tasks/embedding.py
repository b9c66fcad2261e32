"""`--task embedding`: sentence embeddings fine-tuned on pairs or triplets with the
contrastive loss of in-batch negatives (tasks/contrastive.py), scored on STS pairs, a BEIR
folder or held-out pairs (tasks/embedding_data.py), saved as a directory that litebert and
sentence-transformers both load (model/sentence_encoder.py).

The model is a SentenceEncoder: the backbone of cfg.model (a model directory of any family,
or a sentence-transformers directory, whose pooling, max_seq_length and do_lower_case are
read) and its pooling (options.pooling, else the directory's, else mean). Inputs are cut to
cfg.max_seq_length (unset: a sentence-transformers start's own, else the recipe's 128), never
past the backbone's positions; the saved directory records that length.

The loss does not fit the loop's `model(**batch).loss`: each rank embeds the anchors,
positives and negatives of its rows and the loss needs every rank's. `train_backward` runs
this rank's forwards and backwards for its rows of a global batch (gathering across ranks,
GradCache's chunks when options.chunk_size is set) and leaves gradients whose DDP average is
one process's over the whole batch; the loop then clips and steps as for any task.

Every column is tokenized once, in memory (tasks/encode.text_rows): batches are the rows'
arrays cut, framed and padded at batch time. The tasks' own options (tasks/registry.py's
EmbeddingOptions) are `cfg.task_options`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from litebert.config import ModelConfig
from litebert.model.sentence_encoder import SentenceEncoder
from litebert.model.sentence_transformers import SentenceTransformersLayout, read_layout
from litebert.tasks.base import FinetuneConfig, FinetuneError, NoPredictionFiles, model_overrides
from litebert.tasks.contrastive import ContrastiveStep
from litebert.tasks.embedding_data import (
    PRIMARY,
    DevSet,
    beir_metrics,
    held_out,
    pair_metrics,
    parse_ks,
    read_dev,
    read_pairs,
    sts_metrics,
)
from litebert.tasks.encode import encode_rows, text_rows
from litebert.tasks.model_source import model_config_of
from litebert.tasks.registry import EMBEDDING_LENGTH, EmbeddingOptions
from litebert.tasks.runtime import RowIds, Runtime
from litebert.tasks.table_inputs import TableRows
from litebert.tasks.table_splits import find_split
from litebert.tokenization import Tokenizer

COLUMNS = ("anchor", "positive", "negative")


def split_paths(cfg: FinetuneConfig, options: EmbeddingOptions) -> tuple[Path, Path | None]:
    """(the training table, the dev data or None): DATA is a table, or a directory with
    train.* (and dev.*, or a BEIR folder dev/); options.dev wins."""
    data = Path(cfg.data)
    train = find_split(data, "train") if data.is_dir() else data
    if train is None:
        raise FinetuneError(f"{data}: no train file (train.tsv, .csv, .jsonl, .json, .parquet "
                            "or a saved dataset train/)")
    if options.dev is not None:
        return train, Path(options.dev)
    if not data.is_dir():
        return train, None
    beir = data / "dev"
    return train, find_split(data, "dev") or (beir if (beir / "corpus.jsonl").is_file()
                                              else None)


def input_length(cfg: FinetuneConfig, layout: SentenceTransformersLayout | None,
                 config: ModelConfig) -> int:
    """Tokens an input is cut to: cfg.max_seq_length; when not given (the recipe leaves it
    None), a sentence-transformers start's max_seq_length, else EMBEDDING_LENGTH; never more
    than the backbone's positions hold."""
    wanted = cfg.max_seq_length or (layout.max_seq_length if layout is not None else None) \
        or EMBEDDING_LENGTH
    return min(wanted, config.max_sequence_length)


class EmbeddingTask(NoPredictionFiles):
    # In-batch negatives: a filler row would be a negative of every other row.
    dummy_labels = None

    def __init__(self, cfg: FinetuneConfig, runtime: Runtime, training: bool = True):
        self.cfg, self.runtime = cfg, runtime
        self.options = cfg.task_options
        layout = read_layout(cfg.model)
        source = Path(cfg.model) if layout is None else layout.transformer
        self.tokenizer = Tokenizer.from_pretrained(source)
        self.lowercase = layout.do_lower_case if layout is not None else False
        self.max_length = input_length(cfg, layout, model_config_of(cfg.model, cfg.model_config))
        self.ks = parse_ks(self.options.retrieval_ks)
        train_path, dev_path = split_paths(cfg, self.options)
        pairs = read_pairs(train_path, self.options, self.lowercase) if training or \
            dev_path is None else []
        if dev_path is None:
            pairs, dev_pairs = held_out(pairs, self.options.pairs_dev_fraction)
            self.dev = DevSet("pairs", f"{train_path} (held out)", dev_pairs)
        else:
            self.dev = read_dev(dev_path, self.options, self.lowercase)
        self.primary = PRIMARY[self.dev.kind]
        self.dev_rows = [self._rows(texts, self.dev.source) for texts in self.dev.columns]
        self.train_columns = [self._rows(texts, str(train_path)) for texts in pairs] \
            if training else []
        n = len(pairs[0]) if self.train_columns else 0
        self.train_rows: range = range(n)  # the rows are the columns' positions
        self.train_lengths = sum((c.lengths.astype(np.int64) for c in self.train_columns),
                                 np.zeros(n, np.int64))  # anchor + positive (+ negative)

    def _rows(self, texts: list[str], source: str) -> TableRows:
        return text_rows(self.tokenizer, texts, self.max_length, source)

    def collate(self, rows: RowIds) -> dict[str, dict[str, torch.Tensor]]:
        """Each column's batch of `rows` ({"anchor": inputs, ...}): not one model input, as
        the loss needs every column; the loop calls train_backward instead."""
        return {name: column.batch(rows, labels=False)
                for name, column in zip(COLUMNS, self.train_columns, strict=False)}

    def build_model(self) -> SentenceEncoder:
        return SentenceEncoder.from_pretrained(self.cfg.model, self.options.pooling,
                                               **model_overrides(self.cfg))

    def train_backward(self, model: nn.Module, batch_ids: RowIds) -> torch.Tensor:
        """This rank's forwards and backwards for its rows of the global batch `batch_ids`
        (weight 0: it has none, and joins with a zero gradient); returns the batch's loss x
        weight, detached, this rank's share of the global mean loss."""
        runtime = self.runtime
        rows, weight = runtime.rows_of(batch_ids)
        limit = runtime.bucket_limit(self.max_length)
        batches = [runtime.to_device(column.batch(rows, labels=False, bucket_limit=limit))
                   for column in self.train_columns]
        step = ContrastiveStep(model, self.options.scale, self.options.chunk_size,
                               factor=float(runtime.info.world_size), amp=runtime.amp,
                               scaler=runtime.scaler, sizes=runtime.sizes_of(batch_ids))
        return step.backward(batches, own=weight > 0) * weight

    def evaluate(self, model: nn.Module, out: Path) -> dict[str, float]:
        """The dev metrics (module docstring of tasks/embedding_data.py), every rank
        embedding its share of the batches."""
        embedded = [encode_rows(model, rows, self.cfg.eval_batch_size, self.runtime)
                    for rows in self.dev_rows]
        if self.dev.kind == "sts":
            assert self.dev.scores is not None
            return sts_metrics(embedded[0], embedded[1], self.dev.scores)
        if self.dev.kind == "beir":
            return beir_metrics(embedded[0], embedded[1], self.dev, self.ks)
        return pair_metrics(*embedded)

    def score(self, metrics: dict[str, float]) -> float:
        return metrics[self.primary]

    def save(self, model: nn.Module, directory: Path) -> None:
        """A directory litebert and sentence-transformers load (SentenceEncoder's), with
        the tokenizer."""
        assert isinstance(model, SentenceEncoder)
        model.save_pretrained(directory, self.max_length)
        self.tokenizer.save_pretrained(directory)
