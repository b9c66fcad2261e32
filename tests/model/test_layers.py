"""ModernBERT's building blocks (model/layers.py, model/rope.py, the sliding windows of
model/attention.py) against transformers' ModernBert modules, fp32, random weights: rotary
tables and rotation for both thetas, the GeGLU MLP, the window rule, the attention and one
encoder layer of each type with padding; the window on FlexAttention and on varlen's path."""

from __future__ import annotations

import pytest
import torch
import torch.nn.attention.flex_attention as flex_module
import torch.nn.functional as F
from torch.nn.attention.flex_attention import and_masks, flex_attention
from transformers import ModernBertConfig
from transformers.masking_utils import (
    create_bidirectional_mask,
    create_bidirectional_sliding_window_mask,
)
from transformers.models.modernbert import modeling_modernbert as hf

import litebert.model.attention as attention
from litebert.model.attention import (
    Varlen,
    document_block_mask,
    key_padding_mask,
    same_document,
    unpadded_layout,
    window_band,
    window_mask_mod,
    windowed,
)
from litebert.model.layers import GeGLU, PreNormLayer, RotaryAttention
from litebert.model.rope import apply_rope, rope_tables
from tests.helpers.models import randomize
from tests.helpers.varlen_reference import windowed_varlen_reference

H, HEADS, INTERMEDIATE = 32, 2, 48  # head size 16
WINDOW = 8  # local_attention: |i - j| <= 4, shorter than the rows
THETAS = {"full_attention": 160_000.0, "sliding_attention": 10_000.0}  # ModernBERT-base's
ATOL = 1e-5
CPU = torch.device("cpu")


def hf_config(layers: int = 4) -> ModernBertConfig:
    """Layers 0 and 3 global, 1 and 2 sliding (global every third), eager attention."""
    config = ModernBertConfig(vocab_size=50, hidden_size=H, intermediate_size=INTERMEDIATE,
                              num_hidden_layers=layers, num_attention_heads=HEADS,
                              local_attention=WINDOW, max_position_embeddings=8192)
    config._attn_implementation = "eager"
    return config


