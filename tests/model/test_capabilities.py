"""What a backbone declares it can do (model/backbone.py's BackboneCapabilities): every
registered class must declare it, each declared flag holds for the class's behaviour, and the
callers that read a flag refuse a backbone without it in a sentence naming both."""

from __future__ import annotations

import inspect
from functools import partial

import pytest
import torch

from litebert.config import DEFAULT_BACKBONE, ConfigError, ModelConfig
from litebert.model import EncoderForPermutationLM
from litebert.model.backbone import (
    BACKBONES,
    BackboneCapabilities,
    all_backbones,
    build_backbone,
    check_attention,
    register_backbone,
)
from litebert.models.albert.model import AlbertModel
from litebert.models.xlnet.model import XLNetModel
from litebert.specs import BUILT_IN, all_specs, model_spec
from tests.helpers.family_configs import xlnet_config
from tests.helpers.models import VOCAB, make_inputs, small_config


def small_on(backbone: str) -> ModelConfig:
    """The first preset on `backbone` of the package that defines it, small enough to run
    and reading make_inputs' ids (padding id 0)."""
    presets = model_spec(backbone).presets
    preset = next(name for name, fields in presets.items()
                  if fields.get("backbone", DEFAULT_BACKBONE) == backbone)
    return ModelConfig.from_preset(
        preset, vocab_size=VOCAB, hidden_size=32, embedding_size=32, num_hidden_layers=2,
        num_hidden_groups=2, num_attention_heads=4, intermediate_size=37,
        max_position_embeddings=64, pad_token_id=0, bos_token_id=2, eos_token_id=3)


# A config of each built-in backbone, as the registry lists them.
CONFIGS = {spec.name: partial(small_on, spec.name) for spec in all_specs()
           if spec.backbone_module is not None and spec.name in BUILT_IN}


def declared(name: str) -> BackboneCapabilities:
    return all_backbones()[name].capabilities


def forward_arguments(name: str) -> set[str]:
    return set(inspect.signature(all_backbones()[name].forward).parameters)


@pytest.fixture
def registered():
    """Register classes for one test under the names given; removed after it."""
    names: list[str] = []

    def add(name: str, cls: type) -> type:
        register_backbone(name)(cls)
        names.append(name)
        return cls

    yield add
    for name in names:
        del BACKBONES[name]


# ---- the declaration is required and checked ----------------------------------------------

def test_a_class_without_capabilities_is_refused_by_name():
    bare = type("BareBackbone", (AlbertModel,), {"capabilities": None})
    with pytest.raises(ValueError, match="backbone class BareBackbone declares no "
                                         "capabilities: give it a class attribute"):
        register_backbone("bare")(bare)
    assert "bare" not in BACKBONES


def test_a_flag_without_the_members_it_promises_is_refused():
    claims = type("Claims", (XLNetModel,), {
        "capabilities": BackboneCapabilities(two_stream=True, embed_encode=True)})
    with pytest.raises(ValueError, match="Claims declares embed_encode but lacks "
                                         "embeddings_name, encoder_name, build_encoder, "
                                         "encode_with"):
        register_backbone("claims")(claims)
    assert "claims" not in BACKBONES


@pytest.mark.parametrize("attentions", [("document",), ("full", "flash")])
def test_attentions_must_include_full_and_known_layouts_only(attentions):
    with pytest.raises(ValueError, match="list 'full' and only layouts from full, document"):
        BackboneCapabilities(attentions=attentions)


# ---- each declared flag holds -------------------------------------------------------------

