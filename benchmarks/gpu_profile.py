"""The "profile" check of benchmarks/gpu_check.py: where a pre-training step's GPU time goes.

torch.profiler records 2 steps (after the usual warm-up, compiling included) of each side at
albert-base 32 x 512: litebert compiled with attention full, compiled with attention unpadded,
and transformers' plain loop. For each side, from the trace's kernels:

    top kernels    the 20 with the most GPU time: name, calls, total ms, share of kernel time
    categories     the share of kernel time in each of CATEGORIES, by the name patterns of
                   PATTERNS (first match wins; no match: other)
    kernels/step   kernels launched a step (memcpy and memset included)
    busy           the union of the kernel intervals over the 2 steps' wall time (from the
                   first step's start to the later of the last step's end and the last
                   kernel's): 1 - busy is the time the GPU waited on the host (batch
                   building, launches, syncs)

OUT/profile.md and OUT/profile.json hold them; OUT/trace-<side>.json.gz is the first step's
chrome trace (chrome://tracing or ui.perfetto.dev): the events that began in its window and
the kernels its calls launched. On a CPU (the dry run) the same code profiles CPU activity:
the "kernels" are the operators (aten::...), each counted by its self time (its own, less
the ops it calls), and the same patterns sort them.

The main table gets one row per litebert side: tokens/s during the profile (the profiler
adds its overhead to every side alike), the transformers loop's beside it, busy fraction
and kernels per step in its description.
"""

from __future__ import annotations

import gzip
import json
import time
from collections import defaultdict
from collections.abc import Callable

import bench_pretrain
import torch
from common import export_initial, synchronize
from gpu_rows import Row, Settings, free

PROFILED_STEPS = 2
STEP_LABEL = "profiled step"
TOP = 20
CATEGORIES = ("gemm", "attention", "elementwise", "optimizer", "memcpy", "other")
# (category, lower-case substrings of a kernel's name), tried in order, for the kernels not
# launched inside Optimizer.step (those are the optimizer's, see categorised). Foreach
# kernels first (clipping's norms), then inductor's point-wise / reduction kernels (named
# after the ops they fuse, which may include an attention op's name), then attention (flash:
# FlashAttention,
# fmha: the efficient (cutlass) kernel, cudnn's sdpa kernels; the math backend is GEMMs and a
# softmax, so it lands there), copies, GEMMs (cuBLAS, CUTLASS, inductor's mm templates).
PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("optimizer", ("foreach", "multi_tensor_apply", "lamb", "adam")),
    ("elementwise", ("triton_poi", "triton_per", "triton_red")),
    ("attention", ("flash", "fmha", "attention", "attn", "sdpa", "flex")),
    ("memcpy", ("memcpy", "memset", "aten::copy_", "aten::_to_copy")),
    ("gemm", ("gemm", "cutlass", "cublas", "xmma", "wgmma", "triton_tem", "aten::mm",
              "aten::addmm", "aten::bmm", "aten::baddbmm")),
    ("elementwise", ("elementwise", "vectorized", "unrolled", "reduce", "norm", "softmax",
                     "dropout", "gelu", "add", "mul", "div", "sub", "exp", "tanh", "where",
                     "fill", "masked", "cat", "index", "gather", "scatter", "embedding")),
)
GPU_KERNELS = ("kernel", "gpu_memcpy", "gpu_memset")  # the trace's categories of device work
LAUNCHES = ("cuda_runtime", "cuda_driver")  # host calls that launch them
OPTIMIZER_LABEL = "Optimizer.step"  # torch's record_function around every optimizer.step()


def category(name: str) -> str:
    lower = name.lower()
    for cat, patterns in PATTERNS:
        if any(p in lower for p in patterns):
            return cat
    return "other"


# ---- reading a trace -----------------------------------------------------------------------

def self_times(events: list[dict]) -> list[dict]:
    """CPU ops as kernels: each op with its self time ("self": its duration less its
    children's, on its thread), so that nested ops (aten::linear > aten::addmm > ...) count
    once, and each name where the work happens."""
    by_thread: dict[tuple, list[dict]] = defaultdict(list)
    for e in events:
        by_thread[(e.get("pid"), e.get("tid"))].append({**e, "self": float(e["dur"])})
    ops = []
    for thread in by_thread.values():
        stack: list[dict] = []
        for e in sorted(thread, key=lambda x: (float(x["ts"]), -float(x["dur"]))):
            while stack and float(stack[-1]["ts"]) + float(stack[-1]["dur"]) <= float(e["ts"]):
                stack.pop()
            if stack:
                stack[-1]["self"] -= float(e["dur"])
            stack.append(e)
        ops += thread
    return ops


