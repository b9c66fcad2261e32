"""Warmup + polynomial decay multipliers and the LambdaLR built from them."""

from __future__ import annotations

import io

import pytest
import torch

from litebert.train.schedule import (
    constant,
    constant_with_warmup,
    warmup_polynomial,
    warmup_stable_decay,
    wsd_decay_steps,
)
from litebert.train.scheduler import build_scheduler

W, T = 10, 110  # warmup 10 steps, then 100 steps of decay


def poly(step, **kw):
    return warmup_polynomial(step, **{"warmup_steps": W, "total_steps": T, **kw})


def test_warmup_polynomial_values():
    assert poly(0) == 0.0
    assert poly(1) == pytest.approx(0.1)  # the first optimizer step already trains
    assert poly(5) == pytest.approx(0.5)
    assert poly(W) == 1.0  # warmup end: full lr
    assert poly(60) == pytest.approx(0.5)  # halfway through the decay
    assert poly(T - 1) == pytest.approx(0.01)
    assert poly(T) == 0.0
    assert poly(T + 50) == 0.0


def test_warmup_polynomial_power_end_factor_and_variants():
    assert poly(60, power=2.0) == pytest.approx(0.25)
    assert poly(60, power=0.5) == pytest.approx(0.5 ** 0.5)
    assert poly(60, end_factor=0.1) == pytest.approx(0.55)
    assert poly(T, end_factor=0.1) == pytest.approx(0.1)
    assert poly(10_000, end_factor=0.1) == pytest.approx(0.1)
    # TF BERT/ALBERT decay curve: measured from step 0, so < 1 right after warmup.
    assert poly(W, decay_from_zero=True) == pytest.approx(1 - W / T)
    assert poly(60, decay_from_zero=True) == pytest.approx(1 - 60 / T)
    assert poly(3, decay_from_zero=True) == pytest.approx(0.3)
    # No warmup: step 0 is the top of the decay.
    assert warmup_polynomial(0, warmup_steps=0, total_steps=4) == 1.0
    assert warmup_polynomial(1, warmup_steps=0, total_steps=4) == 0.75
    # Warmup over the whole run: ramps up, then end_factor from total_steps on.
    assert warmup_polynomial(3, warmup_steps=4, total_steps=4) == 0.75
    assert warmup_polynomial(4, warmup_steps=4, total_steps=4) == 0.0


def test_constant_schedules():
    assert constant(0) == constant(12345) == 1.0
    assert constant_with_warmup(0, warmup_steps=4) == 0.0
    assert constant_with_warmup(1, warmup_steps=4) == 0.25
    assert constant_with_warmup(4, warmup_steps=4) == 1.0
    assert constant_with_warmup(1000, warmup_steps=4) == 1.0
    assert constant_with_warmup(0, warmup_steps=0) == 1.0


@pytest.mark.parametrize("call, match", [
    (lambda: poly(-1), "step must be >= 0"),
    (lambda: warmup_polynomial(1, warmup_steps=20, total_steps=10), r"warmup_steps \(20\)"),
    (lambda: warmup_polynomial(1, warmup_steps=-1, total_steps=10), "warmup_steps"),
    (lambda: warmup_polynomial(1, warmup_steps=0, total_steps=0), "total_steps"),
    (lambda: poly(1, power=0.0), "power"),
    (lambda: poly(1, end_factor=1.5), "end_factor"),
    (lambda: constant_with_warmup(1, warmup_steps=-2), "warmup_steps"),
    (lambda: constant(-3), "step"),
])
def test_function_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def _optimizer(lr=2.0):
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=lr)


def _lrs_used(name, steps, **kw):
    """lr each optimizer.step() of a run would use, k = 1..steps."""
    opt = _optimizer()
    sched = build_scheduler(opt, name, **kw)
    lrs = []
    for _ in range(steps):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return lrs


def test_scheduler_kth_step_uses_factor_k():
    lrs = _lrs_used("polynomial", 14, warmup_steps=4, total_steps=12)
    expected = [2.0 * warmup_polynomial(k, warmup_steps=4, total_steps=12) for k in range(1, 15)]
    assert lrs == pytest.approx(expected)
    assert lrs[0] == pytest.approx(0.5)  # first step: 1 / warmup, not 0
    assert lrs[3] == pytest.approx(2.0)  # 4th step: warmup done
    assert lrs[7] == pytest.approx(1.0)  # halfway through 8 decay steps
    assert lrs[11:] == [0.0, 0.0, 0.0]  # step total_steps and after: end_factor


