"""PLMObjective and its backbone: what it asks of one is read from the backbone's declared
capabilities (two streams, memories, a pooler for nsp) and config fields (bi_data, reuse_len,
query_stream), and its FLOPs add the query stream the backbone counts."""

from __future__ import annotations

import re

import pytest

from litebert.config import ConfigError
from litebert.model.backbone import BACKBONES, BackboneCapabilities, register_backbone
from litebert.models.modernbert.model import ModernBertModel
from litebert.models.xlnet.model import XLNetModel
from litebert.objectives.plm import PLMConfig, PLMObjective, _Settings
from tests.helpers.family_configs import xlnet_config
from tests.helpers.modernbert import modern_config


def objective(**fields) -> PLMObjective:
    return PLMObjective(_Settings(0, 4, 16, PLMConfig(name="plm", **fields), {}))


@pytest.fixture
def forgetful():
    """A two-stream backbone registered for one test that declares no memories."""
    cls = type("Forgetful", (XLNetModel,), {
        "capabilities": BackboneCapabilities(two_stream=True, memories=False)})
    register_backbone("forgetful")(cls)
    yield "forgetful"
    del BACKBONES["forgetful"]


def test_a_backbone_without_two_streams_is_refused_naming_it():
    sentence = ("objective plm predicts each target from a query stream in a factorisation "
                "order, which backbone 'albert' has not: use backbone 'modernbert' or 'xlnet'")
    with pytest.raises(ConfigError, match=sentence):
        objective().build(xlnet_config(backbone="albert"))
    with pytest.raises(ConfigError, match=sentence):
        objective().flops_per_token(xlnet_config(backbone="albert"), 32)


def test_memories_are_asked_only_of_a_backbone_that_keeps_them(forgetful):
    model = objective().build(xlnet_config(backbone=forgetful, mem_len=0))
    assert type(model.backbone).__name__ == "Forgetful"
    with pytest.raises(ConfigError, match="mem_len=8: backbone 'forgetful' keeps no memories"):
        objective().build(xlnet_config(backbone=forgetful, mem_len=8))
    objective().build(xlnet_config(mem_len=8))  # XLNet's own keeps them


@pytest.mark.parametrize("K", [2, 6])
def test_flops_add_the_query_stream_and_the_head_per_target(K):
    config = xlnet_config(mem_len=8)
    E, V, T = config.embedding_size, config.vocab_size, 32
    per_target = 6.0 * E * V + XLNetModel.query_stream_flops_per_target(config, T)
    assert objective(prediction_k=K).flops_per_token(config, T) == pytest.approx(
        XLNetModel.flops_per_token(config, T) + per_target / K)


def test_a_modernbert_gets_its_query_stream_and_no_xlnet_fields():
    """reuse_len and bi_data are set only on a backbone whose config has them (XLNet's);
    ModernBERT's gets query_stream, which gives it mask_emb."""
    model = objective().build(modern_config())
    assert model.backbone.config.backbone_fields()["query_stream"] is True
    assert "reuse_len" not in model.backbone.config.backbone_fields()
    assert model.backbone.mask_emb.shape == (1, 1, 32)
    xlnet = objective().model_config(xlnet_config(), 16)
    assert xlnet.backbone_fields()["reuse_len"] == 16
    assert "query_stream" not in xlnet.backbone_fields()


@pytest.mark.parametrize("field, words", [
    ("bi_data", "objective.bi_data=true needs a backbone with a bi_data field (e.g. xlnet), "
                "and backbone 'modernbert' has none: set objective.bi_data false"),
    ("nsp", "objective.nsp=true predicts from the backbone's pooler, which backbone "
            "'modernbert' has not (capabilities.pooler is False): set objective.nsp false"),
])
def test_what_modernbert_lacks_is_refused_naming_the_field(field, words):
    with pytest.raises(ConfigError, match=re.escape(words)):
        objective(**{field: True}).build(modern_config())


def test_modernbert_flops_add_its_query_stream_per_target():
    config = modern_config()
    E, V, T = config.embedding_size, config.vocab_size, 32
    per_target = 6.0 * E * V + ModernBertModel.query_stream_flops_per_target(config, T)
    assert objective().flops_per_token(config, T) == pytest.approx(
        ModernBertModel.flops_per_token(config, T) + per_target / 6)
