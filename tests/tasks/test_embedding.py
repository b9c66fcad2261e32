"""`--task embedding` (tasks/embedding.py) end to end on a small BERT: fine-tuning on triplets
learns and saves a directory sentence-transformers loads; two processes (gloo, CPU)
give one process's weights, with and without GradCache's chunks; the three kinds of dev data
score as computed by hand from `encode`; bad input is one sentence naming file (and line)."""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from scipy import stats

from litebert.model.sentence_encoder import SentenceEncoder
from litebert.tasks import finetune as finetune_module
from litebert.tasks.base import FinetuneConfig, FinetuneError, finetune_config
from litebert.tasks.embedding import EmbeddingTask
from litebert.tasks.embedding_data import held_out
from litebert.tasks.encode import encode
from litebert.tasks.examples import TaskDataError
from litebert.tasks.registry import (
    EMBEDDING_LENGTH,
    TASKS,
    EmbeddingOptions,
    option_classes,
    own_fields,
)
from litebert.tasks.retrieval import InputFileError, read_beir, score_metrics
from litebert.tasks.tables import MissingColumnError
from litebert.tokenization import Tokenizer
from tests.fixtures_sp import _ADJ, _NAMES, _NOUNS, _PLACES, _VERBS
from tests.helpers.cli import cli_options
from tests.helpers.launch import run_ranks

# Dropout off and few steps: two processes must reproduce one's arithmetic.
SCHEDULE = dict(lr=1e-3, batch_size=8, max_steps=6, warmup_steps=1, eval_every=3,
                eval_batch_size=5, log_every=3, max_seq_length=24, dropout=0.0)


def embedding_config(options: EmbeddingOptions, **fields) -> FinetuneConfig:
    return finetune_config(task="embedding", task_options=options, **fields)


def triplet(rng: random.Random) -> dict[str, str]:
    """An anchor, a positive sharing its noun and place, and a hard negative sharing its
    adjective and form but neither."""
    noun, place, adj = rng.choice(_NOUNS), rng.choice(_PLACES), rng.choice(_ADJ)
    return {"anchor": f"the {adj} {noun} of {place}",
            "positive": f"{rng.choice(_NAMES)} {rng.choice(_VERBS)} the {noun} in {place}",
            "negative": f"the {adj} {rng.choice(_NOUNS)} of {rng.choice(_PLACES)}"}


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def triplets_dir(root: Path, n_train: int, n_dev: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    write_jsonl(root / "train.jsonl", [triplet(rng) for _ in range(n_train)])
    write_jsonl(root / "dev.jsonl", [triplet(rng) for _ in range(n_dev)])
    return root


# ---- the registry entry --------------------------------------------------------------------

def test_the_registry_entry():
    spec = TASKS["embedding"]
    module, name = spec.adapter.split(":")
    assert (module, name) == ("litebert.tasks.embedding", EmbeddingTask.__name__)
    recipe = spec.recipe
    assert (recipe.lr, recipe.batch_size, recipe.max_seq_length) == (2e-5, 32, None)
    assert EMBEDDING_LENGTH == 128  # without a sentence-transformers start's own length
    assert recipe.warmup_steps / recipe.max_steps == 0.1
    options = EmbeddingOptions()
    assert (options.pooling, options.scale, options.chunk_size) == (None, 20.0, None)
    # Its flags must not collide with another task's when --help lists them all.
    mine = {f.name for f in own_fields(EmbeddingOptions)}
    others = {f.name for cls in option_classes() if cls is not EmbeddingOptions
              for f in own_fields(cls)}
    assert not mine & others


# ---- training ------------------------------------------------------------------------------

def test_fine_tuning_learns_and_saves_a_sentence_transformers_directory(
        hf_model_dir, tmp_path):
    data = triplets_dir(tmp_path / "data", n_train=160, n_dev=60)
    options = EmbeddingOptions(negative_column="negative")
    cfg = embedding_config(options, data=str(data), model=str(hf_model_dir("bert")),
                           out=str(tmp_path / "out"),
                           **{**SCHEDULE, "max_steps": 40, "eval_every": 40})
    task = finetune_module.adapter_for(cfg, training=False)
    before = task.evaluate(task.build_model().eval(), tmp_path)
    result = finetune_module.finetune(cfg)
    after = result["dev"]
    print(f"dev accuracy {before['accuracy']:.2f} -> {after['accuracy']:.2f}, mrr@10 "
          f"{before['mrr@10']:.2f} -> {after['mrr@10']:.2f}")
    assert result["metric"] == "accuracy" and after["pairs"] == 60
    assert after["accuracy"] >= before["accuracy"] + 0.2
    saved = tmp_path / "out" / "model"
    assert {"modules.json", "sentence_bert_config.json", "config.json",
            "model.safetensors"} <= {p.name for p in saved.iterdir()}
    reloaded = dataclasses.replace(cfg, model=str(saved))
    again = finetune_module.adapter_for(reloaded, training=False)
    model = again.build_model().eval()
    assert model.max_seq_length == SCHEDULE["max_seq_length"] and model.pooling == "mean"
    assert again.evaluate(model, tmp_path) == pytest.approx(after)


def logged_losses(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"step \d+: loss ([0-9.]+)", text)]


