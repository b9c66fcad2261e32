"""A throughput model of data-parallel pre-training at N ranks: how long one optimizer step
takes per rank, from its compute, the bytes it communicates and the link between the ranks.

    step_s = compute_s + optimizer_s + comm_s - overlap_s

compute_s is the forward and backward pass of one rank's share of the global batch (given:
measured, or FLOPs over an achieved FLOP/s rate). optimizer_s is the update, which needs the
reduced gradients and so overlaps nothing (0 when not given).

comm_s, DDP: the gradients (grad_bytes) are all-reduced once per step (gradient accumulation
syncs on the last micro-batch only), in buckets of 25 MiB filled in reverse parameter order.
A ring all-reduce of b bytes over N ranks sends 2(N-1)/N * b bytes through every link and
takes 2(N-1) steps, each paying the link's latency:
    t(b) = 2(N-1)/N * b / bandwidth + 2(N-1) * latency_s;   comm_s = sum of t over buckets.
The last bucket is the remainder (grad_bytes - full buckets), or a full one.
comm_s, FSDP: all-gathers of gather_bytes and reduce-scatters of scatter_bytes per step (the
caller counts them: e.g. parameters gathered in the forward and again in the backward), over
`collectives` ring collectives, each (N-1)/N * b / bandwidth + (N-1) * latency_s.

overlap_s: DDP all-reduces a bucket as soon as its gradients are ready, so communication
hides behind the rest of the backward pass, all but the last bucket's (which is ready only
when the backward ends):
    overlap_s = min(comm_s - last_bucket_s, backward_s),  backward_s = 2/3 * compute_s
since the backward pass costs about twice the forward's FLOPs. FSDP uses the same rule with
its last collective in place of the last bucket.

Assumptions: one ring over all ranks, its slowest hop the link's `bandwidth` (one direction);
communication and compute do not slow each other (true of a GPU's copy engines and NICs,
not of CPU ranks, where gloo takes cores from the backward); bandwidth and latency do not
depend on the message size; DDP's smaller first bucket (1 MiB) and buckets that a single
large tensor overfills are ignored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIB = 2 ** 20
DDP_BUCKET_BYTES = 25 * MIB  # DDP's default bucket_cap_mb
BACKWARD_SHARE = 2 / 3  # backward ~ 2x the forward's FLOPs
GLOBAL_BATCH = 4096  # sequences per step, the paper's batch
SEQUENCE_LENGTH = 512  # tokens per sequence, the paper's
MODES = ("ddp", "fsdp")


@dataclass(frozen=True)
class Interconnect:
    name: str
    ranks: int
    bandwidth: float  # bytes/s, one direction, of the slowest link a ring crosses
    latency_s: float  # per ring step
    note: str  # where the figures come from


NVLINK_NOTE = ("H100 SXM NVLink 4: 900 GB/s per GPU both directions together, 450 GB/s each "
               "way (NVIDIA's H100 datasheet). Latency 5 us: an assumption.")
NIC_NOTE = ("{gbit} Gb/s per node, one NIC per node: a ring over the nodes crosses the NIC "
            "once each way, and that hop is its bottleneck (the NVLink hops inside a node are "
            "~36x faster at 100 Gb/s, so they are ignored). Latency {lat:g} us: an assumption "
            "({kind}).")
TPU_NOTE = ("TPU v3 pod slice of 128 chips (the paper trained on 64 to 512 TPU v3 chips), 2D "
            "torus. ICI bandwidth 1e11 bytes/s per link one way, 2e11 both ways (the TPU v3 "
            "row of the ICI table in 'How to Scale Your Model', Austin et al., Google "
            "DeepMind 2025, part 2 'How to Think About TPUs'); Google Cloud's TPU v3 page "
            "gives 340 TB/s all-reduce bandwidth per 1024-chip pod, ~332 GB/s per chip, which "
            "rings over both torus axes and directions would reach. A single ring over one "
            "link one way is the figure used here. Latency 5 us: an assumption.")


def _nic(name: str, nodes: int, gbit: float, latency_us: float, kind: str) -> Interconnect:
    note = NIC_NOTE.format(gbit=gbit, lat=latency_us, kind=kind)
    return Interconnect(name, nodes * 8, gbit * 1e9 / 8, latency_us * 1e-6, note)


INTERCONNECTS: dict[str, Interconnect] = {link.name: link for link in (
    Interconnect("nvlink-8xh100", 8, 450e9, 5e-6, NVLINK_NOTE),
    _nic("ib100-2x8", 2, 100, 5, "InfiniBand"),
    _nic("ib400-2x8", 2, 400, 5, "InfiniBand"),
    _nic("ib100-16x8", 16, 100, 5, "InfiniBand"),
    _nic("ib400-16x8", 16, 400, 5, "InfiniBand"),
    _nic("eth25-2x8", 2, 25, 20, "TCP over Ethernet"),
    Interconnect("tpu-v3-128", 128, 1e11, 5e-6, TPU_NOTE),
)}


def _check_link(ranks: int, bandwidth: float, latency_s: float) -> None:
    if ranks < 1:
        raise ValueError(f"a ring needs at least 1 rank, got ranks={ranks}")
    if not bandwidth > 0:
        raise ValueError(f"the link's bandwidth must be > 0 bytes/s, got {bandwidth}")
    if latency_s < 0:
        raise ValueError(f"the link's latency must be >= 0 s, got {latency_s}")


def ring_all_reduce_s(nbytes: float, ranks: int, bandwidth: float, latency_s: float) -> float:
    """Seconds of one ring all-reduce of `nbytes` (reduce-scatter then all-gather)."""
    _check_link(ranks, bandwidth, latency_s)
    steps = 2 * (ranks - 1)
    return steps / ranks * nbytes / bandwidth + steps * latency_s


def ring_collective_s(nbytes: float, ranks: int, bandwidth: float, latency_s: float) -> float:
    """Seconds of one ring all-gather or reduce-scatter whose full tensor is `nbytes`."""
    _check_link(ranks, bandwidth, latency_s)
    steps = ranks - 1
    return steps / ranks * nbytes / bandwidth + steps * latency_s


def bucket_sizes(grad_bytes: int, bucket_bytes: int = DDP_BUCKET_BYTES) -> list[int]:
    """DDP's buckets in the order they are reduced: full ones, then the remainder."""
    if grad_bytes < 0 or bucket_bytes <= 0:
        raise ValueError(f"grad_bytes must be >= 0 and bucket_bytes > 0, got {grad_bytes} "
                         f"and {bucket_bytes}")
    full, rest = divmod(grad_bytes, bucket_bytes)
    return [bucket_bytes] * full + ([rest] if rest else [])


