"""Kernels per XLNet permutation-LM forward + backward: litebert's objective step against
transformers' XLNetLMHeadModel loop, on one batch of bench_xlnet.py's data and weights.

A GPU's eager step at small shapes is launch-bound, so the number of kernels it launches is
what a CPU can tell of it. Counted with torch.profiler: the aten operators that do work (an
operator whose work is done by operators under it, and views, are left out), forward and
backward of the model only (the optimizer is the same on both sides), one step after one
untimed step; host syncs (`.item()`, `nonzero`) listed. --bf16: under a CPU bf16 autocast,
whose casts a CUDA autocast makes too. Each side's line ends with its profiled CPU time and
the part of it in GEMMs (mm, addmm, bmm, baddbmm): at shapes where that part is most of the
step and equal on both sides, no count of kernels can make one side much faster.

    python benchmarks/xlnet_kernels.py [--preset xlnet-tiny] [--batch 16] [--bf16] [--data DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections import Counter
from pathlib import Path

import torch
import torch.nn.functional as F
import transformers
from bench_xlnet import IGNORE, load_batches, run_config
from common import data_directory, export_initial, trainer_side

from litebert.objectives.plm_data import perm_mask

VIEWS = {"as_strided", "view", "_unsafe_view", "resolve_conj", "resolve_neg", "empty",
         "empty_strided", "expand", "transpose", "permute", "t", "reshape", "slice", "select",
         "unsqueeze", "squeeze", "alias", "detach", "_reshape_alias", "lift_fresh", "unbind",
         "split", "chunk", "narrow", "split_with_sizes", "_to_copy", "to", "empty_like",
         "result_type", "zeros", "contiguous", "expand_as", "view_as", "flatten", "unflatten",
         "dropout", "clone", "new_zeros", "zeros_like", "new_empty", "new_empty_strided",
         "ones_like", "full_like", "full"}  # no kernel of their own (a copy is under them)
SYNCS = {"item", "_local_scalar_dense", "nonzero", "is_nonzero"}


def kernels(prof) -> tuple[Counter[str], Counter[str]]:
    """(operators that do work, host syncs) of a profile, by name."""
    events = [e for e in prof.events() if e.name.startswith("aten::")]

    def works(e) -> bool:
        return e.name.removeprefix("aten::") not in VIEWS

    def below(e) -> bool:
        return any((c.name.startswith("aten::") and works(c)) or below(c)
                   for c in e.cpu_children)
    work = Counter(e.name for e in events if works(e) and not below(e))
    syncs = Counter(e.name for e in events if e.name.removeprefix("aten::") in SYNCS)
    return work, syncs


GEMMS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")


def gemm_seconds(prof) -> tuple[float, float]:
    """(all operators' self CPU seconds, those of the GEMMs) of a profile."""
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events) / 1e6
    return total, sum(e.self_cpu_time_total for e in events if e.key in GEMMS) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="xlnet-tiny")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=None)
    parser.add_argument("--data", default=None)
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args()
    data = data_directory(args, "none", packing="streams")
    with tempfile.TemporaryDirectory() as tmp:
        cfg = run_config(args, data, str(Path(tmp) / "run"), "fp32", False)
        trainer, _ = trainer_side(cfg, torch.device("cpu"))
        objective, model, reuse = trainer.objective, trainer.model, trainer.train_data.reuse_len
        batch = load_batches(trainer.train_data, trainer.cfg, 1)[0]
        theirs = transformers.XLNetLMHeadModel.from_pretrained(
            export_initial(trainer, Path(tmp) / "initial")).train()
    B, T = batch["input_ids"].shape
    dtype = torch.bfloat16 if args.bf16 else torch.float32
    mems = [torch.zeros(theirs.config.mem_len, B, theirs.config.d_model, dtype=dtype)
            for _ in range(theirs.config.n_layer)]

    def litebert_step() -> None:
        objective.begin_step(0)
        objective.loss_sums(model, batch).sum().backward()

    def transformers_step() -> None:
        order = perm_mask(batch["perm_rank"], batch["is_target"], batch["is_functional"],
                          reuse).float()
        mapping = F.one_hot(batch["target_positions"], T).float() \
            * batch["target_weights"][..., None]
        labels = batch["target_ids"].masked_fill(batch["target_weights"] == 0, IGNORE)
        out = theirs(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                     perm_mask=order, target_mapping=mapping, labels=labels, mems=mems,
                     use_mems=True)
        out.loss.backward()

    for name, step in (("litebert", litebert_step), ("transformers", transformers_step)):
        amp = torch.autocast("cpu", torch.bfloat16) if args.bf16 else contextlib.nullcontext()
        with amp:
            step()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
                step()
        work, syncs = kernels(p)
        total, gemm = gemm_seconds(p)
        print(f"{name}: {sum(work.values())} kernels, host syncs {dict(syncs) or 'none'}; "
              f"most: {', '.join(f'{k} {v}' for k, v in work.most_common(6))}; "
              f"{total:.2f} s of CPU time, {gemm:.2f} s in GEMMs")


if __name__ == "__main__":
    main()
