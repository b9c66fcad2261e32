"""The XLNet backbone and its permutation LM against transformers' XLNetModel and
XLNetLMHeadModel: random weights moved through the family adapter (save in one library, load
in the other, both directions), fp32, no dropout; outputs, memories, losses and the gradient
of every parameter within 1e-5. Cases: plain, left padding, perm_mask + target_mapping (with a
padding slot) and the same as target_positions, two segments with memories (also with "uni"
attention and same_length), "uni" attention, bi_data with clamp_len."""

from __future__ import annotations

import pytest
import torch
import transformers

import litebert
from litebert.config import ConfigError
from litebert.families import FAMILIES
from litebert.model import unroll
from litebert.model.hub import canonical_state
from litebert.tasks.layer_decay import parameter_depths
from tests.helpers.family_configs import albert_xlnet_config, hf_xlnet_config, xlnet_config
from tests.helpers.models import randomize
from tests.helpers.xlnet import CASES, B, P, T, V, inputs

ATOL = 1e-5
XLNET = FAMILIES["xlnet"]


def labels_for(x: dict[str, torch.Tensor]) -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    mapping = x.get("target_mapping")
    if mapping is None:
        return torch.randint(0, V, x["input_ids"].shape, generator=g)
    labels = torch.randint(0, V, mapping.shape[:2], generator=g)
    return labels.masked_fill(mapping.sum(-1) == 0, -100)  # the padding slot scores nothing


def pair(tmp_path, head: str, direction: str, **config):
    """(ours, theirs) with the same random weights, moved through the adapter."""
    cls = litebert.XLNetModel if head == "backbone" else litebert.EncoderForPermutationLM
    hf_cls = transformers.XLNetModel if head == "backbone" else transformers.XLNetLMHeadModel
    if direction == "transformers -> litebert":
        theirs = randomize(hf_cls(hf_xlnet_config(**config)))
        theirs.save_pretrained(tmp_path)
        ours = cls.from_pretrained(tmp_path, strict=True)
    else:
        ours = randomize(cls(xlnet_config(**config)))
        ours.save_pretrained(tmp_path)
        theirs = hf_cls.from_pretrained(tmp_path)
    return ours.eval(), theirs.eval()


def assert_close(a, b, what):
    scale = max(1.0, float(b.detach().abs().max()))
    torch.testing.assert_close(a, b, atol=ATOL * scale, rtol=0, msg=what)


def assert_same_gradients(ours, theirs, what=""):
    """Every parameter of ours has transformers' gradient for the same tensor (in XLNet's
    names and einsum shapes, through the adapter)."""
    bare = not hasattr(ours, "backbone")
    grads = {k: p.grad for k, p in ours.named_parameters()}
    # Without targets there is no query stream, so mask_emb has no gradient (nor in theirs).
    unused = {k for k, g in grads.items() if g is None}
    assert unused <= {"mask_emb", "backbone.mask_emb"}, what
    canonical = {("backbone." + k if bare else k): g for k, g in grads.items() if g is not None}
    mapped = XLNET.to_file(canonical, ours.config)
    their = {("transformer." + k if bare else k): p.grad for k, p in theirs.named_parameters()}
    assert len(mapped) + len(unused) == len(canonical_state(ours))
    assert all(their["transformer.mask_emb"] is None for _ in unused)
    for key, grad in mapped.items():
        assert bool(grad.abs().sum() > 0), f"{what}: zero gradient for {key}"
        assert_close(grad, their[key], f"{what}: {key}")


def projection_loss(out: torch.Tensor) -> torch.Tensor:
    g = torch.Generator().manual_seed(3)
    return (out * torch.randn(out.shape, generator=g)).sum()


@pytest.mark.parametrize("direction", ["transformers -> litebert", "litebert -> transformers"])
@pytest.mark.parametrize("case", list(CASES))
def test_backbone_matches_transformers(tmp_path, case, direction):
    spec = CASES[case]
    ours, theirs = pair(tmp_path, "backbone", direction, **spec.get("config", {}))
    x = inputs(spec)
    a, b = ours(**x, use_mems=False), theirs(**x, use_mems=False)
    rows = P if "target_mapping" in x else T
    assert a.last_hidden_state.shape == (B, rows, 32) and a.mems is None
    assert_close(a.last_hidden_state, b.last_hidden_state, case)
    projection_loss(a.last_hidden_state).backward()
    projection_loss(b.last_hidden_state).backward()
    assert_same_gradients(ours, theirs, case)


