"""Activation memory per sequence of each lite-vs-bert row, measured from the peak resident
memory of a fresh process, and the largest micro-batch that fits beside what a rank holds.

Method (fp32, on this machine's CPU):
1. One measurement is one child process, forked from a server that imported torch and this
   module (children.py), so its peak is its own: nothing of the parent's heap. The
   child fixes glibc's mmap threshold at 64 KiB (mallopt), so every tensor's block is mapped
   alone and unmapped when freed and RSS follows the bytes alive (_allocate_exactly says why),
   uses every CPU this process may use (litebert.cpus.usable_cpus), builds the row with
   rows.fast_model, allocates every parameter's gradient (zeros) so gradients sit in the
   baseline and not in the peak, runs one warm-up forward + backward at batch 1 and 16 tokens,
   zeroes the gradients in place, collects garbage and hands the heap's free pages back
   (malloc_trim).
2. It reads the baseline resident set (VmRSS), resets the peak by writing "5" to
   /proc/self/clear_refs (Linux >= 4.0 sets VmHWM to the current RSS), runs ONE training
   forward + backward of the pre-training loss on rows.synthetic_batch(config, B, T), and
   reads the peak (VmHWM) twice: when backward reaches the embeddings' output (a gradient
   hook: the layers' phase, every activation and its gradient come and gone) and at the end
   of the step. activation_bytes = step peak - baseline (layers_activation_bytes: the
   layers' phase's). Where clear_refs cannot be written, the peak is getrusage's ru_maxrss,
   which counts the whole life of the process (the build included): "peak" says which.
3. It also counts the bytes autograd saves for backward during that step ("saved_bytes":
   saved_tensors_hooks, each storage once, the parameters' own storages left out), an
   independent estimate to judge the RSS peak against.
4. activation_memory measures a row at a few micro-batch sizes. The slope over the batch of
   the layers' phase is the bytes per sequence, its intercept the fixed bytes of a step
   (the fused q/k/v weights each forward concatenates, shared weights' gradients held
   through backward, the tied decoder's gradient). The step's own peak is the larger of
   that phase and a tail, the embeddings' dense gradients at the end of backward (bert-base:
   ~280 MB): a maximum of two lines is no line, and at shallow depths the tail sets the
   peak, so the tail is reported apart ("tail_bytes").
5. full_depth measures at shallow depths (SHALLOW: 2 and 3 layers) and extrapolates to the
   row's full depth: layers have identical shapes, so the layers' phase grows linearly with
   depth once a shared layer is used twice. activation_plan says which way a row is
   measured (the xlarge and xxlarge rows this way only); where the full depth is measured,
   measure_row extrapolates as well and reports the extrapolation's error.

A child's failure (an exception, or death without a result, e.g. killed for memory) becomes
a ValueError sentence in the parent naming the row, tokens, batch and depth.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import resource
import time
import traceback
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from litebert.config import PRESETS, ModelConfig
from litebert.cpus import usable_cpus
from litebert.model.heads import EncoderForPreTraining
from litebert.studies.lite_vs_bert.children import child_context
from litebert.studies.lite_vs_bert.rows import fast_model, row_config, synthetic_batch

log = logging.getLogger("litebert")

MB = 2 ** 20
PAGE = resource.getpagesize()
WARMUP_LENGTH = 16
CHILD_TIMEOUT_S = 1800.0  # a measurement that takes longer is stuck, not slow
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
MMAP_THRESHOLD = 64 * 1024  # blocks this large or larger are mapped and unmapped alone
# The depths full_depth extrapolates from. Not 1: a layer shared across depth (ALBERT) holds
# its weights' gradient from its last use to its first through backward once it is used
# twice, a fixed cost that 1 layer lacks (albert-base: 25 MB more from 1 to 2 layers, none
# from 2 to 12).
SHALLOW = (2, 3)

# How each row is measured. "full": at its own depth (and extrapolated as well, which
# validates the extrapolation); its largest step, bert-large at 512 tokens and batch 2, takes
# ~20 s and peaks at ~7.4 GB here (2.9 GB of weights, gradients and torch, 0.6 GB a step,
# 2 GB a sequence). "shallow": extrapolated from SHALLOW's depths only; the xlarge and
# xxlarge rows' full depth at 512 tokens would take minutes a step and up to ~18 GB, over
# the ~8 GB one job may take on the 24 GB machine.
PLANS = {
    "albert-base": "full", "albert-large": "full",
    "bert-base": "full", "bert-large": "full",
    "albert-xlarge": "shallow", "albert-xxlarge": "shallow", "bert-xlarge": "shallow",
}


def activation_plan(name: str) -> str:
    """"full" (measured at the row's depth) or "shallow" (extrapolated from SHALLOW's
    depths) for row `name` (PLANS says why)."""
    if name not in PLANS:
        raise ValueError(f"row {name!r} has no activation plan; rows with one: "
                         f"{', '.join(PLANS)}")
    return PLANS[name]


# ---- in the child -------------------------------------------------------------------------


def _status_bytes(field: str) -> int:
    """A `kB` field of /proc/self/status (VmRSS, VmHWM) in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"/proc/self/status has no {field}")


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def _reset_peak() -> str:
    """Reset VmHWM to the current RSS; how the peak will be read."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return "VmHWM after clear_refs"
    except OSError:
        return "ru_maxrss"


def _libc() -> ctypes.CDLL | None:
    """The C library when it is glibc (mallopt, malloc_trim), else None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.mallopt, libc.malloc_trim  # noqa: B018 - glibc has both
    except (OSError, AttributeError, TypeError):  # musl, macOS: no such calls
        return None
    return libc