def padded_batch(seed: int = 0):
    """Hidden states (2, 24, H) and an attention mask whose second row ends at 15."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 24, H, generator=g)
    attention_mask = torch.ones(2, 24, dtype=torch.long)
    attention_mask[1, 15:] = 0
    return x, attention_mask


def hf_masks(config: ModernBertConfig, x, attention_mask) -> dict:
    kwargs = dict(config=config, inputs_embeds=x, attention_mask=attention_mask)
    return {"full_attention": create_bidirectional_mask(**kwargs),
            "sliding_attention": create_bidirectional_sliding_window_mask(**kwargs)}


def our_mask(layer_type: str, attention_mask, T: int):
    padding = key_padding_mask(attention_mask)  # (B, 1, 1, T)
    return padding if layer_type == "full_attention" else windowed(padding, WINDOW, T, CPU)


def copy_layer_weights(hf_layer, ours: PreNormLayer) -> None:
    """transformers' `attn_norm`/`attn.*` keys sit under `attention.`, `mlp_norm`/`mlp.*`
    under `ffn.` (the first layer has no attn_norm on either side)."""
    state = {("attention." if key.startswith("attn") else "ffn.") + key: value
             for key, value in hf_layer.state_dict().items()}
    ours.load_state_dict(state, strict=True)


# ---- rotary embeddings -------------------------------------------------------------------------

@pytest.mark.parametrize("layer_type", list(THETAS))
@pytest.mark.parametrize("restart", [False, True], ids=["arange", "packed"])
def test_rope_matches_transformers(layer_type, restart):
    """cos, sin and the rotated q, k equal transformers' for the layer type's theta, for
    positions 0..T-1 (T,) and for (B, T) positions that restart at each packed document,
    far into the 8192 positions as well."""
    rotary = hf.ModernBertRotaryEmbedding(hf_config())
    T = 12
    if restart:
        positions = torch.tensor([[0, 1, 2, 3, 4, 0, 1, 2, 0, 1, 2, 3],
                                  list(range(8180, 8192))])  # (B, T)
    else:
        positions = torch.arange(T)  # (T,)
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 2, HEADS, T, H // HEADS, generator=g).unbind(0)  # (B, nh, T, hd)
    hf_positions = positions if restart else positions[None]
    hf_cos, hf_sin = rotary(q, hf_positions, layer_type)
    want_q, want_k = hf.apply_rotary_pos_emb(q, k, hf_cos, hf_sin)
    cos, sin = rope_tables(positions, H // HEADS, THETAS[layer_type])
    torch.testing.assert_close(cos, hf_cos if restart else hf_cos[0], atol=ATOL, rtol=0)
    torch.testing.assert_close(sin, hf_sin if restart else hf_sin[0], atol=ATOL, rtol=0)
    torch.testing.assert_close(apply_rope(q, cos, sin), want_q, atol=ATOL, rtol=ATOL)
    torch.testing.assert_close(apply_rope(k, cos, sin), want_k, atol=ATOL, rtol=ATOL)


def test_rope_scores_depend_on_the_distance_only():
    """q_i . k_j after rotation is the same for every pair at the same distance i - j."""
    g = torch.Generator().manual_seed(2)
    q, k = torch.randn(2, 1, 1, 1, 16, generator=g).unbind(0)  # one vector each
    cos, sin = rope_tables(torch.arange(40), 16, 10_000.0)  # (40, 16)
    rq = apply_rope(q.expand(1, 1, 40, 16), cos, sin)[0, 0]  # (40, 16)
    rk = apply_rope(k.expand(1, 1, 40, 16), cos, sin)[0, 0]
    scores = rq @ rk.T  # (40, 40)
    torch.testing.assert_close(scores.diagonal(offset=3)[:-1], scores.diagonal(offset=3)[1:],
                               atol=1e-4, rtol=1e-4)
    assert (scores.diagonal(offset=3)[0] - scores.diagonal(offset=5)[0]).abs() > 1e-3


# ---- GeGLU -------------------------------------------------------------------------------------

def test_geglu_matches_modernbert_mlp():
    """Same weights (Wi, Wo), same output: the input half first, exact-erf gelu."""
    theirs = randomize(hf.ModernBertMLP(hf_config())).eval()
    ours = GeGLU(H, INTERMEDIATE).eval()
    ours.load_state_dict(theirs.state_dict(), strict=True)
    x, _ = padded_batch()
    with torch.no_grad():
        want = theirs(x)
        torch.testing.assert_close(ours(x), want, atol=ATOL, rtol=ATOL)
        value, gate = F.linear(x, ours.Wi.weight).chunk(2, dim=-1)
        tanh = F.linear(F.gelu(value, approximate="tanh") * gate, ours.Wo.weight)
    assert (tanh - want).abs().max() > 10 * ATOL  # the test tells the two gelus apart


# ---- the sliding window ------------------------------------------------------------------------

def test_window_rule_is_transformers_bidirectional_sliding_window():
    """|i - j| <= local_attention // 2 on both sides, bounds included, and padding keys
    hidden: transformers' SDPA mask, but for each padding query, which keeps itself."""
    config = hf_config()
    config._attn_implementation = "sdpa"
    x, attention_mask = padded_batch()
    theirs = create_bidirectional_sliding_window_mask(config, x, attention_mask)  # (B,1,T,T)
    ours = windowed(key_padding_mask(attention_mask), WINDOW, 24, CPU)
    assert torch.equal(ours, theirs | torch.eye(24, dtype=torch.bool))
    unpadded = create_bidirectional_sliding_window_mask(config, x, None)  # (B, 1, T, T)
    assert torch.equal(windowed(None, WINDOW, 24, CPU).expand_as(unpadded), unpadded)
    assert window_band(24, WINDOW)[10].nonzero().flatten().tolist() == list(range(6, 15))


