"""The pre-training evaluation suite (the paper's Table 5 cross evaluation) on a micro model."""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

from litebert import EncoderForMaskedLM, EncoderForPreTraining, ModelConfig
from litebert.cli import main
from litebert.data.builder import BuildConfig, build
from litebert.data.heldout import PAIR_TASKS as TASKS
from litebert.data.heldout import draw_eval_set, open_heldout
from litebert.data.splits import split_documents
from litebert.objectives.mlm_eval import (
    RESULT_KEYS,
    evaluate_pretraining,
    load_for_evaluation,
    score,
)
from litebert.tokenization import Tokenizer, train_sentencepiece
from litebert.train.pretrain import Trainer, pretrain
from litebert.train.run_config import PretrainConfig, RunConfigError
from tests.data.builds import write_corpus
from tests.helpers.cli import help_entries
from tests.helpers.pretrain import file_reads, read_metrics, run_config

EVAL = dict(instances=60, batch_size=8)  # what the run below evaluates with (+ its seed)
CROSS_KEYS = ("eval_sop_accuracy", "eval_sop_baseline_accuracy", "eval_nsp_accuracy",
              "eval_nsp_baseline_accuracy")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    """One corpus and tokenizer built twice, with the SOP and with the NSP objective."""
    root = tmp_path_factory.mktemp("evaluation")
    corpus = write_corpus(root / "corpus.txt", docs=150)
    tok = train_sentencepiece([corpus], root / "tok", vocab_size=200).parent
    dirs = {}
    for objective in ("sop", "nsp"):
        dirs[objective] = root / objective
        build([corpus], tok, dirs[objective], BuildConfig(
            max_seq_length=64, format="bert", heldout_fraction=0.3, objective=objective))
    return dirs


@pytest.fixture(scope="module")
def run(data, tmp_path_factory) -> Path:
    """6 steps on the SOP data, evaluated at 3 and 6 with the cross evaluation; exported."""
    out = tmp_path_factory.mktemp("run") / "run"
    pretrain(run_config(data["sop"], out, objective={"name": "mlm", "eval_pair_tasks": "both"},
                        eval_instances=EVAL["instances"]))
    return out


def _vocab(data_dir: Path) -> int:
    return json.loads((data_dir / "manifest.json").read_text())["tokenizer"]["vocab_size"]


def _doc_of(held, positions: np.ndarray) -> np.ndarray:
    """The held-out document (a row of held.docs) holding each token position."""
    starts = held.offsets[held.docs[:, 0]]
    ends = held.offsets[held.docs[:, 1]]
    doc = np.searchsorted(starts, positions, side="right") - 1
    assert (doc >= 0).all() and (positions < ends[doc]).all()
    return doc


def test_every_key_in_range_whatever_the_data_objective(run, data):
    result = evaluate_pretraining(run / "export", data["sop"], seed=0, **EVAL)
    assert tuple(result) == RESULT_KEYS and result["has_pair_head"] is True
    for key in RESULT_KEYS:
        if key.endswith("accuracy"):
            assert 0.0 <= result[key] <= 1.0, key
    assert math.isfinite(result["mlm_loss"]) and result["mlm_loss"] > 0
    assert 0 < result["sop_pairs"] <= 60 and 0 < result["nsp_pairs"] <= 60
    assert result["mlm_tokens"] >= result["sop_pairs"] + result["nsp_pairs"]  # >= 1 a pair
    # Data built for NSP holds the same documents: the same examples, the same scores.
    assert evaluate_pretraining(run / "export", data["nsp"], seed=0, **EVAL) == result


def test_pair_sets_share_documents_and_are_drawn_from_the_seed(data):
    held = open_heldout(data["sop"])
    a, b, c = (draw_eval_set(held, instances=40, seed=s, batch_size=8) for s in (0, 0, 1))
    for task in TASKS:
        np.testing.assert_array_equal(a.rows[task], b.rows[task])
    assert all(torch.equal(x[k], y[k])
               for x, y in zip(a.batches, b.batches, strict=True) for k in x)
    assert any(not np.array_equal(a.rows[t], c.rows[t]) for t in TASKS)
    # Whole documents: every document drawn gives NSP pairs, SOP pairs only from them,
    # and a SOP pair's two segments are parts of one document.
    sop, nsp = a.rows["sop"], a.rows["nsp"]
    assert set(_doc_of(held, nsp[:, 0])) == set(a.documents.tolist())
    assert set(_doc_of(held, sop[:, 0])) <= set(a.documents.tolist())
    np.testing.assert_array_equal(_doc_of(held, sop[:, 0]), _doc_of(held, sop[:, 2]))
    assert 0 < len(sop) <= 40 and 0 < len(nsp) <= 40
    # Whatever objective the data was built with, the same pairs.
    other = draw_eval_set(open_heldout(data["nsp"]), instances=40, seed=0, batch_size=8)
    for task in TASKS:
        np.testing.assert_array_equal(a.rows[task], other.rows[task])


