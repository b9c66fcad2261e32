"""ALBERT's presets (Lan et al. 2020, Table 1's sizes) and `tiny`, on the albert backbone."""

from __future__ import annotations

from typing import Any


def albert_preset(L: int, H: int, heads: int, **kw: Any) -> dict[str, Any]:
    return dict(num_hidden_layers=L, hidden_size=H, num_attention_heads=heads,
                intermediate_size=4 * H, embedding_size=128, **kw)


PRESETS: dict[str, dict[str, Any]] = {
    "tiny": albert_preset(4, 256, 4),
    "albert-base": albert_preset(12, 768, 12),
    "albert-large": albert_preset(24, 1024, 16),
    "albert-xlarge": albert_preset(24, 2048, 32),
    "albert-xxlarge": albert_preset(12, 4096, 64),
}
