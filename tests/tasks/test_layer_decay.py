"""Layer-wise learning-rate decay (tasks/layer_decay.py) and the fine-tuning defaults an
ELECTRA model directory brings (tasks/family_defaults.py: lr, weight decay, layer decay; the
other families' are in tests/tasks/test_family_defaults.py)."""

from __future__ import annotations

import json
import math

import pytest
import torch

import litebert
from litebert.cli import main
from litebert.tasks.base import FinetuneConfig, FinetuneError, finetune_config
from litebert.tasks.finetune import finetune, finetune_groups
from litebert.tasks.finetune_options import RULE_ALIASES, RULES
from litebert.tasks.layer_decay import layer_decay_groups, lr_multipliers, parameter_depths
from litebert.train.optimizers import build_optimizer, default_groups
from litebert.train.schedule import warmup_polynomial
from litebert.train.scheduler import build_scheduler
from tests.helpers.family_configs import electra_config
from tests.helpers.finetune import fast, sst2_dir
from tests.helpers.models import make_inputs, small_config

D = 0.5  # an exact power of two: multipliers compare exactly


def classifier(**overrides) -> litebert.EncoderForSequenceClassification:
    torch.manual_seed(0)
    return litebert.EncoderForSequenceClassification(small_config(**overrides))


# ---- which rate each parameter gets ------------------------------------------------------------

def test_not_shared_model_follows_the_formula_layer_by_layer():
    L = 4
    model = classifier(sharing="none", num_hidden_groups=L)  # E 16 != H 32: a projection
    m = lr_multipliers(model, D)
    assert any(n.startswith("backbone.encoder.embedding_hidden_mapping_in.") for n in m)
    assert any(n.startswith("backbone.pooler.") for n in m)
    for name, value in m.items():
        part = name.split(".")
        if name.startswith(("backbone.embeddings.",
                            "backbone.encoder.embedding_hidden_mapping_in.")):
            want = D ** (L + 2)  # depth 0
        elif name.startswith(("backbone.encoder.attentions.", "backbone.encoder.ffns.")):
            want = D ** (L + 2 - (int(part[3]) + 1))  # layer i (0-based) is depth i + 1
        else:  # the pooler and the classifier: depth L + 2
            assert name.startswith(("backbone.pooler.", "classifier.")), name
            want = 1.0
        assert value == want, name
    assert len(m) == len(list(model.parameters()))


def test_all_shared_albert_gets_the_top_rate_for_its_one_layer():
    L = 4
    m = lr_multipliers(classifier(sharing="all", num_hidden_groups=1), D)
    shared = {v for n, v in m.items() if ".encoder.attentions." in n or ".encoder.ffns." in n}
    assert shared == {D ** 2}  # depth L: the top layer's rate, not the bottom one's D**(L+1)
    assert m["backbone.embeddings.word_embeddings.weight"] == D ** (L + 2)


def test_groups_and_partial_sharing_take_the_highest_depth_they_serve():
    # 4 layers in 2 groups: group 0 runs at depths 1, 2 and group 1 at 3, 4.
    depths, L = parameter_depths(classifier(sharing="all", num_hidden_groups=2))
    assert L == 4
    assert depths["backbone.encoder.attentions.0.query.weight"] == 2
    assert depths["backbone.encoder.ffns.1.ffn.weight"] == 4
    # Only attention shared: one attention at the top depth, FFNs layer by layer.
    depths, _ = parameter_depths(classifier(sharing="attention", num_hidden_groups=1))
    assert depths["backbone.encoder.attentions.0.query.weight"] == 4
    assert [depths[f"backbone.encoder.ffns.{k}.ffn.weight"] for k in range(4)] == [1, 2, 3, 4]


@pytest.mark.parametrize("head", [
    litebert.EncoderForSequenceClassification, litebert.EncoderForTokenClassification,
    litebert.EncoderForQuestionAnswering, litebert.EncoderForMultipleChoice])
@pytest.mark.parametrize("family", ["albert", "electra"])
def test_head_trains_at_the_lr_and_embeddings_at_decay_to_the_l_plus_2(head, family):
    config = small_config() if family == "albert" else electra_config()
    L = config.num_hidden_layers
    model = head(config)
    m = lr_multipliers(model, D)
    backbone = {n for n, _ in model.backbone.named_parameters(prefix="backbone")}
    head_names = set(m) - backbone
    assert head_names and all(m[n] == 1.0 for n in head_names)
    embeddings = [n for n in m if n.startswith("backbone.embeddings.")]
    assert len(embeddings) == 5 and all(m[n] == D ** (L + 2) for n in embeddings)


