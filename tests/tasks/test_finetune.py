"""Fine-tuning end to end on small fixtures in the official formats, from a micro model."""

from __future__ import annotations

import json

import numpy as np
import pytest
import transformers

from litebert.cli import main
from litebert.tasks.base import FinetuneConfig, finetune_config
from litebert.tasks.finetune import evaluate_model, finetune
from tests.helpers.finetune import (
    BAD,
    FILLER,
    GOOD,
    fast,
    race_dir,
    sentence,
    squad_json,
    sst2_dir,
    write_tsv,
)
from tests.helpers.pretrain import file_reads

MNLI_HEADER = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse",
               "sentence2_binary_parse", "sentence1_parse", "sentence2_parse", "sentence1",
               "sentence2", "label1", "gold_label"]
MNLI_LABELS = ["entailment", "neutral", "contradiction"]


def test_sst2_learns_keeps_best_and_writes_submission(base_model, tmp_path):
    data = sst2_dir(tmp_path / "SST-2")
    out = tmp_path / "out"
    result = finetune(finetune_config(task="sst2", data=str(data), model=str(base_model),
                                     out=str(out), **fast()))
    assert result["dev"]["accuracy"] >= 0.8  # majority baseline 0.5
    saved = json.loads((out / "results.json").read_text())
    assert saved["dev"] == result["dev"] and saved["metric"] == "accuracy"
    assert [h["step"] for h in saved["history"]] == [75, 150]
    theirs = transformers.AlbertForSequenceClassification.from_pretrained(out / "model")
    assert theirs.config.id2label == {0: "0", 1: "1"}
    assert (out / "model" / "spiece.model").exists()
    submission = (out / "predictions" / "SST-2.tsv").read_text().splitlines()
    assert submission[0] == "index\tprediction" and len(submission) == 11
    assert {line.split("\t")[1] for line in submission[1:]} <= {"0", "1"}


def test_mnli_reports_matched_and_mismatched(base_model, tmp_path):
    rng = np.random.default_rng(2)
    header, labels = MNLI_HEADER, MNLI_LABELS
    for name, n in (("train", 90), ("dev_matched", 15), ("dev_mismatched", 15)):
        rows = [(i, 0, 0, "fiction", "-", "-", "-", "-", sentence(rng, True),
                 sentence(rng, False), labels[i % 3], labels[i % 3]) for i in range(n)]
        write_tsv(tmp_path / "MNLI" / f"{name}.tsv", header, rows)
    result = finetune(finetune_config(task="mnli", data=str(tmp_path / "MNLI"),
                                     model=str(base_model), out=str(tmp_path / "o"),
                                     **fast(max_steps=10, eval_every=10)))
    assert {"matched_accuracy", "mismatched_accuracy"} <= set(result["dev"])


def test_stsb_is_regression_with_correlations(base_model, tmp_path):
    rng = np.random.default_rng(3)
    header = ["index", "genre", "filename", "year", "old_index", "source1", "source2",
              "sentence1", "sentence2", "score"]
    for name, n in (("train", 60), ("dev", 20)):
        rows = [(i, "main", "f", "2012", i, "none", "none", sentence(rng, True),
                 sentence(rng, bool(i % 2)), f"{(i % 6):.1f}") for i in range(n)]
        write_tsv(tmp_path / "STS-B" / f"{name}.tsv", header, rows)
    result = finetune(finetune_config(task="stsb", data=str(tmp_path / "STS-B"),
                                     model=str(base_model), out=str(tmp_path / "o"),
                                     **fast(max_steps=10, eval_every=10)))
    assert {"pearson", "spearman", "corr"} <= set(result["dev"])
    config = json.loads((tmp_path / "o" / "model" / "config.json").read_text())
    assert config["num_labels"] == 1


