"""The model directories of tests/hf_dirs.py (transformers classes, random weights, small
configs, with their tokenizers) load with litebert's Auto classes, whose outputs equal
transformers' on a tokenized pair, and their tokenizers with transformers' AutoTokenizer and
litebert's Tokenizer alike."""

from __future__ import annotations

import pytest
import torch
import transformers
from transformers import AutoTokenizer

import litebert
from litebert.tokenization import Tokenizer
from tests.hf_dirs import MODEL_CLASSES

CASES = [(family, name) for family, names in MODEL_CLASSES.items() for name in names]
# transformers class -> the litebert Auto class a user would load it with.
AUTO = {"ForPreTraining": litebert.AutoModelForPreTraining,
        "ForMaskedLM": litebert.AutoModelForMaskedLM, "Model": litebert.AutoModel,
        "LMHeadModel": litebert.AutoModelForPreTraining}


def _auto_class(name: str):
    return next(cls for suffix, cls in AUTO.items() if name.endswith(suffix))


@pytest.mark.parametrize("family, head_class", CASES)
def test_model_directory_loads(hf_model_dir, family, head_class):
    directory = hf_model_dir(family, head_class)
    theirs_tok, ours_tok = AutoTokenizer.from_pretrained(str(directory)), \
        Tokenizer.from_pretrained(directory)
    text, pair = "The committee met in 1999.", "It agreed to the plan."
    assert ours_tok(text, pair)["input_ids"] == theirs_tok(text, pair)["input_ids"]
    model = _auto_class(head_class).from_pretrained(directory, strict=True).eval()
    theirs = getattr(transformers, head_class).from_pretrained(str(directory)).eval()
    inputs = {k: torch.tensor([v]) for k, v in ours_tok(text, pair).items()}
    with torch.no_grad():
        ours_out, their_out = model(**inputs), theirs(**inputs)
    # The outputs both name (XLNet's pre-training model gives hidden states, not logits).
    shared = [k for k in ("logits", "prediction_logits", "last_hidden_state")
              if getattr(their_out, k, None) is not None and getattr(ours_out, k, None) is not None]
    for key in shared:
        torch.testing.assert_close(getattr(ours_out, key), getattr(their_out, key),
                                   atol=1e-4, rtol=1e-4)
    assert shared or family == "xlnet"