def ddp_comm_s(grad_bytes: int, link: Interconnect,
               bucket_bytes: int = DDP_BUCKET_BYTES) -> tuple[float, float]:
    """(all buckets' seconds, the last bucket's seconds) of one step's gradient all-reduce."""
    times = [ring_all_reduce_s(b, link.ranks, link.bandwidth, link.latency_s)
             for b in bucket_sizes(grad_bytes, bucket_bytes)]
    return sum(times), (times[-1] if times else 0.0)


def fsdp_comm_s(gather_bytes: int, scatter_bytes: int, collectives: int,
                link: Interconnect) -> tuple[float, float]:
    """(all collectives' seconds, the last one's) of one FSDP step: the bytes' ring time
    plus each collective's latency; the last collective carries an equal share of bytes."""
    if collectives < 1 or gather_bytes < 0 or scatter_bytes < 0:
        raise ValueError(f"FSDP needs collectives >= 1 and bytes >= 0, got collectives="
                         f"{collectives}, gather_bytes={gather_bytes}, "
                         f"scatter_bytes={scatter_bytes}")
    share = (gather_bytes + scatter_bytes) / collectives
    one = ring_collective_s(share, link.ranks, link.bandwidth, link.latency_s)
    return one * collectives, one


def predict(compute_s: float, grad_bytes: int, link: Interconnect, mode: str = "ddp", *,
            optimizer_s: float = 0.0, gather_bytes: int | None = None,
            scatter_bytes: int | None = None, collectives: int | None = None,
            bucket_bytes: int = DDP_BUCKET_BYTES,
            backward_share: float = BACKWARD_SHARE) -> dict[str, float]:
    """One rank's step time: {compute_s, optimizer_s, comm_s, last_comm_s, backward_s,
    overlap_s, step_s}. FSDP (mode="fsdp") needs gather_bytes, scatter_bytes and
    collectives; grad_bytes is then unused."""
    if compute_s < 0 or optimizer_s < 0:
        raise ValueError(f"compute_s and optimizer_s must be >= 0, got {compute_s} and "
                         f"{optimizer_s}")
    if not 0 <= backward_share <= 1:
        raise ValueError(f"backward_share is a share of compute_s in [0, 1], "
                         f"got {backward_share}")
    if mode == "ddp":
        comm, last = ddp_comm_s(grad_bytes, link, bucket_bytes)
    elif mode == "fsdp":
        if gather_bytes is None or scatter_bytes is None or collectives is None:
            raise ValueError("mode='fsdp' needs gather_bytes, scatter_bytes and collectives "
                             "(the all-gathered and reduce-scattered bytes per step, and how "
                             "many collectives carry them)")
        comm, last = fsdp_comm_s(gather_bytes, scatter_bytes, collectives, link)
    else:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    backward = backward_share * compute_s
    overlap = min(comm - last, backward)
    return {"compute_s": compute_s, "optimizer_s": optimizer_s, "comm_s": comm,
            "last_comm_s": last, "backward_s": backward, "overlap_s": overlap,
            "step_s": compute_s + optimizer_s + comm - overlap}


