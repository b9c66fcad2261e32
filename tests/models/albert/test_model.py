"""Backbone behaviour: parameter counts, sharing, masking, MLM at masked positions only."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import litebert
from litebert.model.attention import key_padding_mask
from litebert.model.counts import ablation_rows, count, preset_rows
from litebert.model.layers import sharing_tables
from tests.helpers.models import make_inputs, mlm_labels, randomize, small_config

DESIGN_COUNTS = {  # the design's counts: backbone, + MLM & SOP heads (vocab 30000)
    "albert-base": (11_683_584, 11_813_810),
    "albert-large": (17_683_968, 17_847_474),
    "albert-xlarge": (58_724_864, 59_021_490),
    "albert-xxlarge": (222_595_584, 223_158_450),
}


@pytest.mark.parametrize("name", list(DESIGN_COUNTS))
def test_parameter_counts_match_to_the_parameter(name):
    assert count(litebert.ModelConfig.from_preset(name)) == DESIGN_COUNTS[name]


def test_real_model_counts_what_meta_counts():
    config = litebert.ModelConfig.from_preset("albert-base")
    assert litebert.EncoderForPreTraining(config).num_parameters() == DESIGN_COUNTS[
        "albert-base"][1]


def _millions(text: str) -> float:
    return float(text.rstrip("M"))


def test_paper_figures_agree_within_rounding():
    """Tables 1, 3, 4 of the paper (rounded to millions; xxlarge is printed as 235M there
    but transformers' xxlarge, like ours, has 223M: the paper's figure is not reproducible)."""
    rows = [r for r in preset_rows(litebert.PRESETS) + ablation_rows()
            if r.paper and r.name != "albert-xxlarge"]
    assert len(rows) >= 17
    for row in rows:
        paper = _millions(row.paper)
        assert abs(row.backbone / 1e6 - paper) <= max(0.03 * paper, 0.5), row.name


@pytest.mark.parametrize("sharing, attentions, ffns", [
    ("all", 1, 1), ("attention", 1, 12), ("ffn", 12, 1), ("none", 12, 12)])
def test_sharing_modes_hold_the_right_modules(sharing, attentions, ffns):
    config = litebert.ModelConfig(sharing=sharing, num_hidden_layers=12, hidden_size=64,
                                   num_attention_heads=4, intermediate_size=64, vocab_size=50)
    encoder = litebert.AlbertModel(config).encoder
    assert (len(encoder.attentions), len(encoder.ffns)) == (attentions, ffns)


def test_group_tables_follow_transformers_rule():
    config = small_config(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2)
    attn, ffn = sharing_tables(config)
    # layer i uses group int(i * G / L); group g holds layers g*inner .. g*inner + inner-1
    assert attn == ffn == [0, 1, 0, 1, 2, 3, 2, 3]
    attn, ffn = sharing_tables(config.replace(sharing="attention"))
    assert attn == [0, 1, 0, 1, 2, 3, 2, 3] and ffn == list(range(8))


def test_shared_layer_is_applied_at_every_depth():
    """With sharing 'all' and L layers, perturbing the one shared layer changes the output
    as much as running it L times would: compare against a hand-unrolled forward."""
    config = small_config(num_hidden_layers=3)
    model = randomize(litebert.AlbertModel(config)).eval()
    x = make_inputs()
    with torch.no_grad():
        emb = model.embeddings(x["input_ids"], x["token_type_ids"])
        h = model.encoder.embedding_hidden_mapping_in(emb)
        mask = key_padding_mask(x["attention_mask"])
        for _ in range(3):
            h = model.encoder.ffns[0](model.encoder.attentions[0](h, mask))
        torch.testing.assert_close(model(**x).last_hidden_state, h)


def test_padding_does_not_change_real_tokens():
    model = randomize(litebert.AlbertModel(small_config())).eval()
    ids = torch.randint(5, 99, (1, 7))
    padded = torch.cat([ids, torch.zeros(1, 5, dtype=torch.long)], dim=1)
    mask = torch.cat([torch.ones(1, 7), torch.zeros(1, 5)], dim=1).long()
    with torch.no_grad():
        alone = model(ids)
        batch = model(padded, attention_mask=mask)
    torch.testing.assert_close(batch.last_hidden_state[:, :7], alone.last_hidden_state)
    torch.testing.assert_close(batch.pooler_output, alone.pooler_output)


def test_default_token_types_are_zero():
    model = randomize(litebert.AlbertModel(small_config())).eval()
    x = make_inputs()
    with torch.no_grad():
        a = model(x["input_ids"], x["attention_mask"])
        b = model(x["input_ids"], x["attention_mask"], torch.zeros_like(x["input_ids"]))
    torch.testing.assert_close(a.last_hidden_state, b.last_hidden_state)


def test_mlm_logits_only_at_masked_positions():
    model = randomize(litebert.EncoderForPreTraining(small_config())).eval()
    x = make_inputs()
    labels = mlm_labels(x)
    with torch.no_grad():
        full = model(**x).prediction_logits  # (B, T, V)
        out = model(**x, labels=labels)
    masked = labels != -100
    assert out.prediction_logits.shape == (int(masked.sum()), full.shape[-1])
    torch.testing.assert_close(out.prediction_logits, full[masked])
    expected = F.cross_entropy(full.view(-1, full.shape[-1]), labels.view(-1))
    torch.testing.assert_close(out.mlm_loss, expected)
    assert out.sop_loss is None
    torch.testing.assert_close(out.loss, out.mlm_loss)


def test_no_masked_token_gives_zero_loss_not_nan():
    model = litebert.EncoderForMaskedLM(small_config())
    x = make_inputs()
    out = model(**x, labels=torch.full_like(x["input_ids"], -100))
    assert out.loss.item() == 0.0
    out.loss.backward()  # still differentiable


def test_pretraining_loss_is_mlm_plus_sop():
    model = randomize(litebert.EncoderForPreTraining(small_config())).eval()
    x = make_inputs()
    order = torch.tensor([0, 1, 0])
    out = model(**x, labels=mlm_labels(x), sentence_order_label=order)
    torch.testing.assert_close(out.loss, out.mlm_loss + out.sop_loss)
    nsp = model(**x, labels=mlm_labels(x), next_sentence_label=order)
    torch.testing.assert_close(nsp.loss, out.loss)


def test_dropout_acts_only_in_training():
    config = small_config(hidden_dropout_prob=0.3, attention_probs_dropout_prob=0.3)
    model = randomize(litebert.AlbertModel(config))
    x = make_inputs()
    model.train()
    a, b = model(**x).last_hidden_state, model(**x).last_hidden_state
    assert not torch.allclose(a, b)
    model.eval()
    torch.testing.assert_close(model(**x).last_hidden_state, model(**x).last_hidden_state)


def test_init_follows_the_reference():
    model = litebert.EncoderForPreTraining(litebert.ModelConfig.from_preset("tiny"))
    words = model.backbone.embeddings.word_embeddings.weight
    assert words[0].abs().sum() == 0  # padding row
    assert abs(words[1:].std().item() - 0.02) < 0.003  # truncated normal(0, 0.02)
    assert words.abs().max() <= 0.04 + 1e-6  # truncated at 2 std
    assert model.predictions.bias.abs().sum() == 0
    ln = model.backbone.encoder.attentions[0].LayerNorm
    assert torch.all(ln.weight == 1) and torch.all(ln.bias == 0)


def test_all_heads_train_one_step():
    config = small_config(num_labels=3)
    x = make_inputs()
    for cls, extra in [
        (litebert.EncoderForSequenceClassification, dict(labels=torch.tensor([0, 2, 1]))),
        (litebert.EncoderForTokenClassification, dict(labels=torch.zeros_like(x["input_ids"]))),
        (litebert.EncoderForQuestionAnswering,
         dict(start_positions=torch.tensor([1, 2, 0]), end_positions=torch.tensor([2, 3, 0]))),
    ]:
        model = cls(config)
        loss = model(**x, **extra).loss
        loss.backward()
        assert torch.isfinite(loss)
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        assert grads and all(torch.isfinite(g).all() for g in grads), cls.__name__


def test_too_long_input_is_a_clear_error():
    model = litebert.AlbertModel(small_config(max_position_embeddings=16))
    with pytest.raises(ValueError, match="sequence length 17 exceeds max_position_embeddings=16"):
        model(torch.ones(1, 17, dtype=torch.long))
