"""Each family's fine-tuning defaults (tasks/family_defaults.py) reach FinetuneConfig for a model
directory of that family; what the user gives wins; the record names family and source. Only
config.json is read, so a directory holding one is all these tests build."""

from __future__ import annotations

import dataclasses
import logging

import pytest
import transformers

from litebert.families import FAMILIES
from litebert.families.base import FamilyAdapter
from litebert.specs import model_spec
from litebert.tasks.base import FinetuneConfig, finetune_config
from litebert.tasks.family_defaults import family_defaults, finetune_rule
from litebert.tasks.registry import TASKS
from tests.helpers.family_configs import (
    electra_config,
    hf_roberta_config,
    roberta_config,
    xlnet_config,
)
from tests.helpers.models import small_config

# What every run of a task fills in, whatever the family: (batch, steps, max length).
SST2_BUDGET = (32, 20935, 512)


def write(kind: str, path) -> None:
    """A config.json of family `kind` in `path` (transformers writes BERT's and RoBERTa's)."""
    path.mkdir(parents=True, exist_ok=True)
    if kind == "albert":
        small_config().save(path)
    elif kind == "bert":
        transformers.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=37).save_pretrained(path)
    elif kind == "electra":
        electra_config().save(path)  # hidden size 32: ELECTRA-Small's settings
    else:
        hf_roberta_config().save_pretrained(path)


def config_for(model, task="sst2", **given) -> FinetuneConfig:
    return finetune_config(task=task, data="d", model=str(model), out="o", **given)


def optimiser(cfg: FinetuneConfig) -> dict:
    return {k: getattr(cfg, k) for k in ("lr", "weight_decay", "layer_decay", "adam_beta2",
                                         "dropout", "warmup_steps")}


# (family, task) -> (lr, weight decay, layer decay, beta2, dropout, warm-up steps), source.
EXPECTED = {
    ("albert", "mrpc"): ((2e-5, 0.01, 1.0, 0.999, 0.0, 200),
                         "ALBERT (Lan et al. 2020), Table 14"),
    ("bert", "mrpc"): ((2e-5, 0.01, 1.0, 0.999, 0.1, 200),
                       "BERT (Devlin et al. 2019), Section 4.1"),
    ("bert", "squad1"): ((5e-5, 0.01, 1.0, 0.999, 0.1, 365), "Section 4.2"),
    ("bert", "race"): ((2e-5, 0.01, 1.0, 0.999, 0.1, 1000), "RACE not in the paper"),
    ("electra", "mrpc"): ((3e-4, 0.0, 0.8, 0.999, 0.0, 200),
                          "ELECTRA (Clark et al. 2020), Table 7, Small"),
    # RoBERTa warms up over 6% of the recipe's steps: MRPC 800 -> 48, SQuAD 2.0 8144 -> 489.
    ("roberta", "mrpc"): ((1e-5, 0.1, 1.0, 0.98, 0.1, 48),
                          "RoBERTa (Liu et al. 2019), Table 10, GLUE"),
    ("roberta", "rte"): ((2e-5, 0.1, 1.0, 0.98, 0.1, 48), "Table 10, GLUE"),
    ("roberta", "squad2"): ((1.5e-5, 0.01, 1.0, 0.98, 0.1, 489), "Table 10, SQuAD"),
    ("roberta", "race"): ((1e-5, 0.1, 1.0, 0.98, 0.1, 720), "Table 10, RACE"),
}


@pytest.mark.parametrize("kind, task", list(EXPECTED))
def test_each_family_brings_its_defaults(tmp_path, kind, task):
    write(kind, tmp_path)
    values, source = EXPECTED[kind, task]
    cfg = config_for(tmp_path, task)
    names = ("lr", "weight_decay", "layer_decay", "adam_beta2", "dropout", "warmup_steps")
    assert optimiser(cfg) == dict(zip(names, values, strict=True))
    assert cfg.family_defaults["family"] == kind
    assert source in cfg.family_defaults["source"]


