"""ModernBERT's presets, on the modernbert backbone in ModernBERT's layout."""

from __future__ import annotations

from typing import Any


def modernbert_preset(L: int, H: int, heads: int, intermediate: int, **kw: Any) -> dict[str, Any]:
    # transformers' ModernBertConfig (answerdotai/ModernBERT-base / -large): bias-free pre-norm
    # layers, GeGLU (intermediate_size is each half's width), RoPE over 8192 positions, a
    # global layer every third, no dropout, no pooler, bias-free heads (dense -> gelu -> norm)
    # with a decoder bias; a 50368-token BPE vocabulary.
    return dict(num_hidden_layers=L, hidden_size=H, embedding_size=H, num_attention_heads=heads,
                intermediate_size=intermediate, backbone="modernbert", model_type="modernbert",
                sharing="none", num_hidden_groups=L, embedding_projection="when_sizes_differ",
                use_pooler=False, classifier_head="pooled_norm", classifier_act="gelu",
                head_dense_bias=False, head_norm_bias=False, mlm_act="gelu",
                hidden_act="gelu", hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0,
                layer_norm_eps=1e-5, vocab_size=50368, max_position_embeddings=8192,
                pad_token_id=50283, bos_token_id=50281, eos_token_id=50282, **kw)


PRESETS: dict[str, dict[str, Any]] = {
    "modernbert-tiny": modernbert_preset(4, 256, 4, 384, local_attention=64),
    "modernbert-base": modernbert_preset(22, 768, 12, 1152),
    "modernbert-large": modernbert_preset(28, 1024, 16, 2624),
}