@pytest.mark.parametrize("case", ["perm_mask + targets", "uni", "bi_data clamp_len"])
def test_permutation_lm_loss_and_gradients_match(tmp_path, case):
    spec = CASES[case]
    ours, theirs = pair(tmp_path, "lm", "transformers -> litebert", **spec.get("config", {}))
    x = inputs(spec)
    labels = labels_for(x)
    a = ours(**x, labels=labels, use_mems=False)
    b = theirs(**x, labels=labels, use_mems=False)
    assert a.logits.shape == (B, P, V)
    assert_close(a.logits, b.logits, "logits")
    torch.testing.assert_close(a.loss, b.loss, atol=ATOL, rtol=0)
    a.loss.backward()
    b.loss.backward()
    assert_same_gradients(ours, theirs, case)


def test_target_positions_give_what_target_mapping_gives(tmp_path):
    """The fast path: indices instead of one-hot rows, same logits, loss and gradients (the
    padding slot is a label of -100 there)."""
    spec = CASES["perm_mask + targets"]
    ours, theirs = pair(tmp_path, "lm", "transformers -> litebert")
    x = inputs(spec)
    labels = labels_for(x)
    mapping = x.pop("target_mapping")
    b = theirs(**x, target_mapping=mapping, labels=labels, use_mems=False)
    a = ours(**x, target_positions=mapping.argmax(-1), labels=labels, use_mems=False)
    real = mapping.sum(-1) > 0
    assert_close(a.logits[real], b.logits[real], "logits")
    torch.testing.assert_close(a.loss, b.loss, atol=ATOL, rtol=0)
    a.loss.backward()
    b.loss.backward()
    assert_same_gradients(ours, theirs, "target_positions")
    with pytest.raises(ValueError, match="give the targets once"):
        ours(**x, target_mapping=mapping, target_positions=mapping.argmax(-1))


@pytest.mark.parametrize("config", [dict(mem_len=6, reuse_len=5),
                                    dict(mem_len=4, attn_type="uni", same_length=True)])
def test_memories_of_a_previous_segment(tmp_path, config):
    """Two segments; each library's memories fed back to it: the memories (transformers'
    cache_mem: reuse_len slice, mem_len cut, detached), the second segment's logits, loss and
    gradients agree."""
    ours, theirs = pair(tmp_path, "lm", "litebert -> transformers", **config)
    spec = dict(targets=True) if config.get("attn_type") == "uni" else CASES["perm_mask + targets"]
    first, second = inputs(spec, seed=0), inputs(spec, seed=1)
    a1, b1 = ours(**first, use_mems=True), theirs(**first, use_mems=True)
    assert len(a1.mems) == 2 and a1.mems[0].shape == (min(config["mem_len"], 5), B, 32)
    for m, n in zip(a1.mems, b1.mems, strict=True):
        assert not m.requires_grad
        assert_close(m, n, "first segment's memories")
    labels = labels_for(second)
    a2 = ours(**second, mems=a1.mems, labels=labels, use_mems=True)
    b2 = theirs(**second, mems=b1.mems, labels=labels, use_mems=True)
    assert a2.mems[0].shape == (config["mem_len"], B, 32)
    for m, n in zip(a2.mems, b2.mems, strict=True):
        assert_close(m, n, "second segment's memories")
    assert_close(a2.logits, b2.logits, "second segment's logits")
    torch.testing.assert_close(a2.loss, b2.loss, atol=ATOL, rtol=0)
    a2.loss.backward()
    b2.loss.backward()
    assert_same_gradients(ours, theirs, "second segment")


def test_memories_change_the_output_and_default_follows_mem_len():
    model = randomize(litebert.XLNetModel(xlnet_config(mem_len=4))).eval()
    x = inputs({})
    out = model(**x)  # use_mems None: on, since mem_len > 0
    assert out.mems is not None and out.mems[0].shape == (4, B, 32)
    again = model(**x, mems=out.mems)
    assert not torch.allclose(again.last_hidden_state, out.last_hidden_state, atol=1e-3)
    assert litebert.XLNetModel(xlnet_config())(**x).mems is None  # mem_len None: off
    with pytest.raises(ValueError, match=r"mems: expected 2 tensors \(M, 4, 32\)"):
        model(**x, mems=(out.mems[0],))