@pytest.mark.parametrize("kind", ["electra", "roberta", "xlnet"])
def test_sentence_embeddings_take_their_recipe_in_every_family(tmp_path, kind):
    """No family's paper trains sentence embeddings: ELECTRA's lr 1e-4 with layer decay or
    RoBERTa's 6% warm-up would replace sentence-transformers' settings for no reason."""
    write(kind, tmp_path)
    cfg = config_for(tmp_path, "embedding")
    recipe = TASKS["embedding"].recipe
    assert (cfg.lr, cfg.warmup_steps, cfg.dropout) == (recipe.lr, recipe.warmup_steps,
                                                      recipe.dropout)
    assert cfg.layer_decay == 1.0 and cfg.family_defaults["values"] == {
        "weight_decay": 0.01, "layer_decay": 1.0, "layer_decay_rule": "head-to-embeddings",
        "adam_beta2": 0.999, "adam_epsilon": 1e-6}
    assert cfg.family_defaults["source"] == "the task's recipe, the same for every family"


def test_the_task_budget_stays_the_recipes_for_every_family(tmp_path):
    for kind in ("albert", "bert", "electra", "roberta"):
        write(kind, tmp_path / kind)
        cfg = config_for(tmp_path / kind)
        assert (cfg.batch_size, cfg.max_steps, cfg.max_seq_length) == SST2_BUDGET, kind


@pytest.mark.parametrize("task, decay", [("mrpc", 0.1), ("rte", 0.1), ("qqp", 0.1),
                                         ("mnli", 0.1), ("squad2", 0.01), ("race", 0.1)])
def test_a_roberta_directory_no_longer_gets_albert_table_14(tmp_path, task, decay):
    """Before: a RoBERTa directory fine-tuned with ALBERT's lr, weight decay and warm-up."""
    for name in ("roberta", "albert"):
        (tmp_path / name).mkdir()
    roberta_config().save(tmp_path / "roberta")  # litebert's own save of a RoBERTa model
    small_config().save(tmp_path / "albert")
    ours, albert = config_for(tmp_path / "roberta", task), config_for(tmp_path / "albert", task)
    assert ours.lr != albert.lr and ours.weight_decay == decay
    assert ours.warmup_steps < albert.warmup_steps  # 6% of the steps, ALBERT's 7-25%
    assert (ours.dropout, ours.adam_beta2) == (0.1, 0.98)
    assert ours.family_defaults["family"] == "roberta"


def test_roberta_squad_takes_table_10s_squad_column(tmp_path):
    roberta_config().save(tmp_path)
    cfg = config_for(tmp_path, "squad1")
    assert (cfg.lr, cfg.weight_decay, cfg.warmup_steps) == (1.5e-5, 0.01, 219)  # 6% of 3649


def test_the_warm_up_share_follows_max_steps_unless_given(tmp_path):
    write("roberta", tmp_path)
    assert config_for(tmp_path, "mrpc", max_steps=100).warmup_steps == 6
    assert config_for(tmp_path, "mrpc", max_steps=25).warmup_steps == 2  # 1.5 rounds up
    cfg = config_for(tmp_path, "mrpc", max_steps=100, warmup_steps=10)
    assert cfg.warmup_steps == 10 and "warmup_share" not in cfg.family_defaults["values"]


def test_given_values_win_and_are_not_recorded_as_the_familys(tmp_path):
    write("roberta", tmp_path)
    given = dict(lr=4e-5, weight_decay=0.05, layer_decay=0.7, adam_beta2=0.95, dropout=0.2,
                 warmup_steps=7, adam_epsilon=1e-8, layer_decay_rule="layers-only")
    cfg = config_for(tmp_path, "mrpc", **given)
    assert {k: getattr(cfg, k) for k in given} == given
    assert cfg.family_defaults["values"] == {}  # every one was given
    cfg = config_for(tmp_path, "mrpc", weight_decay=0.0)
    assert cfg.weight_decay == 0.0 and cfg.lr == 1e-5  # 0 is a value, not "not given"
    assert cfg.family_defaults["values"] == {"lr": 1e-5, "warmup_share": 0.06, "dropout": 0.1,
                                             "layer_decay": 1.0, "adam_beta2": 0.98,
                                             "adam_epsilon": 1e-6,
                   "layer_decay_rule": "head-to-embeddings"}