def test_generic_jsonl_with_carved_dev_split_and_seeds(base_model, tmp_path):
    rng = np.random.default_rng(4)
    path = tmp_path / "topics.jsonl"
    path.write_text("\n".join(json.dumps({"text": sentence(rng, i % 2 == 0),
                                          "label": "pos" if i % 2 == 0 else "neg"})
                              for i in range(200)))
    result = finetune(finetune_config(task="classification", data=str(path),
                                     model=str(base_model), out=str(tmp_path / "o"),
                                     text_a="text", seeds=2, **fast()))
    assert result["seeds"] == [42, 43]
    # Each seed's results.json and the summary say which defaults were the family's.
    seed = json.loads((tmp_path / "o" / "seed-43" / "results.json").read_text())
    assert result["defaults"] == seed["defaults"] == {
        "family": "albert", "source": "ALBERT (Lan et al. 2020), Table 14",
        "values": {"weight_decay": 0.01, "layer_decay": 1.0, "adam_beta2": 0.999,
                   "adam_epsilon": 1e-6,
                   "layer_decay_rule": "head-to-embeddings"}}
    assert set(result["dev"]["accuracy"]) == {"median", "min", "max", "stdev"}
    assert result["dev"]["accuracy"]["median"] >= 0.8  # majority 0.5
    assert (tmp_path / "o" / "seed-43" / "model" / "model.safetensors").exists()


@pytest.mark.parametrize("version_2", [False, True])
def test_squad_writes_predictions_and_official_metrics(base_model, tmp_path, version_2):
    suffix = "v2.0" if version_2 else "v1.1"
    (tmp_path / f"train-{suffix}.json").write_text(json.dumps(squad_json(version_2, 60, 5)))
    (tmp_path / f"dev-{suffix}.json").write_text(json.dumps(squad_json(version_2, 10, 6)))
    task = "squad2" if version_2 else "squad1"
    out = tmp_path / "out"
    result = finetune(finetune_config(task=task, data=str(tmp_path), model=str(base_model),
                                     out=str(out), **fast(max_steps=40, eval_every=20,
                                                          max_seq_length=64),
                                     doc_stride=16, max_query_length=16))
    assert {"exact", "f1"} <= set(result["dev"])
    predictions = json.loads((out / "predictions.json").read_text())
    assert len(predictions) == (20 if version_2 else 10)
    if version_2:
        assert {"HasAns_f1", "NoAns_f1", "best_f1", "best_f1_thresh"} <= set(result["dev"])
        saved = json.loads((out / "model" / "squad.json").read_text())
        assert saved["null_score_diff_threshold"] == result["dev"]["null_score_diff_threshold"]
        assert (out / "null_odds.json").exists()
    else:  # v1.1's scores only, whatever flags the file carries
        assert set(result["dev"]) == {"exact", "f1", "total"}
        assert set(json.loads((out / "results.json").read_text())["dev"]) == set(result["dev"])
    again = evaluate_model(finetune_config(task=task, data=str(tmp_path), model=str(out / "model"),
                                          out=str(tmp_path / "eval"), max_seq_length=64,
                                          doc_stride=16, max_query_length=16))
    assert again["dev"]["f1"] == pytest.approx(result["dev"]["f1"])
    # The adapter writes its dev files for `litebert evaluate` too: the saved model's answers.
    assert json.loads((tmp_path / "eval" / "predictions.json").read_text()) == predictions


def test_race_multiple_choice(base_model, tmp_path):
    race_dir(tmp_path / "RACE")
    out = tmp_path / "out"
    result = finetune(finetune_config(task="race", data=str(tmp_path / "RACE"),
                                     model=str(base_model), out=str(out),
                                     **fast(max_steps=10, eval_every=10, batch_size=4)))
    assert {"middle", "high", "all"} <= set(result["dev"])
    answers = json.loads((out / "predictions.json").read_text())
    assert len(answers) == 12 and set(answers.values()) <= set("ABCD")
    # `litebert evaluate` of the saved model: the same answers, written by the adapter.
    evaluate_model(finetune_config(task="race", data=str(tmp_path / "RACE"),
                                  model=str(out / "model"), out=str(tmp_path / "eval")))
    assert json.loads((tmp_path / "eval" / "predictions.json").read_text()) == answers


def test_starts_from_a_transformers_bert_directory(tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + GOOD + BAD + FILLER
    bert_dir = tmp_path / "bert"
    bert_dir.mkdir()
    (bert_dir / "vocab.txt").write_text("\n".join(vocab) + "\n")
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64,
                                     max_position_embeddings=64)
    transformers.BertForPreTraining(config).save_pretrained(bert_dir)
    data = sst2_dir(tmp_path / "SST-2", n_train=120, n_dev=30)
    result = finetune(finetune_config(task="sst2", data=str(data), model=str(bert_dir),
                                     out=str(tmp_path / "out"), **fast()))
    assert result["dev"]["accuracy"] >= 0.8  # majority 0.5
    assert result["defaults"]["family"] == "bert"  # BERT's dropout; fast() gives the lr
    assert result["defaults"]["source"].startswith("BERT (Devlin et al. 2019), Section 4.1")
    assert result["defaults"]["values"]["dropout"] == 0.1 and result["config"]["dropout"] == 0.1
    back = transformers.BertForSequenceClassification.from_pretrained(tmp_path / "out" / "model")
    assert back.config.num_labels == 2


