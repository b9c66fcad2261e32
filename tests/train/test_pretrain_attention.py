"""The run option `attention` end to end: what it refuses, and runs that train with it."""

from __future__ import annotations

import pytest
import torch
import transformers

from litebert.data.loader import PretrainingDataset, collate
from litebert.model import EncoderForMaskedLM
from litebert.objectives import resolve
from litebert.objectives.mlm_eval import evaluate_pretraining, load_for_evaluation
from litebert.train.pretrain import Trainer, pretrain
from litebert.train.run_config import RunConfigError, check_data_attention, load_run_config
from tests.helpers.pretrain import OBJECTIVE_FIELDS, read_metrics, run_config
from tests.helpers.varlen_reference import CALLS, use_reference_varlen

# modernbert-tiny at the micro size; the ids of the test tokenizer, not ModernBERT's 50k.
MODERN_MICRO = dict(hidden_size=32, embedding_size=32, num_hidden_layers=3,
                    num_hidden_groups=3, num_attention_heads=2, intermediate_size=48,
                    max_position_embeddings=64, pad_token_id=0, bos_token_id=2,
                    eos_token_id=3)


def test_document_attention_on_pairs_is_a_run_config_error(data_dir, tmp_path):
    with pytest.raises(RunConfigError, match=r"attention='document': --data .*needs packed "
                                             r"data \(built with --packing full-sentences"):
        Trainer(run_config(data_dir, tmp_path / "run", attention="document"))


def test_an_objective_without_the_layout_refuses_it():
    """XLNet's two streams lay attention out by permutation; it takes `full` alone."""
    cfg = load_run_config("xlnet-tiny-cpu", {"attention": "unpadded"})
    with pytest.raises(RunConfigError, match="objective 'plm' supports full"):
        check_data_attention(cfg, packed=False, supported=resolve("plm").attentions)


def test_unknown_attention_is_a_run_config_error(data_dir, tmp_path):
    with pytest.raises(RunConfigError, match="attention='flash': choose from full, document, "
                                             "unpadded"):
        run_config(data_dir, tmp_path / "run", attention="flash")


@pytest.mark.parametrize("varlen", [False, True], ids=["padded-fallback", "reference-varlen"])
@pytest.mark.parametrize("objective", ["mlm", "electra"])
def test_unpadded_training_follows_the_padded_run(data_dir, tmp_path, objective, varlen,
                                                  monkeypatch):
    """Same data, same model: the loss curve of attention 'unpadded' is the padded one's,
    on this CPU's padded fallback and on varlen's segments (the reference op; ELECTRA:
    generator and discriminator both run on the real tokens alone)."""
    fields = OBJECTIVE_FIELDS[objective]
    full = pretrain(run_config(data_dir, tmp_path / "full", max_steps=3, export=False,
                               **fields))
    if varlen:
        use_reference_varlen(monkeypatch)
    CALLS.clear()
    unpadded = pretrain(run_config(data_dir, tmp_path / "unpadded", max_steps=3, export=False,
                                   attention="unpadded", **fields))
    assert bool(CALLS) is varlen  # the unpadded path ran, or the padded layout did
    a, b = read_metrics(tmp_path / "full")[0], read_metrics(tmp_path / "unpadded")[0]
    for x, y in zip(a, b, strict=True):
        assert y["loss"] == pytest.approx(x["loss"], rel=1e-4)
    assert unpadded["eval_loss"] == pytest.approx(full["eval_loss"], rel=1e-4)


@pytest.mark.parametrize("objective", ["mlm", "electra"])
def test_document_attention_trains_on_packed_data(packed_data, tmp_path, objective):
    """Packed rows with documents: a run trains and evaluates (its batches carry
    document_ids), and its losses are not the full-attention run's."""
    fields = OBJECTIVE_FIELDS[objective]
    full = pretrain(run_config(packed_data, tmp_path / "full", max_steps=3, export=False,
                               **fields))
    document = pretrain(run_config(packed_data, tmp_path / "doc", max_steps=3, export=False,
                                   attention="document", **fields))
    assert document["eval_loss"] > 0 and document["eval_loss"] != full["eval_loss"]
    losses = [x["loss"] for x in read_metrics(tmp_path / "doc")[0]]
    assert len(losses) == 3 and losses != [x["loss"] for x in read_metrics(tmp_path / "full")[0]]


@pytest.mark.parametrize("attention", ["full", "document"])
def test_modernbert_pretrains_mlm_alone_and_exports_a_transformers_masked_lm(
        packed_data, tmp_path, attention):
    """The modernbert backbone (no pooler) trains MLM alone in its masked LM, windows shorter
    than the rows, and its export is a ModernBertForMaskedLM directory giving our logits."""
    overrides = dict(MODERN_MICRO, local_attention=8)
    result = pretrain(run_config(packed_data, tmp_path / "run", model="modernbert-tiny",
                                 model_overrides=overrides, attention=attention,
                                 optimizer="adamw", lr=1e-3, schedule="wsd", max_steps=4))
    assert result["eval_mlm_accuracy"] >= 0.0 and result["eval_loss"] > 0
    export = tmp_path / "run" / "export"
    ours = EncoderForMaskedLM.from_pretrained(export, strict=True).eval()
    theirs = transformers.ModernBertForMaskedLM.from_pretrained(
        export, attn_implementation="sdpa").eval()
    batch = collate([PretrainingDataset(packed_data, "heldout", seed=0)[i] for i in range(2)])
    inputs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    with torch.no_grad():
        a, b = ours(**inputs).logits, theirs(**inputs).logits
    real = batch["attention_mask"].bool()
    torch.testing.assert_close(a[real], b[real], atol=1e-4, rtol=1e-4)
    # `litebert eval-pretraining` (and the studies) score it as a masked LM: no pooler, no
    # pair head to load.
    model, has_pair_head = load_for_evaluation(export)
    assert isinstance(model, EncoderForMaskedLM) and not has_pair_head
    scored = evaluate_pretraining(export, packed_data, instances=16, batch_size=8)
    assert 0.0 <= scored["mlm_accuracy"] <= 1.0
