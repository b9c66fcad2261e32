"""LAMB (You et al. 2019) as ALBERT trains with it, and its parameter groups.

This follows the TF `lamb_optimizer.py` that ships with ALBERT, not the paper's later
variants: Adam moments WITHOUT bias correction, update = m / (sqrt(v) + eps), decoupled
weight decay added to the update, then a per-parameter trust ratio ||w|| / ||update|| (1.0
when either norm is 0). LayerNorm and bias parameters get neither decay nor trust ratio.

All per-parameter arithmetic uses torch._foreach_* ops over each group's tensors (one
multi-tensor kernel per op and (device, dtype) on CUDA, which is what a fused LAMB saves),
and the trust ratios stay on the device (torch.where on the norms), so a step never syncs
the host. A step can be skipped on the device too: set `optimizer.found_inf` (a 0-d float
tensor, nonzero = skip), the attribute torch's GradScaler sets and its fused Adam reads; the
parameters, moments and step counts are then left as they were, without the host reading it.

`compile_update()` goes one step further, as the Trainer does when its run compiles: the
per-bucket update becomes one torch.compile graph, which inductor fuses into a few
multi-tensor kernels (what apex's FusedLAMB writes by hand). The learning rate then enters
as a 0-d tensor on the device, refilled each step, so a schedule that changes it every step
reuses one graph.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

import torch
from torch import nn

from litebert.train.param_groups import decay_groups


class Lamb(torch.optim.Optimizer):
    """LAMB without bias correction. Groups may set `weight_decay` and `trust_ratio`.

    Per parameter w with gradient g (parameters whose grad is None are skipped):
        m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
        u = m / (sqrt(v) + eps) + weight_decay * w
        r = ||w|| / ||u|| if trust_ratio and both norms > 0 else 1
        w -= lr * r * u
    """

    def __init__(self, params: Iterable, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-6,
                 weight_decay: float = 0.01, trust_ratio: bool = True, *,
                 maximize: bool = False):
        if maximize:
            raise ValueError("Lamb: maximize=True is not supported; negate the loss instead")
        _check_hparams(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        trust_ratio=bool(trust_ratio))
        super().__init__(params, defaults)
        self._update: Callable[..., None] = _lamb_update
        self._lr: dict[torch.device, torch.Tensor] = {}  # 0-d, one per device; compiled only

    def compile_update(self, backend: str = "inductor") -> None:
        """The update as one compiled graph per (device, dtype) bucket and group; see the
        module docstring. Eager and compiled steps compute the same formula."""
        self._update = torch.compile(_lamb_update, fullgraph=True, dynamic=False,
                                     backend=backend)

    def _group_lr(self, group: dict, device: torch.device) -> float | torch.Tensor:
        """The group's lr: as is when eager; compiled, a device tensor filled in place (a
        kernel argument, no host sync), so its changing value is not baked into the graph."""
        if self._update is _lamb_update or isinstance(group["lr"], torch.Tensor):
            return group["lr"]
        if device not in self._lr:
            self._lr[device] = torch.zeros((), device=device)
        return self._lr[device].fill_(group["lr"])

    def add_param_group(self, param_group: dict) -> None:
        # Check per-group overrides too, not just the constructor's defaults.
        super().add_param_group(param_group)
        g = self.param_groups[-1]
        _check_hparams(g["lr"], g["betas"], g["eps"], g["weight_decay"])

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None):  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        found_inf = getattr(self, "found_inf", None)  # set by the Trainer or a GradScaler
        for group in self.param_groups:
            params, grads, exp_avgs, exp_avg_sqs, steps = self._gather(group)
            if not params:
                continue
            beta1, beta2 = group["betas"]
            for idx in _buckets(params):
                keep = None if found_inf is None else found_inf.to(params[idx[0]].device) == 0
                # `step` is kept for reference only (no bias correction uses it).
                torch._foreach_add_([steps[i] for i in idx],
                                    1 if keep is None else keep.float())
                self._update(
                    [params[i] for i in idx], [grads[i] for i in idx],
                    [exp_avgs[i] for i in idx], [exp_avg_sqs[i] for i in idx],
                    lr=self._group_lr(group, params[idx[0]].device), beta1=beta1,
                    beta2=beta2, eps=group["eps"],
                    weight_decay=group["weight_decay"], trust_ratio=group["trust_ratio"],
                    keep=keep)
        return loss

    def _gather(self, group: dict):
        """The group's parameters that have a gradient, with their (lazily created) state."""
        params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.grad.is_sparse:
                raise RuntimeError("Lamb does not support sparse gradients; "
                                   "use dense embeddings (sparse=False)")
            state = self.state[p]
            if not state:  # step on the parameter's device: a gated step adds 0 or 1 there
                state["step"] = torch.zeros((), device=p.device)
                state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            elif state["step"].device != p.device:  # a checkpoint's, restored on the CPU
                state["step"] = state["step"].to(p.device)
            params.append(p)
            grads.append(p.grad)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            steps.append(state["step"])
        return params, grads, exp_avgs, exp_avg_sqs, steps


