"""The objective registry, the run config's `objective` option, and the shared FSDP units."""

from __future__ import annotations

import re
import sys
import types

import pytest

from litebert.cli import main
from litebert.models.albert.model import AlbertModel
from litebert.objectives import (
    OBJECTIVES,
    EvaluationObjective,
    MLMObjective,
    ObjectiveError,
    TrainingObjective,
    resolve,
)
from litebert.objectives.base import missing_members
from litebert.studies.runner import _continue
from litebert.studies.spec import StudyError
from litebert.train.run_config import PretrainConfig, RunConfigError, load_run_config
from tests.helpers.models import small_config


def test_the_registry_and_the_default_objective():
    assert OBJECTIVES["mlm"] is MLMObjective
    assert PretrainConfig().objective.name == "mlm"  # what every run before the option trained


def test_an_unknown_objective_is_a_clear_error_listing_the_choices(capsys):
    with pytest.raises(RunConfigError, match=r"objective 'electro': unknown; choose from mlm"):
        PretrainConfig(objective="electro")
    with pytest.raises(RunConfigError, match="choose from mlm"):
        load_run_config("tiny-cpu", {"objective": "electro"})  # a recipe, then an override
    assert main(["pretrain", "--objective", "electro"]) == 2
    assert re.search(r"objective 'electro': unknown; choose from mlm, electra, plm",
                     capsys.readouterr().err)


# The backbone each objective trains, where it is not the default (ALBERT's).
BACKBONE_OF = {"plm": dict(backbone="xlnet", model_type="litebert", use_pooler=False,
                          classifier_head="summary")}


@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_every_objective_names_and_weights_its_parts(name):
    objective = OBJECTIVES[name](PretrainConfig(objective=name))  # no data: build, export
    assert len(objective.parts) == len(objective.weights) >= 1
    assert len(set(objective.parts)) == len(objective.parts)
    model = objective.build(small_config(**BACKBONE_OF.get(name, {})))
    assert all(any(m is u for u in model.modules()) for m, _ in objective.fsdp_units(model))


@pytest.mark.parametrize(("sharing", "attention", "ffn"), [
    ("all", False, False), ("none", True, True), ("attention", False, True),
    ("ffn", True, False)])
def test_a_module_used_at_several_depths_is_not_resharded_between_uses(sharing, attention,
                                                                       ffn):
    model = AlbertModel(small_config(sharing=sharing))
    units = model.fsdp_units()
    encoder = model.encoder
    assert [m for m, _ in units] == [*encoder.attentions, *encoder.ffns]
    assert {r for m, r in units if m in list(encoder.attentions)} == {attention}
    assert {r for m, r in units if m in list(encoder.ffns)} == {ffn}


def test_a_study_recorded_before_the_option_continues(tmp_path):
    """A study's run record holds its PretrainConfig; one written before `objective` existed
    is the same run as today's with the default objective, and another objective is not."""
    now = {"data": {}, "model": {"hidden_size": 32}, "pretrain": PretrainConfig().to_dict()}
    before = {**now, "pretrain": {k: v for k, v in now["pretrain"].items() if k != "objective"},
              "tokens": 7}
    assert _continue(before, now, tmp_path / "run.json")["tokens"] == 7
    other = {**now, "pretrain": {**now["pretrain"], "objective": "electra"}}
    with pytest.raises(StudyError, match="differs in objective"):
        _continue(before, other, tmp_path / "run.json")


# ---- the two protocols ---------------------------------------------------------------------

def only(protocol: type, source: type) -> type:
    """A class with `source`'s members of `protocol` alone."""
    names = [n for n in (*vars(protocol), *vars(protocol).get("__annotations__", {}))
             if not n.startswith("_") and hasattr(source, n)]
    return type(f"Only{protocol.__name__}", (), {n: getattr(source, n) for n in names})


@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_every_registered_objective_implements_both_protocols(name):
    assert missing_members(OBJECTIVES[name]) == []


@pytest.mark.parametrize(("half", "lacking"), [
    (TrainingObjective, "evaluate, reads_directory, evaluate_directory, format_result, export"),
    (EvaluationObjective, "dataset, build, start_state, flops_per_token, fsdp_units, "
                          "begin_step, counts, "
                          "loss_sums, state_dict, load_state_dict, Config, attentions")])
def test_a_class_with_half_of_the_protocol_is_refused_naming_the_rest(monkeypatch, half,
                                                                      lacking):
    module = types.ModuleType("half_objective")
    module.Half = only(half, MLMObjective)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "half_objective", module)
    with pytest.raises(ObjectiveError, match=rf"'half_objective:Half': class Half lacks "
                                             rf"{lacking}; an objective implements"):
        resolve("half_objective:Half")
