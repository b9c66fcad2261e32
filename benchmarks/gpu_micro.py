"""The "micro" check of benchmarks/gpu_check.py: the pre-training step's GEMMs and its
attention timed alone, so a step's MFU can be set against what its parts reach on the card.

(a) GEMMs: each linear layer of albert-base's and bert-base's step as F.linear at M = the
real tokens of the data's first batch (about 10,200 of 32 x 512) and at the padded M (every
position, 16,384): q/k/v fused (3H x H), the output projection (H x H), FFN in (I x H) and
out (H x I), and the MLM head's dense and decoder at the batch's masked count. Forward, and
forward + backward (input and weight gradients: 3x the forward's FLOPs).

(b) Attention at B x heads x T x hd = 32 x 12 x 512 x 64 (the data's batch, albert-base's
heads) under each SDPA backend (sdpa_kernel: flash, efficient, cudnn, math) without a mask,
with a boolean key-padding mask and with an additive float mask; varlen_attn on the same
rows unpadded; compiled flex_attention with a key-padding BlockMask. TFLOP/s count real
query-key pairs only (4 x hd x heads x sum of squared row lengths forward, 3x that forward +
backward), so the cases compare by time: "no mask" computes the padding too (and a wrong
answer); it is the full rows' cost, the floor a mask adds to.

A case a backend cannot run is a line saying why (the error's first line, and the first
warning SDPA gave, which names the reason), never a crash. Everything goes to OUT/micro.md
and OUT/micro.json; the main table gets a few summary rows. The dry run (CPU, fp32) runs
every line at the dry data's tiny shapes.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from gpu_rows import Row, Settings, timed
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from litebert.data.loader import PretrainingDataset
from litebert.padding import real_tokens
from litebert.train.compiling import BACKEND_ENV

try:
    from torch.nn.attention.varlen import varlen_attn
except ImportError:
    varlen_attn = None  # type: ignore[assignment]

# (name, H, I, head dense (out, in), decoder in): albert-base factorises the embedding (E 128)
MODELS = {"albert-base": (768, 3072, (128, 768), 128),
          "bert-base": (768, 3072, (768, 768), 768)}
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}


@dataclass
class Case:
    """One timed line of micro.md: `tflops` None (and `status` the reason) when it failed."""

    group: str
    name: str
    shape: str
    passes: str  # "fwd" or "fwd+bwd"
    ms: float | None = None
    tflops: float | None = None
    of_peak: float | None = None
    status: str = "ok"


@dataclass
class Batch:
    """What the micro-benchmarks take of the data's first batch."""

    lengths: list[int]  # real tokens of each row
    width: int  # T
    masked: int  # positions the MLM head predicts

    @property
    def real(self) -> int:
        return sum(self.lengths)


def shape_text(shape: tuple[int, ...], *names: str) -> str:
    """"32 x 12 x 512 x 64", or with names "M 10200 x N 2304 x K 768"."""
    return " x ".join(f"{n} {d}".strip() for n, d in zip(names or ("",) * len(shape), shape,
                                                         strict=True))


def first_batch(s: Settings) -> Batch:
    """The sop data's first batch at the check's batch size (32, dry 2)."""
    data = PretrainingDataset(s.data / "sop", seed=0)
    batch = data.collate([data[i] for i in range(s.size(32, 2))])
    mask = real_tokens(batch)  # (B, T)
    return Batch([int(n) for n in mask.sum(1)], mask.shape[1],
                 int(batch["masked_weights"].sum()))


def why(err: Exception, caught: list) -> str:
    """The error's first line, and the first warning (SDPA says there why a kernel refused)."""
    text = str(err).strip().splitlines()
    line = f"{type(err).__name__}: {text[0] if text else ''}"
    if caught:
        line += f" ({str(caught[0].message).strip().splitlines()[0]})"
    return line[:300]


def measure(s: Settings, case: Case, op: Callable[[], None], flops: float) -> Case:
    """`op` timed by gpu_rows.timed (each timed step runs it `reps` times); its failure, at
    any point, becomes the case's status."""
    reps = s.size(10, 1)

    def step() -> int:
        for _ in range(reps):
            op()
        return reps

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            per_s = timed(step, s).per_s  # ops a second
        except Exception as err:  # a backend that cannot run this case: its reason
            case.status = why(err, caught)
            return case
    peak = s.peak()
    case.ms, case.tflops = 1e3 / per_s, flops * per_s / 1e12
    case.of_peak = case.tflops / peak if peak else None
    return case


# ---- (a) GEMMs -----------------------------------------------------------------------------

