"""Multiple choice of any shape (`--task choice`): SWAG's CSV columns, endings lists of
different lengths in JSON lines / Parquet / a saved dataset, bad rows noted with file:line,
the choice mask of the head, and fine-tuning with a byte-level BPE model (RoBERTa, in bf16)
and with XLNet (left padding) in one process and in two processes alike."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import transformers
from safetensors.torch import load_file

import litebert
from litebert.tasks.base import FinetuneConfig, finetune_config
from litebert.tasks.choice import ChoiceTask, RacePreset
from litebert.tasks.choice_data import read_choices, split_path, write_choice_predictions
from litebert.tasks.examples import ChoiceExample, TaskDataError
from litebert.tasks.finetune import adapter_for, evaluate_model, finetune
from litebert.tasks.race import option_text, race_choices, read_race
from litebert.tasks.registry import TASKS, ChoiceOptions
from tests.helpers.cli import cli_options
from tests.helpers.finetune import BAD, GOOD, race_dir, sentence
from tests.helpers.launch import run_ranks
from tests.helpers.models import small_config
from tests.readers.tables import write_all, write_dataset_folder, write_parquet

SWAG_HEADER = ["video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source",
               "ending0", "ending1", "ending2", "ending3", "label"]


def choice_config(options: ChoiceOptions | None = None, **fields) -> FinetuneConfig:
    return finetune_config(task="choice", task_options=options, **fields)


# ---- data ---------------------------------------------------------------------------------

def question(rng, n: int) -> tuple[str, list[str], int]:
    """(context, n endings, label): one good word among bad ones."""
    label = int(rng.integers(0, n))
    endings = [f"{rng.choice(BAD)} ." for _ in range(n)]
    endings[label] = f"{rng.choice(GOOD)} ."
    return sentence(rng, True), endings, label


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header, *rows])
    return path


def swag_rows(n: int, seed: int) -> list[list]:
    """Rows of SWAG's CSV files: the start phrase is sent1 + sent2."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        context, endings, label = question(rng, 4)
        rows.append([f"anetv_{i}", str(i), f"{context} the film was", context, "the film was",
                     "gold", *endings, label])
    return rows


def swag_dir(root: Path, n_train: int = 24, n_dev: int = 8) -> Path:
    """SWAG's layout: train.csv and val.csv."""
    write_csv(root / "train.csv", SWAG_HEADER, swag_rows(n_train, 1))
    write_csv(root / "val.csv", SWAG_HEADER, swag_rows(n_dev, 2))
    return root