def _check_hparams(lr, betas, eps, weight_decay) -> None:
    if not isinstance(lr, torch.Tensor) and lr < 0:
        raise ValueError(f"Lamb: lr must be >= 0, got {lr}")
    if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
        raise ValueError(f"Lamb: betas must be two values in [0, 1), got {betas}")
    if eps < 0:
        raise ValueError(f"Lamb: eps must be >= 0, got {eps}")
    if weight_decay < 0:
        raise ValueError(f"Lamb: weight_decay must be >= 0, got {weight_decay}")


def _buckets(params: list[torch.Tensor]) -> list[list[int]]:
    """Indices of `params` grouped by (device, dtype): foreach kernels and torch.stack need
    one device, and the fast foreach path one dtype."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, p in enumerate(params):
        groups[(p.device, p.dtype)].append(i)
    return list(groups.values())


def _lamb_update(params, grads, exp_avgs, exp_avg_sqs, *, lr, beta1, beta2, eps,
                 weight_decay, trust_ratio, keep: torch.Tensor | None = None) -> None:
    """One LAMB step for same-device, same-dtype tensor lists (all updated in place).

    keep: a 0-d bool on the device, or None (always keep). A step not kept leaves params and
    moments bit for bit as they were: its gradients are zeroed (in place; NaN * 0 would stay
    NaN), the moments decay by 1 and the step size is 0, while a kept step computes exactly
    what the ungated update does (the same factors, as 0-d tensors)."""
    decay1: float | torch.Tensor = beta1
    decay2: float | torch.Tensor = beta2
    if keep is not None:
        for g in grads:
            g.masked_fill_(~keep, 0.0)
        decay1, decay2 = torch.where(keep, beta1, 1.0), torch.where(keep, beta2, 1.0)
        lr = torch.where(keep, lr, 0.0)
    torch._foreach_mul_(exp_avgs, decay1)
    torch._foreach_add_(exp_avgs, grads, alpha=1 - beta1)  # m
    torch._foreach_mul_(exp_avg_sqs, decay2)
    torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)  # v
    denom = torch._foreach_sqrt(exp_avg_sqs)
    torch._foreach_add_(denom, eps)
    updates = torch._foreach_div(exp_avgs, denom)  # m / (sqrt(v) + eps), no bias correction
    del denom
    if weight_decay != 0:
        torch._foreach_add_(updates, params, alpha=weight_decay)
    if not trust_ratio:
        torch._foreach_mul_(updates, -lr)  # lr may be a float or a 0-d tensor
        torch._foreach_add_(params, updates)
        return
    # Norms in at least float32 so bf16/fp16 parameters get a sane ratio.
    norm_dtype = torch.promote_types(params[0].dtype, torch.float32)
    w_norm = torch.stack(torch._foreach_norm(params, 2, dtype=norm_dtype))  # (n,)
    u_norm = torch.stack(torch._foreach_norm(updates, 2, dtype=norm_dtype))  # (n,)
    # Where either norm is 0 the ratio is 1; w/u may be inf/nan there but is not selected.
    ratio = torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, torch.ones_like(w_norm))
    scale = ratio * -lr  # (n,) per-parameter step size, still on the device
    torch._foreach_mul_(updates, scale.unbind(0))
    torch._foreach_add_(params, updates)


def lamb_param_groups(model: nn.Module, weight_decay: float = 0.01) -> list[dict]:
    """Two Lamb groups: 2-D+ weights (decay + trust ratio) and LayerNorm / bias / 1-D
    parameters (neither; litebert.train.param_groups). Empty groups are left out."""
    return decay_groups(model, weight_decay, decayed_only=("trust_ratio",))
