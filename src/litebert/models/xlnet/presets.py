"""XLNet's presets, on the xlnet backbone in XLNet's layout."""

from __future__ import annotations

from typing import Any


def xlnet_preset(L: int, H: int, heads: int) -> dict[str, Any]:
    # transformers' xlnet-base-cased / xlnet-large-cased config.json: BERT's shapes on the
    # "xlnet" backbone, exact GELU, dropout 0.1, XLNet's 32k SentencePiece ids.
    return dict(num_hidden_layers=L, hidden_size=H, embedding_size=H, num_attention_heads=heads,
                intermediate_size=4 * H, backbone="xlnet", model_type="xlnet", sharing="none",
                num_hidden_groups=L, embedding_projection="when_sizes_differ", use_pooler=False,
                classifier_head="summary", classifier_act="tanh", hidden_act="gelu",
                hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                layer_norm_eps=1e-12, vocab_size=32000, pad_token_id=5, bos_token_id=1,
                eos_token_id=2)


PRESETS: dict[str, dict[str, Any]] = {
    "xlnet-tiny": xlnet_preset(4, 256, 4),
    "xlnet-base": xlnet_preset(12, 768, 12),
    "xlnet-large": xlnet_preset(24, 1024, 16),
}
