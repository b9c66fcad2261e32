"""The objectives' fields (litebert.objectives.configs), read without the classes: the light
table of built-in objectives against the registry, a user's class named by its module, and
the fields `litebert pretrain --help` lists."""

from __future__ import annotations

import dataclasses
import sys
import types

import pytest

from litebert.objectives import OBJECTIVES
from litebert.objectives.configs import BUILTIN, describe_fields, objective_config
from litebert.provenance import FieldError


def test_the_light_table_names_each_registered_class_and_its_config():
    assert set(BUILTIN) == set(OBJECTIVES)
    for name, cls in OBJECTIVES.items():
        assert BUILTIN[name] == (f"{cls.__module__}:{cls.__name__}", cls.Config)


def test_a_users_class_gives_its_config_and_one_without_is_refused(monkeypatch):
    module = types.ModuleType("user_objectives")

    @dataclasses.dataclass
    class OwnConfig(BUILTIN["mlm"][1]):
        weight: float = 1.0

    module.Own = type("Own", (), {"Config": OwnConfig})  # type: ignore[attr-defined]
    module.Bare = type("Bare", (), {})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "user_objectives", module)
    made = objective_config({"name": "user_objectives:Own", "weight": 2}, "recipe")
    assert isinstance(made, OwnConfig) and made.weight == 2.0
    with pytest.raises(FieldError, match="'user_objectives:Bare': its class has no Config"):
        objective_config("user_objectives:Bare", "recipe")


def test_the_help_lists_every_builtin_objective_with_its_fields():
    text = describe_fields()
    for name, (where, config) in BUILTIN.items():
        assert f"  {name} ({where})" in text
        for field in dataclasses.fields(config):
            assert (f"    {field.name}: " in text) == (field.name != "name")
