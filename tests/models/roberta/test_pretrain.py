"""Pre-training a RoBERTa recipe end to end: byte-level BPE, packed data, MLM alone, and an
export that transformers' RobertaForMaskedLM and AutoTokenizer load as they are."""

from __future__ import annotations

import json

import pytest
import torch
import transformers

import litebert
from litebert.data.builder import BuildConfig, build
from litebert.tokenization.train import train_bpe
from litebert.train.pretrain import pretrain
from litebert.train.run_config import load_run_config
from tests.data.builds import write_corpus

# roberta-tiny at the micro size (E == H: RoBERTa has no projection); 66 positions hold 64.
MICRO_ROBERTA = dict(hidden_size=32, embedding_size=32, num_hidden_layers=2,
                     num_hidden_groups=2, num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=66)


@pytest.mark.parametrize("packing", ["doc-sentences", "full-sentences"])
def test_roberta_recipe_pretrains_and_exports_a_transformers_directory(tmp_path, packing):
    corpus = write_corpus(tmp_path / "corpus.txt", docs=60)
    tok = train_bpe([corpus], tmp_path / "tok", vocab_size=400)
    data = tmp_path / "data"
    build([corpus], tok, data, BuildConfig(max_seq_length=64, objective="none", format="bert",
                                           packing=packing, heldout_fraction=0.1))
    out = tmp_path / "run"
    cfg = load_run_config("roberta-tiny-cpu", dict(
        data=str(data), out=str(out), model_overrides=MICRO_ROBERTA, batch_size=8,
        micro_batch_size=8, max_steps=3, eval_every=3, save_every=3, eval_instances=16))
    result = pretrain(cfg)
    assert 0.0 <= result["eval_mlm_accuracy"] <= 1.0
    export = out / "export"
    config = json.loads((export / "config.json").read_text())
    assert (config["model_type"], config["architectures"]) == ("roberta",
                                                                 ["RobertaForMaskedLM"])
    assert (config["pad_token_id"], config["bos_token_id"], config["eos_token_id"],
            config["type_vocab_size"], config["max_position_embeddings"]) == (1, 0, 2, 1, 66)
    theirs = transformers.RobertaForMaskedLM.from_pretrained(export).eval()
    ours = litebert.AutoModelForMaskedLM.from_pretrained(export).eval()
    hf_tok = transformers.AutoTokenizer.from_pretrained(export)
    batch = hf_tok(["the first text of two", "a second, longer text to pad the first"],
                   padding=True, return_tensors="pt")
    assert (batch["input_ids"] == 1).any()  # padded with <pad>, whose position is skipped
    with torch.no_grad():
        torch.testing.assert_close(ours(**batch).logits, theirs(**batch).logits,
                                   atol=1e-5, rtol=0)
