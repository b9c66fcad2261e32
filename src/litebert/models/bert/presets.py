"""BERT's presets: the ALBERT paper's BERT baselines (Table 1), in BERT's layout."""

from __future__ import annotations

from typing import Any


def bert_preset(L: int, H: int, heads: int) -> dict[str, Any]:
    # The paper's BERT baselines (Table 1) use the same 30k vocabulary as ALBERT.
    return dict(num_hidden_layers=L, hidden_size=H, num_attention_heads=heads,
                intermediate_size=4 * H, embedding_size=H, model_type="bert", sharing="none",
                embedding_projection="never", hidden_act="gelu", hidden_dropout_prob=0.1,
                attention_probs_dropout_prob=0.1)


PRESETS: dict[str, dict[str, Any]] = {
    "bert-tiny": bert_preset(4, 256, 4),  # the demo's BERT: the tiny preset's depth and width
    "bert-base": bert_preset(12, 768, 12),
    "bert-large": bert_preset(24, 1024, 16),
    "bert-xlarge": bert_preset(24, 2048, 32),
}
