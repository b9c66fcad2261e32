"""The eager permutation-LM step's operators, counted at the dispatcher (below autograd and
autocast, where each non-view operator is a kernel on a GPU): no host syncs, and fewer
kernels than transformers' XLNetLMHeadModel for the same step, in fp32 and under a bf16
autocast. A GPU's eager step at small shapes is launch-bound, so the kernel count is what
the CPU can check of its speed (docs/speed.md, XLNet's step)."""

from __future__ import annotations

import contextlib
from collections import Counter

import pytest
import torch
import torch.nn.functional as F
import transformers
from torch.utils._python_dispatch import TorchDispatchMode

import litebert
from litebert.objectives.plm_data import perm_mask
from tests.helpers.family_configs import hf_xlnet_config, xlnet_config

B, T, P, V, M = 2, 12, 3, 50, 6
# What makes the host wait for the device: a value read back, or a shape that depends on data.
SYNCS = {"_local_scalar_dense", "item", "is_nonzero", "nonzero", "masked_select", "unique",
         "_unique2", "equal"}


class KernelCount(TorchDispatchMode):
    """Counts every operator dispatched to a backend, views (no kernel) left out."""

    def __init__(self):
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not func.is_view:
            self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def batch(seed: int = 0) -> dict[str, torch.Tensor]:
    """A PLM batch as objectives/plm.py feeds it: types A, B, <cls>; P targets per row."""
    g = torch.Generator().manual_seed(seed)
    types = torch.zeros(B, T, dtype=torch.long)
    types[:, T // 2:], types[:, -1] = 1, 2
    targets = torch.stack([torch.randperm(T, generator=g)[:P] for _ in range(B)])  # (B, P)
    is_target = torch.zeros(B, T, dtype=torch.bool).scatter(1, targets, True)
    return dict(input_ids=torch.randint(0, V, (B, T), generator=g), token_type_ids=types,
                targets=targets, labels=torch.randint(0, V, (B, P), generator=g),
                order=perm_mask(torch.stack([torch.randperm(T, generator=g) for _ in range(B)]),
                                is_target, torch.zeros_like(is_target), 0))


def litebert_step(model, x: dict[str, torch.Tensor]) -> None:
    mems = [torch.zeros(M, B, 32) for _ in range(2)]
    out = model(x["input_ids"], token_type_ids=x["token_type_ids"], perm_mask=x["order"],
                target_positions=x["targets"], mems=mems, use_mems=True, labels=x["labels"])
    out.loss.backward()


def transformers_step(model, x: dict[str, torch.Tensor]) -> None:
    mems = [torch.zeros(M, B, 32) for _ in range(2)]
    mapping = F.one_hot(x["targets"], T).float()  # (B, P, T)
    out = model(input_ids=x["input_ids"], token_type_ids=x["token_type_ids"],
                perm_mask=x["order"].float(), target_mapping=mapping, labels=x["labels"],
                mems=mems, use_mems=True)
    out.loss.backward()


def counted(step, model, x, bf16: bool) -> Counter[str]:
    amp = torch.autocast("cpu", torch.bfloat16) if bf16 else contextlib.nullcontext()
    with KernelCount() as count, amp:
        step(model, x)
    return count.ops


def models():
    ours = litebert.EncoderForPermutationLM(xlnet_config(mem_len=M)).train()
    theirs = transformers.XLNetLMHeadModel(hf_xlnet_config(mem_len=M)).train()
    return ours, theirs


def test_the_counter_sees_forward_backward_and_a_sync():
    x, (ours, _) = batch(), models()
    ops = counted(litebert_step, ours, x, bf16=False)
    assert ops["mm"] + ops["addmm"] > 0 and ops["_softmax_backward_data"] > 0
    with KernelCount() as count:
        x["labels"].sum().item()
    assert "_local_scalar_dense" in count.ops


@pytest.mark.parametrize("bf16", [False, True], ids=["fp32", "bf16 autocast"])
def test_the_plm_step_has_no_host_sync(bf16):
    x, (ours, _) = batch(), models()
    ops = counted(litebert_step, ours, x, bf16)
    assert not SYNCS & set(ops), {k: ops[k] for k in SYNCS & set(ops)}


@pytest.mark.parametrize("bf16", [False, True], ids=["fp32", "bf16 autocast"])
def test_the_plm_step_launches_fewer_kernels_than_transformers(bf16):
    x, (ours, theirs) = batch(), models()
    mine = sum(counted(litebert_step, ours, x, bf16).values())
    reference = sum(counted(transformers_step, theirs, x, bf16).values())
    assert mine < 0.85 * reference, (mine, reference)