def test_copies_keep_the_record_of_the_first(tmp_path):
    """`--seeds N` copies the config per seed (dataclasses.replace): the values are all set
    by then, yet each seed's results.json must still say which came from the family."""
    write("electra", tmp_path)
    cfg = config_for(tmp_path)
    copy = dataclasses.replace(cfg, seed=43)
    assert copy.family_defaults == cfg.family_defaults
    assert copy.family_defaults["values"] == {"lr": 3e-4, "weight_decay": 0.0,
                                              "layer_decay": 0.8, "adam_beta2": 0.999,
                                              "adam_epsilon": 1e-6,
                   "layer_decay_rule": "head-to-embeddings"}


def test_an_unreadable_directory_gets_albert_defaults_and_no_family_is_claimed(tmp_path,
                                                                                caplog):
    caplog.set_level(logging.INFO, logger="litebert")
    cfg = config_for(tmp_path / "missing")  # loading the model reports the directory
    assert cfg.family_defaults["family"] == "albert"
    assert (cfg.lr, cfg.weight_decay, cfg.layer_decay) == (1e-5, 0.01, 1.0)
    assert not caplog.records  # no "is a albert model" before the missing directory's error


@pytest.mark.parametrize(("kind", "title"), [("albert", "ALBERT"), ("electra", "ELECTRA")])
def test_the_log_names_the_family_read_by_its_name(tmp_path, caplog, kind, title):
    caplog.set_level(logging.INFO, logger="litebert")
    write(kind, tmp_path)
    config_for(tmp_path)
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith(f"{tmp_path}: model family {title}; its fine-tuning defaults ")


def test_litebert_layout_keeps_the_family_it_came_from(tmp_path):
    """A RoBERTa with shared layers has no transformers layout: saved in litebert's own, it
    still fine-tunes as RoBERTa."""
    config = roberta_config(sharing="all", num_hidden_groups=1)
    config.save(tmp_path)
    assert config_for(tmp_path).family_defaults["family"] == "roberta"


def test_every_family_answers_every_task():
    """No family's table misses a task: a new recipe gets a family default (or the recipe's)."""
    configs = {"electra": electra_config(), "roberta": roberta_config(),
               "xlnet": xlnet_config()}
    for name in FAMILIES:
        for task in TASKS:
            theirs = finetune_rule(name)(configs.get(name, small_config()), task)
            assert theirs.source and set(theirs.values()) >= {"weight_decay", "layer_decay"}


def test_every_family_fine_tunes_with_its_packages_rule_and_adapters_hold_none():
    """A family's defaults are its model package's (its ModelSpec's `finetune`), an unknown
    model_type gets ALBERT's, and the format adapters carry no fine-tuning settings."""
    for name in FAMILIES:
        assert finetune_rule(name) is model_spec(name).finetune
    assert finetune_rule("gpt2") is model_spec("albert").finetune
    assert not hasattr(FamilyAdapter, "finetune_defaults")
    assert family_defaults(roberta_config(), "rte").source.startswith("RoBERTa")


@pytest.mark.parametrize("task, lr, layer_decay", [
    ("squad2", 3e-5, 0.75), ("squad1", 3e-5, 0.75), ("race", 2e-5, 1.0), ("mnli", 2e-5, 1.0),
    ("sst2", 2e-5, 1.0)])
def test_xlnet_defaults_are_table_8(task, lr, layer_decay):
    defaults = finetune_rule("xlnet")(xlnet_config(), task)
    assert (defaults.lr, defaults.layer_decay, defaults.weight_decay, defaults.dropout) == (
        lr, layer_decay, 0.0, 0.1)
    assert defaults.layer_decay_rule == "layers-only" and "Table 8" in defaults.source


@pytest.mark.parametrize("hidden, size, lr, decay", [
    (256, "Small", 3e-4, 0.8), (768, "Base", 1e-4, 0.8), (1024, "Large", 5e-5, 0.9)])
def test_electra_defaults_follow_the_hidden_size(hidden, size, lr, decay):
    config = electra_config().replace(hidden_size=hidden, num_attention_heads=2)
    defaults = family_defaults(config, "mrpc")
    assert (defaults.lr, defaults.layer_decay, defaults.weight_decay) == (lr, decay, 0.0)
    assert f"Table 7, {size} (hidden size {hidden})" in defaults.source