def test_baselines_are_the_majority_label_and_the_commonest_training_token(run, data):
    held = open_heldout(data["sop"])
    eval_set = draw_eval_set(held, seed=3, **EVAL)
    result = evaluate_pretraining(run / "export", data["sop"], seed=3, **EVAL)
    for task in TASKS:
        labels = eval_set.rows[task][:, 4]
        assert set(labels.tolist()) <= {0, 1} and result[f"{task}_pairs"] == len(labels)
        share = labels.mean()
        assert result[f"{task}_baseline_accuracy"] == pytest.approx(max(share, 1 - share))
    # The commonest non-special token of the training documents, counted directly.
    d = data["sop"]
    tokens = np.fromfile(d / "tokens.bin", dtype=np.uint16)
    sentences = np.fromfile(d / "sentences.bin", dtype=np.int64)
    documents = np.fromfile(d / "documents.bin", dtype=np.int64)
    heldout = split_documents(len(documents) - 1, BuildConfig(max_seq_length=64,
                                                              heldout_fraction=0.3))
    special = Tokenizer.from_pretrained(d / "tokenizer").special_mask
    counts: Counter[int] = Counter()
    for doc in np.flatnonzero(~heldout):
        span = tokens[sentences[documents[doc]]:sentences[documents[doc + 1]]]
        counts.update(int(t) for t in span if not special[t])
    commonest = counts.most_common(1)[0][0]
    targets = torch.cat([b["labels"][b["labels"] != -100] for b in eval_set.batches])
    assert len(targets) == result["mlm_tokens"]
    assert result["mlm_baseline_accuracy"] == pytest.approx(
        (targets == commonest).float().mean().item())


def test_a_checkpoint_without_a_pair_head_is_not_scored_on_pairs(run, data, tmp_path):
    EncoderForMaskedLM.from_pretrained(run / "export").save_pretrained(tmp_path / "mlm")
    assert load_for_evaluation(run / "export")[1] is True
    assert load_for_evaluation(tmp_path / "mlm")[1] is False
    full = evaluate_pretraining(run / "export", data["sop"], seed=0, **EVAL)
    only = evaluate_pretraining(tmp_path / "mlm", data["sop"], seed=0, **EVAL)
    assert only["has_pair_head"] is False
    assert only["sop_accuracy"] is None and only["nsp_accuracy"] is None
    for key in RESULT_KEYS:  # same weights, same examples: the rest is the same
        if key not in ("sop_accuracy", "nsp_accuracy", "has_pair_head"):
            assert only[key] == pytest.approx(full[key], rel=1e-6), key


@pytest.mark.parametrize("name, has_head", [("BertForMaskedLM", False),
                                            ("BertForPreTraining", True)])
def test_transformers_bert_directories(data, tmp_path, name, has_head):
    config = transformers.BertConfig(vocab_size=_vocab(data["sop"]), hidden_size=32,
                                     num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=64)
    getattr(transformers, name)(config).save_pretrained(tmp_path)
    result = evaluate_pretraining(tmp_path, data["sop"], instances=20, batch_size=8)
    assert result["has_pair_head"] is has_head
    assert (result["sop_accuracy"] is not None) is has_head
    assert 0.0 <= result["mlm_accuracy"] <= 1.0


def test_ranks_split_the_batches_and_sum_to_one_process(run, data):
    model = EncoderForPreTraining.from_pretrained(run / "export")
    eval_set = draw_eval_set(open_heldout(data["sop"]), seed=0, instances=60, batch_size=4)
    assert len(eval_set.batches) % 2 == 1  # one rank scores a batch fewer
    cpu = torch.device("cpu")
    whole = score(model, eval_set, 5, device=cpu)
    halves = [score(model, eval_set, 5, device=cpu, rank=r, world_size=2) for r in (0, 1)]
    for key, value in whole.items():
        assert halves[0][key] + halves[1][key] == pytest.approx(value), key