@pytest.mark.parametrize("layer_type", list(THETAS))
def test_attention_matches_modernbert_attention(layer_type):
    """ModernBertAttention (eager) of a global and of a sliding layer, with padding, equals
    RotaryAttention under our SDPA masks at every real token."""
    config = hf_config()
    index = config.layer_types.index(layer_type)
    theirs = randomize(hf.ModernBertAttention(config, layer_idx=index)).eval()
    ours = RotaryAttention(H, HEADS).eval()
    ours.load_state_dict(theirs.state_dict(), strict=True)
    x, attention_mask = padded_batch()
    positions = torch.arange(24)
    rope = hf.ModernBertRotaryEmbedding(config)(x, positions[None], layer_type)
    with torch.no_grad():
        want, _ = theirs(x, rope, hf_masks(config, x, attention_mask)[layer_type])
        got = ours(x, our_mask(layer_type, attention_mask, 24),
                   rope_tables(positions, H // HEADS, THETAS[layer_type]))
        unwindowed = ours(x, key_padding_mask(attention_mask), rope_tables(
            positions, H // HEADS, THETAS[layer_type]))
    real = attention_mask.bool()
    torch.testing.assert_close(got[real], want[real], atol=ATOL, rtol=ATOL)
    differs = (unwindowed[real] - want[real]).abs().max() > 1e-3
    assert differs == (layer_type == "sliding_attention")  # the window hides keys


@pytest.mark.parametrize("index", [0, 1, 3], ids=["first-global", "sliding", "global"])
def test_encoder_layer_matches_modernbert_encoder_layer(index):
    """One pre-LN layer, weights copied, padding: layer 0 without its attention norm
    (identity on both sides), a sliding layer, a later global layer."""
    config = hf_config()
    layer_type = config.layer_types[index]
    theirs = randomize(hf.ModernBertEncoderLayer(config, layer_idx=index)).eval()
    ours = PreNormLayer(H, HEADS, INTERMEDIATE, first=index == 0).eval()
    copy_layer_weights(theirs, ours)
    assert isinstance(ours.attention.attn_norm, torch.nn.Identity) == (index == 0)
    x, attention_mask = padded_batch(seed=index)
    positions = torch.arange(24)
    rope = hf.ModernBertRotaryEmbedding(config)(x, positions[None], layer_type)
    with torch.no_grad():
        want = theirs(x, hf_masks(config, x, attention_mask)[layer_type], rope)
        got = ours(x, our_mask(layer_type, attention_mask, 24),
                   rope_tables(positions, H // HEADS, THETAS[layer_type]))
    real = attention_mask.bool()
    torch.testing.assert_close(got[real], want[real], atol=ATOL, rtol=ATOL)


# ---- FlexAttention and varlen ------------------------------------------------------------------

DOCUMENTS = torch.tensor([[0] * 13 + [1] * 20 + [2] * 7, [0] * 30 + [-1] * 10])  # (2, 40)


def test_window_mask_mod_in_documents_equals_the_sdpa_mask():
    """The mask_mod and-ed with the documents', evaluated on every (q, k), is the explicit
    windowed document mask."""
    def same(b, h, q, k):
        return DOCUMENTS[b, q] == DOCUMENTS[b, k]

    mod = and_masks(same, window_mask_mod(WINDOW))
    b, q, k = (torch.arange(n).view(*s) for n, s in ((2, (2, 1, 1)), (40, (1, 40, 1)),
                                                      (40, (1, 1, 40))))
    table = mod(b, torch.zeros(()), q, k)  # (2, 40, 40)
    assert torch.equal(table[:, None], windowed(same_document(DOCUMENTS), WINDOW, 40, CPU))
    assert not table[0, 12, 13] and table[0, 13, 17] and not table[0, 13, 18]


def test_flex_window_in_documents_equals_sdpa(monkeypatch):
    """FlexAttention (run eagerly on the CPU) with the windowed BlockMask gives the layer
    output of SDPA with the explicit windowed document mask."""
    monkeypatch.setattr(attention, "compiled_flex_attention", lambda: flex_attention)
    # flex warns once per process: a set of our own leaves test_attention.py its warning
    monkeypatch.setattr(flex_module, "_WARNINGS_SHOWN", set())
    layer = randomize(PreNormLayer(H, HEADS, INTERMEDIATE)).eval()
    g = torch.Generator().manual_seed(4)
    x = torch.randn(2, 40, H, generator=g)
    rope = rope_tables(torch.arange(40), H // HEADS, THETAS["sliding_attention"])
    block = windowed(document_block_mask(DOCUMENTS), WINDOW, 40, CPU)
    with torch.no_grad(), pytest.warns(UserWarning, match="without torch.compile"):
        flex = layer(x, block, rope)
    with torch.no_grad():
        reference = layer(x, windowed(same_document(DOCUMENTS), WINDOW, 40, CPU), rope)
    torch.testing.assert_close(flex, reference, atol=ATOL, rtol=ATOL)


def test_unpadded_window_equals_the_padded_window(monkeypatch):
    """A sliding layer on unpadded rows (Varlen with window_size (4, 4)) equals the padded
    batch under the SDPA window mask at every real token."""
    monkeypatch.setattr(attention, "varlen_attn", windowed_varlen_reference)
    layer = randomize(PreNormLayer(H, HEADS, INTERMEDIATE)).eval()
    x, attention_mask = padded_batch(seed=5)
    real = attention_mask.bool()
    layout = unpadded_layout(attention_mask, int(real.sum()) + 1)  # one filler slot
    mask = windowed(layout.mask, WINDOW, 24, CPU)
    assert isinstance(mask, Varlen) and mask.window == WINDOW // 2
    cos, sin = rope_tables(torch.arange(24).expand(2, 24), H // HEADS, 10_000.0)  # (B, T, hd)
    with torch.no_grad():
        unpadded = layer(layout.unpad(x), mask, (layout.unpad(cos), layout.unpad(sin)))
        padded = layer(x, our_mask("sliding_attention", attention_mask, 24), (cos, sin))
    torch.testing.assert_close(layout.pad(unpadded)[real], padded[real], atol=ATOL, rtol=ATOL)