def gemm_shapes(model: str, tokens: int, masked: int) -> dict[str, tuple[int, int, int]]:
    """name -> (M, N, K) of the step's linear layers: y (M, N) = x (M, K) @ W (N, K)^T."""
    H, inner, (dense_out, dense_in), decoder_in = MODELS[model]
    vocab = 30_000
    return {"qkv": (tokens, 3 * H, H), "attention out": (tokens, H, H),
            "ffn in": (tokens, inner, H), "ffn out": (tokens, H, inner),
            "head dense": (masked, dense_out, dense_in), "decoder": (masked, vocab, decoder_in)}


def gemm_op(mnk: tuple[int, int, int], backward: bool, s: Settings) -> Callable[[], None]:
    M, N, K = mnk
    dtype = torch.bfloat16 if s.precision == "bf16" else torch.float32
    x = torch.randn(M, K, device=s.device, dtype=dtype, requires_grad=backward)
    w = torch.randn(N, K, device=s.device, dtype=dtype, requires_grad=backward)
    grad = torch.randn(M, N, device=s.device, dtype=dtype)

    def op() -> None:
        y = F.linear(x, w)  # (M, N)
        if backward:  # both gradients, none accumulated (.grad would add a kernel)
            torch.autograd.grad(y, (x, w), grad)
    return op


def gemm_cases(s: Settings, batch: Batch) -> list[Case]:
    models = list(MODELS) if not s.dry else ["albert-base"]  # one is enough to run each line
    cases = []
    for model in models:
        for label, tokens in (("real", batch.real), ("padded", len(batch.lengths) * batch.width)):
            for name, mnk in gemm_shapes(model, tokens, batch.masked).items():
                if s.dry:  # the CPU's seconds: the decoder's vocabulary cut
                    mnk = (mnk[0], min(mnk[1], 512), mnk[2])
                for backward in (False, True):
                    case = Case(f"gemm {model} {label} M", name, shape_text(mnk, "M", "N", "K"),
                                "fwd+bwd" if backward else "fwd")
                    flops = 2 * mnk[0] * mnk[1] * mnk[2] * (3 if backward else 1)
                    cases.append(measure(s, case, gemm_op(mnk, backward, s), flops))
    return cases


# ---- (b) attention -------------------------------------------------------------------------

def qkv(s: Settings, shape: tuple[int, ...], backward: bool) -> list[torch.Tensor]:
    dtype = torch.bfloat16 if s.precision == "bf16" else torch.float32
    return [torch.randn(shape, device=s.device, dtype=dtype, requires_grad=backward)
            for _ in range(3)]


def run_attention(fn: Callable[..., torch.Tensor], tensors: list[torch.Tensor],
                  backward: bool, **kwargs) -> Callable[[], None]:
    """q, k, v through `fn`, and with `backward` their gradients (out has q's shape)."""
    grad = torch.ones_like(tensors[0]).detach()

    def op() -> None:
        out = fn(*tensors, **kwargs)
        if backward:
            torch.autograd.grad(out, tensors, grad)
    return op


def padding_masks(batch: Batch, device: torch.device, dtype: torch.dtype) -> dict:
    """None, the (B, 1, 1, T) bool key-padding mask, and the same as an additive float mask."""
    t = torch.arange(batch.width, device=device)
    keep = t[None, :] < torch.tensor(batch.lengths, device=device)[:, None]  # (B, T)
    additive = torch.zeros(keep.shape, device=device, dtype=dtype)
    additive = additive.masked_fill(~keep, torch.finfo(dtype).min)
    return {"no mask": None, "bool mask": keep[:, None, None, :],
            "float mask": additive[:, None, None, :]}


def sdpa_cases(s: Settings, batch: Batch, heads: int, hd: int) -> list[Case]:
    shape = (len(batch.lengths), heads, batch.width, hd)  # (B, nh, T, hd)
    flops = 4 * hd * heads * sum(n * n for n in batch.lengths)
    cases = []
    for backward in (False, True):
        tensors = qkv(s, shape, backward)
        masks = padding_masks(batch, s.device, tensors[0].dtype)
        for backend, kind in BACKENDS.items():
            for mask_name, mask in masks.items():
                case = Case("attention sdpa", f"{backend}, {mask_name}", shape_text(shape),
                            "fwd+bwd" if backward else "fwd")
                op = run_attention(F.scaled_dot_product_attention, tensors, backward,
                                   attn_mask=mask)
                with sdpa_kernel(kind):
                    cases.append(measure(s, case, op, flops * (3 if backward else 1)))
    return cases


