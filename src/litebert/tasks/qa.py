"""SQuAD 1.1 / 2.0: sliding windows, span logits, n-best search, the official metrics.

v1.1: OUT/predictions.json holds every dev question's best span; exact and f1 in
results.json are `squad_evaluate`'s (the official normalisation, max over gold answers).

v2.0 decides "no answer" with one threshold, null_score_diff_threshold (θ): a question's
null odds are its null score (the cls token's start + end, lowest over its windows) minus its
best span score, and it is answered "" when they exceed θ. At every evaluation θ is fitted on
dev: the value that maximises F1 over the best spans (`squad_evaluate`'s best_f1_thresh). Then
- OUT/predictions.json holds the answers with θ applied;
- OUT/null_odds.json holds null odds - θ: a question is answered "" exactly when its value
  is > 0, so the official script's --na-prob-thresh (default 1.0) changes no answer;
- results.json `dev` is exactly what the official evaluate-v2.0.py prints for the dev file
  and those two files (`--na-prob-file null_odds.json`): exact, f1, total, HasAns_* and
  NoAns_* score predictions.json as written, that is at θ; best_exact and best_f1 are the
  script's search for a further threshold over null_odds.json, and best_exact_thresh /
  best_f1_thresh are in its units (relative to θ: 0 means θ itself); with them
  null_score_diff_threshold, θ in raw null-odds units;
- the model directory's squad.json keeps θ of the saved (best-on-dev) checkpoint.
The best checkpoint is the one with the highest f1 (v2: at its θ).

Dev questions the reader skipped (see its report) are predicted "" with null odds inf, so
both files hold every dev question: the official script stops at a missing one.

XLNet (a backbone whose summary token is the last one; --qa-head beam for any) fine-tunes the
beam head, EncoderForBeamQuestionAnswering, as its official run_squad.py does for v1.1 and
v2.0: windows C <sep> Q <sep> <cls>, a window without the answer marks it impossible with
start = end = <cls>, p_mask keeps start and end on the context and <cls>, and the loss adds
the answer class's. Answers come from its beam (tasks/squad_beam.py), null odds from its
answer class; the threshold and the files above are then the same.

Batches are padded as the tokenizer says (XLNet's on the left): positions in a row (start,
end, cls_index) move with the padding put before it, and outputs move back.

Test predictions: when the data directory holds a test file (test-v2.0.json, test-v1.1.json
or test*.json, SQuAD format, answers not needed), OUT/predictions/test_predictions.json
(+ test_null_odds.json for v2, shifted as above) with the threshold stored with the model:
after fine-tuning the best checkpoint's θ; for `litebert evaluate` the θ in the model
directory's squad.json (the θ just fitted on dev if it has none).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Literal, overload

import numpy as np
import torch

from litebert.files import atomic_write, read_text
from litebert.model import EncoderForBeamQuestionAnswering, EncoderForQuestionAnswering
from litebert.model.auto import named_class
from litebert.model.backbone import backbone_class
from litebert.tasks.base import FinetuneConfig, FinetuneError, model_overrides, reported
from litebert.tasks.batching import left_padding, length_batches, pad_for
from litebert.tasks.metrics import squad_evaluate, squad_v2_official
from litebert.tasks.model_source import model_config_of
from litebert.tasks.runtime import Runtime
from litebert.tasks.squad import (
    SquadExample,
    SquadFeature,
    apply_null_threshold,
    make_features,
    postprocess,
    read_squad,
)
from litebert.tasks.squad_beam import beam_p_mask, beam_postprocess, feature_beams
from litebert.tokenization import Tokenizer

THRESHOLD_FILE = "squad.json"
TEST_PREDICTIONS, TEST_NULL_ODDS = "test_predictions.json", "test_null_odds.json"
POSITIONS = ("start_positions", "end_positions", "cls_index")  # counted within a row
# A filler row's start and end (finetune.py): past every width, so the span head's loss,
# which clamps them to the width and ignores that, counts nothing of it.
IGNORED_POSITION = 1 << 30


QA_HEADS = {"EncoderForQuestionAnswering": False, "EncoderForBeamQuestionAnswering": True}


def uses_beam_head(cfg: FinetuneConfig) -> bool:
    """--qa-head, or for auto: the SQuAD head the directory holds (a fine-tuned model, as
    `litebert evaluate` reads it), else whether the model's backbone sums a sequence up in
    its last token (XLNet's <cls>), the layout the beam head was made for."""
    head = cfg.task_options.qa_head
    if head != "auto":
        return head == "beam"
    config = model_config_of(cfg.model, cfg.model_config)
    held = named_class(config)
    if held in QA_HEADS:
        return QA_HEADS[held]
    return backbone_class(config).summary_position == -1


# A required file is found or raises, never None: the overloads let callers rely on that.
@overload
def find_file(directory: Path, split: str, version_2: bool,
              required: Literal[True] = True) -> Path: ...


@overload
def find_file(directory: Path, split: str, version_2: bool, required: bool) -> Path | None: ...


def find_file(directory: Path, split: str, version_2: bool,
              required: bool = True) -> Path | None:
    """train-v1.1.json / dev-v2.0.json as distributed, or any {split}*.json (None when not
    `required` and there is none)."""
    official = directory / f"{split}-v{'2.0' if version_2 else '1.1'}.json"
    if official.is_file():
        return official
    found = sorted(directory.glob(f"{split}*.json"))
    if not found:
        if not required:
            return None
        raise FinetuneError(f"{directory}: no {official.name} (nor any {split}*.json)")
    return found[0]


def fit_null_threshold(data: dict, spans: dict[str, str], null_odds: dict[str, float]) -> float:
    """The θ that maximises F1 when questions with null odds > θ are answered "" (the
    lowest such θ), always finite."""
    threshold = squad_evaluate(data, spans, na_probs=null_odds, version_2=True)["best_f1_thresh"]
    if math.isfinite(threshold):
        return float(threshold)
    # inf: answer all; the largest finite odds answers the same (inf odds have no span).
    return max((o for o in null_odds.values() if math.isfinite(o)), default=0.0)


def stored_threshold(model_dir: Path) -> float | None:
    """θ saved with a fine-tuned model (squad.json), or None."""
    path = model_dir / THRESHOLD_FILE
    if not path.is_file():
        return None
    value = json.loads(read_text(path)).get("null_score_diff_threshold")
    return None if value is None else float(value)


def _write_json(path: Path, content) -> Path:
    # Key order kept: the official script breaks na-prob ties in file order.
    return atomic_write(path, json.dumps(content, indent=2) + "\n")


class SquadTask:
    primary = "f1"

    def __init__(self, cfg: FinetuneConfig, runtime: Runtime, training: bool = True):
        self.cfg, self.runtime = cfg, runtime
        self.version_2 = cfg.task == "squad2"
        self.tokenizer = Tokenizer.from_pretrained(cfg.model)
        self.beam = uses_beam_head(cfg)
        data = Path(cfg.data)
        train = reported(read_squad(find_file(data, "train", self.version_2))) \
            if training else []
        dev_path = find_file(data, "dev", self.version_2)
        self.dev = reported(read_squad(dev_path))
        self.dev_json = json.loads(read_text(dev_path))
        self.dev_ids = list(dict.fromkeys(str(qa["id"]) for article in self.dev_json["data"]
                                          for p in article["paragraphs"] for qa in p["qas"]))
        test_path = find_file(data, "test", self.version_2, required=False)
        self.test = reported(read_squad(test_path, labeled=False)) if test_path else []
        self.train_rows = [self._row(f, True) for f in self._features(train)]
        self.train_lengths = [len(r["input_ids"]) for r in self.train_rows]
        self.dev_features = self._features(self.dev)
        self.threshold = 0.0  # fitted at the last evaluation
        # θ of the model as saved: its squad.json when evaluating, the best checkpoint's after.
        self.model_threshold = None if training else stored_threshold(Path(cfg.model))
        self.outputs: dict[str, dict] = {}
        # The beam head's loss (its spans' and its answer class's) has no label it ignores:
        # its short batches stay short.
        self.dummy_labels = None if self.beam else dict.fromkeys(
            ("start_positions", "end_positions"), IGNORED_POSITION)
        self.bucket_limit = runtime.bucket_limit(cfg.max_seq_length)

    def _features(self, examples):
        options = self.cfg.task_options
        return make_features(examples, self.tokenizer, max_seq_length=self.cfg.max_seq_length,
                             doc_stride=options.doc_stride,
                             max_query_length=options.max_query_length)

    def _row(self, feature: SquadFeature, training: bool) -> dict:
        row: dict[str, list[int] | int] = {
            "input_ids": feature.input_ids, "token_type_ids": feature.token_type_ids,
            "attention_mask": feature.attention_mask}
        if self.beam:  # start and end on the context or <cls> only, in training and after
            row["p_mask"] = beam_p_mask(feature, feature.cls_index)
        if training:
            row.update(start_positions=feature.start_position,
                       end_positions=feature.end_position)
            if self.beam:
                row.update(is_impossible=int(feature.is_impossible),
                           cls_index=feature.cls_index)
        return row

    def collate(self, rows: list[dict]) -> dict:
        """Rows padded as the tokenizer says (p_mask with 1: padding is never an answer);
        positions shifted by the padding put before each row."""
        batch = pad_for(self.tokenizer, rows, fill={"p_mask": 1}, max_length=self.bucket_limit)
        shift = torch.tensor(left_padding(self.tokenizer, [len(r["input_ids"]) for r in rows],
                                          self.bucket_limit))
        for key in POSITIONS:
            if key in batch:
                batch[key] = batch[key] + shift
        return batch

    def build_model(self) -> EncoderForQuestionAnswering | EncoderForBeamQuestionAnswering:
        head = EncoderForBeamQuestionAnswering if self.beam else EncoderForQuestionAnswering
        return head.from_pretrained(self.cfg.model, files=self.cfg.model_files,
                                    **model_overrides(self.cfg))

    def _outputs(self, model, features: list[SquadFeature], fields: tuple[str, ...]):
        """(feature indices, their left padding, the model's `fields` as arrays) per
        evaluation batch, the batches shared by the ranks."""
        lengths = [len(f.input_ids) for f in features]
        batches = length_batches(lengths, self.cfg.eval_batch_size, None)

        def collate(ids):
            return self.collate([self._row(features[i], False) for i in ids])

        outputs = self.runtime.evaluate_batches(
            model, batches, collate, lambda out: [getattr(out, name) for name in fields])
        for ids, arrays in zip(batches, outputs, strict=True):
            yield ids, left_padding(self.tokenizer, [lengths[i] for i in ids],
                                    self.bucket_limit), arrays

    def logits(self, model, features: list[SquadFeature]
               ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Start and end logits of every feature (span head), cut to its own tokens."""
        starts: list = [None] * len(features)
        ends: list = [None] * len(features)
        fields = ("start_logits", "end_logits")  # (B, T) each
        for ids, pads, (start, end) in self._outputs(model, features, fields):
            for j, (i, pad) in enumerate(zip(ids, pads, strict=True)):
                n = len(features[i].input_ids)
                starts[i] = start[j, pad:pad + n]
                ends[i] = end[j, pad:pad + n]
        return starts, ends

    def beams(self, model, features: list[SquadFeature]) -> list:
        """Every feature's beam (beam head), token indices counted in its own input_ids."""
        beams: list = [None] * len(features)
        fields = ("start_top_log_probs", "start_top_index", "end_top_log_probs",
                  "end_top_index", "cls_logits")  # (B, S), (B, S), (B, S*E), (B, S*E), (B,)
        for ids, pads, arrays in self._outputs(model, features, fields):
            start_lp, start_i, end_lp, end_i, cls = arrays
            rows = feature_beams(start_lp, start_i, end_lp, end_i, cls, pads)
            for i, beam in zip(ids, rows, strict=True):
                beams[i] = beam
        return beams

    def spans(self, model, examples: list[SquadExample], features: list[SquadFeature]
              ) -> tuple[dict[str, str], dict[str, float]]:
        """Every question's best span ("" only when none is valid) and its null odds."""
        options = self.cfg.task_options
        if self.beam:
            spans, null_odds, _ = beam_postprocess(
                examples, features, self.beams(model, features),
                n_best_size=options.n_best_size, max_answer_length=options.max_answer_length)
            return spans, null_odds
        starts, ends = self.logits(model, features)
        spans, null_odds, _ = postprocess(
            examples, features, starts, ends, n_best_size=options.n_best_size,
            max_answer_length=options.max_answer_length, version_2=self.version_2,
            null_score_diff_threshold=math.inf)
        return spans, null_odds

    def evaluate(self, model, out: Path) -> dict[str, float]:
        """Dev scores (see the module docstring for the threshold each one uses); the files
        they score are kept in self.outputs."""
        spans, null_odds = self.spans(model, self.dev, self.dev_features)
        # Every dev question, in file order; those the reader skipped get no answer.
        spans = {qid: spans.get(qid, "") for qid in self.dev_ids}
        null_odds = {qid: null_odds.get(qid, math.inf) for qid in self.dev_ids}
        if not self.version_2:
            self.outputs = {"predictions.json": spans}
            # v1.1 by the task, not by the file: converted copies of SQuAD 1.1 often carry
            # "is_impossible": false, which would otherwise add v2.0's HasAns_* keys.
            return squad_evaluate(self.dev_json, spans, version_2=False)
        self.threshold = fit_null_threshold(self.dev_json, spans, null_odds)
        predictions, shifted = apply_null_threshold(spans, null_odds, self.threshold)
        self.outputs = {"predictions.json": predictions, "null_odds.json": shifted}
        metrics = squad_v2_official(self.dev_json, predictions, shifted)
        return {**metrics, "null_score_diff_threshold": self.threshold}

    def score(self, metrics: dict[str, float]) -> float:
        return metrics["f1"]

    def save(self, model, directory: Path) -> None:
        model.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)
        self.model_threshold = self.threshold
        (directory / THRESHOLD_FILE).write_text(json.dumps(
            {"version_2": self.version_2, "null_score_diff_threshold": self.threshold,
             "head": "beam" if self.beam else "span",
             "max_seq_length": self.cfg.max_seq_length,
             "doc_stride": self.cfg.task_options.doc_stride,
             "max_query_length": self.cfg.task_options.max_query_length}, indent=2) + "\n")
        self._write_dev_predictions(directory.parent)

    @property
    def writes_test_predictions(self) -> bool:
        return bool(self.test)

    def write_predictions(self, model, out: Path, dev: bool = True) -> list[Path]:
        """With dev, the last evaluation's files in OUT (predictions.json, + null_odds.json
        for v2); then the test predictions of `model` (_write_test_predictions)."""
        written = self._write_dev_predictions(Path(out)) if dev and self.runtime.is_main else []
        return written + self._write_test_predictions(model, Path(out))

    def _write_dev_predictions(self, out: Path) -> list[Path]:
        return [_write_json(out / name, content) for name, content in self.outputs.items()]

    def _write_test_predictions(self, model, out: Path) -> list[Path]:
        """OUT/predictions/test_predictions.json (+ test_null_odds.json for v2) for the test
        file in the data directory, with the model's stored threshold; [] without one."""
        if not self.test:
            return []
        spans, null_odds = self.spans(model, self.test, self._features(self.test))
        folder = Path(out) / "predictions"
        if not self.runtime.is_main:  # every rank predicts, one writes
            return []
        if not self.version_2:
            return [_write_json(folder / TEST_PREDICTIONS, spans)]
        threshold = self.threshold if self.model_threshold is None else self.model_threshold
        predictions, shifted = apply_null_threshold(spans, null_odds, threshold)
        return [_write_json(folder / TEST_PREDICTIONS, predictions),
                _write_json(folder / TEST_NULL_ODDS, shifted)]
