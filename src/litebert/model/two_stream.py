"""Two-stream attention (XLNet's, Yang et al., 2019) for a backbone whose attention is
model/layers.py's RotaryAttention (models/modernbert/model.py): who sees whom in each stream, built
once per forward pass, and the query stream's targets.

    content stream  (B, T, H), the backbone's ordinary states: token i sees key j when j is a
                    token (attention_mask) and perm_mask[i, j] is 0 (1 = i may not see j),
                    and always sees itself (XLNet's content mask)
    query stream    (B, P, H) at the P targets: target p, at position t_p, sees key j when
                    j is a token, perm_mask[t_p, j] is 0 and j != t_p: never its own
                    position, whatever perm_mask says (XLNet leaves that to perm_mask)

At every layer position both streams use the same weights; the query stream's queries come
from its own states, its keys and values are the content stream's (RotaryAttention's
`two_streams`). At a sliding-window position the window is measured from the query's
position, t_p for a target, as the content stream's is (model/attention.py's window_band).

A target row left without any key (its window holds only keys hidden from it) would be an
empty softmax, NaN on some kernels: it is let see every key and its attention output is
multiplied by 0 (`QueryRows.scale`), so it reads nothing, as a padding target slot does (a
row of zeros in target_mapping, weight 0).

`target_rows` is shared with models/xlnet/model.py, whose relative attention builds its own masks.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

Rope = tuple[torch.Tensor, torch.Tensor]  # (cos, sin), (B, P, hd) each


@dataclass(frozen=True)
class QueryRows:
    """What the query stream's attention reads at one layer position."""

    mask: torch.Tensor  # (B, 1, P, T) bool: target p may attend to key j
    rope: Rope  # the targets' rotary tables, (B, P, hd) each, this position's theta
    scale: torch.Tensor  # (B, 1, P, 1): 0 for a padding target slot or a row with no key


def target_rows(target_mapping, target_positions):
    """(positions (B, P) long, weight (B, P, 1) or None) of the query stream's targets."""
    if target_mapping is not None and target_positions is not None:
        raise ValueError("give the targets once: target_mapping (B, P, T) one-hot rows or "
                         "target_positions (B, P) indices, not both")
    if target_positions is not None:
        return target_positions.long(), None
    if target_mapping is None:
        return None, None
    positions = target_mapping.argmax(dim=-1)  # (B, P); a row of zeros gives 0, weighted 0
    return positions, target_mapping.gather(-1, positions[..., None])  # (B, P, 1)


def content_mask(attention_mask, perm_mask, length: int,
                 device: torch.device) -> torch.Tensor | None:
    """(B, 1, T, T) bool, content query i may attend to key j; None when every query sees
    every key (no perm_mask, no padding: SDPA's unmasked path). The query itself is always
    kept, so a padding query keeps one key too."""
    visible = None
    if perm_mask is not None:
        visible = ~(perm_mask > 0)  # (B, T, T); perm_mask may be bool or float
    if attention_mask is not None:
        tokens = attention_mask[:, None, :] != 0  # (B, 1, T): padding keys hidden
        visible = tokens if visible is None else visible & tokens
    if visible is None:
        return None
    own = torch.eye(length, dtype=torch.bool, device=device)  # (T, T)
    return (visible | own)[:, None]  # (B, 1, T, T)


def query_keep(attention_mask, perm_mask, targets: torch.Tensor, length: int) -> torch.Tensor:
    """(B, P, T) bool: target p may attend to key j (the module docstring's rule)."""
    keys = torch.arange(length, device=targets.device)  # (T,)
    keep = targets[..., None] != keys  # (B, P, T): never its own position
    if perm_mask is not None:  # the targets' rows of perm_mask
        rows = targets[..., None].expand(-1, -1, length)  # (B, P, T)
        keep = keep & ~(perm_mask > 0).gather(1, rows)
    if attention_mask is not None:
        keep = keep & (attention_mask[:, None, :] != 0)
    return keep


def near_targets(targets: torch.Tensor, window: int, length: int) -> torch.Tensor:
    """(B, P, T) bool: key j lies within the sliding window of the target's position,
    |t_p - j| <= window // 2 (the target's row of window_band)."""
    keys = torch.arange(length, device=targets.device)  # (T,)
    return (targets[..., None] - keys).abs() <= window // 2


def query_rows(keep: torch.Tensor, rope: Rope, weight: torch.Tensor | None,
               dtype: torch.dtype) -> QueryRows:
    """keep (B, P, T) -> the QueryRows of one layer type; weight (B, P, 1) or None (all 1)."""
    live = keep.any(dim=-1, keepdim=True)  # (B, P, 1): the row has a key to read
    scale = live.to(dtype) if weight is None else live.to(dtype) * weight.to(dtype)
    return QueryRows(mask=(keep | ~live)[:, None], rope=rope, scale=scale[:, None])


def at_targets(positions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Each target's position (B, P), from the tokens' positions (T,) or (B | 1, T)."""
    if positions.dim() == 1:
        return positions[targets]
    return positions.expand(targets.shape[0], -1).gather(1, targets)