def _allocate_exactly(libc: ctypes.CDLL | None) -> bool:
    """Make glibc map every block of MMAP_THRESHOLD bytes or more on its own and unmap it
    when freed, so that RSS follows the bytes alive (False where it cannot). By default the
    threshold grows up to 32 MB as blocks are freed, and blocks below it come from a heap
    that keeps its freed pages resident: a step's peak RSS then depends on where its tensors
    happened to land (albert-base at 128 tokens gave 17, 32 and 15 MB a sequence at 1, 2
    and 3 layers, where the bytes autograd saves are 9, 15 and 21 MB)."""
    if libc is None:
        return False
    fixed = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)  # a set threshold stays put
    trims = libc.mallopt(M_TRIM_THRESHOLD, MMAP_THRESHOLD)  # and the heap's top shrinks
    return bool(fixed and trims)


def _peak_bytes(how: str) -> int:
    if how == "ru_maxrss":
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux
    return _status_bytes("VmHWM")


def depth_overrides(name: str, layers: int | None) -> dict[str, int]:
    """The overrides that give row `name` `layers` layers. Its sharing stays: ALBERT's one
    group is shared by every layer, BERT's sharing "none" gives each layer its own weights;
    a preset with one group per layer keeps one per layer."""
    if layers is None:
        return {}
    preset = PRESETS.get(name, {})
    full = preset.get("num_hidden_layers")
    groups = preset.get("num_hidden_groups", 1)
    overrides = {"num_hidden_layers": layers}
    if groups == full:
        overrides["num_hidden_groups"] = layers
    return overrides


class _SavedBytes:
    """Counts the storages autograd saves for backward, each once, parameters left out."""

    def __init__(self, model: torch.nn.Module):
        self.skip = {p.untyped_storage().data_ptr() for p in model.parameters()}
        self.seen: dict[int, int] = {}  # storage address -> bytes

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        address = storage.data_ptr()
        if address not in self.skip:
            self.seen[address] = storage.nbytes()
        return t

    @property
    def total(self) -> int:
        return sum(self.seen.values())


