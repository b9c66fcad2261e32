"""A quick end-to-end check of a preset: train steps on random data, save, reload, compare."""

from __future__ import annotations

import tempfile
import time

import torch

from litebert.config import ModelConfig
from litebert.model import EncoderForPreTraining


def random_batch(config: ModelConfig, batch: int, seq: int, seed: int = 0) -> dict:
    """Token ids, 15% MLM labels, two segments and sentence-order labels."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, config.vocab_size, (batch, seq), generator=g)
    labels = torch.where(torch.rand(batch, seq, generator=g) < 0.15, ids, -100)
    types = (torch.arange(seq) >= seq // 2).long().expand(batch, seq)
    return dict(input_ids=ids, attention_mask=torch.ones_like(ids), token_type_ids=types,
                labels=labels, sentence_order_label=torch.randint(0, 2, (batch,), generator=g))


def smoke(preset: str, batch: int = 8, seq: int = 128, steps: int = 3) -> float:
    """Returns the reload difference; prints losses and tokens/s."""
    torch.manual_seed(0)
    config = ModelConfig.from_preset(preset)
    model = EncoderForPreTraining(config)
    print(f"{preset}: {model.num_parameters():,} parameters "
          f"({model.num_parameters(only_backbone=True):,} in the backbone)")
    data = random_batch(config, batch, seq)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(1, steps + 1):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        out = model(**data)
        out.loss.backward()
        optimizer.step()
        rate = batch * seq / (time.perf_counter() - start)
        print(f"step {step}: loss {out.loss.item():.4f} (mlm {out.mlm_loss.item():.4f}, "
              f"sop {out.sop_loss.item():.4f}), {rate:,.0f} tokens/s")
    model.eval()
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        again = EncoderForPreTraining.from_pretrained(tmp).eval()
        with torch.no_grad():
            diff = (model(**data).loss - again(**data).loss).abs().item()
    print(f"saved and reloaded in transformers' layout: loss difference {diff:.2e}")
    return diff
