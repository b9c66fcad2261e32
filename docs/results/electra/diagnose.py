"""RTD diagnostics on the electra-tiny-cpu recipe at temperature 1 (see run.sh), run from the
directory that holds the demo's data as ./data-dynamic:

    python diagnose.py uniform   the generator's samples replaced by uniform draws (vocabulary)
    python diagnose.py unigram   ... by draws from the corpus's unigram distribution
    python diagnose.py detach    the generator's gradient kept out of the shared embeddings

The runs were read at their step-150 evaluation (metrics in this directory).
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from litebert.cli import main
from litebert.data.loader import PretrainingDataset
from litebert.models.albert.model import AlbertEmbeddings
from litebert.objectives import corruption, electra

DATA = "data-dynamic"


def uniform_samples(logits, keys, temperature=1.0):
    return torch.randint(5, logits.shape[-1], (logits.shape[0],))  # (M,) any non-special id


def unigram_sampler():
    data = PretrainingDataset(DATA, "train", seed=1)  # the demo's 10k vocabulary
    counts = np.bincount(np.asarray(data.tokens[:2_000_000]), minlength=10_000)
    counts = counts.astype(np.float64)
    counts[:5] = 0  # the special pieces
    probs = torch.tensor(counts / counts.sum(), dtype=torch.float32)

    def sample(logits, keys, temperature=1.0):
        return torch.multinomial(probs, logits.shape[0], replacement=True)
    return sample


def detach_generator_embeddings():
    """The generator reads the embeddings first in each forward: detach that first read."""
    forward, embed = electra.ElectraPretraining.forward, AlbertEmbeddings.forward

    def patched(self, *args, **kwargs):
        calls = [0]

        def once(module, *a, **k):
            calls[0] += 1
            out = embed(module, *a, **k)
            return out.detach() if calls[0] == 1 else out
        AlbertEmbeddings.forward = once
        try:
            return forward(self, *args, **kwargs)
        finally:
            AlbertEmbeddings.forward = embed
    electra.ElectraPretraining.forward = patched


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "uniform":
        corruption.sample = uniform_samples
    elif mode == "unigram":
        corruption.sample = unigram_sampler()
    else:
        detach_generator_embeddings()
    main(["pretrain", "--config", "electra-tiny-cpu", "--temperature", "1", "--data", DATA,
          "--out", f"diag-{mode}", "--max-steps", "150", "--eval-every", "150",
          "--log-every", "50", "--eval-instances", "160", "--no-export"])
