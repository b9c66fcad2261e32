"""Token classification: `--task ner` (CoNLL-2003's recipe) and `--task tokens` (generic).

The data folder's splits are read by tasks/word_tables.py (CoNLL files, JSON lines, Parquet,
Arrow, saved datasets; the label set; the tagging scheme). Each sentence becomes model
windows (tasks/word_labels.py): every word tokenized after a space, as transformers'
is_split_into_words does (byte-level BPE with a prefix space), its tag on its first piece,
a sentence longer than max_seq_length cut into overlapping windows of whole words of which
exactly one scores each word. The model is EncoderForTokenClassification; its loss is a sum
over rows (row_loss_tokens) so that torchrun's ranks train as one process.

Evaluation predicts every word of dev (the argmax at its scored first piece, read on the
tokenizer's padding side: XLNet pads on the left) and scores the tags: token accuracy and,
when the labels are entity tags, entity precision, recall and F1 as conlleval counts them
(seqeval's strict mode with `strict`); entity F1 is the primary metric, token accuracy
when the tags are not entities (POS tags). Prediction files hold `word gold predicted`
lines, the conlleval script's input: OUT/predictions/dev.conll of the last evaluation (the
best model's, written with it) and OUT/predictions/test.conll when the folder has a test
split.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from litebert.config import ModelConfig
from litebert.model import EncoderForTokenClassification
from litebert.tasks.base import FinetuneConfig, FinetuneError, model_overrides
from litebert.tasks.batching import length_batches, pad_for
from litebert.tasks.conll import write_conll_predictions
from litebert.tasks.model_source import model_config_of
from litebert.tasks.runtime import RowIds, Runtime
from litebert.tasks.word_labels import IGNORE_INDEX, WordWindow, word_predictions, word_windows
from litebert.tasks.word_tables import (
    TaggedSentence,
    conll_word,
    entity_tags,
    load_token_data,
    tag_metrics,
    tagging_scheme,
)
from litebert.tokenization import Tokenizer

PREDICTIONS = "predictions"  # OUT/predictions/{dev,test}.conll


@dataclass(frozen=True)
class WordSplit:
    """One split's sentences and their model windows, with each window's length."""

    name: str
    sentences: list[TaggedSentence]
    windows: list[WordWindow]
    lengths: np.ndarray  # (W,) tokens per window


def model_labels(config: ModelConfig) -> list[str] | None:
    """The tags a fine-tuned model names in its config (id2label), else None."""
    id2label = config.id2label
    return None if not id2label else [id2label[i] for i in sorted(id2label)]


class TokenTask:
    def __init__(self, cfg: FinetuneConfig, runtime: Runtime, training: bool = True):
        self.cfg, self.runtime = cfg, runtime
        self.options = cfg.task_options
        self.tokenizer = Tokenizer.from_pretrained(cfg.model)
        data = load_token_data(cfg.data, self.options, training,
                               None if training else
                               model_labels(model_config_of(cfg.model, cfg.model_config)))
        self.labels = data.labels
        self.entities = entity_tags(self.labels)
        if cfg.task == "ner" and not self.entities:
            raise FinetuneError(f"task ner: the tags {self.labels[:8]} are not entity tags "
                                "(O, B-TYPE, I-TYPE, E-TYPE, S-TYPE); use --task tokens")
        self.scheme = tagging_scheme(self.options.label_scheme, self.labels,
                                     data.train if data.train is not None else data.dev) \
            if self.entities else "IOB2"
        self.primary = "f1" if self.entities else "accuracy"
        self.stride = self._stride()
        self.dev = self.encode("dev", data.dev)
        self.test = None if data.test is None else self.encode("test", data.test)
        self.writes_test_predictions = self.test is not None
        train = [] if data.train is None else self.encode("train", data.train).windows
        # A window whose words are all scored in other windows trains nothing: left out.
        self.train_rows = [w for w in train if (w.labels != IGNORE_INDEX).any()]
        self.train_lengths = np.array([len(w.input_ids) for w in self.train_rows], np.int64)
        labelled = sum(int((w.labels != IGNORE_INDEX).sum()) for w in self.train_rows)
        self.tokens_per_row = labelled / max(len(self.train_rows), 1)
        self.last_predictions: list[list[str]] | None = None
        # Filler rows (finetune.py) labelled -100 throughout: the loss counts no token of
        # theirs and, as no training row lacks a label, divides by the real rows only.
        self.dummy_labels = {"labels": IGNORE_INDEX}
        self.bucket_limit = runtime.bucket_limit(cfg.max_seq_length)

    def _stride(self) -> int:
        """word_stride, else a quarter of the pieces a window holds."""
        budget = self.cfg.max_seq_length - self.tokenizer.template.num_special(False)
        stride = self.options.word_stride
        if stride is None:
            return max(budget // 4, 0)
        if not 0 <= stride < budget:
            raise FinetuneError(f"word_stride={stride}: must be at least 0 and below the "
                                f"{budget} word pieces a window of max_seq_length="
                                f"{self.cfg.max_seq_length} holds")
        return stride

    def encode(self, name: str, sentences: list[TaggedSentence]) -> WordSplit:
        index = {label: i for i, label in enumerate(self.labels)}
        try:
            windows = word_windows(self.tokenizer, [s.words for s in sentences],
                                   [[index[t] for t in s.tags] for s in sentences],
                                   self.cfg.max_seq_length, self.stride)
        except ValueError as err:  # max_seq_length without room for a word
            raise FinetuneError(f"{name}: {err}") from None
        lengths = np.array([len(w.input_ids) for w in windows], dtype=np.int64)
        return WordSplit(name, sentences, windows, lengths)

    def collate(self, rows: list[WordWindow], labels: bool = True) -> dict[str, torch.Tensor]:
        """(B, T) inputs padded on the tokenizer's side; labels -100 at the padding."""
        fields = ("input_ids", "token_type_ids", "attention_mask") + (
            ("labels",) if labels else ())
        return pad_for(self.tokenizer, [{k: getattr(w, k) for k in fields} for w in rows],
                       max_length=self.bucket_limit)

    def build_model(self) -> EncoderForTokenClassification:
        model = EncoderForTokenClassification.from_pretrained(
            self.cfg.model, files=self.cfg.model_files, id2label=dict(enumerate(self.labels)),
            **model_overrides(self.cfg))
        model.row_loss_tokens = self.tokens_per_row
        return model

    def predict(self, model, split: WordSplit) -> list[list[str]]:
        """The predicted tag of every word of `split`, by sentence; the batches are shared by
        the ranks, each gets all."""
        batches = length_batches(split.lengths, self.cfg.eval_batch_size, None)

        def collate(ids: RowIds) -> dict[str, torch.Tensor]:
            return self.collate([split.windows[i] for i in ids], labels=False)

        outputs = self.runtime.evaluate_batches(model, batches, collate,
                                                lambda o: [o.logits.argmax(-1)])
        rows: list[np.ndarray] = [np.zeros(0, np.int64)] * len(split.windows)
        for ids, (best,) in zip(batches, outputs, strict=True):  # (B, T) int64
            for i, row in zip(ids, best, strict=True):
                rows[int(i)] = row
        words = word_predictions(split.windows, rows, self.tokenizer.padding_side)
        names = np.array(self.labels, dtype=object)
        return [names[ids].tolist() for ids in words]

    def evaluate(self, model, out: Path) -> dict[str, float]:
        """Scores on dev; its predictions kept for the dev predictions file."""
        self.last_predictions = self.predict(model, self.dev)
        return tag_metrics([s.tags for s in self.dev.sentences], self.last_predictions,
                           self.entities, self.options.strict, self.scheme)

    def score(self, metrics: dict[str, float]) -> float:
        return metrics[self.primary]

    def save(self, model, directory: Path) -> None:
        model.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)
        self._write_dev(Path(directory).parent)

    def write_predictions(self, model, out: Path, dev: bool = True) -> list[Path]:
        """With dev, the last evaluation's OUT/predictions/dev.conll; then, with a test
        split, `model`'s OUT/predictions/test.conll (every rank predicts, rank 0 writes)."""
        written = self._write_dev(Path(out)) if dev else []
        if self.test is not None:
            predicted = self.predict(model, self.test)
            path = Path(out) / PREDICTIONS / "test.conll"
            if self.runtime.is_main:
                write_split(path, self.test.sentences, predicted)
            written.append(path)
        return written

    def _write_dev(self, out: Path) -> list[Path]:
        if self.last_predictions is None or not self.runtime.is_main:
            return []
        return [write_split(out / PREDICTIONS / "dev.conll", self.dev.sentences,
                            self.last_predictions)]


def write_split(path: Path, sentences: list[TaggedSentence],
                predicted: list[list[str]]) -> Path:
    """`word gold predicted` lines, a blank line after each sentence (conlleval's input)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_conll_predictions(path, [([conll_word(w) for w in s.words], s.tags, tags)
                                          for s, tags in zip(sentences, predicted, strict=True)])
