"""Unrolling shared layers: the same function with one copy of the weights per layer, and
all-shared ELECTRA models written in ELECTRA's layout (or ALBERT's without unrolling)."""

from __future__ import annotations

import json
import logging

import pytest
import torch
import transformers

import litebert
from tests.helpers.family_configs import electra_config
from tests.helpers.models import make_inputs, randomize, small_config
from tests.helpers.parity import ATOL


def _same_function(a, b) -> None:
    a.eval(), b.eval()
    x = make_inputs()
    with torch.no_grad():
        ha = a.base_model(**x, output_hidden_states=True).hidden_states
        hb = b.base_model(**x, output_hidden_states=True).hidden_states
        assert len(ha) == len(hb)
        for mine, ref in zip(ha, hb, strict=True):
            torch.testing.assert_close(mine, ref, atol=ATOL, rtol=0)
        torch.testing.assert_close(a(**x).logits, b(**x).logits, atol=ATOL, rtol=0)


def test_unroll_copies_each_layer_it_used():
    config = small_config(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2)
    shared = randomize(litebert.EncoderForTokenClassification(config))
    flat = litebert.unroll(shared)
    assert type(flat) is litebert.EncoderForTokenClassification
    assert (flat.config.sharing, flat.config.num_hidden_layers, flat.config.inner_group_num) == (
        "none", 8, 1)
    assert len(flat.backbone.encoder.attentions) == len(flat.backbone.encoder.ffns) == 8
    assert flat.num_parameters() > shared.num_parameters()
    # Position 5 (layer 2, inner 1) ran group 1's second layer: module 3 of the shared model.
    torch.testing.assert_close(flat.backbone.encoder.attentions[5].query.weight,
                               shared.backbone.encoder.attentions[3].query.weight)
    _same_function(shared, flat)


@pytest.mark.parametrize("E", [16, 32])
def test_all_shared_electra_unrolls_into_electra_layout(tmp_path, E):
    shared = randomize(litebert.EncoderForSequenceClassification(
        electra_config(sharing="all", num_hidden_groups=1, embedding_size=E)))
    shared.save_pretrained(tmp_path, unroll=True)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "electra" and saved["num_hidden_layers"] == 3
    assert shared.config.sharing == "all"  # the model saved is not changed
    theirs = transformers.ElectraForSequenceClassification.from_pretrained(tmp_path).eval()
    ours = litebert.EncoderForSequenceClassification.from_pretrained(tmp_path)
    _same_function(shared, ours)
    x = make_inputs()
    with torch.no_grad():
        torch.testing.assert_close(shared.eval()(**x).logits, theirs(**x).logits, atol=ATOL,
                                   rtol=0)


@pytest.mark.parametrize("E", [16, 32])
def test_all_shared_electra_saves_in_albert_layout(tmp_path, caplog, E):
    """Without unrolling: ALBERT layout, said in the log; transformers' AlbertModel reads the
    backbone (with E == H through an identity projection) and computes the same."""
    shared = randomize(litebert.AlbertModel(electra_config(sharing="all", num_hidden_groups=1,
                                                           embedding_size=E)))
    with caplog.at_level(logging.WARNING, logger="litebert"):
        shared.save_pretrained(tmp_path)
    assert "saved in ALBERT layout" in caplog.text
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "albert" and saved["litebert_model_type"] == "electra"
    again = litebert.AlbertModel.from_pretrained(tmp_path, strict=True)
    assert again.config.model_type == "electra" and again.pooler is None
    theirs = transformers.AlbertModel.from_pretrained(tmp_path).eval()
    x = make_inputs()
    with torch.no_grad():
        ref = shared.eval()(**x).last_hidden_state
        torch.testing.assert_close(again.eval()(**x).last_hidden_state, ref)
        torch.testing.assert_close(theirs(**x).last_hidden_state, ref, atol=ATOL, rtol=0)
