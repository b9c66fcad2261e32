"""The ModernBERT backbone (models/modernbert/model.py) against transformers' ModernBertModel:
random
weights moved through the family adapter both ways (save in one library, load in the other),
fp32, eager and SDPA attention, windows shorter than the rows, padded rows of different
lengths; every hidden state at the real tokens and the gradient of every weight within 1e-5.
Then what only litebert builds: documents and unpadded rows (the window within them),
factorised embeddings and cross-layer sharing (and their unrolling), parameter counts of the
presets, FLOPs, depths, ModernBERT's init and the configs it refuses."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import transformers
from torch.nn.attention.flex_attention import flex_attention

import litebert
import litebert.model.attention as attention
import litebert.model.layers as layers
from litebert.config import ConfigError
from litebert.data.attention_layout import with_unpadded_rows
from litebert.families import FAMILIES
from litebert.model import unroll
from litebert.model.hub import canonical_state
from litebert.models.modernbert.model import ModernBertModel
from litebert.tasks.layer_decay import parameter_depths
from tests.helpers.models import randomize
from tests.helpers.modernbert import ATOL, PAD, B, T, V, hf_modern_config, inputs, modern_config
from tests.helpers.varlen_reference import windowed_varlen_reference

ADAPTER = FAMILIES["modernbert"]
# (global_attn_every_n_layers, local_attention, thetas, transformers' attention): windows of
# |i - j| <= 2 and <= 3 in rows of 16 tokens.
CASES = {
    "every 3, eager": dict(every=3, window=4, impl="eager"),
    "every 2, sdpa, other thetas": dict(every=2, window=6, impl="sdpa", global_theta=1000.0,
                                        local_theta=50.0),
}


def pair(tmp_path, direction: str, case: dict):
    """(ours, theirs) with the same random weights, moved through the adapter."""
    if direction == "transformers -> litebert":
        theirs = randomize(transformers.ModernBertModel(hf_modern_config(**case)))
        theirs.save_pretrained(tmp_path)
        ours = litebert.AutoModel.from_pretrained(tmp_path, strict=True)
    else:
        thetas = dict(global_rope_theta=case.get("global_theta", 160_000.0),
                      local_rope_theta=case.get("local_theta", 10_000.0))
        ours = randomize(ModernBertModel(modern_config(
            global_attn_every_n_layers=case["every"], local_attention=case["window"],
            **thetas)))
        ours.save_pretrained(tmp_path)
        theirs = transformers.ModernBertModel.from_pretrained(
            tmp_path, attn_implementation=case["impl"])
    assert isinstance(ours, ModernBertModel)
    return ours.eval(), theirs.eval()


def assert_close(a, b, what):
    scale = max(1.0, float(b.detach().abs().max()))
    torch.testing.assert_close(a, b, atol=ATOL * scale, rtol=0, msg=what)


def real_token_loss(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """A random projection of the real tokens' states: what a padding query computes (its
    window may hold no real key) is no model's business."""
    g = torch.Generator().manual_seed(3)
    weights = torch.randn(hidden.shape, generator=g) * mask[..., None]
    return (hidden * weights).sum()


@pytest.mark.parametrize("direction", ["transformers -> litebert", "litebert -> transformers"])
@pytest.mark.parametrize("case", list(CASES))
def test_backbone_matches_transformers(tmp_path, case, direction):
    ours, theirs = pair(tmp_path, direction, CASES[case])
    assert ours.encoder.is_global == [k % CASES[case]["every"] == 0 for k in range(4)]
    x = inputs()
    real = x["attention_mask"].bool()
    a = ours(**x, output_hidden_states=True)
    b = theirs(**x, output_hidden_states=True)
    assert a.pooler_output is None and len(a.hidden_states) == len(b.hidden_states) == 5
    for k, (mine, ref) in enumerate(zip(a.hidden_states, b.hidden_states, strict=True)):
        assert_close(mine[real], ref[real], f"{case}: hidden state {k}")
    assert_close(a.last_hidden_state[real], b.last_hidden_state[real], case)
    real_token_loss(a.last_hidden_state, x["attention_mask"]).backward()
    real_token_loss(b.last_hidden_state, x["attention_mask"]).backward()
    grads = {"backbone." + k: p.grad for k, p in ours.named_parameters()}
    theirs_grads = {"model." + k: p.grad for k, p in theirs.named_parameters()}
    mapped = ADAPTER.to_file(grads, ours.config)
    assert set(mapped) == set(theirs_grads)  # every weight, named as transformers does
    for key, grad in mapped.items():
        assert bool(grad.abs().sum() > 0), f"{case}: zero gradient for {key}"
        assert_close(grad, theirs_grads[key], f"{case}: gradient of {key}")


