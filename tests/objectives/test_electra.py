"""The ELECTRA objective: generator shape, tied embeddings, counts and sums, metrics, export
parity with transformers' ElectraForPreTraining and ElectraForMaskedLM."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math

import pytest
import torch
import torch.nn.functional as F
import transformers

from litebert.config import ConfigError, ModelConfig
from litebert.data.loader import PretrainingDataset, collate
from litebert.distributed import DistInfo
from litebert.model import EncoderForMaskedLM
from litebert.model.backbone import BACKBONES, register_backbone
from litebert.model.hub import read_model_files
from litebert.models.albert.model import AlbertModel
from litebert.objectives import ElectraObjective
from litebert.objectives import corruption as C
from litebert.objectives.electra import (
    Corrupting,
    ElectraGenerator,
    ElectraOutput,
    generator_config,
)
from litebert.objectives.electra_eval import load_pair
from litebert.train.pretrain import model_config
from litebert.train.run_config import PretrainConfig
from tests.helpers.electra import MICRO, electra_config, objective_and_model
from tests.helpers.family_configs import xlnet_config
from tests.helpers.models import randomize
from tests.helpers.pretrain import run_config

CPU = DistInfo(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))


@pytest.fixture(scope="module")
def train(data_dir) -> PretrainingDataset:
    return PretrainingDataset(data_dir, "train", seed=0)


def test_the_generator_is_a_quarter_wide_with_a_head_per_64_dimensions():
    small = ModelConfig.from_preset("electra-small")
    gen = generator_config(small, 0.25, 1.0)
    assert (gen.hidden_size, gen.intermediate_size, gen.num_attention_heads,
            gen.num_hidden_layers, gen.embedding_size) == (64, 256, 1, 12, 128)
    base = generator_config(ModelConfig.from_preset("electra-base"), 1 / 3, 0.5)
    assert (base.hidden_size, base.num_attention_heads, base.num_hidden_layers) == (256, 4, 6)
    shared = generator_config(ModelConfig.from_preset("tiny"), 0.25, 1.0)  # ALBERT sharing
    assert shared.sharing == "all" and shared.num_hidden_groups == 1


def test_embeddings_are_one_module_that_both_models_train(data_dir, train):
    objective, model = objective_and_model(data_dir, train)
    keys = model.state_dict().keys()
    assert not [k for k in keys if k.startswith("generator.") and "embeddings." in k]
    assert any(k.startswith("generator.encoder.embedding_hidden_mapping_in") for k in keys)
    batch = collate([train[i] for i in range(4)])
    out = model(**batch)
    out.generator_sum.backward()  # the generator's loss alone reaches the shared embeddings
    words = model.discriminator.backbone.embeddings.word_embeddings.weight
    assert words.grad is not None and float(words.grad.abs().sum()) > 0
    assert model.discriminator.discriminator_predictions.dense.weight.grad is None


def test_corrupting_takes_each_setting_by_name(data_dir, train):
    """Corrupting and ElectraOutput are keyword-only (seven and nine fields: a positional
    call could swap two of them silently); build() names each from where it comes."""
    objective, model = objective_and_model(data_dir, train, mask_prob=0.2, temperature=1.5)
    c = model.corrupting
    assert (c.mask_prob, c.temperature, c.data_masks) == (0.2, 1.5, False)
    assert c.mask_id == objective.special["mask"] and c.seed == objective.run.seed
    assert c.max_seq_length == train.config.max_seq_length
    assert c.max_predictions == train.masking.max_predictions_per_seq
    with pytest.raises(TypeError):
        Corrupting(0.2, 4, 1.5, False, 64, 1, 20)
    with pytest.raises(TypeError):
        ElectraOutput(*[torch.zeros(())] * 8, None)


def test_counts_and_sums_of_a_micro_batch_match_a_direct_computation(data_dir, train):
    objective, model = objective_and_model(data_dir, train)
    batch = collate([train[i] for i in range(6)])
    objective.begin_step(5)
    counts = objective.counts(batch)
    with torch.no_grad():
        sums = objective.loss_sums(model, batch)
        out = model(**batch, step=5)
    real = batch["attention_mask"].bool()
    used = out.slot_weights > 0  # (B, N)
    assert counts.tolist() == [float(used.sum()), float(real.sum())]
    bce = F.binary_cross_entropy_with_logits(out.logits[real], out.replaced[real],
                                             reduction="sum")
    ce = F.cross_entropy(out.generator_logits[used], out.targets[used], reduction="sum")
    torch.testing.assert_close(sums, torch.stack([ce, bce]), rtol=1e-6, atol=1e-5)
    assert objective.parts == ("generator_mlm", "rtd") and objective.weights == (1.0, 50.0)


def test_the_data_masks_flag_uses_the_datas_positions(data_dir, train):
    objective, model = objective_and_model(data_dir, train, generator_masking="data")
    batch = collate([train[i] for i in range(4)])
    masked = batch["labels"] != C.IGNORE
    assert objective.counts(batch)[0] == masked.sum()
    with torch.no_grad():
        out = model(**batch)
    used = out.slot_weights > 0
    assert out.targets.shape == (4, train.masking.max_predictions_per_seq)  # static N
    assert torch.equal(out.targets[used], batch["labels"][masked])  # row-major, as the data's


def test_a_row_is_corrupted_alike_in_a_big_batch_and_in_a_micro_batch(data_dir, train):
    _, model = objective_and_model(data_dir, train)
    items = [train[i] for i in range(8)]
    with torch.no_grad():
        big = model(**collate(items), step=2)
        halves = [model(**collate(items[i:i + 4]), step=2) for i in (0, 4)]
    torch.testing.assert_close(torch.cat([h.targets for h in halves]), big.targets,
                               atol=0, rtol=0)
    torch.testing.assert_close(torch.cat([h.corrupted for h in halves]), big.corrupted,
                               atol=0, rtol=0)
    torch.testing.assert_close(torch.cat([h.generator_sum[None] for h in halves]).sum(),
                               big.generator_sum, rtol=1e-5, atol=1e-4)


def test_evaluation_reports_the_rtd_and_generator_metrics_with_baselines(data_dir, train):
    objective, model = objective_and_model(data_dir, train)
    rng = torch.get_rng_state()
    first = objective.evaluate(model, CPU, contextlib.nullcontext())
    assert torch.equal(rng, torch.get_rng_state())  # training's RNG untouched
    assert first == objective.evaluate(model, CPU, contextlib.nullcontext())  # fixed slots
    for key in ("eval_generator_mlm_accuracy", "eval_generator_mlm_baseline_accuracy",
                "eval_rtd_accuracy", "eval_rtd_precision", "eval_rtd_recall",
                "eval_replaced_fraction", "eval_rtd_baseline_accuracy"):
        assert 0.0 <= first[key] <= 1.0, key
    assert first["eval_rtd_baseline_accuracy"] == pytest.approx(
        1 - first["eval_replaced_fraction"])
    assert first["eval_loss"] == pytest.approx(first["eval_generator_mlm_loss"]
                                               + 50 * first["eval_rtd_loss"])
    assert 0.05 < first["eval_replaced_fraction"] < 0.16  # an untrained generator replaces


def test_the_pair_task_on_the_discriminator_is_optional(data_dir, train):
    objective, model = objective_and_model(data_dir, train, discriminator_pair_task=True)
    assert objective.parts == ("generator_mlm", "rtd", "sop")
    batch = collate([train[i] for i in range(4)])
    assert objective.counts(batch)[2] == 4
    result = objective.evaluate(model, CPU, contextlib.nullcontext())
    assert "eval_sop_accuracy" in result and "eval_sop_baseline_accuracy" in result


@pytest.mark.parametrize("embedding_size", [16, 32])  # E != H and E == H
def test_export_loads_in_transformers_with_identical_outputs(data_dir, train, tmp_path,
                                                             embedding_size):
    cfg = electra_config(data_dir, tmp_path, model_overrides={"embedding_size": embedding_size})
    objective = ElectraObjective(cfg, train)
    config = model_config(cfg, data_dir)
    model = randomize(objective.build(config)).eval()
    out = objective.export(model.state_dict(), config, data_dir, tmp_path / "export")
    disc = transformers.ElectraForPreTraining.from_pretrained(out / "discriminator").eval()
    gen = transformers.ElectraForMaskedLM.from_pretrained(out / "generator").eval()
    assert (out / "generator" / "spiece.model").exists()
    batch = collate([train[i] for i in range(3)])
    with torch.no_grad():
        ours = model(**batch, step=1)
        theirs = disc(input_ids=ours.corrupted, attention_mask=batch["attention_mask"],
                      token_type_ids=batch["token_type_ids"]).logits
        torch.testing.assert_close(theirs, ours.logits, atol=1e-5, rtol=0)
        slots = model.slots(C.original_ids(batch), batch["attention_mask"], batch["labels"], 1)
        shown = C.generator_input(C.original_ids(batch), slots, model.corrupting.mask_id)
        logits = gen(input_ids=shown, attention_mask=batch["attention_mask"],
                     token_type_ids=batch["token_type_ids"]).logits  # (B, T, V)
        rows = torch.arange(3)[:, None].expand_as(slots.used)
        picked = logits[rows[slots.used], slots.positions[slots.used]]
        used = ours.slot_weights > 0
        torch.testing.assert_close(picked, ours.generator_logits[used], atol=1e-5, rtol=0)


def test_an_albert_shared_discriminator_exports_in_albert_layout_or_unrolled(data_dir, train,
                                                                             tmp_path, caplog):
    cfg = electra_config(data_dir, tmp_path, model_overrides={"sharing": "all",
                                                              "num_hidden_groups": 1})
    objective = ElectraObjective(cfg, train)
    config = model_config(cfg, data_dir)
    model = randomize(objective.build(config)).eval()
    shared = objective.export(model.state_dict(), config, data_dir, tmp_path / "shared")
    assert json.loads((shared / "discriminator" / "config.json").read_text())[
        "model_type"] != "electra"
    assert "saved in ALBERT layout" in caplog.text or "litebert's own" in caplog.text
    out = objective.export(model.state_dict(), config, data_dir, tmp_path / "unrolled",
                           unroll=True)
    disc = transformers.ElectraForPreTraining.from_pretrained(out / "discriminator").eval()
    batch = collate([train[i] for i in range(2)])
    with torch.no_grad():
        ours = model(**batch, step=0)
        theirs = disc(input_ids=ours.corrupted, attention_mask=batch["attention_mask"],
                      token_type_ids=batch["token_type_ids"]).logits
    torch.testing.assert_close(theirs, ours.logits, atol=1e-5, rtol=0)


def test_training_flops_count_the_generator_and_both_heads(data_dir, train):
    from litebert.model.counts import encoder_flops_per_token, mlm_head_flops_per_token
    from litebert.objectives import MLMObjective

    cfg = electra_config(data_dir, data_dir / "unused")
    config = model_config(cfg, data_dir)
    electra = ElectraObjective(cfg, train).flops_per_token(config, 64)
    mlm_run = dataclasses.replace(cfg, objective=MLMObjective.Config())
    mlm = MLMObjective(mlm_run, train).flops_per_token(config, 64)
    gen = generator_config(config, 0.25, 1.0)
    assert electra == pytest.approx(
        encoder_flops_per_token(config, 64) + 6 * (32 * 32 + 32)
        + encoder_flops_per_token(gen, 64) + mlm_head_flops_per_token(gen, 0.15))
    assert mlm == pytest.approx(encoder_flops_per_token(config, 64)
                                + mlm_head_flops_per_token(config, 0.15))
    # one layer position by hand: 6 x (4 H^2 + 2 H I + 2 T H), plus the E -> H projection
    assert encoder_flops_per_token(config, 64) == 6 * (16 * 32 + 2 * (
        4 * 32 * 32 + 2 * 32 * 64 + 2 * 64 * 32))


# ---- the backbone: any that declares embed_encode ------------------------------------------

class RenamedAlbert(AlbertModel):
    """ALBERT with its embeddings at `embed` and its encoder at `layers`: a backbone whose
    two modules ELECTRA can only find through the names it declares."""

    embeddings_name, encoder_name = "embed", "layers"

    def __init__(self, config, add_pooling_layer=None):
        super().__init__(config, add_pooling_layer)
        self.embed = self._modules.pop("embeddings")
        self.layers = self._modules.pop("encoder")

    embeddings = property(lambda self: self.embed)  # what AlbertModel's code reads
    encoder = property(lambda self: self.layers)


@pytest.fixture
def renamed():
    register_backbone("renamed-albert")(RenamedAlbert)
    yield "renamed-albert"
    del BACKBONES["renamed-albert"]


def test_electra_refuses_a_backbone_without_embed_encode():
    objective = ElectraObjective(PretrainConfig(objective="electra"))
    with pytest.raises(ConfigError, match="objective electra runs its generator's encoder on "
                                          "the discriminator's embeddings, which backbone "
                                          "'xlnet' has not: use backbone 'albert'"):
        objective.build(xlnet_config())


def test_electra_trains_exports_and_reloads_on_another_embed_encode_backbone(
        data_dir, train, tmp_path, renamed):
    objective, model = objective_and_model(data_dir, train,
                                           model_overrides={"backbone": renamed})
    keys = model.state_dict().keys()
    assert "discriminator.backbone.embed.word_embeddings.weight" in keys
    assert not [k for k in keys if k.startswith("generator.") and ".embed." in k]
    out = model(**collate([train[i] for i in range(4)]))
    out.generator_sum.backward()  # reaches the one embedding module through the protocol
    assert model.discriminator.backbone.embed.word_embeddings.weight.grad.abs().sum() > 0
    randomize(model)
    config = model.discriminator.config
    exported = objective.export(model.state_dict(), config, data_dir, tmp_path / "export")
    generator = EncoderForMaskedLM.from_pretrained(exported / "generator", strict=True)
    assert type(generator.backbone) is RenamedAlbert
    torch.testing.assert_close(generator.backbone.embed.word_embeddings.weight,
                               model.discriminator.backbone.embed.word_embeddings.weight)
    again = load_pair(read_model_files(exported / "discriminator"),
                      read_model_files(exported / "generator"), objective)
    for key, value in model.state_dict().items():
        torch.testing.assert_close(again.state_dict()[key], value, atol=0, rtol=0)


def test_electra_trains_exports_and_reloads_on_the_modernbert_backbone(data_dir, train,
                                                                         tmp_path):
    # ModernBERT declares embed_encode: its generator is a ModernBERT encoder (a quarter as
    # wide, final norm included) on the discriminator's token embeddings and norm.
    cfg = run_config(data_dir, tmp_path / "run", model="modernbert-tiny",
                     objective={"name": "electra"}, optimizer="adamw", lr=1e-3,
                     model_overrides={**MICRO, "local_attention": 8})
    objective = ElectraObjective(cfg, train)
    torch.manual_seed(0)
    model = objective.build(model_config(cfg, data_dir)).eval()
    keys = model.state_dict().keys()
    assert "discriminator.backbone.embeddings.tok_embeddings.weight" in keys
    assert "generator.encoder.final_norm.weight" in keys
    assert not [k for k in keys if k.startswith("generator.") and "embeddings." in k]
    out = model(**collate([train[i] for i in range(4)]))
    assert torch.isfinite(out.generator_sum) and torch.isfinite(out.rtd_sum)
    (out.generator_sum + out.rtd_sum).backward()
    assert model.discriminator.backbone.embeddings.tok_embeddings.weight.grad.abs().sum() > 0
    randomize(model)
    exported = objective.export(model.state_dict(), model.discriminator.config, data_dir,
                                tmp_path / "export")
    again = load_pair(read_model_files(exported / "discriminator"),
                      read_model_files(exported / "generator"), objective)
    for key, value in model.state_dict().items():
        torch.testing.assert_close(again.state_dict()[key], value, atol=0, rtol=0)


def test_a_modernbert_generator_encoder_gets_modernberts_init():
    """The generator's encoder, built without its backbone, draws as a ModernBERT encoder of
    its own depth: output projections at initializer_range / sqrt(2 L), not the TF init."""
    config = ModelConfig.from_preset("modernbert-tiny", vocab_size=99, hidden_size=128,
                                     embedding_size=128, intermediate_size=192,
                                     num_hidden_layers=8, num_hidden_groups=8,
                                     pad_token_id=0, bos_token_id=1, eos_token_id=2)
    generator = ElectraGenerator(generator_config(config, size=1.0, layers=1.0))
    block = generator.encoder.ffns[1].mlp
    std = config.initializer_range
    for weight, s in ((block.Wi.weight, std), (block.Wo.weight, std / math.sqrt(16))):
        # a normal cut at 2 std keeps 0.88 of its std
        assert float(weight.std()) == pytest.approx(0.88 * s, rel=0.05)