def test_cli_prints_a_table_and_writes_the_json(run, data, tmp_path, capsys, monkeypatch):
    out = tmp_path / "result.json"
    assert main(["eval-pretraining", str(run / "export"), "--data", str(data["sop"]),
                 "--out", str(out), "--instances", "60", "--batch-size", "8"]) == 0
    printed = capsys.readouterr().out
    assert all(name in printed for name in ("mlm_accuracy", "sop_accuracy", "nsp_accuracy"))
    saved = json.loads(out.read_text())
    assert tuple(saved) == RESULT_KEYS
    assert saved == pytest.approx(evaluate_pretraining(run / "export", data["sop"], **EVAL))
    entries = help_entries(["eval-pretraining"], capsys)
    assert set(entries) == {"--data", "--out", "--instances", "--seed", "--batch-size",
                            "--generator"}
    for option, text in entries.items():
        assert text.endswith(")") and ("(default: " in text or "(required)" in text), option
    reads = file_reads(monkeypatch)  # one command reads the model's config.json once
    assert main(["eval-pretraining", str(run / "export"), "--data", str(data["sop"]),
                 "--instances", "60", "--batch-size", "8"]) == 0
    assert reads[(run / "export" / "config.json").resolve()] == 1


def test_cli_errors_are_one_line_naming_the_files(run, data, tmp_path, capsys):
    missing = tmp_path / "nowhere"
    cases = [(missing, data["sop"], [str(missing)]),
             (run / "export", missing, [str(missing)])]
    config = ModelConfig.from_json_file(run / "export" / "config.json")
    EncoderForPreTraining(config.replace(vocab_size=300)).save_pretrained(tmp_path / "other")
    cases.append((tmp_path / "other", data["sop"],
                  [str(tmp_path / "other" / "config.json"), str(data["sop"] / "manifest.json"),
                   "vocab_size 300", f"{_vocab(data['sop'])} ids"]))
    for model, data_dir, named in cases:
        assert main(["eval-pretraining", str(model), "--data", str(data_dir)]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "Traceback" not in err
        assert all(part in err for part in named), err


def test_trainer_logs_the_cross_evaluation_of_the_same_code(run, data):
    _, evals = read_metrics(run)
    assert [x["step"] for x in evals] == [3, 6]
    for record in evals:
        assert all(0.0 <= record[k] <= 1.0 for k in CROSS_KEYS)
        assert "eval_sop_loss" in record  # the data's own task still gives its loss
    seed = PretrainConfig().seed  # the run's: the set is drawn from it once
    direct = evaluate_pretraining(run / "export", data["sop"], seed=seed, **EVAL)
    for task in TASKS:
        for key in (f"{task}_accuracy", f"{task}_baseline_accuracy"):
            assert evals[-1][f"eval_{key}"] == pytest.approx(direct[key]), key


def test_eval_pair_tasks_own_keeps_todays_metrics(data, tmp_path, capsys):
    assert PretrainConfig().objective.eval_pair_tasks == "own"
    with pytest.raises(RunConfigError, match="eval_pair_tasks"):
        PretrainConfig(objective={"name": "mlm", "eval_pair_tasks": "all"})
    with pytest.raises(SystemExit):
        main(["pretrain", "--help"])
    listed = capsys.readouterr().out
    assert re.search(r"eval_pair_tasks: sentence-pair tasks .*?\(default: own\)", listed, re.S)
    trainer = Trainer(run_config(data["sop"], tmp_path / "own", max_steps=2, eval_every=2,
                                 save_every=2, export=False))
    assert trainer.objective.cross_set is None
    assert set(trainer.run()) == {"eval_mlm_loss", "eval_mlm_accuracy", "eval_loss",
                                  "eval_mlm_baseline_accuracy", "eval_sop_loss",
                                  "eval_sop_accuracy", "eval_sop_baseline_accuracy"}


def test_a_model_with_another_tokenizer_is_warned_about(run, data, tmp_path, caplog):
    """Any tokenizer kind: the fingerprints differ (here other text settings, same pieces)."""
    from litebert.objectives.evaluation import warn_other_tokenizer
    from litebert.tokenization import Tokenizer

    held = open_heldout(data["sop"])
    with caplog.at_level(logging.WARNING, logger="litebert"):
        warn_other_tokenizer(run / "export", held)
    assert "different tokenizers" not in caplog.text
    other = tmp_path / "other"
    Tokenizer.from_pretrained(run / "export", do_lower_case=False).save_pretrained(other)
    with caplog.at_level(logging.WARNING, logger="litebert"):
        warn_other_tokenizer(other, held)
    assert "different tokenizers" in caplog.text
