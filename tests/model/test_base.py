"""The shared initialisation of every model (model/base.py)."""

import torch
from torch import nn

from litebert.config import ModelConfig
from litebert.model.base import PreTrainedModel
from litebert.model.layers import PreNormLayer


class Mixed(PreTrainedModel):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.modern = PreNormLayer(32, 4, 64, first=False)  # norms and linears without biases
        self.norm = nn.LayerNorm(32)  # with a bias
        self.init_weights()


def test_init_takes_norms_and_linears_with_and_without_biases():
    with torch.no_grad():
        model = Mixed(ModelConfig(hidden_size=32, num_attention_heads=4, intermediate_size=64))
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                assert torch.equal(module.weight, torch.ones_like(module.weight))
                assert module.bias is None or not module.bias.any()
            if isinstance(module, nn.Linear):
                assert module.weight.abs().max() <= 2 * 0.02 and module.weight.std() > 0.005
    assert model.norm.bias is not None
    assert any(isinstance(m, nn.LayerNorm) and m.bias is None for m in model.modules())
