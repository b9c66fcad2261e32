"""The demo's summary: a figure at or below its baseline always comes with the reason."""

from __future__ import annotations

import pytest

from litebert.config import PRESETS, ModelConfig
from litebert.data.builder import BuildConfig
from litebert.demo import PLANS, TRAINED_LAST, _against_baseline, _summary, plan_name
from litebert.family_names import FAMILY_TITLES
from litebert.specs import OWN_LAYOUT
from litebert.tokenization.train import TOKENIZER_KINDS
from litebert.train.run_config import load_run_config


@pytest.mark.parametrize("name", ["MLM", "SOP"])
def test_a_figure_not_above_its_baseline_says_why(name):
    above = _against_baseline(name, 0.62, 0.576, "baseline")
    assert above == f"{name} accuracy on held-out data: 62.0%  (baseline 57.6%)"
    for value in (0.576, 0.55):  # equal to the baseline is no better than it
        below = _against_baseline(name, value, 0.576, "baseline")
        assert below.splitlines()[1].startswith("  not above its baseline yet: ")


def test_the_summary_records_which_objectives_learned(tmp_path, capsys):
    result = {"eval_mlm_accuracy": 0.12, "eval_mlm_baseline_accuracy": 0.05,
              "eval_sop_accuracy": 0.55, "eval_sop_baseline_accuracy": 0.58}
    topics = {"accuracy": 0.7, "majority_baseline": 0.25, "model": "m"}
    summary = _summary(tmp_path, result, [], topics, 600.0)
    assert summary["learned"] == {"mlm": True, "sop": False}
    out = capsys.readouterr().out
    assert "SOP accuracy on held-out data: 55.0%  (majority-label baseline 58.0%)\n" \
           "  not above its baseline yet: sentence order is learned after MLM" in out
    assert "MLM accuracy on held-out data: 12.0%  (most-frequent-token baseline 5.0%)\n" \
           "SOP" in out


def test_a_margin_inside_the_noise_is_called_so():
    # 184 held-out pairs at a 57.6% baseline: one standard error is 3.6 points.
    close = _against_baseline("SOP", 0.603, 0.576, "baseline", examples=184)
    assert "less than two standard errors (7.3%) over 184 held-out examples" in close
    clear = _against_baseline("SOP", 0.70, 0.576, "baseline", examples=184)
    assert clear == "SOP accuracy on held-out data: 70.0%  (baseline 57.6%)"


def test_the_electra_summary_prints_the_discriminators_and_generators_figures(tmp_path,
                                                                               capsys):
    from litebert.demo import PLANS

    result = {"eval_generator_mlm_accuracy": 0.12, "eval_generator_mlm_baseline_accuracy": 0.04,
              "eval_rtd_accuracy": 0.871, "eval_rtd_baseline_accuracy": 0.871,
              "eval_rtd_precision": 0.0, "eval_rtd_recall": 0.0,
              "eval_replaced_fraction": 0.129}
    topics = {"accuracy": 0.7, "majority_baseline": 0.25, "model": "m"}
    summary = _summary(tmp_path, result, [], topics, 600.0, 184, PLANS["electra"].figures)
    assert summary["learned"] == {"generator mlm": True, "rtd": False}
    out = capsys.readouterr().out
    assert "generator MLM accuracy on held-out data: 12.0%  (most-frequent-token baseline " \
           "4.0%)\n" in out
    assert "RTD accuracy on held-out data: 87.1%  (every-token-original baseline 87.1%)\n" \
           "  not above its baseline yet: the discriminator still calls every token" in out
    assert "RTD precision 0.0%, recall 0.0% on the 12.9% of held-out tokens" in out


def test_the_plm_plan_trains_its_own_tokenizer_and_streams_and_prints_plm(tmp_path, capsys):
    from litebert.demo import PLANS

    plan = PLANS["plm"]
    assert (plan.tokenizer, plan.suffix, dict(plan.data)["packing"]) == ("xlnet", "-xlnet",
                                                                         "streams")
    assert PLANS["mlm"].suffix == PLANS["electra"].suffix == ""  # they share one data dir
    result = {"eval_plm_accuracy": 0.09, "eval_plm_baseline_accuracy": 0.05}
    topics = {"accuracy": 0.7, "majority_baseline": 0.25, "model": "m"}
    summary = _summary(tmp_path, result, [], topics, 600.0, None, plan.figures)
    assert summary["learned"] == {"plm": True}
    assert "PLM accuracy on held-out data: 9.0%  (most-frequent-token baseline 5.0%)\n" in \
        capsys.readouterr().out


def test_model_picks_the_modernbert_plan_with_its_own_tokenizer_and_masking():
    from litebert.demo import PLANS, plan_name
    from litebert.train.run_config import load_run_config

    assert plan_name("mlm") == "mlm" and plan_name("plm") == "plm"
    assert plan_name("mlm", "modernbert-tiny") == "modernbert"
    with pytest.raises(ValueError, match="demo --model bert-base: choose from tiny, "
                                         "electra-small, xlnet-tiny, modernbert-tiny, "
                                         "bert-tiny, roberta-tiny"):
        plan_name("mlm", "bert-base")
    plan = PLANS["modernbert"]
    assert (plan.tokenizer, plan.suffix) == ("modernbert", "-modernbert")
    assert dict(plan.data) == {"objective": "none", "packing": "full-sentences",
                               "masked_lm_prob": 0.3}
    for plan in PLANS.values():  # each plan's model is its recipe's
        assert load_run_config(plan.recipe, {}).model == plan.model


def test_every_family_has_a_demo_plan_whose_recipe_preset_tokenizer_and_data_resolve():
    assert {plan.family for plan in PLANS.values()} == set(FAMILY_TITLES) - {OWN_LAYOUT}
    for name, plan in PLANS.items():
        for figure in plan.figures:  # a figure at its baseline prints the reason
            assert "not above its baseline yet: " in _against_baseline(
                figure.name, 0.1, 0.2, figure.baseline), (name, figure.name)
        assert plan_name("mlm", plan.model) == name
        assert load_run_config(plan.recipe, {}).model == plan.model
        assert ModelConfig.from_preset(plan.model).model_type == plan.family, name
        assert plan.tokenizer in TOKENIZER_KINDS and plan.tokenizer in TRAINED_LAST
        BuildConfig(max_seq_length=128, **dict(plan.data))  # the data build it asks for
    # Plans that build different data from one tokenizer write different directories.
    built = {}
    for plan in PLANS.values():
        assert built.setdefault(plan.data_dir, plan.data) == plan.data, plan.data_dir
    bert, roberta = PLANS["bert"], PLANS["roberta"]
    assert PRESETS["bert-tiny"]["num_hidden_layers"] == 4
    assert PRESETS["bert-tiny"]["hidden_size"] == 256
    assert dict(bert.data)["objective"] == "nsp" and bert.tokenizer == "sentencepiece"
    assert (roberta.tokenizer, dict(roberta.data)["objective"]) == ("bpe", "none")