def kernels_of(events: list[dict], cuda: bool) -> list[dict]:
    """The device's kernels (with "self" their duration), or on a CPU the ops (self_times)."""
    timed_events = [e for e in events if e.get("ph") == "X" and "dur" in e]
    if cuda:
        return [{**e, "self": float(e["dur"])} for e in timed_events
                if e.get("cat") in GPU_KERNELS]
    return self_times([e for e in timed_events if e.get("cat") == "cpu_op"])


def windows(events: list[dict], label: str) -> list[tuple[float, float]]:
    """(start, end) in µs of each record_function range whose name starts with `label`."""
    marks = [e for e in events if e.get("cat") == "user_annotation"
             and str(e.get("name", "")).startswith(label)]
    return sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in marks)


def categorised(events: list[dict], kernels: list[dict]) -> list[str]:
    """Each kernel's category: optimizer when launched (CUDA: its launch call, matched by
    correlation id; CPU: the op itself) inside torch's Optimizer.step range, since a compiled
    update's kernels bear no optimizer's name; else by PATTERNS."""
    launches = {e["args"]["correlation"]: float(e["ts"]) for e in events
                if e.get("cat") in LAUNCHES and "correlation" in e.get("args", {})}
    steps = windows(events, OPTIMIZER_LABEL)
    cats = []
    for k in kernels:
        at = launches.get(k.get("args", {}).get("correlation"), float(k["ts"]))
        inside = any(lo <= at < hi for lo, hi in steps)
        cats.append("optimizer" if inside else category(k["name"]))
    return cats


def busy_us(kernels: list[dict], start: float, end: float) -> float:
    """Length of the union of the kernels' intervals within [start, end]."""
    total, reach = 0.0, start
    for lo, hi in sorted((float(k["ts"]), float(k["ts"]) + float(k["dur"])) for k in kernels):
        lo, hi = max(lo, reach), min(hi, end)
        if hi > lo:
            total, reach = total + hi - lo, hi
    return total


def summary(events: list[dict], cuda: bool) -> dict:
    """Everything profile.md says of one side (see the module docstring)."""
    steps = windows(events, STEP_LABEL)
    start = steps[0][0]
    kernels = [k for k in kernels_of(events, cuda) if float(k["ts"]) >= start]
    end = max([steps[-1][1], *(float(k["ts"]) + float(k["dur"]) for k in kernels)])
    total = sum(k["self"] for k in kernels) or 1.0
    calls: dict[tuple[str, str], int] = defaultdict(int)
    spent: dict[tuple[str, str], float] = defaultdict(float)
    for k, cat in zip(kernels, categorised(events, kernels), strict=True):
        calls[k["name"], cat] += 1
        spent[k["name"], cat] += k["self"]
    shares = dict.fromkeys(CATEGORIES, 0.0)
    for (_, cat), us in spent.items():
        shares[cat] += us / total
    top = [{"name": n, "category": c, "calls": calls[n, c], "ms": spent[n, c] / 1e3,
            "share": spent[n, c] / total}
           for n, c in sorted(spent, key=spent.__getitem__, reverse=True)[:TOP]]
    return {"steps": len(steps), "wall_ms": (end - start) / 1e3,
            "kernel_ms": total / 1e3, "kernels_per_step": len(kernels) / len(steps),
            "busy_fraction": busy_us(kernels, start, end) / (end - start),
            "categories": shares, "top_kernels": top}


def first_step(trace: dict) -> dict:
    """The trace cut to the first profiled step: metadata, the events that began in its
    window, and the device work its calls launched (by correlation id)."""
    events = trace["traceEvents"]
    lo, hi = windows(events, STEP_LABEL)[0]

    def inside(e: dict) -> bool:
        return "ts" in e and lo <= float(e["ts"]) < hi

    launched = {e["args"]["correlation"] for e in events
                if inside(e) and "correlation" in e.get("args", {})}
    kept = [e for e in events if e.get("ph") == "M" or inside(e)
            or e.get("args", {}).get("correlation") in launched]
    return {**trace, "traceEvents": kept}


# ---- profiling the sides -------------------------------------------------------------------

