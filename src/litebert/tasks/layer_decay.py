"""Layer-wise learning-rate decay for fine-tuning (ELECTRA, Clark et al. 2020, Appendix A):
layers nearer the input train at smaller learning rates, so fine-tuning moves the general
features of the lower layers less than the task-specific ones near the head.

Depths, the rule of the official ELECTRA code (google-research/electra, model/optimization.py),
with L the backbone's layer positions (the layers, for ALBERT's inner_group_num 1):

    depth 0        the input side: embeddings (and ALBERT's E->H projection)
    depth k + 1    the transformer layer at position k = 0 .. L-1
    depth L + 2    the task head (everything outside the backbone) and the pooler

    multiplier = decay ** (L + 2 - depth)

so the head trains at lr, the top layer at lr * decay**2 and the embeddings at
lr * decay**(L + 2) (depth L + 1 is unused, as in the official code). That is the rule
"head-to-embeddings" (ELECTRA's).

The rule "layers-only" is XLNet's official fine-tuning code's (zihangdai/xlnet, model_utils.py,
`lr_layer_decay_rate`): only the transformer layers decay, layer position k at
decay**(L - 1 - k), so the top layer trains at lr; the embeddings (and mask_emb), the pooler
and the head train at lr. Which rule applies is the fine-tuning recipe's choice (the model
family's default, `--layer-decay-rule`), not the backbone's: the depths are the same. The
previous release named the rules after those families, "electra" and "xlnet": both names are
still accepted (RULE_ALIASES, tasks/finetune_options.py, beside RULES) and read as today's.

The backbone places its own modules (`layer_depths()`, model/backbone.py; ALBERT's module
shared over several depths takes its highest), so this works for every head on every
registered backbone.

The AdamW groups keep the weight-decay split of litebert.train.lamb (LayerNorm, bias and 1-D
parameters undecayed) and divide each side by multiplier. Each group carries its own `lr`;
torch's LambdaLR records it as the group's `initial_lr` and scales every group by the same
schedule factor, so a group's lr at any step is factor * lr * multiplier.
"""

from __future__ import annotations

from torch import nn

from litebert.model.backbone import backbone_of
from litebert.tasks.finetune_options import RULES, rule_name


def parameter_depths(model: nn.Module) -> tuple[dict[str, int], int]:
    """({parameter name: depth}, L) for a fine-tuning model, in named_parameters order (a
    shared tensor once, under its first name). Raises ValueError for a backbone parameter no
    rule places, rather than giving it some rate silently."""
    try:
        backbone = backbone_of(model)
    except TypeError as err:
        raise TypeError(f"layer decay: {err}") from None
    parts, L = backbone.layer_depths()
    depth_of = {id(p): depth for part, depth in parts
                for p in ([part] if isinstance(part, nn.Parameter) else part.parameters())}
    backbone_params = {id(p) for p in backbone.parameters()}
    depths: dict[str, int] = {}
    for name, p in model.named_parameters():
        if id(p) in depth_of:
            depths[name] = depth_of[id(p)]
        elif id(p) in backbone_params:
            raise ValueError(f"layer decay: no depth for backbone parameter {name!r}")
        else:  # the task head
            depths[name] = L + 2
    return depths, L


def check_decay(decay: float, rule: str = "head-to-embeddings") -> None:
    if not 0.0 < decay <= 1.0:  # also rejects NaN
        raise ValueError(f"layer decay {decay}: must lie in (0, 1]; 1 turns it off")
    if rule_name(rule) not in RULES:
        raise ValueError(f"layer decay rule {rule!r}: choose from {', '.join(RULES)}")


def multiplier(depth: int, L: int, decay: float, rule: str = "head-to-embeddings") -> float:
    """The lr multiplier of a parameter at `depth` (see the module docstring)."""
    if rule_name(rule) == "layers-only":  # depth k + 1 -> decay ** (L - 1 - k)
        return decay ** (L - depth) if 1 <= depth <= L else 1.0
    return decay ** (L + 2 - depth)


def lr_multipliers(model: nn.Module, decay: float,
                   rule: str = "head-to-embeddings") -> dict[str, float]:
    """{parameter name: multiplier}: "head-to-embeddings" gives 1 to the head and
    decay**(L + 2) to the embeddings; "layers-only" 1 to both and decay**(L - 1) to the
    lowest layer."""
    check_decay(decay, rule)
    depths, L = parameter_depths(model)
    return {name: multiplier(depth, L, decay, rule) for name, depth in depths.items()}


def layer_decay_groups(model: nn.Module, groups: list[dict], lr: float,
                       decay: float, rule: str = "head-to-embeddings") -> list[dict]:
    """`groups` (e.g. litebert.train.optimizers.default_groups(name, model, wd)) split by lr
    multiplier; each new group keeps its group's other keys and gets `lr` = lr * multiplier
    and `lr_multiplier`. Within a group, largest multiplier (the head) first; parameters keep
    their order. With decay 1 every multiplier is 1: the same groups, the same parameters."""
    check_decay(decay, rule)
    depths, L = parameter_depths(model)
    names = {id(p): name for name, p in model.named_parameters()}
    out: list[dict] = []
    for group in groups:
        by_multiplier: dict[float, list[nn.Parameter]] = {}
        for p in group["params"]:
            m = multiplier(depths[names[id(p)]], L, decay, rule)
            by_multiplier.setdefault(m, []).append(p)
        for m in sorted(by_multiplier, reverse=True):
            out.append({**group, "params": by_multiplier[m], "lr": lr * m, "lr_multiplier": m})
    return out
