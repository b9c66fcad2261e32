"""Learning-rate multipliers (warmup + polynomial decay, as BERT/ALBERT; warmup-stable-decay, as
ModernBERT); torch's LambdaLR over them is in scheduler.py. No torch here: the run configs
check their schedule with this module, and parsers list SCHEDULES, without loading it.

Step convention. The multiplier functions take `step` = k, the 1-based index of the optimizer
step that will use the value: the k-th optimizer.step() of a run trains with lr * f(k).
    warmup      f(k) = k / warmup_steps                          for k < warmup_steps
    decay       f(k) = end + (1 - end) * (1 - p) ** power,
                p = (k - warmup_steps) / (total_steps - warmup_steps)  for warmup <= k < total
    after       f(k) = end_factor                                for k >= total_steps
So f(0) = 0 (unless warmup_steps == 0), the first step trains at 1 / warmup_steps (no step is
wasted at lr 0), step `warmup_steps` at the full lr, and step `total_steps` at end_factor.

torch's LambdaLR calls its lambda with the number of scheduler.step() calls so far (0 at
construction), i.e. the number of optimizer steps already taken; build_scheduler's lambdas
therefore evaluate f(n + 1). Call scheduler.step() once after each optimizer.step().

Differences from the TF code of BERT/ALBERT, which computes, with global_step = n (0-based):
lr * (1 - n / total) ** power, replaced by lr * n / warmup while n < warmup. That code's first
step uses lr 0, and its decay starts from step 0, so right after warmup it is already at
(1 - warmup / total) ** power (0.975 for ALBERT's 3125 / 125000) rather than 1. Pass
`decay_from_zero=True` for that decay curve (p = k / total_steps); the warmup keeps the
1-based convention above.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from litebert.provenance import FieldError

SCHEDULES = ("polynomial", "linear", "constant", "constant_with_warmup", "wsd")
WSD_DECAY_SHARE = 0.1  # "wsd" without decay_steps: the last tenth of the run decays


def _check_step(step: int) -> None:
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")


def _check_warmup(warmup_steps: int, total_steps: int | None) -> None:
    if warmup_steps < 0:
        raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
    if total_steps is not None and warmup_steps > total_steps:
        raise ValueError(f"warmup_steps ({warmup_steps}) must be <= total_steps ({total_steps})")


def warmup_polynomial(step: int, *, warmup_steps: int, total_steps: int, power: float = 1.0,
                      end_factor: float = 0.0, decay_from_zero: bool = False) -> float:
    """Linear warmup 0 -> 1 over `warmup_steps`, then (1 - progress) ** power decay to
    `end_factor` at `total_steps`, constant after. See the module docstring for `step`."""
    _check_step(step)
    _check_warmup(warmup_steps, total_steps)
    if total_steps <= 0:
        raise ValueError(f"total_steps must be > 0, got {total_steps}")
    if power <= 0 or not math.isfinite(power):
        raise ValueError(f"power must be a finite number > 0, got {power}")
    if not 0.0 <= end_factor <= 1.0:
        raise ValueError(f"end_factor must be in [0, 1], got {end_factor}")
    if step < warmup_steps:
        return step / warmup_steps
    if step >= total_steps:
        return float(end_factor)
    if decay_from_zero:
        progress = step / total_steps
    else:
        progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return end_factor + (1.0 - end_factor) * (1.0 - progress) ** power


def warmup_stable_decay(step: int, *, warmup_steps: int, total_steps: int, decay_steps: int,
                        power: float = 1.0, end_factor: float = 0.0) -> float:
    """The trapezoid (ModernBERT's schedule): linear warmup 0 -> 1, then 1 until the last
    `decay_steps`, which fall to `end_factor` at `total_steps` as 1 - p ** power, p the share
    of the decay done: power 1 is linear, 0.5 the "1 - sqrt" decay ModernBERT used. Unlike
    a polynomial decay, the lr of a step does not depend on total_steps until the decay
    starts, so a run can be extended from any checkpoint taken in the stable phase."""
    _check_step(step)
    _check_warmup(warmup_steps, total_steps)
    if not 0 <= decay_steps <= total_steps - warmup_steps:
        raise ValueError(f"decay_steps ({decay_steps}) must be in [0, total_steps - "
                         f"warmup_steps = {total_steps - warmup_steps}]")
    if power <= 0 or not math.isfinite(power):
        raise ValueError(f"power must be a finite number > 0, got {power}")
    if step < warmup_steps:
        return step / warmup_steps
    if step >= total_steps:
        return float(end_factor)
    decay_start = total_steps - decay_steps
    if step < decay_start:
        return 1.0
    progress = (step - decay_start) / decay_steps
    return end_factor + (1.0 - end_factor) * (1.0 - progress ** power)


def wsd_decay_steps(decay_steps: int, warmup_steps: int, total_steps: int) -> int:
    """The decay length "wsd" uses: `decay_steps` as given, or for 0 WSD_DECAY_SHARE of the
    run (at most what warm-up leaves)."""
    if decay_steps:
        return decay_steps
    return min(round(WSD_DECAY_SHARE * total_steps), total_steps - warmup_steps)


def constant_with_warmup(step: int, *, warmup_steps: int) -> float:
    """Linear warmup 0 -> 1 over `warmup_steps`, then 1."""
    _check_step(step)
    _check_warmup(warmup_steps, None)
    return min(1.0, step / warmup_steps) if warmup_steps > 0 else 1.0


def constant(step: int) -> float:
    """Always 1 (the optimizer's own lr)."""
    _check_step(step)
    return 1.0


def multiplier(name: str, warmup_steps: int, total_steps: int | None, power: float,
                end_factor: float, decay_from_zero: bool,
                decay_steps: int) -> Callable[[int], float]:
    """The multiplier f(k) for `name`, arguments checked once here rather than every step."""
    if name == "wsd":
        if total_steps is None:
            raise ValueError("build_scheduler: schedule 'wsd' needs total_steps")
        decay_length = wsd_decay_steps(decay_steps, warmup_steps, total_steps)

        def trapezoid(k: int) -> float:
            return warmup_stable_decay(k, warmup_steps=warmup_steps, total_steps=total_steps,
                                       decay_steps=decay_length, power=power,
                                       end_factor=end_factor)

        trapezoid(warmup_steps)  # raises on bad arguments now, not at step 1
        return trapezoid
    if name in ("polynomial", "linear"):
        if total_steps is None:
            raise ValueError(f"build_scheduler: schedule {name!r} needs total_steps")
        if name == "linear" and power != 1.0:
            raise ValueError(f"build_scheduler: 'linear' is power 1, got power={power}; "
                             "use name='polynomial' for other powers")

        def decay(k: int) -> float:
            return warmup_polynomial(k, warmup_steps=warmup_steps, total_steps=total_steps,
                                     power=power, end_factor=end_factor,
                                     decay_from_zero=decay_from_zero)

        decay(warmup_steps)  # raises on bad arguments now, not at step 1
        return decay
    _check_warmup(warmup_steps, total_steps)
    if name == "constant_with_warmup":
        return lambda k: constant_with_warmup(k, warmup_steps=warmup_steps)
    if name == "constant":
        if warmup_steps:
            raise ValueError(f"build_scheduler: 'constant' has no warmup, got "
                             f"warmup_steps={warmup_steps}; use 'constant_with_warmup'")
        return constant
    raise ValueError(f"build_scheduler: unknown schedule name {name!r}; "
                     f"expected one of {', '.join(SCHEDULES)}")


def resolve_warmup(recipe_steps: int, recipe_warmup: int, max_steps: int | None = None,
                   warmup_steps: int | None = None) -> tuple[int, int]:
    """(max_steps, warmup_steps) of a run from its recipe's pair and what the user gave
    (None: not given). The one warm-up rule of pre-training and fine-tuning:

    - only max_steps given: warm-up keeps the recipe's share of the steps, rounded half up
      (recipe 60 of 600, max_steps 25 -> 3; max_steps 3 -> 0.3 -> 0). No floor of 1: one
      warm-up step trains at the full lr, the same as none. A fixed warm-up would be cut off
      by a shorter run, or never end in it, and the lr would never decay.
    - warmup_steps given (or neither): kept as is, and must lie in [0, max_steps].
    Raises FieldError (a ValueError) naming the field, its value and the fix.
    """
    steps = recipe_steps if max_steps is None else max_steps
    for name, value in (("max_steps", steps), ("warmup_steps", warmup_steps)):
        if not isinstance(value, int | None) or isinstance(value, bool):
            raise FieldError(name, value, "give a whole number")
    if warmup_steps is None and max_steps is not None and recipe_steps > 0:
        # Integer round-half-up of recipe_warmup * steps / recipe_steps (no float error).
        warmup = (2 * recipe_warmup * steps + recipe_steps) // (2 * recipe_steps)
    else:
        warmup = recipe_warmup if warmup_steps is None else warmup_steps
    if steps <= 0:
        raise FieldError("max_steps", steps, "must be positive")
    if not 0 <= warmup <= steps:
        raise FieldError("warmup_steps", warmup,
                         f"must lie in [0, max_steps={steps}]; give a smaller --warmup-steps, "
                         f"a larger --max-steps, or leave --warmup-steps out to keep the "
                         f"recipe's share of the steps", related={"max_steps": steps})
    return steps, warmup
