"""PretrainConfig read from a recipe and overrides: each error names where its value came
from (the flag, --set, the recipe or the checkpoint), never the recipe for a value the
command gave (litebert.train.run_config with litebert.provenance)."""

from __future__ import annotations

import pytest

from litebert.cli import main
from litebert.train.run_config import (
    PretrainConfig,
    RunConfigError,
    load_run_config,
    saved_run_config,
)


def error_of(capsys, *args: str) -> str:
    assert main(["pretrain", *args]) == 2
    return capsys.readouterr().err.strip()


@pytest.mark.parametrize(("args", "expected"), [
    (["--max-steps", "-5"], "error: --max-steps -5: must be positive"),
    (["--set", "max_steps=-5"], "error: --set max_steps=-5: must be positive"),
    (["--lr", "-1"], "error: --lr -1.0: must be positive"),
    (["--set", "max_steps=abc"], "error: --set max_steps=abc: give a whole number"),
    (["--set", "betas=[1]"], "error: --set betas=[1]: give two rates"),
])
def test_a_value_from_the_command_line_is_named_by_how_it_was_given(capsys, args, expected):
    err = error_of(capsys, "--config", "tiny-cpu", *args)
    assert expected in err and "tiny-cpu.yaml" not in err


def test_a_value_from_the_recipe_is_named_in_the_recipe(tmp_path, capsys):
    recipe = tmp_path / "mine.yaml"
    recipe.write_text("max_steps: -5\n")
    assert f"error: recipe {recipe}: max_steps=-5: must be positive" in error_of(
        capsys, "--config", str(recipe))


def test_a_related_value_is_named_where_it_came_from(capsys):
    err = error_of(capsys, "--config", "tiny-cpu", "--warmup-steps", "700")
    assert err.startswith("litebert pretrain: error: --warmup-steps 700: must lie in [0, "
                          "max_steps=600]")
    assert err.endswith("tiny-cpu.yaml: max_steps=600)")


def test_objective_fields_are_named_where_they_were_set(tmp_path, capsys):
    assert "error: --set objective.temperature=-1.0: must be positive" in error_of(
        capsys, "--config", "electra-tiny-cpu", "--set", "objective.temperature=-1")
    assert "error: --objective electro: objective 'electro': unknown" in error_of(
        capsys, "--config", "tiny-cpu", "--objective", "electro")
    recipe = tmp_path / "mine.yaml"
    recipe.write_text("objective: {name: electra, temperature: -1}\n")
    with pytest.raises(RunConfigError, match=r"^recipe .*mine.yaml: objective.temperature="
                                             r"-1.0: must be positive$"):
        load_run_config(recipe, {"objective": "electra"})  # the name alone keeps the fields


def test_a_phase_field_is_named_in_the_phase_that_sets_it(tmp_path, capsys):
    assert ("error: --set phases.2.lr=-1: in phase 2 (steps 900001 to 1000000): must be "
            "positive") in error_of(capsys, "--config", "bert-base", "--set", "phases.2.lr=-1")
    assert "error: --max-steps 10: the phases given sum to 3 steps" in error_of(
        capsys, "--config", "bert-base", "--max-steps", "10", "--set", "phases=[{steps: 3}]")
    recipe = tmp_path / "phased.yaml"
    recipe.write_text("warmup_steps: 0\nphases: [{steps: 3}, {steps: 2, data: d, lr: -1.0}]\n")
    with pytest.raises(RunConfigError, match=r"^recipe .*phased.yaml: phases.2.lr=-1.0: in "
                                             r"phase 2 \(steps 4 to 5\): must be positive$"):
        load_run_config(recipe, {})


def test_a_checkpoints_value_is_named_in_the_checkpoint():
    with pytest.raises(RunConfigError, match=r"^runs/x/checkpoints/step-00000004: "
                                             r"max_steps=-5: must be positive$"):
        saved_run_config({"max_steps": -5}, "runs/x/checkpoints/step-00000004")


def test_a_config_built_in_code_names_the_field_alone():
    with pytest.raises(RunConfigError, match=r"^pretrain config max_steps=-5: must be "
                                             r"positive$"):
        PretrainConfig(max_steps=-5)
    with pytest.raises(RunConfigError, match=r"^pretrain config lr='fast': give a number$"):
        PretrainConfig(lr="fast")  # type: ignore[arg-type]