def test_bad_decay_and_foreign_models_are_refused():
    with pytest.raises(ValueError, match="layer decay 1.5"):
        lr_multipliers(classifier(), 1.5)
    with pytest.raises(TypeError, match="Linear"):
        lr_multipliers(torch.nn.Linear(2, 2), 0.8)


def test_the_previous_releases_rule_names_are_the_same_rules():
    """"electra" and "xlnet" (the previous release's names) are read as today's rules."""
    model = classifier(sharing="none", num_hidden_groups=4)
    rules = {rule: lr_multipliers(model, D, rule) for rule in (*RULES, *RULE_ALIASES)}
    assert rules["head-to-embeddings"] != rules["layers-only"]  # they are different rules
    for old, new in RULE_ALIASES.items():
        assert rules[old] == rules[new], old
        assert config_for("m", layer_decay_rule=old).layer_decay_rule == new
    assert rules["layers-only"]["backbone.embeddings.word_embeddings.weight"] == 1.0
    with pytest.raises(FinetuneError, match="layer_decay_rule='albert': choose "
                                            "head-to-embeddings or layers-only"):
        config_for("m", layer_decay_rule="albert")
    with pytest.raises(ValueError, match="layer decay rule 'albert'"):
        lr_multipliers(model, D, "albert")


# ---- groups, the optimiser and the schedule ----------------------------------------------------

def loss_of(model) -> torch.Tensor:
    return model(**make_inputs(), labels=torch.tensor([0, 1, 0])).loss


def test_every_group_keeps_its_own_rate_under_the_schedule():
    model = classifier(sharing="none", num_hidden_groups=4)
    # No weight decay: Adam's first step moves a weight by about its lr. lr 1e-2: even the
    # embeddings' steps (lr / 64 / 4) stay far above float32's resolution near 1.
    lr, wd = 1e-2, 0.0
    groups = layer_decay_groups(model, default_groups("adamw", model, wd), lr, D)
    # 6 rates (head and pooler; layers 4..1; embeddings) on each side of the decay split.
    assert sorted({g["lr_multiplier"] for g in groups}) == [D ** e for e in (6, 5, 4, 3, 2, 0)]
    optimizer = build_optimizer("adamw", model, lr=lr, weight_decay=wd, param_groups=groups)
    scheduler = build_scheduler(optimizer, "linear", warmup_steps=4, total_steps=10)
    before = [[p.detach().clone() for p in g["params"]] for g in optimizer.param_groups]
    loss_of(model).backward()
    optimizer.step()
    factor = warmup_polynomial(1, warmup_steps=4, total_steps=10)
    for group, old in zip(optimizer.param_groups, before, strict=True):
        assert group["initial_lr"] == lr * group["lr_multiplier"]
        # Adam's first step is lr * g / (|g| + eps): about lr wherever g is not tiny.
        moved = max(float((p.detach() - o).abs().max())
                    for p, o in zip(group["params"], old, strict=True))
        assert moved == pytest.approx(factor * lr * group["lr_multiplier"], rel=1e-2)
    scheduler.step()
    factor = warmup_polynomial(2, warmup_steps=4, total_steps=10)
    for group in optimizer.param_groups:
        assert group["lr"] == pytest.approx(factor * lr * group["lr_multiplier"], rel=1e-12)


def test_decay_one_is_the_old_path_exactly():
    lr, wd = 1e-3, 0.01
    old_model, new_model = classifier(), classifier()
    plain = default_groups("adamw", new_model, wd)
    groups = layer_decay_groups(new_model, plain, lr, 1.0)
    assert [[id(p) for p in g["params"]] for g in groups] == \
        [[id(p) for p in g["params"]] for g in plain]
    assert [g["weight_decay"] for g in groups] == [wd, 0.0]
    old = build_optimizer("adamw", old_model, lr=lr, weight_decay=wd)
    new = build_optimizer("adamw", new_model, lr=lr, weight_decay=wd, param_groups=groups)
    for model, optimizer in ((old_model, old), (new_model, new)):
        torch.manual_seed(1)  # the same dropout masks
        scheduler = build_scheduler(optimizer, "linear", warmup_steps=1, total_steps=3)
        for _ in range(2):
            loss_of(model).backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
    for (name, a), b in zip(old_model.named_parameters(), new_model.parameters(), strict=True):
        assert torch.equal(a, b), name


# ---- FinetuneConfig: defaults from the model directory -------------------------------------------

def config_for(model, **kw) -> FinetuneConfig:
    return finetune_config(task="sst2", data="d", model=str(model), out="o", **kw)


