"""SQuAD 1.1 / 2.0: sliding windows, span logits, n-best search, the official metrics.

For v2 the "no answer" decision compares the null score ([CLS] start + end) with the best
span; the threshold on their difference is fitted on dev (the official best_f1_thresh) and
saved beside the model in `squad.json`. Each evaluation writes OUT/predictions.json
(question id -> answer, "" for no answer) and OUT/null_odds.json for the best checkpoint.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from litebert.files import read_text
from litebert.model import AlbertForQuestionAnswering
from litebert.tasks.base import FinetuneConfig, FinetuneError, model_overrides, reported
from litebert.tasks.batching import length_batches, pad
from litebert.tasks.metrics import squad_evaluate
from litebert.tasks.squad import make_features, postprocess, read_squad
from litebert.tokenization import Tokenizer

THRESHOLD_FILE = "squad.json"


def find_file(directory: Path, split: str, version_2: bool) -> Path:
    """train-v1.1.json / dev-v2.0.json as distributed, or any {split}*.json."""
    official = directory / f"{split}-v{'2.0' if version_2 else '1.1'}.json"
    if official.is_file():
        return official
    found = sorted(directory.glob(f"{split}*.json"))
    if not found:
        raise FinetuneError(f"{directory}: no {official.name} (nor any {split}*.json)")
    return found[0]


class SquadTask:
    primary = "f1"

    def __init__(self, cfg: FinetuneConfig, training: bool = True):
        self.cfg = cfg
        self.version_2 = cfg.task == "squad2"
        self.tokenizer = Tokenizer.from_pretrained(cfg.model)
        self.pad_id = self.tokenizer.pad_token_id or 0
        data = Path(cfg.data)
        train = reported(read_squad(find_file(data, "train", self.version_2))) \
            if training else []
        dev_path = find_file(data, "dev", self.version_2)
        self.dev = reported(read_squad(dev_path))
        self.dev_json = json.loads(read_text(dev_path))
        self.train_rows = [self._row(f, True) for f in self._features(train)]
        self.train_lengths = [len(r["input_ids"]) for r in self.train_rows]
        self.dev_features = self._features(self.dev)
        self.threshold = 0.0
        self.outputs: dict[str, dict] = {}

    def _features(self, examples):
        return make_features(examples, self.tokenizer, max_seq_length=self.cfg.max_seq_length,
                             doc_stride=self.cfg.doc_stride,
                             max_query_length=self.cfg.max_query_length)

    @staticmethod
    def _row(feature, training: bool) -> dict:
        row = {"input_ids": feature.input_ids, "token_type_ids": feature.token_type_ids,
               "attention_mask": feature.attention_mask}
        if training:
            row.update(start_positions=feature.start_position,
                       end_positions=feature.end_position)
        return row

    def collate(self, rows: list[dict]) -> dict:
        return pad(rows, self.pad_id)

    def build_model(self) -> AlbertForQuestionAnswering:
        return AlbertForQuestionAnswering.from_pretrained(self.cfg.model,
                                                          **model_overrides(self.cfg))

    def logits(self, model) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Start and end logits of every dev feature, trimmed to its own length."""
        starts: list = [None] * len(self.dev_features)
        ends: list = [None] * len(self.dev_features)
        lengths = [len(f.input_ids) for f in self.dev_features]
        for ids in length_batches(lengths, self.cfg.eval_batch_size, None):
            out = model(**pad([self._row(self.dev_features[i], False) for i in ids],
                              self.pad_id))
            for j, i in enumerate(ids):
                starts[i] = out.start_logits[j, :lengths[i]].numpy()
                ends[i] = out.end_logits[j, :lengths[i]].numpy()
        return starts, ends

    def evaluate(self, model, out: Path) -> dict[str, float]:
        starts, ends = self.logits(model)
        kw = dict(n_best_size=self.cfg.n_best_size, max_answer_length=self.cfg.max_answer_length,
                  version_2=self.version_2)
        predictions, null_odds, _ = postprocess(self.dev, self.dev_features, starts, ends, **kw)
        metrics = squad_evaluate(self.dev_json, predictions,
                                 na_probs=null_odds if self.version_2 else None)
        if self.version_2:  # apply the threshold fitted on dev to the written predictions
            self.threshold = float(metrics.get("best_f1_thresh", 0.0))
            predictions, null_odds, _ = postprocess(self.dev, self.dev_features, starts, ends,
                                                    null_score_diff_threshold=self.threshold,
                                                    **kw)
        self.outputs = {"predictions.json": predictions, "null_odds.json": null_odds}
        return metrics

    def score(self, metrics: dict[str, float]) -> float:
        return metrics.get("best_f1", metrics["f1"]) if self.version_2 else metrics["f1"]

    def save(self, model, directory: Path) -> None:
        model.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)
        (directory / THRESHOLD_FILE).write_text(json.dumps(
            {"version_2": self.version_2, "null_score_diff_threshold": self.threshold,
             "max_seq_length": self.cfg.max_seq_length, "doc_stride": self.cfg.doc_stride,
             "max_query_length": self.cfg.max_query_length}, indent=2) + "\n")
        for name, content in self.outputs.items():
            if name == "null_odds.json" and not self.version_2:
                continue
            (directory.parent / name).write_text(json.dumps(content, indent=2) + "\n")