def _step(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> None:
    out = model(**batch)
    out.loss.backward()


def _prepared(name: str, layers: int | None,
              overrides: dict[str, Any]) -> tuple[EncoderForPreTraining, ModelConfig]:
    """The row's model in training mode with every gradient allocated, after one warm-up
    step at batch 1 and WARMUP_LENGTH tokens, and its config."""
    config = row_config(name, **{**overrides, **depth_overrides(name, layers)})
    model = fast_model(config)
    model.train()
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    _step(model, synthetic_batch(config, 1, WARMUP_LENGTH))
    model.zero_grad(set_to_none=False)
    return model, config


def _measured_step(model: EncoderForPreTraining, inputs: dict[str, torch.Tensor],
                   how: str) -> dict[str, Any]:
    """One training step from a reset peak: the peak when backward reaches the embeddings
    (every layer's activations and their gradients have come and gone), the step's peak, the
    bytes saved for backward and the seconds."""
    saved = _SavedBytes(model)
    at_embeddings: list[int] = []

    def hold(module, args, out):  # the hook fires once backward has been through the layers
        out.register_hook(lambda grad: at_embeddings.append(_peak_bytes(how)))

    handle = model.backbone.embeddings.register_forward_hook(hold)
    start = time.perf_counter()
    with torch.autograd.graph.saved_tensors_hooks(saved.pack, lambda t: t):
        out = model(**inputs)
    out.loss.backward()
    seconds = time.perf_counter() - start
    handle.remove()
    return {"layers_peak_bytes": at_embeddings[0], "peak_bytes": _peak_bytes(how),
            "saved_bytes": saved.total, "seconds": seconds}


def _measure(name: str, length: int, batch: int, layers: int | None,
             overrides: dict[str, Any]) -> dict[str, Any]:
    """One measurement, in a fresh process (module docstring, steps 1-3)."""
    libc = _libc()
    exact = _allocate_exactly(libc)
    torch.set_num_threads(usable_cpus())
    model, config = _prepared(name, layers, overrides)
    inputs = synthetic_batch(config, batch, length)
    gc.collect()
    if libc is not None:  # the build's and the warm-up's freed heap pages go back too
        libc.malloc_trim(0)
    baseline = _resident_bytes()
    how = _reset_peak()
    step = _measured_step(model, inputs, how)
    return {"baseline_bytes": baseline, **step,
            "activation_bytes": step["peak_bytes"] - baseline,
            "layers_activation_bytes": step["layers_peak_bytes"] - baseline,
            "peak": how, "exact_allocation": exact, "layers": config.num_hidden_layers}


def _child(conn, name: str, length: int, batch: int, layers: int | None,
           overrides: dict[str, Any]) -> None:
    """The child's entry point: the result dict, or {"error": ...}, sent through `conn`."""
    try:
        result: dict[str, Any] = _measure(name, length, batch, layers, overrides)
    except Exception as e:  # every failure goes back to the parent as a sentence
        result = {"error": f"{type(e).__name__}: {e}",
                  "trace": traceback.format_exc(limit=-3)}
    conn.send(result)
    conn.close()


# ---- in the parent ------------------------------------------------------------------------


def _where(name: str, length: int, batch: int, layers: int | None) -> str:
    depth = "its full depth" if layers is None else f"{layers} layers"
    return f"row {name!r} at {length} tokens, batch {batch}, {depth}"


def measure_once(name: str, length: int, batch: int, layers: int | None = None,
                 overrides: Mapping[str, Any] | None = None,
                 timeout_s: float = CHILD_TIMEOUT_S) -> dict[str, Any]:
    """One measurement in a fresh child process (children.py): the child's dict
    (module docstring), of the row with `overrides` (rows.row_config's) and `layers` layers
    (None: its depth). Its failure is a ValueError naming the row, tokens, batch and depth."""
    ctx = child_context(__name__)
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, daemon=True,
                        args=(send, name, length, batch, layers, dict(overrides or {})))
    child.start()
    send.close()  # the parent's copy: EOF on `receive` once the child's end closes
    try:
        if not receive.poll(timeout_s):
            child.kill()
            raise ValueError(f"measuring activations of {_where(name, length, batch, layers)} "
                             f"took over {timeout_s:.0f} s; it was stopped")
        result = receive.recv()
    except EOFError:
        child.join()
        raise ValueError(f"measuring activations of {_where(name, length, batch, layers)} "
                         f"failed: the child process died (exit code {child.exitcode}) "
                         "without a result, e.g. killed for memory") from None
    finally:
        receive.close()
    child.join()
    if "error" in result:
        raise ValueError(f"measuring activations of {_where(name, length, batch, layers)} "
                         f"failed: {result['error']}")
    log.info("lite-vs-bert activations: %s T=%d B=%d L=%d: %.1f MB (step peak %.1f MB) in "
             "%.1f s", name, length, batch, result["layers"],
             result["layers_activation_bytes"] / MB, result["activation_bytes"] / MB,
             result["seconds"])
    return result


def _line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares slope and intercept of ys over xs (the line itself for two points)."""
    if len(set(xs)) < 2:
        raise ValueError(f"a slope needs two different points; got {list(xs)}")
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    slope = (sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
             / sum((x - mx) ** 2 for x in xs))
    return slope, my - slope * mx


def _fit(points: Sequence[Mapping[str, Any]], key: str) -> tuple[float, float]:
    """Slope and intercept of points[key] over the micro-batch."""
    return _line([p["batch"] for p in points], [p[key] for p in points])


def _tail(points: Sequence[Mapping[str, Any]]) -> float:
    """The highest step peak above the baseline that came after the layers' phase (the
    embeddings' dense gradients at the end of backward), 0 when the layers' peak was always
    the step's."""
    return max([p["activation_bytes"] for p in points
                if p["peak_bytes"] > p["layers_peak_bytes"]], default=0)