@pytest.mark.parametrize("name", list(CONFIGS))
def test_document_ids_are_taken_exactly_when_a_layout_needs_them(name):
    caps = declared(name)
    assert ("document_ids" in forward_arguments(name)) is caps.document_ids
    if not caps.document_ids:
        return
    backbone = build_backbone(CONFIGS[name]()).eval()
    x = make_inputs()
    documents = (torch.arange(x["input_ids"].shape[1]) >= 4).long().expand(3, -1)  # (B, T)
    with torch.no_grad():
        whole = backbone(**x).last_hidden_state
        split = backbone(**x, document_ids=documents).last_hidden_state
    assert split.shape == whole.shape and not torch.allclose(split, whole)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_two_stream_backbones_take_a_factorisation_order_and_targets(name):
    two_stream = declared(name).two_stream
    taken = {"perm_mask", "target_positions"} & forward_arguments(name)
    assert taken == ({"perm_mask", "target_positions"} if two_stream else set())
    assert hasattr(BACKBONES[name], "query_stream_flops_per_target") is two_stream
    if two_stream:
        x = make_inputs()
        B, T = x["input_ids"].shape
        targets = torch.tensor([[1, 5]] * B)  # (B, P)
        order = torch.ones(B, T, T).triu(1)  # each position sees those before it
        config = CONFIGS[name]()
        if "query_stream" in config.backbone_fields():  # ModernBERT's stream is optional
            config = config.replace(query_stream=True)
        out = build_backbone(config)(**x, perm_mask=order, target_positions=targets)
        assert out.last_hidden_state.shape == (B, 2, CONFIGS[name]().hidden_size)
    else:
        with pytest.raises(ConfigError, match=f"query stream, which backbone '{name}' has not: "
                                              f"use backbone 'modernbert' or 'xlnet'"):
            EncoderForPermutationLM(CONFIGS[name]())


@pytest.mark.parametrize("name", list(CONFIGS))
def test_memories_come_back_exactly_when_declared(name):
    backbone = build_backbone(CONFIGS[name]())
    out = backbone(**make_inputs(), use_mems=True)
    if declared(name).memories:
        assert out.mems is not None and len(out.mems) == CONFIGS[name]().num_layer_positions
        backbone(**make_inputs(), mems=out.mems)  # and go back in
    else:
        assert out.mems is None
        with pytest.raises(ValueError, match="keeps no memories"):
            backbone(**make_inputs(), mems=(torch.zeros(2, 3, 32),))


@pytest.mark.parametrize("name", [name for name in CONFIGS if declared(name).pooler])
def test_a_declared_pooler_pools(name):
    out = build_backbone(CONFIGS[name](), add_pooling_layer=True)(**make_inputs())
    assert out.pooler_output is not None and out.pooler_output.shape == (3, 32)


def test_a_pooler_is_not_asked_of_a_backbone_without_one(registered):
    registered("no-pooler", type("NoPooler", (AlbertModel,), {
        "capabilities": BackboneCapabilities(attentions=("full",), pooler=False)}))
    config = small_config(backbone="no-pooler", use_pooler=False, classifier_head="first_token")
    assert build_backbone(config).pooler is None
    with pytest.raises(ConfigError, match="backbone 'no-pooler' has no pooler "
                                          r"\(capabilities.pooler is False\)"):
        build_backbone(config, add_pooling_layer=True)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_embed_encode_backbones_are_embeddings_then_a_rebuildable_encoder(name):
    cls = BACKBONES[name]
    if not declared(name).embed_encode:
        assert not hasattr(cls, "build_encoder")
        return
    config = CONFIGS[name]()
    backbone = build_backbone(config, add_pooling_layer=False).eval()
    embeddings, encoder = cls.embeddings_name, cls.encoder_name
    keys = set(backbone.state_dict())
    assert keys == {k for k in keys if k.startswith((f"{embeddings}.", f"{encoder}."))}
    assert set(cls.build_encoder(config).state_dict()) == {
        k[len(encoder) + 1:] for k in keys if k.startswith(f"{encoder}.")}
    x = make_inputs()
    with torch.no_grad():
        h, _ = backbone.encode_with(backbone.get_submodule(encoder), **x)
        torch.testing.assert_close(h, backbone(**x).last_hidden_state, atol=0, rtol=0)


def test_a_layout_the_backbone_cannot_read_is_a_config_error():
    check_attention(small_config(), "unpadded")
    with pytest.raises(ConfigError, match="attention='document': backbone 'xlnet' reads full "
                                          "only .*run with --attention full"):
        check_attention(xlnet_config(), "document")
