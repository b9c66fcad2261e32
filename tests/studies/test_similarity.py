"""Figure 2's measurements against a per-token loop over transformers' hidden states."""

from __future__ import annotations

import torch
import transformers

import litebert
from litebert.studies.similarity import angle_degrees, layer_transitions
from tests.helpers.models import make_inputs, randomize, small_config


def test_layer_transitions_equal_a_per_token_loop_over_transformers_states(tmp_path):
    model = randomize(litebert.AlbertModel(small_config(sharing="none", num_hidden_layers=3)))
    model.save_pretrained(tmp_path)
    reference = transformers.AlbertModel.from_pretrained(tmp_path).eval()
    x = make_inputs()
    result = layer_transitions(model, [x, make_inputs(seed=4)])
    l2 = torch.zeros(3, dtype=torch.float64)
    degrees = torch.zeros(3, dtype=torch.float64)
    count = 0
    for batch in (x, make_inputs(seed=4)):
        with torch.no_grad():
            states = reference(**batch, output_hidden_states=True).hidden_states
        for b, t in batch["attention_mask"].nonzero().tolist():
            count += 1
            for layer in range(3):
                u, v = states[layer][b, t].double(), states[layer + 1][b, t].double()
                l2[layer] += (v - u).norm()
                degrees[layer] += angle_degrees(u, v)
    assert result["tokens"] == count
    got_l2 = torch.tensor(result["l2"], dtype=torch.float64)
    got_degrees = torch.tensor(result["degrees"], dtype=torch.float64)
    torch.testing.assert_close(got_l2, l2 / count, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got_degrees, degrees / count, rtol=1e-5, atol=1e-4)


def test_a_layer_that_changes_nothing_has_zero_distance_and_angle():
    model = litebert.AlbertModel(small_config(num_hidden_layers=2))
    with torch.no_grad():  # a post-LN layer whose outputs add nothing: identity up to LN
        for module in [*model.encoder.attentions, *model.encoder.ffns]:
            for p in module.parameters():
                p.zero_()
            for norm in module.modules():
                if isinstance(norm, torch.nn.LayerNorm):
                    norm.weight.fill_(1.0)
        model.embeddings.LayerNorm.weight.fill_(1.0)
    result = layer_transitions(model, [make_inputs()])
    # The input of layer 1 is already normalised, so layer 2 leaves it unchanged.
    assert result["l2"][1] < 1e-4 and result["degrees"][1] < 0.1
