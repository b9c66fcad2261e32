"""Load a RoBERTa export in transformers and in litebert; print the largest output difference
and whether AutoTokenizer gives our ids on a few sentences. Usage: check_export.py EXPORT_DIR"""

import sys

import torch
import transformers

import litebert

export = sys.argv[1]
theirs = transformers.RobertaForMaskedLM.from_pretrained(export).eval()
ours = litebert.AutoModelForMaskedLM.from_pretrained(export).eval()
tok = litebert.Tokenizer.from_pretrained(export)
hf_tok = transformers.AutoTokenizer.from_pretrained(export)
texts = ["The government said on Monday that it would cut taxes.",
         "Shares in the company rose 5% to 120p after the results."]
batch = hf_tok(texts, padding=True, return_tensors="pt")
assert batch["input_ids"][0][batch["attention_mask"][0].bool()].tolist() == tok.encode(texts[0])
with torch.no_grad():
    a = ours(batch["input_ids"], batch["attention_mask"]).logits
    b = theirs(**batch).logits
mask = batch["attention_mask"].bool()
print(f"{type(theirs).__name__} loaded; max |logit difference| on real tokens: "
      f"{(a - b)[mask].abs().max().item():.2e}; AutoTokenizer ids equal ours")
