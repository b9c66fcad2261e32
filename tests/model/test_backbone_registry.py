"""The backbone registry (model/backbone.py): a second backbone, written here and registered by
the test, gets every head, the Auto classes, layer-wise lr decay, counts, unrolling and
`litebert finetune` without any file of the package changing; config.json's `backbone`
selects it, and an unknown one is an error naming the file and the known backbones."""

from __future__ import annotations

import json
import logging
import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import litebert
from litebert.cli import main
from litebert.config import ConfigError
from litebert.model.auto import AUTO_CLASSES
from litebert.model.backbone import (
    BACKBONES,
    BackboneCapabilities,
    backbone_of,
    build_backbone,
    register_backbone,
)
from litebert.model.base import PreTrainedModel
from litebert.model.counts import encoder_flops_per_token
from litebert.model.outputs import BaseModelOutput
from litebert.tasks.layer_decay import lr_multipliers
from litebert.tokenization import train_tokenizer
from tests.helpers.family_configs import electra_config
from tests.helpers.models import make_inputs, mlm_labels, randomize, small_config

NAME = "tiny-last-token"


class TinyBlock(nn.Module):
    """Pre-LN self-attention over [memories; tokens] + a GELU MLP, both residual."""

    def __init__(self, H: int, heads: int, inner: int):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(H), nn.LayerNorm(H)
        self.qkv = nn.Linear(H, 3 * H)
        self.out = nn.Linear(H, H)
        self.up, self.down = nn.Linear(H, inner), nn.Linear(inner, H)

    def forward(self, x, keep, mem=None):  # x (B, T, H); keep (B, T) bool; mem (B, M, H)
        B, T, H = x.shape
        h = self.norm1(x)
        context = h if mem is None else torch.cat([mem, h], dim=1)  # (B, M + T, H)
        if mem is not None:
            keep = torch.cat([keep.new_ones(B, mem.shape[1]), keep], dim=1)
        q = F.linear(h, self.qkv.weight[:H], self.qkv.bias[:H])
        k, v = F.linear(context, self.qkv.weight[H:], self.qkv.bias[H:]).chunk(2, dim=-1)
        split = [t.view(B, -1, self.heads, H // self.heads).transpose(1, 2) for t in (q, k, v)]
        y = F.scaled_dot_product_attention(*split, attn_mask=keep[:, None, None, :])
        x = x + self.out(y.transpose(1, 2).reshape(B, T, H))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class TinyBackbone(PreTrainedModel):
    """Word embeddings (no positions, no token types) -> E->H -> one block; the summary is the
    LAST token, as in XLNet's template; a pooler only when asked; memories in and out."""

    summary_position = -1
    embeds_token_types = False
    capabilities = BackboneCapabilities(memories=True)  # "full" attention, a pooler on request

    def __init__(self, config, add_pooling_layer=None):
        super().__init__()
        self.config = config
        E, H = config.embedding_size, config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, E, padding_idx=config.pad_token_id)
        self.projection = nn.Linear(E, H)
        self.scale = nn.Parameter(torch.ones(H))  # a parameter of the backbone's own
        self.block = TinyBlock(H, config.num_attention_heads, config.intermediate_size)
        pooling = config.use_pooler if add_pooling_layer is None else add_pooling_layer
        self.pooler = nn.Linear(H, H) if pooling else None
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                output_hidden_states=False, mems=None, use_mems=None):
        keep = torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None \
            else attention_mask.bool()
        x = self.projection(self.word_embeddings(input_ids)) * self.scale  # (B, T, H)
        first = x
        x = self.block(x, keep, None if mems is None else mems[0])
        pooled = None if self.pooler is None \
            else torch.tanh(self.pooler(x[:, self.summary_position]))
        return BaseModelOutput(last_hidden_state=x, pooler_output=pooled,
                               hidden_states=(first, x) if output_hidden_states else None,
                               mems=(first.detach(),))

    @property
    def input_embeddings(self):
        return self.word_embeddings.weight

    def layer_depths(self):
        parts = [(self.word_embeddings, 0), (self.projection, 0), (self.scale, 0),
                 (self.block, 1)]
        return parts + ([(self.pooler, 3)] if self.pooler is not None else []), 1

    def fsdp_units(self):
        return [(self.block, True)]

    @classmethod
    def flops_per_token(cls, config, seq_len):
        H, I = config.hidden_size, config.intermediate_size
        return 6.0 * (config.embedding_size * H + 4 * H * H + 2 * H * I + 2 * seq_len * H)

    @classmethod
    def unrolled_config(cls, config):
        return config  # nothing shared

    def unrolled_source(self, key):
        return key


