"""How fast a run goes, in the units people compare: tokens/s, model TFLOP/s per device, MFU,
and the share of the time spent waiting for data.

- tflops: the tokens a device trained per second (padding excluded) times the objective's
  `flops_per_token` (forward + backward, 6N plus attention at the data's sequence length;
  each objective's own, e.g. ELECTRA's counts generator and discriminator, XLNet's the query
  stream at its targets), over 1e12. These are the model's FLOPs, not the hardware's: work
  spent on padding, recomputation or masked-out attention does not count.
- mfu: tflops / the device's peak at the run's arithmetic. The peaks are the dense (no
  sparsity) tensor-core figures of NVIDIA's datasheets for the parts people train on (A100;
  H100 SXM, PCIe and NVL; H200 SXM and NVL: PEAK_TFLOPS, each row with its source); fp32
  means TF32 tensor cores when torch lets matmuls use them, else the plain FP32 units.
  `--peak-tflops` sets the peak for any other device, a CPU included; without a known peak
  no mfu is logged (a guess would be worse than nothing).
- data_wait_fraction: the share of the wall time of the logged steps that the loop spent
  waiting for its next micro-batch. Near 0 when the loader keeps up.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import torch

# What a training record measures of time, not of learning: two runs that learn the same
# differ in these (tests compare everything else).
TIMING_FIELDS = ("tokens_per_s", "tflops", "mfu", "data_wait_fraction", "train_seconds")

# Dense peak TFLOP/s by (device family, arithmetic), from NVIDIA's datasheets (the
# specification tables of nvidia.com/en-us/data-center/a100/, .../h100/ and .../h200/). The
# Hopper tables quote the tensor-core figures (bf16, fp16, tf32) with 2:4 sparsity; the dense
# peak is half of that, rounded down to a whole TFLOP/s. fp32 is the plain FP32 units' (no
# sparsity there).
# Ordered most specific first: device_family takes the first family whose words are all in
# the name ("NVIDIA H200 NVL" is an H200 NVL, not an H200).
PEAK_TFLOPS: dict[str, dict[str, float]] = {
    # H200 datasheet, H200 NVL column: BF16/FP16 1,671, TF32 835 (sparse), FP32 60.
    "H200 NVL": {"bf16": 835.0, "fp16": 835.0, "tf32": 417.0, "fp32": 60.0},
    # H200 datasheet, H200 SXM column: BF16/FP16 1,979, TF32 989 (sparse), FP32 67.
    "H200": {"bf16": 989.0, "fp16": 989.0, "tf32": 494.0, "fp32": 67.0},
    # H100 datasheet, H100 NVL column: BF16/FP16 1,671, TF32 835 (sparse), FP32 60.
    "H100 NVL": {"bf16": 835.0, "fp16": 835.0, "tf32": 417.0, "fp32": 60.0},
    # H100 datasheet, H100 PCIe column: BF16/FP16 1,513, TF32 756 (sparse), FP32 51.
    "H100 PCIE": {"bf16": 756.0, "fp16": 756.0, "tf32": 378.0, "fp32": 51.0},
    # H100 datasheet, H100 SXM column ("NVIDIA H100 80GB HBM3"): BF16/FP16 1,979, TF32 989
    # (sparse), FP32 67.
    "H100": {"bf16": 989.0, "fp16": 989.0, "tf32": 494.0, "fp32": 67.0},
    # A100 datasheet (SXM and PCIe alike): BF16/FP16 312, TF32 156 (dense; 624 and 312 with
    # sparsity), FP32 19.5.
    "A100": {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5},
}


def device_family(name: str) -> str | None:
    """The PEAK_TFLOPS key a CUDA device name belongs to ("NVIDIA H100 80GB HBM3" -> "H100"),
    the most specific first; None for any other device."""
    upper = name.upper()
    for family in PEAK_TFLOPS:  # ordered: "H200 NVL" before "H200", "H100 PCIE" before "H100"
        if all(word in upper for word in family.split()):
            return family
    return None


def peak_tflops(device: torch.device, precision: str, given: float | None = None
                ) -> float | None:
    """The peak TFLOP/s that mfu divides by: `given` (--peak-tflops) when set, else the
    table's for a known CUDA device at `precision` (fp32 counts TF32 when torch allows it
    for matmuls), else None."""
    if given is not None:
        return given
    if device.type != "cuda":
        return None
    family = device_family(torch.cuda.get_device_name(device))
    if family is None:
        return None
    if precision == "fp32" and torch.backends.cuda.matmul.allow_tf32:
        precision = "tf32"
    return PEAK_TFLOPS[family].get(precision)


def speed_record(tokens: int, seconds: float, waited: float, world_size: int,
                 flops_per_token: float, peak: float | None) -> dict[str, float]:
    """tokens_per_s (all ranks), tflops (per device), mfu (when the peak is known) and
    data_wait_fraction of a window of steps that trained `tokens` in `seconds`, `waited` of
    them spent waiting for data."""
    seconds = max(seconds, 1e-9)
    per_device = tokens / world_size / seconds
    tflops = per_device * flops_per_token / 1e12
    record = {"tokens_per_s": tokens / seconds, "tflops": tflops,
              "data_wait_fraction": min(max(waited / seconds, 0.0), 1.0)}
    if peak:
        record["mfu"] = tflops / peak
    return record


class TimedBatches:
    """Wraps the batch iterator and adds up the time spent waiting in next()."""

    def __init__(self, batches: Iterator[Any]):
        self.batches, self.waited = batches, 0.0

    def __iter__(self) -> TimedBatches:
        return self

    def __next__(self) -> Any:
        start = time.perf_counter()
        try:
            return next(self.batches)
        finally:
            self.waited += time.perf_counter() - start

    def take_waited(self) -> float:
        """Seconds waited since the last call."""
        waited, self.waited = self.waited, 0.0
        return waited
