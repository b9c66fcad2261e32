"""The parameter split every optimizer shares: weight decay on the 2-D+ weights, none on
LayerNorm / norm-layer parameters, biases and any 1-D tensor (the official ALBERT and BERT
exclude_from_weight_decay lists, generalised to the norms and biases of every family)."""

from __future__ import annotations

from torch import nn

# The official exclude_from_weight_decay / exclude_from_layer_adaptation lists.
_EXCLUDED_SUBSTRINGS = ("LayerNorm", "layer_norm")
_NORM_TYPES = (nn.LayerNorm, nn.RMSNorm, nn.GroupNorm,
               nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)


def excluded(name: str, param: nn.Parameter, module: nn.Module) -> bool:
    """LayerNorm / norm-layer parameters, biases and any 1-D tensor: no decay."""
    parts = name.split(".")
    return (any(s in name for s in _EXCLUDED_SUBSTRINGS)
            or isinstance(module, _NORM_TYPES)
            or any(part.lower().endswith("norm") for part in parts[:-1])
            or parts[-1].endswith("bias")
            or param.ndim < 2)


def split(model: nn.Module) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """(decayed, excluded) parameters of `model` in named_parameters order (shared ones once)."""
    decayed: list[nn.Parameter] = []
    kept: list[nn.Parameter] = []
    for name, p in model.named_parameters():
        owner = model.get_submodule(name.rpartition(".")[0])
        (kept if excluded(name, p, owner) else decayed).append(p)
    return decayed, kept


def decay_groups(model: nn.Module, weight_decay: float = 0.01,
                 decayed_only: tuple[str, ...] = ()) -> list[dict]:
    """Two groups: the decayed weights at `weight_decay`, the excluded parameters at 0.
    `decayed_only`: an optimizer's own per-group switches, True in the decayed group and
    False in the other (LAMB's "trust_ratio"). Empty groups are left out."""
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    decayed, kept = split(model)
    groups = [{"params": decayed, "weight_decay": weight_decay,
               **dict.fromkeys(decayed_only, True)},
              {"params": kept, "weight_decay": 0.0, **dict.fromkeys(decayed_only, False)}]
    return [g for g in groups if g["params"]]