@pytest.fixture
def tiny():
    """TinyBackbone registered under NAME for one test, and removed again after it."""
    register_backbone(NAME)(TinyBackbone)
    yield TinyBackbone
    del BACKBONES[NAME]


def tiny_config(**overrides) -> litebert.ModelConfig:
    # No pooler unless a head asks (pre-training does): the classifier reads the summary token.
    return small_config(**{**dict(backbone=NAME, use_pooler=False,
                                  classifier_head="first_token"), **overrides})


POOLER = dict(use_pooler=True, classifier_head="pooler")


# ---- every head ------------------------------------------------------------------------------

def head_inputs(cls_name: str, labelled: bool = True) -> dict[str, torch.Tensor]:
    x = make_inputs()
    B, T = x["input_ids"].shape
    if cls_name == "EncoderForMultipleChoice":
        x = {k: torch.stack([v, v.flip(0)], dim=1) for k, v in x.items()}  # (B, 2, T)
    if not labelled:
        return x
    labels = {
        "EncoderForPreTraining": dict(labels=mlm_labels(x), sentence_order_label=torch.tensor(
            [0, 1, 1])),
        "EncoderForMaskedLM": dict(labels=mlm_labels(x)),
        "EncoderForSequenceClassification": dict(labels=torch.tensor([0, 1, 1])),
        "EncoderForTokenClassification": dict(labels=torch.randint(0, 2, (B, T))),
        "EncoderForQuestionAnswering": dict(start_positions=torch.tensor([1, 2, 0]),
                                           end_positions=torch.tensor([3, 2, 0])),
        "EncoderForMultipleChoice": dict(labels=torch.tensor([1, 0, 1])),
        "EncoderForReplacedTokenDetection": dict(labels=torch.randint(0, 2, (B, T))),
    }.get(cls_name, {})
    return {**x, **labels}


HEADS = ["EncoderForPreTraining", "EncoderForMaskedLM", "EncoderForSequenceClassification",
         "EncoderForTokenClassification", "EncoderForQuestionAnswering",
         "EncoderForMultipleChoice", "EncoderForReplacedTokenDetection"]


@pytest.mark.parametrize("structure", [{}, POOLER], ids=["summary-token", "pooler"])
@pytest.mark.parametrize("cls_name", HEADS)
def test_every_head_trains_on_the_registered_backbone(tiny, cls_name, structure):
    model = getattr(litebert, cls_name)(tiny_config(**structure))
    assert type(model.backbone) is TinyBackbone
    assert any(k.startswith("backbone.block.") for k in model.state_dict())  # canonical prefix
    out = model(**head_inputs(cls_name))
    assert out.loss is not None and math.isfinite(out.loss.item())
    out.loss.backward()
    grad = model.backbone.block.qkv.weight.grad
    assert grad is not None and grad.abs().sum() > 0  # the loss reached the backbone


