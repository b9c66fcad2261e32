"""The model registry (litebert.specs): one spec per package, names and presets taken once,
an unknown name answered with the known ones."""

from __future__ import annotations

import dataclasses

import pytest

from litebert.config import PRESETS
from litebert.families import FAMILIES
from litebert.specs import BUILT_IN, SPECS, ModelSpec, all_specs, model_spec, register_spec
from litebert.tokenization.train import TOKENIZER_KINDS


def test_every_built_in_package_registers_a_spec_the_layers_agree_with():
    specs = {spec.name: spec for spec in all_specs()}
    assert set(BUILT_IN) <= set(specs)
    for name in BUILT_IN:
        spec = specs[name]
        assert spec.tokenizer in TOKENIZER_KINDS, name
        assert FAMILIES[name] is spec.adapter and spec.adapter.title == spec.title
        assert all(PRESETS[preset] == fields for preset, fields in spec.presets.items())
        if spec.backbone_config is not None:  # it defines the backbone it builds on
            assert spec.backbone == name and spec.backbone_module == f"litebert.models.{name}.model"
        else:
            assert model_spec(spec.backbone).backbone_config is not None


def test_a_taken_name_or_preset_is_refused_and_an_unknown_name_lists_the_known():
    albert = model_spec("albert")
    assert register_spec(albert) is albert  # the same spec again: no change
    with pytest.raises(ValueError, match="a model named 'albert' is already registered"):
        register_spec(dataclasses.replace(albert))
    with pytest.raises(ValueError, match="presets albert-base, .*tiny belong to 'albert' "
                                          "already"):
        register_spec(dataclasses.replace(albert, name="albert-again", adapter_module=None,
                                          backbone_config=None, backbone_module=None))
    with pytest.raises(ValueError, match="gives both backbone_config and backbone_module"):
        register_spec(ModelSpec(name="half", title="Half", backbone="half", tokenizer="bpe",
                                finetune=albert.finetune, backbone_module="somewhere"))
    assert "albert-again" not in SPECS and "half" not in SPECS
    with pytest.raises(LookupError, match="no model package is registered as 'gpt2'; "
                                          "litebert knows 'albert', 'bert'"):
        model_spec("gpt2")
