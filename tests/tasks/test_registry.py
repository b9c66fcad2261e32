"""The task registry: every entry names an adapter that exists, a task's own options reach
only that task, and `finetune --help` shows them under the task's names."""

from __future__ import annotations

import importlib

import pytest

from litebert.cli import build_parser, main
from litebert.tasks.base import FinetuneError, config_record, finetune_config
from litebert.tasks.registry import TASKS, SquadOptions, TableOptions

PROTOCOL = ("collate", "build_model", "evaluate", "score", "save", "write_predictions")


@pytest.mark.parametrize("task", sorted(TASKS))
def test_each_entry_names_an_adapter_class_with_the_protocol(task):
    module, name = TASKS[task].adapter.split(":")
    adapter = getattr(importlib.import_module(module), name)
    assert all(callable(getattr(adapter, method, None)) for method in PROTOCOL)
    assert TASKS[task].summary and TASKS[task].recipe.max_steps > 0


def test_a_tasks_own_options_become_its_options_instance():
    cfg = finetune_config(task="squad1", data="d", model="m", out="o", doc_stride=64)
    assert cfg.task_options == SquadOptions(doc_stride=64)
    plain = finetune_config(task="race", data="d", model="m", out="o")
    assert plain.task_options is None
    generic = finetune_config(task="classification", data="d", model="m", out="o",
                              text_a="review", workers=1)
    assert generic.task_options == TableOptions(text_a="review", workers=1)


def test_an_option_of_another_task_is_an_error_that_names_the_tasks_taking_it():
    with pytest.raises(FinetuneError, match=r"^--doc-stride is an option of squad1, squad2, "
                                            r"not of --task rte; see"):
        finetune_config(task="rte", data="d", model="m", out="o", doc_stride=64)
    with pytest.raises(FinetuneError, match=r"^--text-a is an option of classification, "
                                            r"regression, not of --task race"):
        finetune_config(task="race", data="d", model="m", out="o", text_a="x")
    with pytest.raises(FinetuneError, match=r"--task squad2: qa_head='wide': choose auto, "):
        finetune_config(task="squad2", data="d", model="m", out="o", qa_head="wide")


def test_the_command_line_says_so_in_one_line(capsys):
    assert main(["finetune", "--task", "mnli", "--data", "d", "--model", "m", "--out", "o",
                 "--max-answer-length", "9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["litebert finetune: error: --max-answer-length is an option of squad1, "
                   "squad2, not of --task mnli; see `litebert finetune --help`"]


def test_help_groups_each_options_class_under_the_tasks_that_take_it(capsys):
    with pytest.raises(SystemExit):
        build_parser("finetune").parse_args(["finetune", "--help"])
    text = capsys.readouterr().out
    order = ["the GLUE tasks, classification, regression: tokenizing a table", "\n  --workers",
             "squad1, squad2: windows over long contexts", "\n  --doc-stride",
             "\n  --qa-head", "classification, regression: the columns of your own table",
             "\n  --text-a", "tasks:"]
    assert [text.index(line) for line in order] == sorted(text.index(line) for line in order)
    assert text.count("\n  --workers N ") == 1  # a field once, however many classes take it
    for name, spec in TASKS.items():  # the task list, a line each
        assert f"  {name:<{max(map(len, TASKS))}}  {spec.summary}" in text


def test_results_record_the_options_flat_with_the_family_defaults_last(tmp_path):
    cfg = finetune_config(task="classification", data="d", model=str(tmp_path), out="o",
                          label_column="stars", workers=2)
    record = config_record(cfg)
    assert record["label_column"] == "stars" and record["workers"] == 2
    assert "task_options" not in record and "doc_stride" not in record
    assert list(record)[-1] == "family_defaults"