def test_window_changes_the_output_and_token_types_do_not():
    """A local position hides keys beyond the window (so a window covering the row changes
    the output); token types have no embedding here."""
    model = randomize(ModernBertModel(modern_config())).eval()
    wide = ModernBertModel(modern_config(local_attention=2 * T))
    wide.load_state_dict(model.state_dict())
    x = inputs()
    real = x["attention_mask"].bool()
    with torch.no_grad():
        out = model(**x).last_hidden_state
        assert (wide.eval()(**x).last_hidden_state - out)[real].abs().max() > 1e-3
        typed = model(**x, token_type_ids=torch.ones_like(x["input_ids"])).last_hidden_state
    torch.testing.assert_close(typed, out, atol=0, rtol=0)


# ---- documents and unpadded rows ---------------------------------------------------------------

def packed_row():
    """One row: documents of 9 and 7 tokens, then 4 of padding; each document alone."""
    g = torch.Generator().manual_seed(4)
    ids = torch.randint(3, V, (1, 20), generator=g)
    mask = torch.ones(1, 20, dtype=torch.long)
    mask[0, 16:] = 0
    documents = torch.tensor([[0] * 9 + [1] * 7 + [0] * 4])
    return ids.masked_fill(mask == 0, PAD), mask, documents, (ids[:, :9], ids[:, 9:16])


def test_a_packed_document_is_encoded_as_if_alone():
    """Positions restart per document and the window stays inside it: each document's states
    equal those of the document run by itself (CPU: the explicit mask)."""
    model = randomize(ModernBertModel(modern_config())).eval()
    ids, mask, documents, alone = packed_row()
    with torch.no_grad():
        packed = model(ids, mask, document_ids=documents).last_hidden_state[:, :16]
        separate = torch.cat([model(piece).last_hidden_state for piece in alone], dim=1)
        crossing = model(ids, mask).last_hidden_state[:, :16]
    torch.testing.assert_close(packed, separate, atol=ATOL, rtol=ATOL)
    assert (crossing[0, 9:] - separate[0, 9:]).abs().max() > 1e-3


