"""Speed in the logs (litebert/train/throughput.py): the peak table and its lookup, the
record's arithmetic, the time waited for data, and a run's metrics.jsonl carrying them."""

from __future__ import annotations

import time

import pytest
import torch

from litebert.objectives import resolve
from litebert.train.pretrain import Trainer
from litebert.train.throughput import (
    PEAK_TFLOPS,
    TimedBatches,
    device_family,
    peak_tflops,
    speed_record,
)
from tests.helpers.pretrain import read_metrics, run_config


@pytest.mark.parametrize(("name", "family"), [
    ("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H100 PCIe", "H100 PCIE"),
    ("NVIDIA H100 NVL", "H100 NVL"), ("NVIDIA H200", "H200"), ("NVIDIA H200 NVL", "H200 NVL"),
    ("NVIDIA A100-SXM4-80GB", "A100"), ("NVIDIA A100 80GB PCIe", "A100"),
    ("NVIDIA GeForce RTX 4090", None), ("Tesla V100-SXM2-16GB", None)])
def test_device_names_map_to_their_peaks(name, family):
    assert device_family(name) == family


@pytest.mark.parametrize(("name", "bf16", "tf32", "fp32"), [
    ("NVIDIA H200 NVL", 835, 417, 60), ("NVIDIA H200", 989, 494, 67),
    ("NVIDIA H100 NVL", 835, 417, 60), ("NVIDIA H100 PCIe", 756, 378, 51),
    ("NVIDIA H100 80GB HBM3", 989, 494, 67), ("NVIDIA A100-SXM4-80GB", 312, 156, 19.5)])
def test_each_device_has_its_datasheet_dense_peaks(monkeypatch, name, bf16, tf32, fp32):
    """The dense (no sparsity) figures; an H200 NVL is not an H200 (835, not 989)."""
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: name)
    cuda, matmul = torch.device("cuda"), torch.backends.cuda.matmul
    assert peak_tflops(cuda, "bf16") == peak_tflops(cuda, "fp16") == bf16
    was = matmul.allow_tf32  # a flag object monkeypatch cannot set
    try:
        matmul.allow_tf32 = False
        assert peak_tflops(cuda, "fp32") == fp32  # the FP32 units
        matmul.allow_tf32 = True
        assert peak_tflops(cuda, "fp32") == tf32  # TF32 tensor cores
    finally:
        matmul.allow_tf32 = was


def test_the_peak_is_the_given_one_else_none_off_cuda():
    cpu = torch.device("cpu")
    assert peak_tflops(cpu, "fp32") is None
    assert peak_tflops(cpu, "fp32", given=2.5) == 2.5
    assert PEAK_TFLOPS["H100"]["bf16"] == 989.0 and PEAK_TFLOPS["A100"]["bf16"] == 312.0


def test_speed_record_arithmetic():
    # 2 ranks trained 4,000 tokens in 2 s: 1,000 tokens/s per device.
    record = speed_record(4000, 2.0, 0.5, 2, flops_per_token=3e9, peak=6.0)
    assert record["tokens_per_s"] == 2000.0
    assert record["tflops"] == pytest.approx(3.0)  # 1,000 x 3e9 / 1e12
    assert record["mfu"] == pytest.approx(0.5)
    assert record["data_wait_fraction"] == pytest.approx(0.25)
    assert "mfu" not in speed_record(4000, 2.0, 0.0, 2, 3e9, None)


def test_timed_batches_count_the_wait_in_next_only():
    def slow():
        while True:
            time.sleep(0.02)
            yield 1

    data = TimedBatches(slow())
    next(data)
    next(data)
    time.sleep(0.05)  # the loop's own work: not waiting
    waited = data.take_waited()
    assert 0.035 <= waited < 0.065
    assert data.take_waited() == 0.0


def test_a_run_logs_tflops_mfu_and_the_data_wait(data_dir, tmp_path):
    cfg = run_config(data_dir, tmp_path / "run", max_steps=4, peak_tflops=0.5)
    trainer = Trainer(cfg)
    trainer.run()
    train, _ = read_metrics(tmp_path / "run")
    expected = resolve("mlm")(cfg).flops_per_token(trainer.config, 64)
    assert trainer.flops_per_token == pytest.approx(expected)
    for record in train:
        assert record["tflops"] == pytest.approx(
            record["tokens_per_s"] * expected / 1e12, rel=1e-9)
        assert record["mfu"] == pytest.approx(record["tflops"] / 0.5, rel=1e-9)
        assert 0.0 <= record["data_wait_fraction"] <= 1.0
    plain = Trainer(run_config(data_dir, tmp_path / "plain", max_steps=2))
    plain.run()
    assert "mfu" not in read_metrics(tmp_path / "plain")[0][0]  # no peak on a CPU