def test_cli_errors_are_sentences(base_model, tmp_path, capsys):
    assert main(["finetune", "--task", "sst2", "--data", str(tmp_path / "none"), "--model",
                 str(base_model), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "none" in err


def test_mnli_run_writes_matched_mismatched_and_ax_submissions(base_model, tmp_path):
    rng = np.random.default_rng(8)
    header, labels = MNLI_HEADER, MNLI_LABELS
    for name in ("train", "dev_matched", "dev_mismatched"):
        rows = [(i, 0, 0, "fiction", "-", "-", "-", "-", sentence(rng, True),
                 sentence(rng, False), labels[i % 3], labels[i % 3]) for i in range(12)]
        write_tsv(tmp_path / "MNLI" / f"{name}.tsv", header, rows)
    test_header = header[:10]
    for name in ("test_matched", "test_mismatched"):
        write_tsv(tmp_path / "MNLI" / f"{name}.tsv", test_header,
                  [(i, 0, 0, "fiction", "-", "-", "-", "-", sentence(rng, True),
                    sentence(rng, True)) for i in range(5)])
    write_tsv(tmp_path / "AX" / "AX.tsv", ["index", "sentence1", "sentence2"],
              [(i, sentence(rng, True), sentence(rng, False)) for i in range(7)])
    out = tmp_path / "o"
    finetune(finetune_config(task="mnli", data=str(tmp_path / "MNLI"), model=str(base_model),
                            out=str(out), **fast(max_steps=4, eval_every=4)))
    files = {p.name: p.read_text().splitlines() for p in (out / "predictions").iterdir()}
    assert set(files) == {"MNLI-m.tsv", "MNLI-mm.tsv", "AX.tsv"}
    assert len(files["AX.tsv"]) == 8 and len(files["MNLI-m.tsv"]) == 6
    assert {row.split("\t")[1] for row in files["AX.tsv"][1:]} <= set(labels)


def test_skipped_rows_are_reported_with_file_and_line(base_model, tmp_path, caplog):
    data = sst2_dir(tmp_path / "SST-2", n_train=40, n_dev=10)
    with open(data / "train.tsv", "a", encoding="utf-8") as f:
        f.write("a row with a label that does not exist\t7\n")
    with caplog.at_level("WARNING", logger="litebert"):
        finetune(finetune_config(task="sst2", data=str(data), model=str(base_model),
                                out=str(tmp_path / "o"), **fast(max_steps=2, eval_every=2)))
    assert "train.tsv: read 40 examples, skipped 1" in caplog.text
    assert "train.tsv:42" in caplog.text



def test_a_fine_tuning_reads_the_models_config_once(base_model, tmp_path, monkeypatch):
    """finetune_config reads config.json once; the family's defaults, the adapter, its checks
    and the loading of the weights (model/hub.py's load_pretrained) take what it read."""
    config_json = (base_model / "config.json").resolve()
    reads = file_reads(monkeypatch)
    finetune(finetune_config(task="sst2", data=str(sst2_dir(tmp_path / "SST-2")),
                             model=str(base_model), out=str(tmp_path / "out"),
                             **fast(max_steps=2, eval_every=2)))
    assert reads[config_json] == 1


def test_constructing_a_finetune_config_reads_no_file(base_model, tmp_path, monkeypatch):
    reads = file_reads(monkeypatch)
    cfg = FinetuneConfig(task="rte", data=str(tmp_path), model=str(tmp_path / "no-model"),
                         out=str(tmp_path / "out"))
    assert not reads and cfg.model_config is None  # no family read: the recipe's values
    assert cfg.family_defaults["family"] == "albert" and cfg.lr == 3e-5
    built = finetune_config(task="rte", data=str(tmp_path), model=str(base_model),
                            out=str(tmp_path / "out"))
    assert list(reads) == [(base_model / "config.json").resolve()]  # the builder reads it
    assert built.model_config is not None and built.model_config.hidden_size == 32
