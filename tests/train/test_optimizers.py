"""The optimizer registry (litebert.train.optimizers): the built-ins' entries, and an
optimizer defined here (SGD with momentum) registered and trained through the normal run:
pre-training, its checkpoint resumed, and fine-tuning's --optimizer."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from torch import nn

from litebert.cli import build_parser, main
from litebert.train import checkpoint
from litebert.train.lamb import Lamb
from litebert.train.optimizers import (
    NEVER,
    OPTIMIZERS,
    OptimizerError,
    OptimizerSpec,
    build_optimizer,
    check_resumable,
    default_groups,
    register_optimizer,
    step_if,
)
from litebert.train.param_groups import decay_groups
from litebert.train.pretrain import Trainer, pretrain
from litebert.train.run_config import PretrainConfig, RunConfigError
from litebert.train.state import load_model_state
from tests.helpers.finetune import fast, sst2_dir
from tests.helpers.pretrain import read_metrics, run_config

SGD = "sgd-momentum"


def sgd_momentum(groups: list[dict], *, lr: float, weight_decay: float,
                 betas: tuple[float, float], eps: float) -> torch.optim.SGD:
    """torch's SGD, its momentum the first beta (eps unused): a builder as the registry
    calls one."""
    return torch.optim.SGD(groups, lr=lr, momentum=betas[0], weight_decay=weight_decay)


SGD_SPEC = OptimizerSpec(
    SGD, "SGD with momentum (a test's)", build=sgd_momentum,
    param_groups="litebert.train.param_groups:decay_groups", state=("momentum_buffer",),
    update="for-loop", on_device=NEVER)


@pytest.fixture(scope="module")
def sgd():
    """SGD_SPEC registered for the module's tests, removed after them."""
    register_optimizer(SGD_SPEC)
    yield SGD_SPEC
    OPTIMIZERS.pop(SGD)


@pytest.fixture(scope="module")
def sgd_run(sgd, data_dir, tmp_path_factory):
    """Four steps of the tiny preset with SGD, checkpoints at 2 and 4."""
    out = tmp_path_factory.mktemp("sgd") / "run"
    pretrain(run_config(data_dir, out, optimizer=SGD, max_steps=4, save_every=2, eval_every=4,
                        export=False))
    return out


# ---- the built-ins ---------------------------------------------------------------------------

def test_the_built_ins_are_lamb_and_adamw_with_what_their_updates_do():
    lamb, adamw = OPTIMIZERS["lamb"], OPTIMIZERS["adamw"]
    assert list(OPTIMIZERS)[:2] == ["lamb", "adamw"]
    assert (lamb.update, lamb.on_device, lamb.compile_hook) == ("foreach", "always",
                                                                 "compile_update")
    assert (adamw.update, adamw.on_device, adamw.compile_hook) == ("fused", "when-fused", None)
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4))
    assert callable(getattr(build_optimizer("lamb", model, lr=0.1), lamb.compile_hook))


def _optimizer(name: str, model: nn.Module) -> torch.optim.Optimizer:
    if name == "adamw-fused":  # what CUDA runs build; torch has the fused kernel on CPU too
        return torch.optim.AdamW(default_groups("adamw", model, 0.01), lr=0.01,
                                 fused=True)
    return build_optimizer(name, model, lr=0.01)


@pytest.mark.parametrize("name", ["lamb", "adamw", "adamw-fused"])
def test_step_if_skips_on_the_device_and_is_exact_when_it_steps(name, monkeypatch):
    """A step gated by a finite flag: exactly the plain step when true; when false the
    parameters, moments and step counts stay bit for bit, NaN gradients included."""
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    plain, gated = model, copy.deepcopy(model)
    opt_plain, opt_gated = _optimizer(name, plain), _optimizer(name, gated)
    spec = OPTIMIZERS[name.removesuffix("-fused")]
    for seed in range(3):
        g = torch.Generator().manual_seed(seed)
        grads = [torch.randn(p.shape, generator=g) for p in plain.parameters()]
        for p, q, grad in zip(plain.parameters(), gated.parameters(), grads, strict=True):
            p.grad, q.grad = grad.clone(), grad.clone()
        opt_plain.step()
        step_if(spec, opt_gated, torch.tensor(True))
    for p, q in zip(plain.parameters(), gated.parameters(), strict=True):
        assert torch.equal(p, q)
    before = copy.deepcopy((gated.state_dict(), opt_gated.state_dict()))
    for q in gated.parameters():
        q.grad = torch.full_like(q, float("nan"))
    if name != "adamw":  # the device gate: nothing may read the flag back
        for attr in ("item", "tolist", "__bool__"):
            monkeypatch.setattr(torch.Tensor, attr, lambda *_: pytest.fail("host sync"))
    step_if(spec, opt_gated, torch.tensor(False))
    monkeypatch.undo()
    params, state = gated.state_dict(), opt_gated.state_dict()["state"]
    assert all(torch.equal(params[k], before[0][k]) for k in params)
    for i, saved in before[1]["state"].items():
        for key, value in saved.items():
            assert torch.equal(state[i][key], value), (name, i, key)