def varlen_cases(s: Settings, batch: Batch, heads: int, hd: int) -> list[Case]:
    """varlen_attn on the real tokens, (N, nh, hd), one sequence a row."""
    flops = 4 * hd * heads * sum(n * n for n in batch.lengths)
    ends = torch.tensor([0, *batch.lengths], device=s.device).cumsum(0, dtype=torch.int32)
    cases = []
    for backward in (False, True):
        case = Case("attention varlen", "varlen_attn", f"{batch.real} x {heads} x {hd}",
                    "fwd+bwd" if backward else "fwd")
        if varlen_attn is None:
            case.status = f"torch {torch.__version__} has no torch.nn.attention.varlen"
            cases.append(case)
            continue
        op = run_attention(varlen_attn, qkv(s, (batch.real, heads, hd), backward), backward,
                           cu_seq_q=ends, cu_seq_k=ends, max_q=batch.width,
                           max_k=batch.width)
        cases.append(measure(s, case, op, flops * (3 if backward else 1)))
    return cases


def flex_cases(s: Settings, batch: Batch, heads: int, hd: int) -> list[Case]:
    """flex_attention compiled (the dry run's backend from LITEBERT_COMPILE_BACKEND, like
    the rest of the dry run) with a BlockMask of the keys within each row's length."""
    shape = (len(batch.lengths), heads, batch.width, hd)
    flops = 4 * hd * heads * sum(n * n for n in batch.lengths)
    lengths = torch.tensor(batch.lengths, device=s.device)

    def key_padding(b, h, q, k):
        return k < lengths[b]

    compiled = torch.compile(flex_attention, dynamic=False,
                             backend=os.environ.get(BACKEND_ENV, "inductor"))
    cases = []
    for backward in (False, True):
        case = Case("attention flex", "flex_attention, key-padding BlockMask",
                    shape_text(shape), "fwd+bwd" if backward else "fwd")
        try:
            block = create_block_mask(key_padding, shape[0], None, shape[2], shape[2],
                                      device=s.device)
        except Exception as err:  # the mask itself cannot be built here
            case.status = why(err, [])
            cases.append(case)
            continue
        op = run_attention(compiled, qkv(s, shape, backward), backward, block_mask=block)
        cases.append(measure(s, case, op, flops * (3 if backward else 1)))
    return cases


# ---- the files and the rows ----------------------------------------------------------------

def summary_rows(cases: list[Case], s: Settings) -> list[Row]:
    """The main table's lines: each GEMM group's forward + backward as one rate (all its
    FLOPs over all its time), and the fastest attention of each group, forward + backward."""
    rows = []
    for group in dict.fromkeys(c.group for c in cases):
        done = [c for c in cases if c.group == group and c.passes == "fwd+bwd" and c.tflops]
        if not done:
            continue
        if group.startswith("gemm"):
            flops = sum(c.tflops * c.ms for c in done)  # TFLOP/s x ms: FLOPs / 1e9
            tflops, what = flops / sum(c.ms for c in done), f"{len(done)} GEMMs, all together"
        else:
            best = max(done, key=lambda c: c.tflops or 0.0)
            tflops, what = best.tflops, f"fastest: {best.name} ({best.ms:.3g} ms)"
        peak = s.peak()
        rows.append(Row("micro", f"{group} fwd+bwd", f"{what}; every case in micro.md",
                        unit="TFLOP/s", litebert=tflops, mfu=tflops / peak if peak else None))
    return rows


def write_micro(cases: list[Case], batch: Batch, s: Settings) -> None:
    if s.out is None:
        return
    s.out.mkdir(parents=True, exist_ok=True)
    record = {"device": str(s.device), "precision": s.precision, "peak_tflops": s.peak(),
              "batch": asdict(batch) | {"real": batch.real}, "torch": torch.__version__,
              "date": time.strftime("%Y-%m-%d"), "cases": [asdict(c) for c in cases]}
    (s.out / "micro.json").write_text(json.dumps(record, indent=2) + "\n")

    def number(x: float | None, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    lines = [f"micro-benchmarks, {s.device}, {s.precision}, peak {s.peak()} TFLOP/s; the "
             f"data's first batch: {len(batch.lengths)} x {batch.width}, {batch.real} real "
             f"tokens, {batch.masked} masked", "",
             "| group | case | shape | pass | ms | TFLOP/s | of peak | status |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {c.group} | {c.name} | {c.shape} | {c.passes} | {number(c.ms, '.3g')} | "
              f"{number(c.tflops, '.3g')} | {number(c.of_peak, '.1%')} | {c.status} |"
              for c in cases]
    (s.out / "micro.md").write_text("\n".join(lines) + "\n")


def micro_check(s: Settings) -> list[Row]:
    """Every case of the module docstring, written to OUT/micro.md and .json."""
    batch = first_batch(s)
    heads, hd = s.size((12, 64), (2, 16))
    cases = gemm_cases(s, batch)
    cases += sdpa_cases(s, batch, heads, hd) + varlen_cases(s, batch, heads, hd)
    cases += flex_cases(s, batch, heads, hd)
    write_micro(cases, batch, s)
    return summary_rows(cases, s)
