"""benchmarks/gpu_memory.py's search (the GPU check's max-batch rows), without a GPU: it finds
the largest batch a memory limit lets fit, stops at its deadline, and the dry run's limit on
bytes saved for backward raises torch's out-of-memory error. The check itself runs in the
dry run of tests/test_gpu_check.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def gpu_memory(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import gpu_memory

    return gpu_memory


@pytest.mark.parametrize("limit", [1, 37, 100, 1000])
def test_the_search_finds_the_largest_batch_within_a_sixteenth(gpu_memory, limit):
    tried = []

    def fits(batch):
        tried.append(batch)
        return batch <= limit

    fit, failed, finished = gpu_memory.largest_fitting(fits, 1, time.perf_counter() + 60)
    assert finished and fit <= limit < failed
    assert failed - fit <= max(1, fit // 16)
    assert len(tried) <= 2 * limit.bit_length() + 2  # doubling, then bisecting


def test_the_search_stops_at_its_deadline(gpu_memory):
    fit, failed, finished = gpu_memory.largest_fitting(lambda b: True, 4, time.perf_counter())
    assert (fit, failed, finished) == (0, None, False)
    assert gpu_memory.largest_fitting(lambda b: False, 4, time.perf_counter() + 60) == \
        (0, 4, True)


def test_the_dry_limit_counts_activations_not_parameters(gpu_memory):
    layer = torch.nn.Linear(64, 64)
    x = torch.randn(8, 64, requires_grad=True)
    with gpu_memory.saved_bytes_cap(8 * 64 * 4 + 1, layer):  # x is saved, the weight is held
        layer(x).sum().backward()
    with pytest.raises(torch.OutOfMemoryError, match="dry run"):
        with gpu_memory.saved_bytes_cap(8 * 64 * 4 - 1, layer):
            layer(x).sum().backward()