def test_flex_documents_equal_the_explicit_mask(monkeypatch):
    """The CUDA path (windowed BlockMasks; flex run eagerly on the CPU here) gives what the
    CPU's explicit mask gives."""
    model = randomize(ModernBertModel(modern_config())).eval()
    ids, mask, documents, _ = packed_row()
    with torch.no_grad():
        reference = model(ids, mask, document_ids=documents).last_hidden_state
    calls = []

    def counted(*args, **kwargs):  # flex run eagerly, counted: the BlockMask path ran
        calls.append(kwargs["block_mask"])
        return flex_attention(*args, **kwargs)

    monkeypatch.setattr(attention, "compiled_flex_attention", lambda: counted)
    monkeypatch.setattr(layers, "fused_documents", lambda encoder, x: True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # flex's "without torch.compile" (once per process)
        flex = model(ids, mask, document_ids=documents).last_hidden_state
    assert len(calls) == 4  # every layer position, global and windowed alike
    torch.testing.assert_close(flex[:, :16], reference[:, :16], atol=ATOL, rtol=ATOL)


def test_unpadded_rows_equal_the_padded_path(monkeypatch):
    """(N,) document_ids on varlen (a windowed reference on the CPU): every hidden state at
    the real tokens is the padded batch's."""
    blocker = attention.varlen_blocker
    monkeypatch.setattr(attention, "varlen_attn", windowed_varlen_reference)
    monkeypatch.setattr(attention, "varlen_blocker",
                        lambda device, dropout, dtype: blocker("cuda", dropout, torch.bfloat16))
    model = randomize(ModernBertModel(modern_config())).eval()
    x = inputs()
    unpadded = with_unpadded_rows(dict(x))
    real = x["attention_mask"].bool()
    assert unpadded["document_ids"].shape[0] < real.numel()
    with torch.no_grad():
        want = model(**x, output_hidden_states=True)
        got = model(**unpadded, output_hidden_states=True)
    for w, h in zip(want.hidden_states, got.hidden_states, strict=True):
        torch.testing.assert_close(h[real], w[real], atol=ATOL, rtol=ATOL)


# ---- factorised embeddings, sharing, unrolling -------------------------------------------------

SHARED = {
    "all, 2 groups x 2": dict(sharing="all", num_hidden_groups=2, inner_group_num=2),
    "all, one layer": dict(sharing="all", num_hidden_groups=1),
    "attention": dict(sharing="attention", num_hidden_groups=1),
    "ffn": dict(sharing="ffn", num_hidden_groups=2),
    "none": dict(sharing="none"),
}


@pytest.mark.parametrize("E", [16, 32])
@pytest.mark.parametrize("shared", list(SHARED))
def test_sharing_and_factorised_embeddings_unroll_to_the_same_function(shared, E):
    config = modern_config(embedding_size=E, global_attn_every_n_layers=2, **SHARED[shared])
    model = randomize(ModernBertModel(config)).eval()
    encoder = model.encoder
    assert (encoder.embedding_hidden_mapping_in is not None) == (E != 32)
    assert len(encoder.attentions) == max(encoder.attention_index) + 1
    assert len(encoder.ffns) == max(encoder.ffn_index) + 1
    # Module 0 has no attn_norm exactly when position 0 alone uses it.
    alone = encoder.attention_index.count(0) == 1
    assert isinstance(encoder.attentions[0].attn_norm, torch.nn.Identity) == alone
    flat = unroll(model)
    assert flat.config.sharing == "none"
    assert len(flat.encoder.attentions) == config.num_layer_positions
    assert isinstance(flat.encoder.attentions[0].attn_norm, torch.nn.Identity)
    x = inputs()
    real = x["attention_mask"].bool()
    with torch.no_grad():
        a = model(**x, output_hidden_states=True).hidden_states
        b = flat(**x, output_hidden_states=True).hidden_states
    assert len(a) == len(b) == config.num_layer_positions + 1
    for mine, ref in zip(a, b, strict=True):
        torch.testing.assert_close(mine[real], ref[real], atol=ATOL, rtol=0)


def test_all_shared_model_unrolls_into_transformers_layout(tmp_path):
    """One layer shared by all (E == H): save_pretrained(unroll=True) writes a ModernBERT
    directory that transformers computes the same function from."""
    shared = randomize(ModernBertModel(modern_config(sharing="all", num_hidden_groups=1)))
    shared.save_pretrained(tmp_path, unroll=True)
    theirs = transformers.ModernBertModel.from_pretrained(tmp_path).eval()
    x = inputs()
    real = x["attention_mask"].bool()
    with torch.no_grad():
        want = shared.eval()(**x).last_hidden_state
        assert_close(theirs(**x).last_hidden_state[real], want[real], "unrolled")


# ---- counts, FLOPs, depths, init ---------------------------------------------------------------

@pytest.mark.parametrize("preset, hf_sizes", [
    ("modernbert-base", dict()),  # transformers' defaults are ModernBERT-base's
    ("modernbert-large", dict(hidden_size=1024, intermediate_size=2624, num_hidden_layers=28,
                              num_attention_heads=16)),
])
def test_presets_have_transformers_parameter_count(preset, hf_sizes):
    """Built on the meta device: the backbones count the same (149.0M and 394.8M)."""
    with torch.device("meta"):
        ours = ModernBertModel(litebert.ModelConfig.from_preset(preset))
        theirs = transformers.ModernBertModel(transformers.ModernBertConfig(**hf_sizes))
    assert ours.num_parameters() == theirs.num_parameters()
    assert {k: tuple(v.shape) for k, v in ADAPTER.to_file(canonical_state(ours),
                                                          ours.config).items()} == {
        "model." + k: tuple(v.shape) for k, v in theirs.state_dict().items()}


def test_flops_count_local_keys_within_the_window():
    """At rows no longer than the window a local position costs what a global one does;
    beyond, only the global positions' attention grows with T."""
    config = modern_config(num_hidden_layers=6, num_hidden_groups=6, local_attention=8)
    every = ModernBertModel.flops_per_token
    all_global = config.replace(global_attn_every_n_layers=1)
    assert every(config, 9) == every(all_global, 9)
    assert every(config, 10) < every(all_global, 10)
    grows, grows_global = (every(c, 200) - every(c, 100) for c in (config, all_global))
    assert grows == pytest.approx(grows_global * 2 / 6)  # positions 0 and 3 of 6 are global
    factorised = modern_config(embedding_size=16)
    assert every(factorised, 32) - every(modern_config(), 32) == 6.0 * 16 * 32


def test_layer_depths_cover_every_parameter():
    model = ModernBertModel(modern_config(embedding_size=16, sharing="ffn",
                                          num_hidden_groups=2))
    depths, L = parameter_depths(model)
    assert L == 4 and set(depths) == {k for k, _ in model.named_parameters()}
    assert depths["embeddings.tok_embeddings.weight"] == 0
    assert depths["encoder.embedding_hidden_mapping_in.weight"] == 0
    assert depths["encoder.attentions.3.attn.Wqkv.weight"] == 4
    assert depths["encoder.ffns.0.mlp.Wi.weight"] == 2  # positions 0 and 1: the higher
    assert depths["encoder.final_norm.weight"] == L
    units = model.fsdp_units()
    assert len(units) == 4 + 2 and all(reshard for _, reshard in units[:4])
    assert not any(reshard for _, reshard in units[4:])  # shared FFNs stay gathered


def test_init_is_modernberts():
    """Truncated normal within +-2 std: initializer_range for the inputs' weights,
    initializer_range / sqrt(2 L) for the output projections; norms at one, pad row zero."""
    config = modern_config(hidden_size=128, embedding_size=128, intermediate_size=192,
                           num_hidden_layers=8, num_hidden_groups=8)
    model = ModernBertModel(config)
    std, out_std = 0.02, 0.02 / math.sqrt(16)
    blocks = model.encoder.attentions[1], model.encoder.ffns[1]
    for weight, s in ((blocks[0].attn.Wqkv.weight, std), (blocks[1].mlp.Wi.weight, std),
                      (model.embeddings.tok_embeddings.weight[1:], std),
                      (blocks[0].attn.Wo.weight, out_std), (blocks[1].mlp.Wo.weight, out_std)):
        assert float(weight.abs().max()) <= 2 * s
        # a normal cut at 2 std keeps 0.88 of its std
        assert float(weight.std()) == pytest.approx(0.88 * s, rel=0.05)
    assert not model.embeddings.tok_embeddings.weight[PAD].any()
    assert all(bool((p == 1).all()) for k, p in model.named_parameters() if "norm" in k)


def test_dropouts_are_wired_where_modernbert_has_them():
    model = ModernBertModel(modern_config(embedding_dropout=0.1, mlp_dropout=0.2,
                                          attention_probs_dropout_prob=0.3))
    attention_block = model.encoder.attentions[1].attn
    assert model.embeddings.drop.p == 0.1 and model.encoder.ffns[1].mlp.drop.p == 0.2
    assert attention_block.attention_dropout == attention_block.out_drop.p == 0.3
    x = inputs()
    with torch.no_grad():
        a, b = (model.train()(**x).last_hidden_state for _ in range(2))
    assert (a - b).abs().max() > 1e-3  # dropout draws differ in training


@pytest.mark.parametrize("head", ["EncoderForMaskedLM", "EncoderForSequenceClassification",
                                  "EncoderForTokenClassification", "EncoderForQuestionAnswering",
                                  "EncoderForMultipleChoice"])
def test_every_head_without_a_pooler_runs_on_it(head):
    """The heads that need no pooler build on this backbone and train (a loss with a
    gradient into the backbone)."""
    model = getattr(litebert, head)(modern_config(num_labels=2))
    x = inputs()
    labels = {"EncoderForMaskedLM": dict(labels=x["input_ids"].masked_fill(
                  x["attention_mask"] == 0, -100)),
              "EncoderForSequenceClassification": dict(labels=torch.tensor([0, 1, 1])),
              "EncoderForTokenClassification": dict(labels=torch.zeros(B, T, dtype=torch.long)),
              "EncoderForQuestionAnswering": dict(start_positions=torch.tensor([1, 2, 0]),
                                                 end_positions=torch.tensor([3, 2, 0])),
              "EncoderForMultipleChoice": dict(labels=torch.tensor([1, 0, 1]))}[head]
    if head == "EncoderForMultipleChoice":
        x = {k: torch.stack([v, v.flip(0)], dim=1) for k, v in x.items()}  # (B, 2, T)
    model(**x, **labels).loss.backward()
    assert model.backbone.encoder.attentions[1].attn.Wqkv.weight.grad.abs().sum() > 0


# ---- what it refuses ---------------------------------------------------------------------------

@pytest.mark.parametrize("changes, field, words", [
    (dict(global_attn_every_n_layers=0), "global_attn_every_n_layers", "whole number >= 1"),
    (dict(local_attention=1), "local_attention", "whole number >= 2"),
    (dict(local_attention=64.0), "local_attention", "whole number >= 2"),
    (dict(global_rope_theta=0.0), "global_rope_theta", "positive number"),
    (dict(local_rope_theta=True), "local_rope_theta", "positive number"),
    (dict(embedding_dropout=1.0), "embedding_dropout", r"\[0, 1\)"),
    (dict(mlp_dropout=-0.1), "mlp_dropout", r"\[0, 1\)"),
    (dict(initializer_cutoff_factor=0), "initializer_cutoff_factor", "positive number"),
])
def test_invalid_modernbert_fields_name_the_field(changes, field, words):
    with pytest.raises(ConfigError, match=rf"ModernBertBackboneConfig\.{field}=.*{words}"):
        modern_config(**changes)


@pytest.mark.parametrize("changes, words", [
    (dict(use_pooler=True, classifier_head="pooler"),
     r"ModelConfig\.use_pooler=True: ModernBERT has no pooler"),
    (dict(hidden_size=36, embedding_size=36), r"ModelConfig\.hidden_size=36: .*even head size"),
    (dict(mem_len=4), r"mem_len=4 is a setting of the 'xlnet' backbone"),
])
def test_configs_modernbert_cannot_build_name_the_field(changes, words):
    with pytest.raises(ConfigError, match=words):
        modern_config(**changes)


def test_no_pooler_and_no_memories():
    with pytest.raises(ConfigError, match="ModernBERT has no pooler; use a head that pools"):
        ModernBertModel(modern_config(), add_pooling_layer=True)
    with pytest.raises(ConfigError, match="backbone 'modernbert' has no pooler"):  # SOP's
        litebert.EncoderForPreTraining(modern_config())
    model = ModernBertModel(modern_config(), add_pooling_layer=False)
    assert model.pooler is None
    with pytest.raises(ValueError, match="keeps no memories"):
        model(**inputs(), mems=(torch.zeros(1, B, 32),))