def activation_memory(name: str, length: int, batches: Sequence[int] = (1, 2),
                      layers: int | None = None,
                      overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Row `name` (with row_config `overrides`) at `length` tokens, one fresh process per
    micro-batch in `batches`, at its full depth or with `layers` layers: {"row", "length",
    "layers", "points", "per_sequence_bytes" and "fixed_bytes" (slope and intercept over
    the batch of the layers' phase), "step_per_sequence_bytes" and "step_fixed_bytes" (of
    the whole step's peak), "tail_bytes" (_tail), "saved_per_sequence_bytes"}."""
    if len(set(batches)) < 2:
        raise ValueError(f"activation_memory needs two different batch sizes; got "
                         f"{list(batches)}")
    points = [{"batch": b, **measure_once(name, length, b, layers, overrides)}
              for b in batches]
    per_sequence, fixed = _fit(points, "layers_activation_bytes")
    step_per_sequence, step_fixed = _fit(points, "activation_bytes")
    return {"row": name, "length": length, "layers": points[0]["layers"], "points": points,
            "per_sequence_bytes": per_sequence, "fixed_bytes": fixed,
            "step_per_sequence_bytes": step_per_sequence, "step_fixed_bytes": step_fixed,
            "tail_bytes": _tail(points),
            "saved_per_sequence_bytes": _fit(points, "saved_bytes")[0]}


def full_depth(name: str, length: int, shallow: Sequence[int] = SHALLOW,
               batches: Sequence[int] = (1, 2),
               overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Row `name` at its full depth L, extrapolated from activation_memory at the `shallow`
    depths: {"row", "length", "layers" (L), "points" (the extrapolated bytes at each
    batch), "per_sequence_bytes", "fixed_bytes", "tail_bytes" (the largest measured: it does
    not grow with depth), "saved_per_sequence_bytes", "per_layer_bytes" (per sequence),
    "per_layer_fixed_bytes", "method", "measured" (the shallow results)}."""
    if len(set(shallow)) < 2:
        raise ValueError(f"full_depth needs two different shallow depths; got {list(shallow)}")
    depth = row_config(name, **(overrides or {})).num_hidden_layers
    measured = [activation_memory(name, length, batches, k, overrides) for k in shallow]

    def at_depth(key: str) -> tuple[float, float]:  # (at L, per layer)
        per_layer, at_0 = _line([m["layers"] for m in measured], [m[key] for m in measured])
        return at_0 + depth * per_layer, per_layer

    per_sequence, per_layer = at_depth("per_sequence_bytes")
    fixed, per_layer_fixed = at_depth("fixed_bytes")
    tail = max(m["tail_bytes"] for m in measured)
    return {"row": name, "length": length, "layers": depth,
            "points": [{"batch": b, "layers_activation_bytes": fixed + b * per_sequence,
                        "activation_bytes": max(fixed + b * per_sequence, tail)}
                       for b in batches],
            "per_sequence_bytes": per_sequence, "fixed_bytes": fixed, "tail_bytes": tail,
            "saved_per_sequence_bytes": at_depth("saved_per_sequence_bytes")[0],
            "per_layer_bytes": per_layer, "per_layer_fixed_bytes": per_layer_fixed,
            "method": f"extrapolated from L={','.join(map(str, shallow))}",
            "measured": measured}


def largest_micro_batch(capacity_bytes: int, held_bytes: int, per_sequence_bytes: float,
                        fixed_bytes: float, tail_bytes: float = 0.0) -> int:
    """The largest B with held + fixed + B * per_sequence <= capacity (and held + tail <=
    capacity: the end of backward must fit too); 0 when not even one sequence fits."""
    if per_sequence_bytes <= 0:
        raise ValueError(f"per_sequence_bytes must be positive; got {per_sequence_bytes}")
    if held_bytes + tail_bytes > capacity_bytes:
        return 0
    room = capacity_bytes - held_bytes - fixed_bytes
    return max(int(room // per_sequence_bytes), 0)


def _measure_length(name: str, length: int, check: bool) -> dict[str, Any]:
    """Row `name` at `length` tokens as activation_plan says; a "full" one is, when `check`,
    also extrapolated from SHALLOW's depths ("extrapolated"), with the relative error of its
    per-sequence bytes against the measured ones ("extrapolation_error")."""
    plan = activation_plan(name)
    if plan == "shallow":
        return full_depth(name, length)
    result = activation_memory(name, length)
    if check:
        extrapolated = full_depth(name, length)
        result["extrapolated"] = extrapolated
        result["extrapolation_error"] = (extrapolated["per_sequence_bytes"]
                                         / result["per_sequence_bytes"] - 1)
    return result


def measure_row(name: str, lengths: Sequence[int] = (128, 512),
                check_at: Sequence[int] = (512,),
                overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Row `name` at each of `lengths` (_measure_length; the extrapolation checked at the
    lengths of `check_at`, where its error is not the noise of 128 tokens' small per-layer
    differences): {"row", "plan", "lengths": {"128": {...}, "512": {...}}}. With
    `overrides` (a shrunk row) every length is measured at the row's depth, unchecked."""
    if overrides:
        return {"row": name, "plan": "full", "lengths": {
            str(t): activation_memory(name, t, overrides=overrides) for t in lengths}}
    plan = activation_plan(name)
    return {"row": name, "plan": plan,
            "lengths": {str(t): _measure_length(name, t, t in check_at) for t in lengths}}
