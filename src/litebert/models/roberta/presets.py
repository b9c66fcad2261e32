"""RoBERTa's presets, in RoBERTa's layout on the albert backbone."""

from __future__ import annotations

from typing import Any


def roberta_preset(L: int, H: int, heads: int) -> dict[str, Any]:
    # roberta-base's config.json: BERT's shapes, byte-level BPE ids (<s> 0, <pad> 1, </s> 2),
    # one token type, eps 1e-5, 512 positions after the pad id. A tokenizer sets vocab_size.
    return dict(num_hidden_layers=L, hidden_size=H, embedding_size=H, num_attention_heads=heads,
                intermediate_size=4 * H, model_type="roberta", sharing="none",
                num_hidden_groups=L, vocab_size=50265, max_position_embeddings=514,
                type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0,
                eos_token_id=2, hidden_act="gelu", hidden_dropout_prob=0.1,
                attention_probs_dropout_prob=0.1, embedding_projection="never",
                use_pooler=True, classifier_head="first_token", classifier_act="tanh",
                mlm_act="gelu", position_numbering="after_pad")


PRESETS: dict[str, dict[str, Any]] = {
    "roberta-base": roberta_preset(12, 768, 12),
    "roberta-tiny": roberta_preset(4, 256, 4),
}