def test_query_stream_runs_on_the_targets_only(monkeypatch):
    """Attention is computed for T content rows and P query rows, never T query rows; with
    targets the last layer's content stream, which feeds nothing, is not computed."""
    rows = []
    baddbmm = torch.baddbmm

    def record(bias, *args, **kwargs):  # every stream's scores: (B * n, rows, K)
        rows.append(bias.shape[1])
        return baddbmm(bias, *args, **kwargs)

    monkeypatch.setattr(torch, "baddbmm", record)
    model = litebert.XLNetModel(xlnet_config()).eval()
    out = model(**inputs(CASES["perm_mask + targets"]))
    assert out.last_hidden_state.shape == (B, P, 32)
    assert rows == [T, P, P]  # layer 1: content then query stream; layer 2: query only
    rows.clear()
    model(**inputs(CASES["perm_mask + targets"]), output_hidden_states=True)
    assert rows == [T, P, T, P]  # the content stream's last state is asked for


def test_bi_data_needs_an_even_batch():
    model = litebert.XLNetModel(xlnet_config(bi_data=True))
    with pytest.raises(ValueError, match="batch size must be even, not 3"):
        model(torch.zeros(3, 5, dtype=torch.long))


def test_albert_xlnet_shares_and_factorises():
    """E < H with the E->H projection, one layer module for all positions; unrolled, the same
    function; every parameter has a depth for layer-wise decay (mask_emb at 0)."""
    config = albert_xlnet_config()
    model = randomize(litebert.EncoderForPermutationLM(config)).eval()
    backbone = model.backbone
    assert backbone.word_embedding.weight.shape == (V, 16)
    assert backbone.encoder.embedding_hidden_mapping_in is not None
    assert len(backbone.encoder.attentions) == len(backbone.encoder.ffns) == 1
    assert model.lm_loss.dense is not None  # H -> E before the tied (V, E) decoder
    x = inputs(CASES["perm_mask + targets"])
    flat = unroll(model)
    assert len(flat.backbone.encoder.attentions) == 2
    torch.testing.assert_close(flat(**x).logits, model(**x).logits, atol=1e-6, rtol=0)
    depths, L = parameter_depths(model)
    assert L == 2 and depths["backbone.mask_emb"] == 0
    assert depths["backbone.encoder.attentions.0.q"] == 2  # a shared layer: its highest use


def test_initialisation_follows_transformers():
    """q, k, v, o, r, the biases, seg_embed and mask_emb: normal(0, 0.02), kept by a head's
    init_weights (which re-initialises Linear, Embedding and LayerNorm)."""
    torch.manual_seed(0)
    config = xlnet_config(hidden_size=256, embedding_size=256, intermediate_size=64)
    model = litebert.EncoderForPermutationLM(config)
    attention = model.backbone.encoder.attentions[0]
    for tensor in (attention.q, attention.r_w_bias, attention.seg_embed, model.backbone.mask_emb):
        assert abs(float(tensor.detach().std()) - 0.02) < 0.003
    assert float(attention.q.detach().abs().max()) > 2 * 0.02  # not truncated at 2 std
    assert model.lm_loss.bias.abs().sum() == 0


def test_a_permutation_lm_needs_a_two_stream_backbone():
    with pytest.raises(ConfigError, match="backbone 'albert' has not: use backbone "
                                          "'modernbert' or 'xlnet'"):
        litebert.EncoderForPermutationLM(xlnet_config(backbone="albert"))


def test_the_nsp_pair_head_reads_the_content_stream_at_cls():
    """With use_pooler (the "+NSP" ablation) the pair head classifies tanh(pooler(h)) of the
    last layer's content state at <cls> (the last token), the state a forward without
    targets returns there, and its mean cross-entropy is added to the PLM loss."""
    config = xlnet_config(use_pooler=True)
    model = randomize(litebert.EncoderForPermutationLM(config)).eval()
    x = inputs(CASES["perm_mask + targets"])
    label = torch.tensor([0, 1, 1, 0])
    plm = labels_for(x)
    out = model(**x, labels=plm, next_sentence_label=label)
    content = model.backbone(**{k: v for k, v in x.items() if k != "target_mapping"})
    pooled = torch.tanh(model.backbone.pooler(content.last_hidden_state[:, -1]))  # (B, H)
    assert_close(out.sop_logits, model.sop_classifier(pooled), "pair logits")
    alone = model(**x, labels=plm)
    expected = alone.loss + torch.nn.functional.cross_entropy(out.sop_logits, label)
    assert_close(out.loss, expected, "loss")
    assert litebert.EncoderForPermutationLM(xlnet_config()).sop_classifier is None
    assert alone.logits.shape == (B, P, V)
