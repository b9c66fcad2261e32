"""ELECTRA's presets: the paper's discriminators, in ELECTRA's layout."""

from __future__ import annotations

from typing import Any


def electra_preset(L: int, H: int, E: int, heads: int) -> dict[str, Any]:
    # The discriminators of the ELECTRA paper (Table 6); 30k vocabulary like the others.
    return dict(num_hidden_layers=L, hidden_size=H, embedding_size=E, num_attention_heads=heads,
                intermediate_size=4 * H, model_type="electra", sharing="none",
                num_hidden_groups=L, embedding_projection="when_sizes_differ",
                use_pooler=False, classifier_head="first_token", classifier_act="gelu",
                mlm_act="gelu", hidden_act="gelu", hidden_dropout_prob=0.1,
                attention_probs_dropout_prob=0.1)


PRESETS: dict[str, dict[str, Any]] = {
    "electra-small": electra_preset(12, 256, 128, 4),
    "electra-base": electra_preset(12, 768, 768, 12),
}