def profiled(step: Callable[[], int], s: Settings, side: str) -> dict:
    """`warmup` steps, then PROFILED_STEPS under torch.profiler: the side's summary, with
    tokens/s over the profiled wall time; its first step's trace goes to OUT (or work)."""
    for _ in range(s.warmup):
        step()
    synchronize(s.device)
    cuda = s.device.type == "cuda"
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    tokens = 0
    with torch.profiler.profile(activities=activities) as prof:
        for i in range(PROFILED_STEPS):
            with torch.profiler.record_function(f"{STEP_LABEL} {i}"):
                tokens += step()
        synchronize(s.device)
    raw = s.work / f"trace-{side}.json"
    prof.export_chrome_trace(str(raw))
    trace = json.loads(raw.read_text())
    raw.unlink()
    result = summary(trace["traceEvents"], cuda)
    result["tokens_per_s"] = tokens / (result["wall_ms"] / 1e3)
    out = s.out or s.work
    out.mkdir(parents=True, exist_ok=True)
    with gzip.open(out / f"trace-{side}.json.gz", "wt") as f:
        json.dump(first_step(trace), f)
    return result


def profile_sides(s: Settings, mlm_config: Callable[..., object]) -> dict[str, dict]:
    """litebert compiled (attention full, unpadded), then transformers' loop from the same
    initial weights; `mlm_config` is gpu_checks.mlm_config (the mlm rows' run)."""
    preset, batch = s.size("albert-base", "tiny"), s.size(32, 2)
    initial = s.work / "initial-profile"
    results, cfg = {}, None
    for attention in ("full", "unpadded"):
        cfg = mlm_config(s, "sop", preset, batch, f"profile-{attention}", True,
                         attention=attention)
        trainer, step = bench_pretrain.litebert_side(cfg, s.device)
        if not initial.exists():
            export_initial(trainer, initial)
        results[f"litebert-{attention}"] = profiled(step, s, f"litebert-{attention}")
        del trainer, step
        free()
    step = bench_pretrain.transformers_side(initial, cfg, s.device)
    results["transformers"] = profiled(step, s, "transformers")
    del step
    free()
    return results


def side_lines(side: str, r: dict) -> list[str]:
    shares = ", ".join(f"{c} {r['categories'][c]:.1%}" for c in CATEGORIES)
    lines = [f"## {side}", "",
             f"{r['tokens_per_s']:,.0f} tok/s under the profiler; {r['steps']} steps in "
             f"{r['wall_ms']:.1f} ms, kernels {r['kernel_ms']:.1f} ms; GPU busy "
             f"{r['busy_fraction']:.1%}; {r['kernels_per_step']:.0f} kernels a step", "",
             f"kernel time: {shares}", "", "| kernel | category | calls | ms | share |",
             "|---|---|---|---|---|"]
    lines += [f"| `{k['name'][:160]}` | {k['category']} | {k['calls']} | {k['ms']:.2f} | "
              f"{k['share']:.1%} |" for k in r["top_kernels"]]
    return lines + [""]


def write_profile(results: dict[str, dict], s: Settings) -> None:
    if s.out is None:
        return
    record = {"device": str(s.device), "precision": s.precision, "dry_run": s.dry,
              "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
              "profiled_steps": PROFILED_STEPS, "warmup": s.warmup,
              "patterns": [[c, list(p)] for c, p in PATTERNS], "sides": results}
    (s.out / "profile.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = [f"# profile: {s.size('albert-base 32', 'tiny 2')} x the sop data's length, "
             f"{s.device}, {s.precision}, {PROFILED_STEPS} steps after {s.warmup} warm-up",
             "", "Categories by kernel name (benchmarks/gpu_profile.py PATTERNS, first match): "
             + "; ".join(f"{c}: {', '.join(p)}" for c, p in PATTERNS), ""]
    for side, r in results.items():
        lines += side_lines(side, r)
    (s.out / "profile.md").write_text("\n".join(lines))


def brief(r: dict) -> str:
    return f"busy {r['busy_fraction']:.0%}, {r['kernels_per_step']:.0f} kernels/step"


def profile_check(s: Settings, mlm_config: Callable[..., object]) -> list[Row]:
    results = profile_sides(s, mlm_config)
    write_profile(results, s)
    theirs = results["transformers"]
    return [Row("profile", f"compiled {attention}",
                f"{brief(results[f'litebert-{attention}'])}; transformers {brief(theirs)}; "
                f"under the profiler, see profile.md",
                litebert=results[f"litebert-{attention}"]["tokens_per_s"],
                transformers=theirs["tokens_per_s"]) for attention in ("full", "unpadded")]