def listed_rows(n: int, seed: int) -> list[dict]:
    """JSON records with 2-4 endings each, an id and no start."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        context, endings, label = question(rng, int(rng.integers(2, 5)))
        rows.append({"id": f"q{i}", "sent1": context, "endings": endings, "label": label})
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


NO_START = ChoiceOptions(start_column="")


# ---- reading ------------------------------------------------------------------------------

def test_swag_rows_pair_the_context_with_start_and_ending(tmp_path):
    data = swag_dir(tmp_path)
    assert split_path(data, "train").name == "train.csv"
    assert split_path(data, "dev").name == "val.csv"  # SWAG's name for dev
    examples, report = read_choices(data / "train.csv", ChoiceOptions())
    first, row = examples[0], swag_rows(1, 1)[0]
    assert (first.guid, first.context, first.label) == ("train.csv:2", row[3], row[10])
    assert first.choices == [f"the film was {ending}" for ending in row[6:10]]
    assert (report.read, report.skipped) == (24, 0)


def test_endings_lists_read_alike_from_jsonl_parquet_and_a_saved_dataset(tmp_path):
    rows = listed_rows(6, 3)
    paths = write_all(tmp_path / "in", rows)
    for kind, path in paths.items():
        examples, _ = read_choices(path, NO_START)
        assert [(e.guid, e.context, e.choices, e.label) for e in examples] == [
            (r["id"], r["sent1"], r["endings"], r["label"]) for r in rows], kind
    assert {len(r["endings"]) for r in rows} == {2, 3, 4}


def test_bad_rows_are_skipped_each_with_its_file_and_line(tmp_path):
    rows = swag_rows(4, 1)
    rows[1][9] = ""  # no ending3
    rows[2][10] = 4  # no ending 4
    path = write_csv(tmp_path / "train.csv", SWAG_HEADER, rows)
    examples, report = read_choices(path, ChoiceOptions())
    assert [e.guid for e in examples] == ["train.csv:2", "train.csv:5"]
    assert report.notes == [f"{path}:3: 3 endings, expected 4 (ending3 empty)",
                            f"{path}:4: label '4' is not an ending's index 0-3"]
    listed = listed_rows(4, 3)
    listed[0]["endings"] = ["only one"]
    listed[1]["endings"] = listed[1]["endings"][:2] + [None]
    listed[3]["label"] = 7
    jsonl = write_jsonl(tmp_path / "dev.jsonl", listed)
    _, report = read_choices(jsonl, NO_START)
    assert report.notes[:2] == [f"{jsonl}:1: 1 ending(s), a question needs 2 or more",
                                f"{jsonl}:2: 1 of the 3 endings empty or not text"]
    assert report.notes[2].startswith(f"{jsonl}:4: label 7 is not an ending's index 0-")
    # A declared number of choices; a Parquet row is named by its row number.
    listed = [{**r, "endings": ["a", "b", "c"], "label": 0} for r in listed_rows(3, 4)]
    listed[1]["endings"].append("d")
    parquet = write_parquet(tmp_path / "t.parquet", listed)
    _, report = read_choices(parquet, ChoiceOptions(start_column="", num_choices=3))
    assert report.notes == [f"{parquet}:2: 4 endings, expected 3 (num_choices)"]


def test_a_missing_column_or_an_empty_file_is_one_sentence(tmp_path):
    path = write_csv(tmp_path / "a.csv", SWAG_HEADER, swag_rows(2, 1))
    bad = [(ChoiceOptions(start_column="start"), r"a\.csv: no column 'start' \(the start\); "
                                                  r"the columns are \['video-id'"),
           (ChoiceOptions(ending_prefix="option"), r"no column 'endings' \(the endings\) nor "
                                                   r"option0, \.\.\.; the columns"),
           (ChoiceOptions(num_choices=5), r"4 ending columns \(ending0\.\.ending3\) but "
                                          r"num_choices=5")]
    for options, message in bad:
        with pytest.raises(TaskDataError, match=message):
            read_choices(path, options)
    one = write_csv(tmp_path / "one.csv", ["sent1", "sent2", "ending0", "label"],
                    [["a", "b", "c", 0]])
    with pytest.raises(TaskDataError, match="1 ending.s. per question; multiple choice needs"):
        read_choices(one, ChoiceOptions())
    (tmp_path / "e.csv").write_text("")
    (tmp_path / "e.jsonl").write_text("\n")
    pq.write_table(pa.table({"sent1": pa.array([], pa.string()),
                             "endings": pa.array([], pa.list_(pa.string())),
                             "label": pa.array([], pa.int64())}), tmp_path / "e.parquet")
    for name, message in (("e.csv", "empty file"), ("e.jsonl", "no JSON records"),
                          ("e.parquet", r"no usable rows \(0 skipped\)")):
        with pytest.raises(TaskDataError, match=f"{name}: {message}"):
            read_choices(tmp_path / name, NO_START)
    useless = write_csv(tmp_path / "u.csv", SWAG_HEADER, [[*swag_rows(1, 1)[0][:10], 9]])
    with pytest.raises(TaskDataError, match=r"u\.csv: no usable rows \(1 skipped, e\.g\. .*u"
                                            r"\.csv:2: label '9'"):
        read_choices(useless, ChoiceOptions())
    with pytest.raises(TaskDataError, match=r"no dev split \(dev\.\*, val\.\*, validation\.\*"):
        split_path(write_csv(tmp_path / "d" / "train.csv", SWAG_HEADER, []).parent, "dev")


def test_datasetdict_folders_are_splits(tmp_path):
    rows = listed_rows(4, 5)
    for split in ("train", "validation"):
        write_dataset_folder(tmp_path / split, rows, shards=1)
    assert split_path(tmp_path, "dev") == tmp_path / "validation"
    examples, _ = read_choices(split_path(tmp_path, "dev"), NO_START)
    assert [e.guid for e in examples] == ["q0", "q1", "q2", "q3"]


def test_the_predictions_file_has_each_questions_scores(tmp_path):
    examples = [ChoiceExample("a", "c", ["x", "y"], 1), ChoiceExample("b", "c", ["x"] * 3, 0)]
    path = write_choice_predictions(examples, [1, 2], [[0.1, 2.123456], [0.0, 1.0, 3.0]],
                                    tmp_path / "p.jsonl")
    assert [json.loads(line) for line in path.read_text().splitlines()] == [
        {"id": "a", "label": 1, "prediction": 1, "scores": [0.1, 2.1235]},
        {"id": "b", "label": 0, "prediction": 2, "scores": [0.0, 1.0, 3.0]}]


def test_race_is_a_preset_of_the_same_rows(tmp_path):
    race = race_dir(tmp_path / "RACE", train=(1, 0), dev=(1, 0))
    examples, _ = read_race(race, "train")
    (row,) = race_choices(examples)
    assert (row.context, row.label, row.level) == (examples[0].article, examples[0].label,
                                                   "middle")
    assert row.choices == [f"the film was {o} ." for o in examples[0].options]  # the blank
    assert option_text("Who came?", "Tom") == "Who came? Tom"
    assert TASKS["race"].adapter == TASKS["choice"].adapter == "litebert.tasks.choice:ChoiceTask"


def test_the_registry_entry_is_berts_swag_recipe():
    spec = TASKS["choice"]
    recipe = spec.recipe
    assert (recipe.lr, recipe.batch_size, recipe.dropout) == (2e-5, 16, 0.1)
    assert recipe.max_steps == 3 * 4597 and recipe.warmup_steps == 1379  # 73,546 / 16 a batch
    assert spec.options is ChoiceOptions
    default = ChoiceOptions()
    assert (default.context_column, default.start_column, default.ending_prefix,
            default.label_column) == ("sent1", "sent2", "ending", "label")


# ---- the head's choice mask ----------------------------------------------------------------

def test_a_padding_choice_never_wins_and_adds_nothing_to_the_loss():
    """Two questions, of 3 and 4 choices, in one (2, 4, T) batch: the first's fourth choice
    (a copy of its first, as the task pads) scores lowest, and loss and gradients are those
    of each question scored alone."""
    torch.manual_seed(0)
    model = litebert.EncoderForMultipleChoice(small_config()).eval()
    ids = torch.randint(5, 99, (2, 4, 9))
    ids[0, 3] = ids[0, 0]
    labels = torch.tensor([2, 1])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    out = model(ids, labels=labels, choice_mask=mask)
    assert out.logits[0, 3] == torch.finfo(torch.float32).min
    out.loss.backward()
    padded = model.classifier.weight.grad.clone()
    model.zero_grad()
    alone = [model(ids[:1, :3], labels=labels[:1]), model(ids[1:], labels=labels[1:])]
    ((alone[0].loss + alone[1].loss) / 2).backward()
    assert out.loss.item() == pytest.approx((alone[0].loss + alone[1].loss).item() / 2, abs=1e-6)
    torch.testing.assert_close(out.logits[0, :3], alone[0].logits[0])
    torch.testing.assert_close(padded, model.classifier.weight.grad)
    # Without a mask every choice is real: transformers' multiple-choice heads.
    assert model(ids).logits[0, 3] == model(ids).logits[0, 0]


# ---- fine-tuning ---------------------------------------------------------------------------

SCHEDULE = dict(lr=1e-3, batch_size=4, max_steps=12, warmup_steps=1, eval_every=6,
                eval_batch_size=8, log_every=4, dropout=0.0, classifier_dropout=0.0,
                max_seq_length=48)


def test_swag_with_roberta_in_bf16_and_evaluate(hf_model_dir, tmp_path):
    """A byte-level BPE model (RoBERTa's template, <s> A </s></s> B </s>) on SWAG's CSV
    files, autocast to bf16 on the CPU; `litebert evaluate` writes the same answers."""
    model, data = hf_model_dir("roberta"), swag_dir(tmp_path / "swag")
    fields = dict(data=str(data), precision="bf16")
    result = finetune(choice_config(model=str(model), out=str(tmp_path / "o"), **fields,
                                    **{**SCHEDULE, "max_steps": 4, "eval_every": 2}))
    assert result["metric"] == "accuracy" and 0 <= result["dev"]["accuracy"] <= 1
    written = (tmp_path / "o" / "predictions.jsonl").read_text()
    lines = [json.loads(line) for line in written.splitlines()]
    assert [line["id"] for line in lines] == [f"val.csv:{i}" for i in range(2, 10)]
    assert {len(line["scores"]) for line in lines} == {4}
    again = evaluate_model(choice_config(model=str(tmp_path / "o" / "model"),
                                         out=str(tmp_path / "e"), **fields, max_seq_length=48))
    assert again["dev"] == result["dev"]
    assert (tmp_path / "e" / "predictions.jsonl").read_text() == written
    transformers.RobertaForMultipleChoice.from_pretrained(tmp_path / "o" / "model")


def listed_dir(root: Path) -> Path:
    """JSON lines of 2-4 endings a question: 17 to train on (a last batch of one row), 9
    to evaluate."""
    write_jsonl(root / "train.jsonl", listed_rows(17, 6))
    write_jsonl(root / "dev.jsonl", listed_rows(9, 7))
    return root


def test_xlnet_batches_are_left_padded_and_masked(hf_model_dir, tmp_path):
    cfg = choice_config(NO_START, data=str(listed_dir(tmp_path)), model=str(hf_model_dir("xlnet")),
                        out=str(tmp_path / "o"), max_seq_length=48)
    task = adapter_for(cfg)
    assert isinstance(task, ChoiceTask) and not isinstance(task.preset, RacePreset)
    rows = task.train_rows[:6]
    batch = task.collate(rows)
    counts = [len(r["input_ids"]) for r in rows]
    B, C, _ = batch["input_ids"].shape
    assert (B, C) == (6, max(counts)) and len(set(counts)) > 1
    assert batch["choice_mask"].tolist() == [[j < n for j in range(C)] for n in counts]
    assert (batch["input_ids"][..., -1] == task.tokenizer.cls_token_id).all()  # <cls> last
    alike = [r for r in task.train_rows if len(r["input_ids"]) == 3][:2]
    assert "choice_mask" not in task.collate(alike)


def test_two_processes_fine_tune_xlnet_as_one(hf_model_dir, tmp_path):
    """Questions of 2-4 choices (padded, masked) through XLNet (left padding) in two gloo
    processes: one process's weights, metrics and predictions."""
    config = dict(data=str(listed_dir(tmp_path / "data")), model=str(hf_model_dir("xlnet")),
                  **SCHEDULE)
    finetune(choice_config(NO_START, **config, out=str(tmp_path / "one")))
    run_ranks(2, ["finetune", "--task", "choice", "--start-column", "",
                  *cli_options({**config, "out": str(tmp_path / "two")})])
    one, two = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("one", "two"))
    keys = ("best_step", "metric", "dev", "history", "schedule")
    assert {k: one[k] for k in keys} == {k: two[k] for k in keys}
    answers = [[json.loads(line) for line in (tmp_path / d / "predictions.jsonl").open()]
               for d in ("one", "two")]
    for mine, theirs in zip(*answers, strict=True):
        assert {**mine, "scores": None} == {**theirs, "scores": None}
        assert mine["scores"] == pytest.approx(theirs["scores"], abs=1e-3)
    assert len({line["prediction"] for line in answers[0]}) > 1  # not one answer for all
    weights = [load_file(tmp_path / d / "model" / "model.safetensors") for d in ("one", "two")]
    assert weights[0].keys() == weights[1].keys()
    # A bias added to every choice's score changes no softmax over the choices: its gradient
    # is rounding noise, which Adam scales up and the order of any sum changes. It stays
    # near its initial 0 in both runs (test_finetune_devices.py's NOISE, RACE's).
    noise = "logits_proj.bias"
    assert max(weights[0][noise].abs().max(), weights[1][noise].abs().max()) < 1e-4
    difference = max((value - weights[1][name]).abs().max().item()
                     for name, value in weights[0].items() if name != noise)
    print(f"largest weight difference {difference:.2e}")
    assert difference <= 1e-5