def _row_step_s(row: dict, link: Interconnect, rate: float, global_batch: int) -> float:
    """One step of `row` at the global batch split evenly over the link's ranks."""
    for key in ("flops_per_sequence", "grad_bytes"):
        if key not in row:
            raise ValueError(f"each row needs 'flops_per_sequence' and 'grad_bytes'; "
                             f"one has only {sorted(row)}")
    compute = row["flops_per_sequence"] * (global_batch / link.ranks) / rate
    return predict(compute, int(row["grad_bytes"]), link)["step_s"]


def speedups(rows: dict[str, dict], link: Interconnect, rate: float,
             reference: str = "bert-large",
             global_batch: int = GLOBAL_BATCH) -> dict[str, float]:
    """Each row's speed (1 / step_s) over the reference row's on `link`, at the same global
    batch: rows {name: {"flops_per_sequence", "grad_bytes"}}; rate: FLOP/s one rank
    achieves; compute_s = flops_per_sequence * (global_batch / ranks) / rate."""
    if reference not in rows:
        raise ValueError(f"the reference row {reference!r} is not among the rows "
                         f"{sorted(rows)}")
    if not rate > 0:
        raise ValueError(f"rate is the FLOP/s one rank achieves and must be > 0, got {rate}")
    steps = {name: _row_step_s(row, link, rate, global_batch) for name, row in rows.items()}
    return {name: steps[reference] / step for name, step in steps.items()}


def log_spaced(low: float, high: float, count: int) -> list[float]:
    """`count` values from low to high, evenly spaced on a log scale."""
    if not 0 < low < high or count < 2:
        raise ValueError(f"need 0 < low < high and count >= 2, got {low}, {high}, {count}")
    step = math.log(high / low) / (count - 1)
    return [low * math.exp(i * step) for i in range(count)]


SWEEP_BANDWIDTHS = log_spaced(1e8, 1e12, 25)  # bytes/s: 0.8 Gb/s Ethernet to beyond NVLink


def bandwidth_sweep(rows: dict[str, dict], ranks: int, rate: float,
                    bandwidths: list[float] | None = None, latency_s: float = 5e-6,
                    reference: str = "bert-large",
                    global_batch: int = GLOBAL_BATCH) -> dict:
    """Speed-ups against the link's bandwidth at `ranks` ranks, for a plot:
    {"ranks", "rate", "latency_s", "bandwidth": [B/s], "speedup": {row: [over reference]},
    "albert_over_bert": {"albert-X": [speed over bert-X]} for each pair among the rows}."""
    bandwidths = list(SWEEP_BANDWIDTHS if bandwidths is None else bandwidths)
    curves: dict[str, list[float]] = {name: [] for name in rows}
    for bandwidth in bandwidths:
        link = Interconnect(f"{bandwidth:.3g} B/s", ranks, bandwidth, latency_s, "sweep")
        for name, speed in speedups(rows, link, rate, reference, global_batch).items():
            curves[name].append(speed)
    pairs = {name: name.replace("albert-", "bert-", 1) for name in rows
             if name.startswith("albert-") and name.replace("albert-", "bert-", 1) in rows}
    over = {lite: [a / b for a, b in zip(curves[lite], curves[bert], strict=True)]
            for lite, bert in pairs.items()}
    return {"ranks": ranks, "rate": rate, "latency_s": latency_s, "bandwidth": bandwidths,
            "speedup": curves, "albert_over_bert": over}