@pytest.mark.parametrize("chunk_size", [None, 2])
def test_two_processes_fine_tune_as_one(hf_model_dir, tmp_path, caplog, chunk_size):
    """Triplets, 6 steps of 8 over 23 rows (so a last batch of 7: the ranks hold 4 and 3;
    and with chunks of 2, different numbers of chunks), evaluated twice: the negatives of
    the other rank are gathered, so the loss and weights are one process's."""
    data = triplets_dir(tmp_path / "data", n_train=23, n_dev=11)
    options = {"negative_column": "negative", "chunk_size": chunk_size}
    fields = dict(data=str(data), model=str(hf_model_dir("bert")), **SCHEDULE)
    with caplog.at_level(logging.INFO, logger="litebert"):
        finetune_module.finetune(embedding_config(EmbeddingOptions(**options), **fields,
                                                  out=str(tmp_path / "one")))
    losses = logged_losses(run_ranks(2, ["finetune", "--task", "embedding", *cli_options(
        {**fields, **options, "out": str(tmp_path / "two")})]))
    assert len(losses) == 2 and losses == logged_losses(caplog.text)  # to the 4 decimals shown
    one, two = (json.loads((tmp_path / run / "results.json").read_text())
                for run in ("one", "two"))
    assert len(one["history"]) == len(two["history"]) == 2
    for mine_then, theirs_then in zip(one["history"], two["history"], strict=True):
        assert mine_then == pytest.approx(theirs_then, rel=1e-5)
    mine, theirs = (load_file(tmp_path / run / "model" / "model.safetensors")
                    for run in ("one", "two"))
    assert mine.keys() == theirs.keys()
    moved = [k for k in mine if not torch.equal(mine[k], load_file(
        Path(hf_model_dir("bert")) / "model.safetensors").get(f"bert.{k}", mine[k]))]
    difference = max(float((mine[k] - theirs[k]).abs().max()) for k in mine)
    print(f"chunks {chunk_size}: largest weight difference {difference:.1e}, "
          f"{len(moved)} of {len(mine)} tensors trained")
    assert difference <= 1e-5 and len(moved) > len(mine) // 2


def test_bf16_on_the_cpu_trains_with_chunks_and_saves(hf_model_dir, tmp_path, caplog):
    """Autocast to bf16 (GradCache's chunks replayed under it): finite losses, fp32
    weights that moved, a directory sentence-transformers reads."""
    data = triplets_dir(tmp_path / "data", n_train=24, n_dev=8)
    options = EmbeddingOptions(negative_column="negative", chunk_size=3)
    with caplog.at_level(logging.INFO, logger="litebert"):
        finetune_module.finetune(embedding_config(
            options, data=str(data), model=str(hf_model_dir("roberta")),
            out=str(tmp_path / "o"), precision="bf16",
            **{**SCHEDULE, "max_steps": 4, "eval_every": 4, "log_every": 1}))
    losses = logged_losses(caplog.text)
    assert len(losses) == 4 and all(np.isfinite(losses))
    saved = load_file(tmp_path / "o" / "model" / "model.safetensors")
    start = load_file(Path(hf_model_dir("roberta")) / "model.safetensors")
    assert {w.dtype for w in saved.values()} == {torch.float32}
    assert any(not torch.equal(w, start[f"roberta.{k}"]) for k, w in saved.items()
               if f"roberta.{k}" in start)
    assert (tmp_path / "o" / "model" / "modules.json").is_file()


# ---- dev data ------------------------------------------------------------------------------

def adapter(cfg, training: bool = False) -> EmbeddingTask:
    task = finetune_module.adapter_for(cfg, training=training)
    assert isinstance(task, EmbeddingTask)
    return task