def test_build_optimizer():
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4))
    lamb = build_optimizer("lamb", model, lr=0.1)
    assert isinstance(lamb, Lamb)
    assert [g["trust_ratio"] for g in lamb.param_groups] == [True, False]
    assert lamb.defaults["eps"] == 1e-6
    adamw = build_optimizer("AdamW", model, lr=0.1, weight_decay=0.05, eps=1e-8)
    assert isinstance(adamw, torch.optim.AdamW)
    assert [g["weight_decay"] for g in adamw.param_groups] == [0.05, 0.0]
    assert all("trust_ratio" not in g for g in default_groups("adamw", model, 0.01))
    assert len(adamw.param_groups[0]["params"]) == 1  # only the Linear weight is decayed
    with pytest.raises(ValueError, match="unknown optimizer 'sgd'; choose from lamb, adamw"):
        build_optimizer("sgd", model, lr=0.1)


# ---- registering -----------------------------------------------------------------------------

def test_a_taken_or_malformed_entry_is_refused(sgd):
    with pytest.raises(OptimizerError, match="'lamb' is registered already; give yours another"):
        register_optimizer(OptimizerSpec("lamb", "x", build=sgd_momentum,
                                         param_groups=decay_groups, state=()))
    with pytest.raises(OptimizerError, match="lower-case"):
        register_optimizer(OptimizerSpec("SGD", "x", build=sgd_momentum,
                                         param_groups=decay_groups, state=()))
    with pytest.raises(OptimizerError, match="on_device 'sometimes'; choose from always"):
        register_optimizer(OptimizerSpec("other", "x", build=sgd_momentum,
                                         param_groups=decay_groups, state=(),
                                         on_device="sometimes"))
    assert "other" not in OPTIMIZERS


def test_the_run_config_takes_registered_names_only(sgd):
    with pytest.raises(RunConfigError, match=r"optimizer='adafactor': not a registered "
                                             r"optimizer; choose from lamb, adamw, "
                                             r"sgd-momentum \(.*register_optimizer"):
        PretrainConfig(optimizer="adafactor")
    assert PretrainConfig(optimizer=SGD).optimizer == SGD
    # The command line's choices are the registry's, read when it parses.
    args = build_parser("pretrain").parse_args(["pretrain", "--optimizer", SGD])
    assert args.optimizer == SGD


def test_a_builder_named_by_path_that_is_missing_is_a_sentence():
    spec = OptimizerSpec("missing", "x", build="litebert.train.lamb:NoSuchOptimizer",
                         param_groups=decay_groups, state=())
    register_optimizer(spec)
    try:
        with pytest.raises(OptimizerError, match="litebert.train.lamb has no function "
                                                 "'NoSuchOptimizer'; correct its"):
            build_optimizer("missing", nn.Linear(2, 2), lr=0.1)
    finally:
        OPTIMIZERS.pop("missing")


# ---- an optimizer of the test's own, through the normal run ----------------------------------

