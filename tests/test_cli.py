from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from litebert.cli import build_parser, main
from litebert.families import FAMILIES
from litebert.train.run_config import recipe_names
from tests.helpers.cli import GLOB, help_entries, raw_words, unquoted

ROOT = Path(__file__).resolve().parents[1]


def test_params_prints_the_design_counts(capsys):
    assert main(["params"]) == 0
    out = capsys.readouterr().out
    for number in ("11,683,584", "17,683,968", "58,724,864", "222,595,584", "11,813,810",
                   "17,847,474", "59,021,490", "223,158,450"):
        assert number in out
    assert "sharing=attention" in out and "E=768" in out


def test_smoke_trains_saves_and_reloads(capsys):
    assert main(["smoke", "--preset", "tiny", "--batch", "2", "--seq", "16",
                 "--steps", "2"]) == 0
    out = capsys.readouterr().out
    assert "step 2: loss" in out and "loss difference 0.00e+00" in out


def test_bad_arguments_are_a_message_not_a_traceback():
    run = subprocess.run([sys.executable, "-m", "litebert.cli", "smoke", "--preset", "huge"],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert "invalid choice: 'huge'" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize("argv", [["data", "build"], ["pretrain"], ["finetune"],
                                  ["evaluate"]])
def test_every_option_says_what_it_does_and_its_default(argv, capsys):
    entries = help_entries(argv, capsys)
    assert len(entries) >= 10
    for option, description in entries.items():
        what = re.sub(r"\((default: .+|required)\)$", "", description).strip()
        assert what, f"litebert {' '.join(argv)} {option}: no description"
        assert what != description, f"litebert {' '.join(argv)} {option}: no default shown"


def test_finetune_exposes_every_field_of_its_config(capsys):
    entries = help_entries(["finetune"], capsys)
    assert {"--weight-decay", "--eval-batch-size", "--n-best-size", "--seeds"} <= set(entries)
    assert "(default: the model family's" in entries["--weight-decay"]
    assert "(default: the task's recipe)" in entries["--max-steps"]
    assert "(default: 1000)" in help_entries(["pretrain"], capsys)["--max-steps"]
    assert help_entries(["evaluate"], capsys)["--task"].endswith("(required)")


@pytest.mark.parametrize("command", ["finetune", "evaluate"])
def test_finetune_and_evaluate_offer_precision_and_compile(command, capsys):
    """Both commands choose their arithmetic and compile; fine-tuning its loss lines too."""
    entries = help_entries([command], capsys)
    assert entries["--precision"].startswith("arithmetic: auto is bf16 on CUDA")
    assert entries["--precision"].endswith("(default: auto)")
    assert entries["--compile"].startswith("torch.compile the model")
    assert entries["--compile"].endswith("(default: auto)")
    assert entries["--no-compile"] == "the same as --compile false (default: auto)"
    if command == "finetune":
        assert entries["--log-every"].endswith("(default: 50)")
    else:
        assert "--log-every" not in entries


@pytest.mark.slow
def test_model_benchmark_runs():
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_model.py"),
                          "--presets", "tiny", "--steps", "1", "--seq", "32"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "| tiny |" in run.stdout


# ---- help answers at once ----------------------------------------------------------------------

# What a parser must not load: each costs seconds (torch about 4 s with the models, matplotlib
# 1 s), and `--help` or `litebert recipes` needs none of them.
HEAVY = ("torch", "matplotlib", "transformers")


def test_building_every_parser_and_the_recipe_list_imports_no_torch():
    code = ("import sys\n"
            "from litebert.cli import build_parser\n"
            "from litebert.commands.train import cmd_recipes\n"
            "build_parser()\n"
            "cmd_recipes(None)\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize(("module", "argv"), [
    ("litebert", ["--help"]), ("litebert.cli", ["pretrain", "--help"]),
    ("litebert.cli", ["finetune", "--help"]), ("litebert.cli", ["export", "--help"]),
    ("litebert.cli", ["eval-pretraining", "--help"]), ("litebert.cli", ["demo", "--help"]),
    ("litebert.cli", ["recipes"])])