@pytest.mark.parametrize("hidden, lr, decay", [(32, 3e-4, 0.8), (256, 3e-4, 0.8),
                                               (768, 1e-4, 0.8), (1024, 5e-5, 0.9)])
def test_an_electra_directory_brings_electras_fine_tuning_defaults(tmp_path, hidden, lr, decay):
    electra_config(hidden_size=hidden).save(tmp_path)  # config.json is all that is read
    cfg = config_for(tmp_path)
    assert (cfg.lr, cfg.weight_decay, cfg.layer_decay) == (lr, 0.0, decay)
    assert (cfg.batch_size, cfg.max_steps) == (32, 20935)  # the recipe's (ALBERT's) still


def test_an_electra_model_in_albert_layout_is_still_electra(tmp_path):
    config = electra_config(sharing="all", num_hidden_groups=1)
    config.save(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "albert"
    assert config_for(tmp_path).layer_decay == 0.8


@pytest.mark.parametrize("write", [True, False])
def test_other_directories_keep_the_recipe_and_no_decay(tmp_path, write):
    if write:  # an ALBERT directory; else none at all (loading the model reports that)
        small_config().save(tmp_path)
    cfg = config_for(tmp_path if write else tmp_path / "missing")
    assert (cfg.lr, cfg.weight_decay, cfg.layer_decay) == (1e-5, 0.01, 1.0)


def test_given_values_win(tmp_path):
    electra_config().save(tmp_path)
    cfg = config_for(tmp_path, lr=2e-5, weight_decay=0.1, layer_decay=1.0)
    assert (cfg.lr, cfg.weight_decay, cfg.layer_decay) == (2e-5, 0.1, 1.0)
    cfg = config_for(tmp_path, lr=2e-5)  # the rest still ELECTRA's
    assert (cfg.lr, cfg.weight_decay, cfg.layer_decay) == (2e-5, 0.0, 0.8)
    (tmp_path / "albert").mkdir()
    small_config().save(tmp_path / "albert")
    assert config_for(tmp_path / "albert", layer_decay=0.75).layer_decay == 0.75


@pytest.mark.parametrize("bad", [0.0, -0.5, 1.5, math.nan])
def test_a_bad_layer_decay_is_refused(bad):
    with pytest.raises(FinetuneError, match=f"layer_decay={bad}: must lie in"):
        config_for("m", layer_decay=bad)


def test_help_shows_the_option_and_its_default(capsys):
    with pytest.raises(SystemExit):
        main(["finetune", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse's line breaks undone
    assert "--layer-decay X" in text
    text = text[text.index("options:"):]  # the help of each option, not the usage line
    for flag in ("--lr", "--weight-decay", "--layer-decay", "--dropout", "--adam-beta2"):
        start = text.index(flag + " X")
        own = text[start:text.index(" --", start + 3)]  # this option's help only
        assert "(default: the model family's (see litebert.tasks.family_defaults)" in own, flag
    assert "ELECTRA models" not in text  # no family is a special case in the task code


def test_finetune_uses_and_records_electras_defaults(base_model, tmp_path):
    # An ELECTRA discriminator with the micro model's tokenizer.
    tok = litebert.Tokenizer.from_pretrained(base_model)
    config = electra_config(vocab_size=len(tok), num_hidden_layers=2,
                            max_position_embeddings=128, pad_token_id=tok.pad_token_id)
    litebert.EncoderForReplacedTokenDetection(config).save_pretrained(tmp_path / "electra")
    tok.save_pretrained(tmp_path / "electra")
    cfg = finetune_config(task="sst2", data=str(sst2_dir(tmp_path / "SST-2", 16, 8)),
                         model=str(tmp_path / "electra"), out=str(tmp_path / "out"),
                         **{k: v for k, v in fast(max_steps=2, eval_every=2).items()
                            if k != "lr"})
    groups = finetune_groups(litebert.EncoderForSequenceClassification(config), cfg)
    assert {g["lr"] for g in groups} == {3e-4 * 0.8 ** e for e in (0, 2, 3, 4)}
    result = finetune(cfg)
    assert result["optimizer"] == {"lr": 3e-4, "weight_decay": 0.0, "layer_decay": 0.8,
                                   "adam_beta2": 0.999, "adam_epsilon": 1e-6,
                   "layer_decay_rule": "head-to-embeddings"}
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["defaults"] == {
        "family": "electra", "source": "ELECTRA (Clark et al. 2020), Table 7, Small (hidden "
        "size 32)", "values": {"lr": 3e-4, "weight_decay": 0.0, "layer_decay": 0.8,
                               "adam_beta2": 0.999, "adam_epsilon": 1e-6,
                   "layer_decay_rule": "head-to-embeddings"}}