def test_a_registered_optimizer_pretrains_and_resumes_with_equal_losses(sgd_run, data_dir,
                                                                        tmp_path):
    at_two = sgd_run / "checkpoints" / "step-00000002"
    saved = checkpoint.saved_keys(at_two)
    assert any(k.endswith(".momentum_buffer") for k in saved)  # SGD's state, not Adam's
    assert not any(k.endswith(".exp_avg") for k in saved)
    assert json.loads((at_two / "state.json").read_text())["config"]["optimizer"] == SGD
    pretrain(run_config(data_dir, tmp_path / "resumed", optimizer=SGD, max_steps=4,
                        save_every=2, eval_every=4, export=False, resume=str(at_two)))
    straight, _ = read_metrics(sgd_run)
    resumed, _ = read_metrics(tmp_path / "resumed")
    assert [x["step"] for x in resumed] == [3, 4]
    assert [x["loss"] for x in resumed] == [x["loss"] for x in straight[2:]]  # bit for bit
    a, _ = load_model_state(checkpoint.latest(sgd_run))
    b, _ = load_model_state(checkpoint.latest(tmp_path / "resumed"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_checkpoint_of_an_unregistered_optimizer_is_a_sentence(sgd_run, data_dir, tmp_path,
                                                                 monkeypatch, capsys):
    at_two = sgd_run / "checkpoints" / "step-00000002"
    monkeypatch.delitem(OPTIMIZERS, SGD)
    code = main(["pretrain", "--data", str(data_dir), "--out", str(tmp_path / "run"),
                 "--resume", str(at_two), "--set", "model_overrides={}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0] == (
        f"litebert pretrain: error: {at_two} was written with optimizer 'sgd-momentum', which "
        f"is not registered here (registered: lamb, adamw); register it with "
        f"litebert.train.optimizers.register_optimizer before the run starts, or pass "
        f"--restart to start over with one of these")


def test_resuming_with_another_optimizer_is_a_sentence(sgd_run, data_dir, tmp_path):
    at_two = sgd_run / "checkpoints" / "step-00000002"
    with pytest.raises(RunConfigError, match=r"step-00000002 was written by a run with other "
                                             r"settings \(optimizer: 'sgd-momentum' there, "
                                             r"'adamw' here\)\. .*--restart"):
        Trainer(run_config(data_dir, tmp_path / "run", optimizer="adamw", max_steps=4,
                           resume=str(at_two)))
    # What restore_state checks itself, whoever calls it: the state is the run's optimizer's.
    with pytest.raises(OptimizerError, match=r"CKPT holds the state of optimizer "
                                             r"'sgd-momentum' and this run trains with "
                                             r"'adamw'; continue it with --optimizer "
                                             r"sgd-momentum, or pass --restart"):
        check_resumable(SGD, "adamw", "CKPT")
    check_resumable(None, "adamw", "CKPT")  # a checkpoint that records none: as before
    check_resumable("LAMB", "lamb", "CKPT")


def test_a_checkpoint_that_names_no_optimizer_resumes_as_lamb(data_dir, tmp_path):
    pretrain(run_config(data_dir, tmp_path / "old", max_steps=2, save_every=2, eval_every=2,
                        export=False))
    state = checkpoint.latest(tmp_path / "old") / "state.json"
    record = json.loads(state.read_text())
    del record["config"]["optimizer"]
    state.write_text(json.dumps(record))
    trainer = Trainer(run_config(data_dir, tmp_path / "old", max_steps=2, save_every=2,
                                 eval_every=2))
    assert trainer.state.step == 2 and isinstance(trainer.optimizer, Lamb)


def test_finetuning_takes_the_optimizer_option(base_model, tmp_path, monkeypatch):
    built = []
    real = build_optimizer

    def build(*args, **kw):
        built.append(real(*args, **kw))
        return built[-1]

    monkeypatch.setattr("litebert.tasks.finetune.build_optimizer", build)
    data = sst2_dir(tmp_path / "SST-2", n_train=32, n_dev=8)
    out = tmp_path / "out"
    options = {**fast(max_steps=4, eval_every=4), "batch_size": 8}
    flags = [arg for k, v in options.items() for arg in (f"--{k.replace('_', '-')}", str(v))]
    assert main(["finetune", "--task", "sst2", "--data", str(data), "--model",
                 str(base_model), "--out", str(out), "--optimizer", "lamb", *flags]) == 0
    assert isinstance(built[0], Lamb)
    assert any(g["trust_ratio"] for g in built[0].param_groups)  # LAMB's groups, layer split
    saved = json.loads((out / "results.json").read_text())
    assert saved["config"]["optimizer"] == "lamb"