def test_help_and_the_recipe_list_answer_within_two_seconds(module, argv):
    """About 0.4 s of CPU each on the 2-core machine; the bound leaves room for a busy one.
    `python -m litebert` is the command as `python -m litebert.cli` is."""
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", module, *argv], capture_output=True,
                         text=True, timeout=120)
    seconds = time.perf_counter() - start
    assert run.returncode == 0, run.stderr[-2000:]
    assert seconds < 2.0, f"litebert {' '.join(argv)} took {seconds:.1f} s"
    assert run.stdout.startswith("usage: litebert") or argv == ["recipes"]


# ---- what the help says ------------------------------------------------------------------------

def help_texts(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, the argument or "description", its text) for every parser's description
    and every argument's help, subcommands' included."""
    yield path, "description", parser.description or ""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                yield path, choice.dest, choice.help or ""
            for name, sub in action.choices.items():
                yield from help_texts(sub, (*path, name))
        elif not isinstance(action, argparse._HelpAction):
            yield path, (action.option_strings or [action.dest])[0], action.help or ""


def test_every_command_and_argument_says_what_it_is():
    parser = build_parser()
    commands = [(path, name) for path, name, _ in help_texts(parser) if name != "description"]
    assert {((), "export"), (("export",), "run_dir"), (("plot",), "run_dir")} <= set(commands)
    missing = [f"litebert {' '.join(path)} {name}" for path, name, text in help_texts(parser)
               if name != "description" and not text.strip()]
    assert not missing, missing


# Help texts that name several families for another list than the families': the tokenizer
# kinds litebert trains (each family's layout; BERT's WordPiece is read, not trained).
NOT_FAMILY_LISTS = {((), "tokenizer"), (("tokenizer",), "train"),
                    (("tokenizer", "train"), "--kind")}


def named(title: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(title)}(?![\w-])", text) is not None


def test_every_family_is_named_wherever_the_help_lists_families():
    """A text naming four families or more lists them: it must name every one litebert reads
    (litebert.families.FAMILIES), the model directories' lists litebert's own layout too."""
    titles = {model_type: adapter.title for model_type, adapter in FAMILIES.items()}
    others = [title for model_type, title in titles.items() if model_type != "litebert"]
    lists = {(path, name): text for path, name, text in help_texts(build_parser())
             if (path, name) not in NOT_FAMILY_LISTS
             and sum(named(title, text) for title in others) >= 4}
    assert {((), "description"), (("finetune",), "--model"), (("evaluate",), "--model"),
            (("eval-pretraining",), "model")} <= set(lists)
    for (path, name), text in lists.items():
        missing = [title for title in others if not named(title, text)]
        assert not missing, f"litebert {' '.join(path)} {name}: {missing} not named"
        if "model directory" in text:
            assert named(titles["litebert"], text), f"litebert {' '.join(path)} {name}"


def test_recipes_prints_each_recipes_first_sentence_in_one_column(capsys):
    assert main(["recipes"]) == 0
    lines = capsys.readouterr().out.split("\n\n")[0].splitlines()
    summaries = {line.split()[0]: line for line in lines}
    assert set(summaries) == set(recipe_names())
    columns = {len(line) - len(line[len(name):].lstrip()) for name, line in summaries.items()}
    assert len(columns) == 1, "the summaries start in different columns"
    assert "ModernBERT-base as in Warner et al. 2024 (arXiv 2412.13663)" in summaries[
        "modernbert-base"]  # "et al." ends no sentence


def test_the_set_examples_of_pretrain_help_survive_the_shell():
    (text,) = [text for path, name, text in help_texts(build_parser("pretrain"))
               if path == ("pretrain",) and name == "--set"]
    words = raw_words(text)
    values = [words[i + 1] for i, word in enumerate(words[:-1]) if word == "--set"]
    assert len(values) >= 4
    for value in values:  # one word each, nothing left for the shell to glob
        assert not GLOB & set(unquoted(value)), value
        assert len(shlex.split(value)) == 1, value