def test_summary_heads_read_the_backbones_last_token(tiny):
    """With summary_position -1 the classifier and the multiple-choice summary read h[:, -1];
    a head that read h[:, 0] gives other logits."""
    torch.manual_seed(0)
    seq = randomize(litebert.EncoderForSequenceClassification(tiny_config())).eval()
    x = head_inputs("EncoderForSequenceClassification", labelled=False)
    with torch.no_grad():
        out = seq(**x)
        h = out.last_hidden_state  # (B, T, H)
        torch.testing.assert_close(out.logits, seq.classifier(h[:, -1]))
        assert not torch.allclose(out.logits, seq.classifier(h[:, 0]))
    choice = randomize(litebert.EncoderForMultipleChoice(tiny_config())).eval()
    x = head_inputs("EncoderForMultipleChoice", labelled=False)
    with torch.no_grad():
        out = choice(**x)
        h = out.last_hidden_state  # (B * C, T, H)
        expected = choice.classifier(choice.sequence_summary(h[:, -1])).view(3, 2)
        torch.testing.assert_close(out.logits, expected)


def test_mlm_head_is_tied_to_the_backbones_input_embeddings(tiny):
    model = randomize(litebert.EncoderForMaskedLM(tiny_config())).eval()
    x = make_inputs()
    with torch.no_grad():
        logits = model(**x).logits  # (B, T, V)
        h = model.predictions.LayerNorm(model.predictions.act(model.predictions.dense(
            model.backbone(**x).last_hidden_state)))
        expected = h @ model.backbone.word_embeddings.weight.T + model.predictions.bias
    torch.testing.assert_close(logits, expected)


def test_memories_come_out_and_go_back_in(tiny):
    backbone = build_backbone(tiny_config())
    x = make_inputs()
    first = backbone(**x)
    assert first.mems is not None and first.mems[0].shape == (3, 11, 32)
    again = backbone(**x, mems=first.mems)
    assert not torch.allclose(again.last_hidden_state, first.last_hidden_state)
    albert = litebert.AlbertModel(small_config())
    assert albert(**x).mems is None  # ALBERT keeps none, and takes none
    with pytest.raises(ValueError, match="keeps no memories"):
        albert(**x, mems=first.mems)


# ---- what else goes through the protocol -----------------------------------------------------

def test_layer_decay_fsdp_counts_and_unroll_ask_the_backbone(tiny):
    config = tiny_config(**POOLER)
    model = litebert.EncoderForSequenceClassification(config)
    m = lr_multipliers(model, 0.5)  # L = 1: embeddings 0.5**3, the block 0.5**2, head 1
    assert m["backbone.word_embeddings.weight"] == m["backbone.projection.weight"] == 0.125
    assert m["backbone.scale"] == 0.125
    assert m["backbone.block.qkv.weight"] == 0.25
    assert m["backbone.pooler.weight"] == m["classifier.weight"] == 1.0
    assert backbone_of(model).fsdp_units() == [(model.backbone.block, True)]
    assert encoder_flops_per_token(config, 10) == TinyBackbone.flops_per_token(config, 10)
    assert encoder_flops_per_token(small_config(), 10) != encoder_flops_per_token(config, 10)
    flat = litebert.unroll(randomize(model))
    for key, value in model.state_dict().items():
        torch.testing.assert_close(flat.state_dict()[key], value)


# ---- directories and the Auto classes --------------------------------------------------------

def auto_inputs(auto) -> dict[str, torch.Tensor]:
    return head_inputs("EncoderForMultipleChoice" if auto is litebert.AutoModelForMultipleChoice
                       else "", labelled=False)


def outputs(model, x) -> list[torch.Tensor]:
    with torch.no_grad():
        out = model.eval()(**x)
    return [v for k, v in sorted(out.to_dict().items()) if k != "mems"]


@pytest.mark.parametrize("auto", AUTO_CLASSES, ids=lambda a: a.__name__)
def test_auto_classes_build_save_and_load_the_backbone(tiny, auto, tmp_path, caplog):
    model = randomize(auto.from_config(tiny_config()))
    assert type(backbone_of(model)) is TinyBackbone
    with caplog.at_level(logging.WARNING, logger="litebert"):
        model.save_pretrained(tmp_path)
    assert "litebert's own layout" in caplog.text and repr(NAME) in caplog.text
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "litebert" and saved["backbone"] == NAME
    again = auto.from_pretrained(tmp_path, strict=True)
    assert type(again) is type(model) and again.config.backbone == NAME
    x = auto_inputs(auto)
    for mine, loaded in zip(outputs(model, x), outputs(again, x), strict=True):
        torch.testing.assert_close(loaded, mine, atol=0, rtol=0)


