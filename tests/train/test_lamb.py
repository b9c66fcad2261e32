"""Lamb against an independent float64 numpy reference, plus the parameter split."""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest
import torch
from torch import nn

import litebert
from litebert.train.lamb import Lamb, lamb_param_groups
from litebert.train.optimizers import OPTIMIZERS, step_if

B1, B2, EPS, WD = 0.9, 0.999, 1e-6, 0.01


def ref_lamb(w, g, m, v, *, lr, wd, trust):
    """One step of ALBERT's TF LAMB in numpy: returns new (w, m, v)."""
    m = B1 * m + (1 - B1) * g
    v = B2 * v + (1 - B2) * g * g
    u = m / (np.sqrt(v) + EPS)
    if wd:
        u = u + wd * w
    ratio = 1.0
    if trust:
        w_norm, u_norm = np.linalg.norm(w), np.linalg.norm(u)
        if w_norm > 0 and u_norm > 0:
            ratio = w_norm / u_norm
    return w - lr * ratio * u, m, v


class Toy(nn.Module):
    """Linear + LayerNorm + a zero-initialised matrix (norm 0 at step 1), a matrix kept at
    zero with zero gradients (both norms 0 every step) and one never used (grad None)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.norm = nn.LayerNorm(3)
        self.grow = nn.Parameter(torch.zeros(3, 2))
        self.still = nn.Parameter(torch.zeros(3, 3))
        self.unused = nn.Parameter(torch.randn(2, 2))

    def forward(self, x):  # (B, 4) -> (B, 2)
        return self.norm(self.lin(x)) @ self.grow  # `still` gets its zero grad set by hand


DECAYED = ("lin.weight", "grow", "still", "unused")
EXCLUDED = ("lin.bias", "norm.weight", "norm.bias")


def toy_and_groups(lr_decayed=0.01, lr_excluded=0.02):
    torch.manual_seed(0)
    model = Toy().double()
    with torch.no_grad():  # LayerNorm starts at (1, 0); make it less special
        model.norm.weight.add_(0.3 * torch.randn(3, dtype=torch.float64))
        model.norm.bias.add_(0.3 * torch.randn(3, dtype=torch.float64))
    params = dict(model.named_parameters())
    groups = [dict(params=[params[n] for n in DECAYED], lr=lr_decayed),
              dict(params=[params[n] for n in EXCLUDED], lr=lr_excluded, weight_decay=0.0,
                   trust_ratio=False)]
    return model, groups


def test_matches_numpy_reference_over_five_steps():
    model, groups = toy_and_groups()
    opt = Lamb(groups, lr=1.0, betas=(B1, B2), eps=EPS, weight_decay=WD)
    params = dict(model.named_parameters())
    ref = {n: p.detach().numpy().copy() for n, p in params.items()}
    moments = {n: (np.zeros_like(w), np.zeros_like(w)) for n, w in ref.items()}
    x = torch.randn(5, 4, dtype=torch.float64)
    y = torch.randn(5, 2, dtype=torch.float64)
    for _ in range(5):
        opt.zero_grad(set_to_none=True)
        ((model(x) - y) ** 2).mean().backward()
        params["still"].grad = torch.zeros_like(params["still"])
        assert params["unused"].grad is None
        for name, p in params.items():
            if p.grad is None:
                continue
            g = p.grad.numpy().copy()
            decayed = name in DECAYED
            lr = 0.01 if decayed else 0.02
            ref[name], *moments[name] = ref_lamb(ref[name], g, *moments[name], lr=lr,
                                                 wd=WD if decayed else 0.0, trust=decayed)
        opt.step()
        for name, p in params.items():
            np.testing.assert_allclose(p.detach().numpy(), ref[name], rtol=1e-6, atol=1e-12,
                                       err_msg=name)
    assert np.all(params["still"].detach().numpy() == 0)  # 0/0 trust ratio handled as 1
    assert np.abs(params["grow"].detach().numpy()).max() > 0
    assert params["unused"] not in opt.state  # grad None: untouched, no state


def test_toy_split_matches_lamb_param_groups():
    model, _ = toy_and_groups()
    names = {id(p): n for n, p in model.named_parameters()}
    decayed, excluded = lamb_param_groups(model)
    order = list(names.values())  # groups keep named_parameters order
    assert [names[id(p)] for p in decayed["params"]] == [n for n in order if n in DECAYED]
    assert [names[id(p)] for p in excluded["params"]] == [n for n in order if n in EXCLUDED]
    assert (decayed["weight_decay"], decayed["trust_ratio"]) == (0.01, True)
    assert (excluded["weight_decay"], excluded["trust_ratio"]) == (0.0, False)


@pytest.mark.parametrize("trust", [False, True])
def test_first_step_has_no_bias_correction(trust):
    g = torch.linspace(-2, 3, 12, dtype=torch.float64).reshape(3, 4)
    w0 = torch.linspace(1, -1, 12, dtype=torch.float64).reshape(3, 4)
    w = nn.Parameter(w0.clone())
    w.grad = g.clone()
    wd = WD if trust else 0.0
    Lamb([w], lr=0.1, weight_decay=wd, trust_ratio=trust).step()
    m, v = 0.1 * g, 0.001 * g * g  # bias correction would divide these by 0.1 and 0.001
    update = m / (v.sqrt() + EPS) + wd * w0
    ratio = w0.norm() / update.norm() if trust else 1.0
    torch.testing.assert_close(w.detach(), w0 - 0.1 * ratio * update, rtol=1e-12, atol=1e-12)
    if not trust:  # |m / sqrt(v)| = 0.1 / sqrt(0.001) ~ 3.16, not the bias-corrected 1
        step = (w0 - w.detach()).abs() / 0.1
        torch.testing.assert_close(step, torch.full_like(step, 0.1 / 0.001 ** 0.5), rtol=1e-3,
                                   atol=0)


def _grads(seed, params):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(p.shape, generator=g, dtype=p.dtype) for p in params]


def _run(opt, params, seeds):
    for seed in seeds:
        for p, g in zip(params, _grads(seed, params), strict=True):
            p.grad = g
        opt.step()


def test_state_dict_round_trip_gives_identical_steps():
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(6, 5), nn.LayerNorm(5), nn.Linear(5, 2))
    opt = Lamb(lamb_param_groups(model), lr=0.01)
    params = list(model.parameters())
    _run(opt, params, seeds=range(3))

    buf = io.BytesIO()
    torch.save(opt.state_dict(), buf)
    buf.seek(0)
    twin = copy.deepcopy(model)
    twin_opt = Lamb(lamb_param_groups(twin), lr=0.5)  # lr comes back from the state dict
    twin_opt.load_state_dict(torch.load(buf, weights_only=True))
    state = twin_opt.state[next(twin.parameters())]
    assert set(state) == {"step", "exp_avg", "exp_avg_sq"} and state["step"].item() == 3

    twin_params = list(twin.parameters())
    _run(opt, params, seeds=range(3, 6))
    _run(twin_opt, twin_params, seeds=range(3, 6))
    for p, q in zip(params, twin_params, strict=True):
        assert torch.equal(p, q)


def test_lamb_param_groups_on_albert():
    model = litebert.EncoderForPreTraining(litebert.ModelConfig.from_preset("tiny", vocab_size=100))
    groups = lamb_param_groups(model)
    assert len(groups) == 2
    decayed, excluded = ({id(p) for p in g["params"]} for g in groups)
    grouped = [id(p) for g in groups for p in g["params"]]
    named = dict(model.named_parameters())
    assert sorted(grouped) == sorted(id(p) for p in named.values())  # each exactly once
    for name, p in named.items():
        norm = "LayerNorm" in name or "layer_norm" in name
        if norm or name.endswith("bias"):
            assert id(p) in excluded, name
        if p.ndim == 2:
            assert id(p) in decayed, name
    assert groups[0]["trust_ratio"] and groups[0]["weight_decay"] == 0.01
    assert not groups[1]["trust_ratio"] and groups[1]["weight_decay"] == 0.0


def test_lamb_trains_a_regression():
    torch.manual_seed(2)
    x = torch.randn(128, 8)
    y = x @ torch.randn(8, 1) + 0.5
    model = nn.Linear(8, 1)
    opt = Lamb(lamb_param_groups(model), lr=0.02)
    losses = []
    for _ in range(150):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.05 * losses[0]


def test_step_does_not_sync_to_host(monkeypatch):
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4))
    opt = Lamb(lamb_param_groups(model), lr=0.01)
    for p in model.parameters():
        p.grad = torch.randn_like(p)

    def sync(*_):
        raise AssertionError("host sync in Lamb.step")

    for attr in ("item", "tolist", "__bool__", "__float__"):
        monkeypatch.setattr(torch.Tensor, attr, sync)
    with pytest.raises(AssertionError, match="host sync"):
        torch.ones(()).item()  # the patch is live
    opt.step()
    opt.step()


def test_closure_and_tensor_lr():
    w = nn.Parameter(torch.ones(2, 2))

    def closure():
        loss = (w ** 2).sum()
        w.grad = None
        loss.backward()
        return loss

    opt = Lamb([w], lr=torch.tensor(0.1))
    assert opt.step(closure).item() == 4.0
    assert (w.detach() < 1).all()


def test_errors():
    w = nn.Parameter(torch.ones(3))
    with pytest.raises(ValueError, match="maximize"):
        Lamb([w], maximize=True)
    with pytest.raises(ValueError, match="lr"):
        Lamb([w], lr=-1.0)
    with pytest.raises(ValueError, match="betas"):
        Lamb([w], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="eps"):
        Lamb([w], eps=-1.0)
    with pytest.raises(ValueError, match="weight_decay"):
        Lamb([dict(params=[w], weight_decay=-0.1)])
    with pytest.raises(ValueError, match="weight_decay"):
        lamb_param_groups(nn.Linear(2, 2), weight_decay=-1.0)
    emb = nn.Embedding(5, 3, sparse=True)
    emb(torch.tensor([1, 2])).sum().backward()
    with pytest.raises(RuntimeError, match="sparse"):
        Lamb(emb.parameters()).step()


def test_the_compiled_update_is_the_eager_one_and_compiles_once():
    """compile_update (what a compiled run uses): every step equal to eager Lamb's, a skipped
    step included, and one graph per bucket however the schedule moves lr (a float lr
    baked into the graph would recompile every step). aot_eager: the graph without C++."""
    torch._dynamo.reset()
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    compiled_model = copy.deepcopy(model)
    eager, compiled = (Lamb(lamb_param_groups(m), lr=0.01) for m in (model, compiled_model))
    compiled.compile_update("aot_eager")
    schedule = torch.optim.lr_scheduler.LambdaLR(compiled, lambda n: 1.0 / (n + 1))
    eager_schedule = torch.optim.lr_scheduler.LambdaLR(eager, lambda n: 1.0 / (n + 1))
    torch._dynamo.utils.counters.clear()
    for step in range(5):
        g = torch.Generator().manual_seed(step)
        for p, q in zip(model.parameters(), compiled_model.parameters(), strict=True):
            p.grad = torch.randn(p.shape, generator=g)
            q.grad = p.grad.clone()
        finite = torch.tensor(step != 2)  # step 3 is skipped on the device
        step_if(OPTIMIZERS["lamb"], eager, finite)
        step_if(OPTIMIZERS["lamb"], compiled, finite)
        schedule.step()
        eager_schedule.step()
        for p, q in zip(model.parameters(), compiled_model.parameters(), strict=True):
            assert torch.equal(p, q), step
    frames = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    assert frames == 2  # the two groups (trust ratio and decay, and neither): one graph each
    assert not torch._dynamo.utils.counters["graph_break"]