def test_scheduler_names():
    assert _lrs_used("linear", 3, warmup_steps=0, total_steps=4) == pytest.approx([1.5, 1.0, 0.5])
    squared = _lrs_used("polynomial", 3, warmup_steps=0, total_steps=4, power=2.0)
    assert squared == pytest.approx([2 * 0.75 ** 2, 2 * 0.5 ** 2, 2 * 0.25 ** 2])
    assert _lrs_used("constant", 3) == [2.0, 2.0, 2.0]
    assert _lrs_used("constant_with_warmup", 4, warmup_steps=2) == [1.0, 2.0, 2.0, 2.0]


def test_scheduler_state_dict_round_trip():
    opt = _optimizer()
    sched = build_scheduler(opt, "polynomial", warmup_steps=3, total_steps=10)
    for _ in range(5):
        opt.step()
        sched.step()
    buf = io.BytesIO()
    torch.save(sched.state_dict(), buf)
    buf.seek(0)
    opt2 = _optimizer()
    sched2 = build_scheduler(opt2, "polynomial", warmup_steps=3, total_steps=10)
    sched2.load_state_dict(torch.load(buf, weights_only=True))  # plain data only
    opt2.param_groups[0]["lr"] = opt.param_groups[0]["lr"]  # as Optimizer.load_state_dict does
    for _ in range(3):
        opt.step()
        sched.step()
        opt2.step()
        sched2.step()
        assert sched2.get_last_lr() == sched.get_last_lr()


@pytest.mark.parametrize("kw, match", [
    (dict(name="cosine", total_steps=10), "unknown schedule name 'cosine'.*polynomial"),
    (dict(name="polynomial", warmup_steps=20, total_steps=10), r"warmup_steps \(20\)"),
    (dict(name="polynomial", warmup_steps=2), "needs total_steps"),
    (dict(name="linear", total_steps=10, power=2.0), "power 1"),
    (dict(name="constant", warmup_steps=5), "constant_with_warmup"),
    (dict(name="constant_with_warmup", warmup_steps=20, total_steps=10), "warmup_steps"),
    (dict(name="polynomial", total_steps=10, power=-1.0), "power"),
])
def test_build_scheduler_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        build_scheduler(_optimizer(), **kw)


def test_wsd_warms_up_holds_then_decays_over_the_last_steps():
    f = [warmup_stable_decay(k, warmup_steps=4, total_steps=20, decay_steps=8) for k in range(22)]
    assert f[:5] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert f[4:13] == [1.0] * 9  # stable until step 12 = 20 - 8
    assert f[13:20] == pytest.approx([1 - i / 8 for i in range(1, 8)])  # linear at power 1
    assert f[20] == f[21] == 0.0
    sqrt = [warmup_stable_decay(k, warmup_steps=4, total_steps=20, decay_steps=8, power=0.5)
            for k in range(13, 20)]
    assert sqrt == pytest.approx([1 - (i / 8) ** 0.5 for i in range(1, 8)])


def test_wsd_lr_before_the_decay_does_not_depend_on_the_length_of_the_run():
    short = [warmup_stable_decay(k, warmup_steps=3, total_steps=30, decay_steps=5)
             for k in range(25)]
    long = [warmup_stable_decay(k, warmup_steps=3, total_steps=300, decay_steps=5)
            for k in range(25)]
    assert short == long


def test_wsd_scheduler_defaults_to_a_tenth_and_checks_its_decay():
    assert wsd_decay_steps(0, warmup_steps=10, total_steps=200) == 20
    assert wsd_decay_steps(0, warmup_steps=195, total_steps=200) == 5
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = build_scheduler(opt, "wsd", warmup_steps=2, total_steps=20)
    lrs = []
    for _ in range(20):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[1:18] == [1.0] * 17 and lrs[18] == pytest.approx(0.5) and lrs[19] == 0.0
    with pytest.raises(ValueError, match=r"decay_steps \(30\) must be in \[0, total_steps - "
                                         r"warmup_steps = 18\]"):
        build_scheduler(opt, "wsd", warmup_steps=2, total_steps=20, decay_steps=30)