def untrained(task: EmbeddingTask, texts: list[str]) -> tuple[SentenceEncoder, np.ndarray]:
    model = task.build_model().eval()
    return model, encode(model, task.tokenizer, texts, max_length=SCHEDULE["max_seq_length"],
                         show_progress=False)


def test_sts_dev_is_the_spearman_of_the_cosines(hf_model_dir, tmp_path):
    rng = random.Random(3)
    rows = [{"sentence1": t["anchor"], "sentence2": t[rng.choice(["positive", "negative"])],
             "score": round(rng.uniform(0, 5), 2)} for t in (triplet(rng) for _ in range(30))]
    dev = write_jsonl(tmp_path / "sts.jsonl", rows)
    data = triplets_dir(tmp_path / "data", 10, 5)
    cfg = embedding_config(EmbeddingOptions(dev=str(dev)), data=str(data),
                           model=str(hf_model_dir("bert")), out=str(tmp_path), **SCHEDULE)
    task = adapter(cfg)
    model, first = untrained(task, [r["sentence1"] for r in rows])
    _, second = untrained(task, [r["sentence2"] for r in rows])
    metrics = task.evaluate(model, tmp_path)
    expected = stats.spearmanr((first * second).sum(1), [r["score"] for r in rows])[0]
    assert task.primary == "spearman"
    assert metrics["spearman"] == pytest.approx(expected, abs=1e-6)


def beir_dir(root: Path, qrels: list[str], corpus: int = 12) -> Path:
    rng = random.Random(4)
    docs = [{"_id": f"d{i}", "title": rng.choice(_PLACES), "text": triplet(rng)["positive"]}
            for i in range(corpus)]
    write_jsonl(root / "corpus.jsonl", docs)
    write_jsonl(root / "queries.jsonl", [{"_id": f"q{i}", "text": triplet(rng)["anchor"]}
                                         for i in range(5)])
    (root / "qrels").mkdir()
    (root / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" +
                                            "".join(line + "\n" for line in qrels))
    return root


QRELS = ["q0\td1\t2", "q0\td3\t1", "q1\td2\t1", "q2\td5\t1", "q3\td0\t0", "q4\td7\t1"]


def test_beir_dev_ranks_the_corpus_as_retrieval_scores(hf_model_dir, tmp_path):
    beir = beir_dir(tmp_path / "beir", QRELS)
    data = triplets_dir(tmp_path / "data", 10, 5)
    cfg = embedding_config(EmbeddingOptions(dev=str(beir), retrieval_ks="1,5"),
                           data=str(data), model=str(hf_model_dir("bert")), out=str(tmp_path),
                           **SCHEDULE)
    task = adapter(cfg)
    truth = read_beir(beir, "dev")
    query_ids, doc_ids = list(truth.qrels), list(truth.corpus)
    model, queries = untrained(task, [truth.queries[q] for q in query_ids])
    _, docs = untrained(task, [f"{t} {x}".strip() for t, x in truth.corpus.values()])
    expected = score_metrics(queries @ docs.T, query_ids, doc_ids, truth.qrels, (1, 5, 10))
    assert task.primary == "ndcg@10"
    assert task.evaluate(model, tmp_path) == pytest.approx(expected, abs=1e-6)
    assert expected["queries"] == 4 and expected["unjudged_queries"] == 1


def test_pair_dev_without_a_dev_file_holds_out_train_pairs(hf_model_dir, tmp_path):
    rng = random.Random(5)
    train = write_jsonl(tmp_path / "pairs.jsonl", [triplet(rng) for _ in range(40)])
    cfg = embedding_config(EmbeddingOptions(pairs_dev_fraction=0.25), data=str(train),
                           model=str(hf_model_dir("bert")), out=str(tmp_path), **SCHEDULE)
    task = adapter(cfg, training=True)
    assert len(task.train_rows) == 30 and task.dev.kind == "pairs"
    anchors, positives = task.dev.columns
    model, a = untrained(task, anchors)
    _, p = untrained(task, positives)
    scores = a @ p.T  # (10, 10)
    rank = (scores > np.diag(scores)[:, None]).sum(1) + 1
    metrics = task.evaluate(model, tmp_path)
    assert metrics["accuracy"] == pytest.approx(np.mean(rank == 1))
    assert metrics["mrr@10"] == pytest.approx(np.mean(1 / rank))
    kept, held = held_out([list("abcdefghij"), list("ABCDEFGHIJ")], 0.3)
    assert len(held[0]) == 3 and sorted(kept[0] + held[0]) == list("abcdefghij")
    assert [a.upper() for a in held[0]] == held[1]  # a row's texts stay together