def test_families_config_json_do_not_name_the_default_backbone():
    """ALBERT, BERT, ELECTRA and RoBERTa files stay as they were: no `backbone` key."""
    configs = [small_config(), small_config(sharing="ffn"), electra_config(),
               electra_config(sharing="all"),
               small_config(model_type="bert", sharing="none", embedding_size=32,
                            embedding_projection="never"),
               litebert.ModelConfig.from_preset("roberta-tiny")]
    for config in configs:
        assert "backbone" not in config.to_dict()


def test_an_unknown_backbone_names_the_file_and_the_known_ones(tiny, tmp_path):
    with pytest.raises(ConfigError, match=r"backbone 'nope' is not registered; litebert "
                                          r"knows 'albert', 'modernbert', 'xlnet'") as caught:
        litebert.EncoderForMaskedLM(small_config(backbone="nope"))
    assert repr(NAME) in str(caught.value)  # one registered here, after the built-ins
    litebert.EncoderForMaskedLM(small_config()).save_pretrained(tmp_path)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "backbone": "nope"}))
    for load in (litebert.AutoModelForSequenceClassification.from_pretrained,
                 litebert.EncoderForMaskedLM.from_pretrained, litebert.AutoModel.from_pretrained):
        with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: backbone 'nope' is "
                                              rf"not registered; litebert knows 'albert', "
                                              rf"'modernbert', 'xlnet'.*'{NAME}'"):
            load(tmp_path)


def test_registering_a_taken_name_is_refused(tiny):
    with pytest.raises(ValueError, match="already registered"):
        register_backbone(NAME)(type("Other", (TinyBackbone,), {}))
    assert BACKBONES[NAME] is TinyBackbone


# ---- litebert finetune -----------------------------------------------------------------------

WORDS = {1: "great lovely superb", 0: "awful dreadful boring"}


def test_finetune_on_the_backbones_directory(tiny, tmp_path):
    rng = np.random.default_rng(0)
    filler = "the film was and plot actors story it a".split()

    def line(label: int) -> str:
        words = list(rng.choice(filler, 5)) + [str(rng.choice(WORDS[label].split()))]
        rng.shuffle(words)
        return " ".join(words)

    text = tmp_path / "text.txt"
    text.write_text("\n".join(line(i % 2) for i in range(300)))
    # The backbone reads its summary from the last token: a tokenizer with <cls> last and
    # padding on the left (XLNet's layout) is the one it can fine-tune with.
    tok = litebert.Tokenizer.from_file(train_tokenizer("xlnet", [text], tmp_path / "tok",
                                                       vocab_size=60))
    torch.manual_seed(0)
    model = litebert.EncoderForPreTraining(tiny_config(vocab_size=len(tok),
                                                      pad_token_id=tok.pad_token_id))
    model.save_pretrained(tmp_path / "model")
    tok.save_pretrained(tmp_path / "model")
    table = tmp_path / "table.tsv"
    table.write_text("sentence\tlabel\n" + "".join(f"{line(i % 2)}\t{i % 2}\n"
                                                   for i in range(80)))
    out = tmp_path / "out"
    assert main(["finetune", "--task", "classification", "--data", str(table), "--model",
                 str(tmp_path / "model"), "--out", str(out), "--max-steps", "6",
                 "--batch-size", "8", "--max-seq-length", "16", "--lr", "1e-3",
                 "--layer-decay", "0.8"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["metric"] == "accuracy" and 0.0 <= results["dev"]["accuracy"] <= 1.0
    saved = json.loads((out / "model" / "config.json").read_text())
    assert saved["backbone"] == NAME and saved["model_type"] == "litebert"

