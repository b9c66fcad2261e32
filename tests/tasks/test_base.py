"""The task recipes (litebert.tasks.registry, ALBERT's Table 14) as named
fields: a config (litebert.tasks.base.FinetuneConfig) fills from them what neither the user
nor the model's family gave."""

from __future__ import annotations

import dataclasses

import pytest

from litebert.tasks.base import finetune_config
from litebert.tasks.registry import TASKS, TaskRecipe

# A few rows of the paper's Table 14, written out here (lr, batch, dropout, steps, warm-up,
# length): the table in the code must say the same under its field names.
TABLE_14 = {"cola": (1e-5, 16, 0.0, 5336, 320, 512), "qqp": (5e-5, 128, 0.1, 14000, 1000, 512),
            "squad1": (5e-5, 48, 0.0, 3649, 365, 384), "race": (2e-5, 32, 0.1, 12000, 1000, 512)}
FIELDS = ("lr", "batch_size", "dropout", "max_steps", "warmup_steps", "max_seq_length")


@pytest.mark.parametrize("task", sorted(TABLE_14))
def test_the_recipes_name_the_papers_columns(task):
    assert dataclasses.astuple(TASKS[task].recipe) == TABLE_14[task]
    assert tuple(f.name for f in dataclasses.fields(TaskRecipe)) == FIELDS


@pytest.mark.parametrize("task", sorted(TASKS))
def test_a_config_takes_each_recipe_field_by_its_name(task, tmp_path):
    """An unreadable model directory has ALBERT's defaults, which leave the recipe as it is."""
    cfg = finetune_config(task=task, data="d", model=str(tmp_path / "missing"), out="o")
    recipe = TASKS[task].recipe
    assert {name: getattr(cfg, name) for name in FIELDS} == dataclasses.asdict(recipe)
    longer = finetune_config(task=task, data="d", model=str(tmp_path / "missing"), out="o",
                            max_steps=2 * recipe.max_steps)
    assert longer.warmup_steps == 2 * recipe.warmup_steps  # the recipe's share of the steps


def test_a_recipe_is_built_with_names_only():
    with pytest.raises(TypeError):
        TaskRecipe(1e-5, 16, 0.0, 5336, 320)
