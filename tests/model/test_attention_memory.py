"""attention unpadded without varlen (here: a CPU) costs the memory of the padded path, not of a
mask over the whole batch: each forward + backward runs in a fresh process, whose peak
resident memory (ru_maxrss) is read before and after it.

Before the padded fallback, these batches ran as one row of N = B x T tokens under an (N, N)
mask: at 2 layers of bert-base, 16 x 256, scores of 12 x ~3k x ~3k per layer."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# One forward + backward of bert-base's shapes (train mode, so attention dropout on) on a
# batch whose rows hold 1/4 to all of T real tokens; prints the peak RSS in KiB before the
# forward (model, batch, imports) and after the backward. Memory is capped (RLIMIT_AS) so a
# regression fails the child, not the machine.
CHILD = """
import json, resource, sys
import torch
from litebert import ModelConfig, AlbertModel
from litebert.data.attention_layout import with_unpadded_rows

layers, rows, width, attention, cap_gib, dropout = sys.argv[1:]
layers, rows, width, dropout = int(layers), int(rows), int(width), float(dropout)
cap = int(float(cap_gib) * 2**30)
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
torch.manual_seed(0)
config = ModelConfig.from_preset("bert-base", num_hidden_layers=layers, vocab_size=1000,
                                  hidden_dropout_prob=dropout,
                                  attention_probs_dropout_prob=dropout)
model = AlbertModel(config, add_pooling_layer=False).train()
lengths = torch.randint(width // 4, width + 1, (rows,))
mask = (torch.arange(width)[None] < lengths[:, None]).long()  # (B, T)
batch = {"input_ids": torch.randint(5, 1000, (rows, width)) * mask, "attention_mask": mask}
if attention == "unpadded":
    batch = with_unpadded_rows(batch)
    assert batch["document_ids"].dim() == 1
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
model(**batch).last_hidden_state.square().mean().backward()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"before": before, "after": after}))
"""


# One malloc arena and one thread: the peak RSS of two runs of the same step then differs by a
# few percent; with glibc's arena per thread it varied by 15% from run to run here.
STEADY = {"MALLOC_ARENA_MAX": "1", "OMP_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": "131072"}


def peak_kib(layers: int, rows: int, width: int, attention: str, cap_gib: float,
             dropout: float) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(layers), str(rows), str(width),
                           attention, str(cap_gib), str(dropout)], capture_output=True,
                          text=True, check=False, env={**os.environ, **STEADY})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def ratios(layers: int, rows: int, width: int, cap_gib: float,
           dropout: float = 0.1) -> tuple[float, float]:
    """(whole process, forward + backward alone): unpadded's peak over full's, at bert-base's
    dropout (0.1) or another."""
    full = peak_kib(layers, rows, width, "full", cap_gib, dropout)
    unpadded = peak_kib(layers, rows, width, "unpadded", cap_gib, dropout)
    step = [(p["after"] - p["before"]) for p in (full, unpadded)]
    print(f"{layers} layers {rows} x {width}: full {full}, unpadded {unpadded} KiB")
    return unpadded["after"] / full["after"], step[1] / step[0]


@pytest.mark.slow  # 23 s on 2 cores
def test_unpadded_without_varlen_peaks_as_the_padded_path_small():
    """2 layers, 16 x 256: the (N, N) scores would have cost several times full's step."""
    whole, step = ratios(2, 16, 256, cap_gib=8)
    print(f"unpadded / full: {whole:.3f} of the process, {step:.3f} of the step")
    assert whole <= 1.2 and step <= 1.2


@pytest.mark.slow
def test_unpadded_without_varlen_peaks_as_the_padded_path_bert_base():
    """bert-base (12 layers), 32 x 512, without dropout: with bert-base's 0.1 attention
    dropout full's step keeps every layer's (B, heads, T, T) probabilities and their mask,
    about 27 GB, more than this project's 24 GB machines hold; without it SDPA's CPU kernel
    keeps none. The (N, N) scores of one layer would take 5 to 7 GB a tensor (N about 11k),
    and the old CPU path built them with or without dropout."""
    whole, step = ratios(12, 32, 512, cap_gib=22, dropout=0.0)
    print(f"unpadded / full: {whole:.3f} of the process, {step:.3f} of the step")
    assert whole <= 1.2 and step <= 1.2
