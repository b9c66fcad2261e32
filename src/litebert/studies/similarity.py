"""Figure 2 of the paper: how far each layer moves the token embeddings.

For every layer position l, over the non-padding tokens of the batches given:
- `l2`: the mean L2 distance between the layer's input h_l and output h_{l+1};
- `degrees`: the mean angle between them, arccos(cosine similarity), in degrees.
ALBERT's transitions are much smoother than BERT's (smaller distances and angles) yet do not
converge to 0 with depth: the weight sharing keeps oscillating rather than reaching a fixed
point. Positions count every layer applied (num_hidden_layers x inner_group_num).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch

from litebert.padding import real_tokens


@torch.no_grad()
def layer_transitions(model: torch.nn.Module, batches: Iterable[dict[str, torch.Tensor]]
                      ) -> dict[str, Any]:
    """{'l2': [...], 'degrees': [...], 'tokens': N}: one value per layer position."""
    backbone = getattr(model, "base_model", model)
    was_training = backbone.training
    backbone.eval()
    l2_sum: torch.Tensor | None = None
    angle_sum: torch.Tensor | None = None
    tokens = 0
    for batch in batches:
        mask = real_tokens(batch).bool()  # (B, T)
        out = backbone(batch["input_ids"], batch.get("attention_mask"),
                       batch.get("token_type_ids"), output_hidden_states=True)
        states = torch.stack(out.hidden_states)[:, mask].double()  # (L + 1, N, H)
        before, after = states[:-1], states[1:]  # (L, N, H) each
        l2 = (after - before).norm(dim=-1).sum(dim=-1)  # (L,)
        cosine = torch.nn.functional.cosine_similarity(before, after, dim=-1)  # (L, N)
        angle = torch.rad2deg(torch.acos(cosine.clamp(-1.0, 1.0))).sum(dim=-1)  # (L,)
        l2_sum = l2 if l2_sum is None else l2_sum + l2
        angle_sum = angle if angle_sum is None else angle_sum + angle
        tokens += int(mask.sum())
    backbone.train(was_training)
    if l2_sum is None or angle_sum is None or tokens == 0:
        raise ValueError("layer_transitions: no tokens in the batches given")
    return {"l2": (l2_sum / tokens).tolist(), "degrees": (angle_sum / tokens).tolist(),
            "tokens": tokens}


def angle_degrees(a: torch.Tensor, b: torch.Tensor) -> float:
    """The angle between two vectors in degrees (the reference the tests check against)."""
    cosine = float(torch.dot(a, b) / (a.norm() * b.norm()))
    return math.degrees(math.acos(max(-1.0, min(1.0, cosine))))