def test_a_sentence_transformers_start_keeps_its_pooling_and_length_unless_told(hf_model_dir,
                                                                     tmp_path):
    source = hf_model_dir("bert")
    SentenceEncoder.from_pretrained(source, "cls").save_pretrained(tmp_path / "st", 32)
    Tokenizer.from_pretrained(source).save_pretrained(tmp_path / "st")
    data = triplets_dir(tmp_path / "data", 10, 5)
    for pooling, expected in ((None, "cls"), ("mean", "mean")):
        cfg = embedding_config(EmbeddingOptions(pooling=pooling), data=str(data),
                               model=str(tmp_path / "st"), out=str(tmp_path), **SCHEDULE)
        assert adapter(cfg).build_model().pooling == expected
    assert adapter(cfg).max_length == SCHEDULE["max_seq_length"]  # as given
    unsaid = {k: v for k, v in SCHEDULE.items() if k != "max_seq_length"}
    cfg = embedding_config(EmbeddingOptions(), data=str(data), model=str(tmp_path / "st"),
                           out=str(tmp_path), **unsaid)
    assert cfg.max_seq_length is None and adapter(cfg).max_length == 32  # the directory's


def test_a_sentence_transformers_directory_with_its_model_in_a_module_folder(hf_model_dir,
                                                                          tmp_path):
    """Older exports keep the transformers model in 0_Transformer/: the task reads it there
    (the check of the model's tokenizer included) and trains as from any directory."""
    source, st = hf_model_dir("bert"), tmp_path / "st"
    SentenceEncoder.from_pretrained(source, "mean").save_pretrained(st, 32)
    Tokenizer.from_pretrained(source).save_pretrained(st)
    (st / "0_Transformer").mkdir()
    for path in list(st.iterdir()):
        if path.is_file() and path.name != "modules.json":
            path.rename(st / "0_Transformer" / path.name)
    modules = json.loads((st / "modules.json").read_text())
    modules[0]["path"] = "0_Transformer"
    (st / "modules.json").write_text(json.dumps(modules))
    data = triplets_dir(tmp_path / "data", 10, 5)
    cfg = embedding_config(EmbeddingOptions(), data=str(data), model=str(st),
                           out=str(tmp_path / "out"), **{**SCHEDULE, "max_steps": 2,
                                                         "eval_every": 2})
    task = adapter(cfg)
    assert task.build_model().pooling == "mean"
    assert finetune_module.finetune(cfg)["dev"]["pairs"] == 5


# ---- bad input -------------------------------------------------------------------------------

def test_bad_input_is_one_sentence_naming_the_file(hf_model_dir, tmp_path, caplog):
    model = str(hf_model_dir("bert"))
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [{"anchor": "a", "text": "b"}] * 4)

    def config(data, **options):
        return embedding_config(EmbeddingOptions(**options), data=str(data), model=model,
                                out=str(tmp_path), **SCHEDULE)

    with pytest.raises(MissingColumnError, match=r"pairs.jsonl: no column 'positive' \(asked "
                       r"for as the positive column\); the columns are \['anchor', 'text'\]"):
        adapter(config(pairs), training=True)
    data = triplets_dir(tmp_path / "data", 10, 5)
    empty = beir_dir(tmp_path / "empty", QRELS, corpus=0)
    with pytest.raises(InputFileError, match=r"empty/corpus.jsonl: the corpus is empty"):
        adapter(config(data, dev=str(empty)))
    unknown = beir_dir(tmp_path / "unknown", [*QRELS[:2], "q9\td1\t1"])
    with caplog.at_level(logging.WARNING, logger="litebert"):
        adapter(config(data, dev=str(unknown)))
    assert f"{unknown / 'qrels' / 'dev.tsv'}:4: query 'q9' is not in queries.jsonl (skipped; " \
           "1 such qrels in all)" in caplog.text
    nothing = beir_dir(tmp_path / "nothing", ["q9\td1\t1"])
    with pytest.raises(TaskDataError, match=r"dev.tsv: no qrel with a score above 0 names a "
                       r"query and a document of the folder; the first skipped: .*dev.tsv:2: "
                       r"query 'q9' is not in queries.jsonl"):
        adapter(config(data, dev=str(nothing)))
    with pytest.raises(FinetuneError, match=r"retrieval_ks='1,x': expected comma-separated"):
        adapter(config(data, retrieval_ks="1,x"))
