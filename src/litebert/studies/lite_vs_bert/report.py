"""The lite-vs-bert report: report.md (tables beside the paper's Tables 1 and 2), results.json
(every part and the predictions) and speedup.png, from OUT/study.json and OUT/parts/*.json.

A part not yet run leaves its section out; a row computed rather than measured is marked
with "(c)" and the part says how it was computed.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from litebert.studies.lite_vs_bert.activations import largest_micro_batch
from litebert.studies.lite_vs_bert.predictions import predictions
from litebert.studies.lite_vs_bert.rows import BY_NAME, REFERENCE
from litebert.studies.lite_vs_bert.study import LiteVsBertError

GB = 1e9
MB = 1e6
Parts = dict[str, dict[str, Any]]


def read_study(study_dir: Path) -> tuple[dict, Parts]:
    path = study_dir / "study.json"
    if not path.is_file():
        raise LiteVsBertError(f"{path}: no such file; run `litebert study run lite-vs-bert "
                              f"--out {study_dir}` first")
    study = json.loads(path.read_text(encoding="utf-8"))
    parts = {p.stem: json.loads(p.read_text(encoding="utf-8"))["result"]
             for p in sorted((study_dir / "parts").glob("*.json"))}
    return study, parts


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(r) + " |" for r in rows), ""]


def _gb(value: float | None) -> str:
    return "-" if value is None else f"{value / GB:.2f}"


def params_table(parts: Parts) -> list[str]:
    """Beside Table 1: parameters, and bytes held per rank under DDP and FSDP."""
    rows = []
    counted = parts.get("communication", {})
    for name, f in parts["footprint"].items():
        fsdp = f["fsdp"]
        real = counted.get(name, {}).get("fsdp", {}).get("shard_bytes_per_rank")
        check = "-" if real is None else ("yes" if real == fsdp["2"]["params"] else "no")
        rows.append([name, f"{f['parameters'] / 1e6:,.1f}M", BY_NAME[name].paper_params,
                     _gb(f["ddp"]["total"]), _gb(fsdp["2"]["total"]), _gb(fsdp["8"]["total"]),
                     _gb(fsdp["8"]["gathered"]), check])
    header = ["row", "parameters", "Table 1", "DDP GB/rank", "FSDP 2 GB/rank",
              "FSDP 8 GB/rank", "of which gathered", "shards = FSDP's at 2"]
    return ["## Parameters and bytes held per rank (beside Table 1)", "",
            "Parameters, gradients and LAMB's two moments in fp32, plus DDP's gradient "
            "buckets (DDP) or the gathered units (FSDP), counted from the tensors litebert "
            "creates, on the meta device (footprint.py). The last column compares the "
            "counted shard bytes at 2 ranks with what FSDP itself held at 2 gloo processes "
            "(the communication part; \"-\": too large to run here). Table 1 prints 235M "
            "for ALBERT-xxlarge, which its shape (and transformers' own xxlarge) does not "
            "give.", "", *_table(header, rows)]


def timing_table(parts: Parts) -> list[str]:
    rows = [[name, f"{t['batch']} x {t['length']}", f"{t['forward_backward_s']:.2f}",
             f"{t['update_s']:.2f}", f"{t['step_s']:.2f}", f"{t['flops_per_s'] / 1e9:.0f}"]
            for name, t in parts.get("timing", {}).items()]
    if not rows:
        return []
    header = ["row", "micro-batch", "forward+backward s", "LAMB s", "step s", "GFLOP/s"]
    return ["## Step time on one process of this CPU (fp32)", "", *_table(header, rows)]


CAPACITIES = (24e9, 80e9)  # bytes: a 24 GB card and an 80 GB one


def _fits(m: dict, held: int) -> str:
    return " / ".join(str(largest_micro_batch(int(c), held, m["per_sequence_bytes"],
                                              m["fixed_bytes"], m.get("tail_bytes", 0.0)))
                      for c in CAPACITIES)


def activations_table(parts: Parts) -> list[str]:
    """Activation memory per sequence, and the largest micro-batch beside DDP's bytes held."""
    measured = parts.get("activations")
    if not measured:
        return []
    lengths = list(next(iter(measured.values()))["lengths"])
    rows = []
    for name, a in measured.items():
        held = parts["footprint"][name]["ddp"]["total"]
        per = [a["lengths"][t] for t in lengths]
        checks = [f"{m['extrapolation_error']:+.1%}" for m in per if "extrapolation_error" in m]
        how = "measured" if a["plan"] == "full" else per[0].get("method", "extrapolated")
        rows.append([name, *(f"{m['per_sequence_bytes'] / MB:,.0f}" for m in per),
                     *(f"{m['fixed_bytes'] / MB:,.0f}" for m in per), how,
                     ", ".join(checks) or "-", *(_fits(m, held) for m in per)])
    header = ["row", *(f"MB/seq at {t}" for t in lengths), *(f"fixed MB at {t}" for t in lengths),
              "depth", "extrapolation check", *(f"micro-batch in 24 / 80 GB at {t}"
                                                for t in lengths)]
    return ["## Activation memory (fp32, this CPU)", "",
            "Per sequence: the slope of a fresh process's peak resident memory over micro-"
            "batches 1 and 2 (activations.py), on top of weights and gradients; fixed: the "
            "intercept. Rows too slow to run at full depth are extrapolated from 2 and 3 "
            "layers (layers have equal shapes); the check is that extrapolation against the "
            "measured full depth. The largest micro-batch adds DDP's bytes held (weights, "
            "gradients, buckets, LAMB) in fp32; under a GPU's bf16 autocast the figures "
            "differ (the `lite-vs-bert` GPU check measures peak memory). BERT's presets train with "
            "dropout 0.1 and ALBERT's (v2) without, which adds dropout masks to BERT's "
            "activations.", "", *_table(header, rows)]


def dropout_lines(parts: Parts) -> list[str]:
    checked = parts.get("dropout")
    if not checked:
        return []
    rows = [[name, str(d["layers"]), str(d["length"]), f"{d['dropout 0.0'] / MB:,.0f}",
             f"{d['dropout 0.1'] / MB:,.0f}"] for name, d in checked.items()]
    return ["Dropout, not sharing, is what differs (the `dropout` part: the same measurement "
            "with and without it):", "",
            *_table(["row", "layers", "tokens", "MB/seq, dropout 0", "MB/seq, dropout 0.1"],
                    rows)]


def _calls(c: dict) -> str:
    return f"{c['calls']} / {c['bytes'] / MB:,.1f}"


def _matches_rule(counted: dict, rule: dict) -> str:
    kinds = ("all_gather", "reduce_scatter", "optimizer_all_reduce")
    return "yes" if all(counted[k] == rule[k] for k in kinds) else "no"


def communication_table(parts: Parts) -> list[str]:
    """Collectives of one step per rank: DDP, FSDP as it was (per use), FSDP as it is."""
    counted = parts.get("communication")
    if not counted:
        return []
    rows = []
    for name, c in counted.items():
        per_use = c.get("fsdp-per-use")
        measured = c["how"].startswith("counted")
        rule = parts["footprint"][name]["fsdp_step"]
        rows.append([name + ("" if measured else " (c)"), _calls(c["ddp"]["all_reduce"]),
                     _calls(per_use["all_gather"]) if per_use else "-",
                     _calls(c["fsdp"]["all_gather"]), _calls(c["fsdp"]["reduce_scatter"]),
                     _calls(c["fsdp"]["optimizer_all_reduce"]),
                     _matches_rule(c["fsdp"], rule) if measured else "-"])
    header = ["row", "DDP all-reduce", "FSDP per use: all-gather", "FSDP all-gather",
              "FSDP reduce-scatter", "LAMB all-reduce (FSDP)", "= footprint's rule"]
    lines = ["## Bytes communicated per step (calls / MB of full buffers)", "",
             "Counted from the collectives issued at 2 gloo processes (communication.py): "
             "DDP's buckets through a comm hook, FSDP's all-gathers and reduce-scatters "
             "where torch.distributed issues them. \"FSDP per use\" is FSDP as litebert "
             "wrapped it before this study (a shared unit resharded after each use's "
             "backward); \"FSDP\" holds it for the step. A ring sends 2(N-1)/N of an "
             "all-reduce's bytes per rank and (N-1)/N of an all-gather's or a "
             "reduce-scatter's. (c): computed by the rule the counted rows follow.", "",
             *_table(header, rows)]
    for name, c in counted.items():
        if "losses" in c:
            loss = c["losses"]
            lines += [f"FSDP against DDP on {name}, 3 steps at 2 processes: losses within "
                      f"{loss['max_rel_diff']:.1e} (relative), weights within "
                      f"{loss['weights_max_abs_diff']:.1e}.", ""]
    return lines


def speedup_table(predicted: dict) -> list[str]:
    """Beside Table 2: the paper's speed-up and the model's on each interconnect (DDP)."""
    if not predicted:
        return []
    links = predicted["links"]
    header = ["row", "Table 2", "FLOPs alone", *links]
    rows = [[name, f"{BY_NAME[name].paper_speedup:.2f}", f"{predicted['flops_only'][name]:.2f}",
             *(f"{links[link]['ddp'][name]:.2f}" for link in links)]
            for name in predicted["order"]]
    fsdp = [[name, *(f"{links[link]['fsdp'][name]:.2f}" for link in links)]
            for name in predicted["order"]]
    rate = predicted["measured_rate"]
    notes = [f"- `{name}`: {link['ranks']} ranks, {link['bandwidth'] * 8 / 1e9:,.0f} Gb/s, "
             f"{link['latency_s'] * 1e6:g} us. {link['note']}" for name, link in links.items()]
    return ["## Speed over BERT-large at N ranks (beside Table 2)", "",
            f"Predicted by the throughput model (throughput.py) at the paper's batch of 4,096 "
            f"x 512 tokens, every rank at {predicted['rate_flops_per_s'] / 1e12:.0f} TFLOP/s "
            f"(measured: {rate['row']} at {rate['tokens_per_s']:,.0f} tokens/s on an "
            f"{rate['card']}, {rate['date']}, {rate['what']}). DDP:", "",
            *_table(header, rows), "FSDP (litebert's wrap: shared units held for the step):",
            "", *_table(["row", *links], fsdp), *notes, ""]


def validation_lines(parts: Parts) -> list[str]:
    """The model's DDP step against 2 gloo processes on this machine."""
    link, checked = parts.get("link"), parts.get("validation")
    if not link or not checked:
        return []
    header = ["row", "micro-batch", "compute s", "LAMB s", "comm predicted s",
              "hidden predicted s", "DDP step predicted s", "measured s", "error"]
    rows = [[name, f"{v['batch']} x {v['length']}", f"{v['forward_backward_s']:.3f}",
             f"{v['optimizer_s']:.3f}", f"{v['comm_s']:.3f}", f"{v['overlap_s']:.3f}",
             f"{v['predicted_s']:.3f}", f"{v['measured_s']:.3f}", f"{v['error']:+.0%}"]
            for name, v in checked.items()]
    return ["## The model against 2 gloo processes on this machine", "",
            f"This machine's link, fitted to the ring formula from all-reduces of "
            f"{len(link['points'])} sizes: {link['bandwidth'] / 1e9:.2f} GB/s, "
            f"{link['latency_s'] * 1e6:.0f} us a ring step (largest misfit "
            f"{link['fit_error']:.0%}).", "", *_table(header, rows)]


def plot_speedup(sweep: dict, path: Path) -> Path | None:
    """Each ALBERT size's speed over its BERT partner against bandwidth."""
    if not sweep or not sweep["curves"]:  # no ALBERT row with its BERT partner
        return None
    fig = Figure(figsize=(6.4, 4.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for label, curve in sweep["curves"].items():
        ax.plot([b * 8 / 1e9 for b in sweep["bandwidths"]], curve, marker=".", label=label)
    ax.set_xscale("log")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    for name, gbit in sweep.get("marks", {}).items():  # the named links' bandwidths
        ax.axvline(gbit, color="grey", linestyle=":", linewidth=0.8)
        ax.text(gbit, 0.98, name, rotation=90, fontsize=6, va="top", ha="right",
                transform=ax.get_xaxis_transform())
    ax.set_xlabel("bandwidth of the ring's slowest link (Gb/s)")
    ax.set_ylabel("ALBERT speed / BERT speed")
    ax.set_title(sweep["title"], fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def write_report(study_dir: Path) -> list[Path]:
    """report.md, results.json and speedup.png in study_dir; the paths written."""
    study_dir = Path(study_dir)
    study, parts = read_study(study_dir)
    if "footprint" not in parts:
        raise LiteVsBertError(f"{study_dir / 'parts'}: no part has finished yet")
    predicted = predictions(parts)
    quick = " (quick: every row shrunk to 2 layers of width 64)" if study["quick"] else ""
    lines = [f"# {study['title']}", "",
             f"litebert's `lite-vs-bert` study ({study['paper']} of ALBERT, arXiv "
             f"1909.11942){quick}. Speed-ups are over {REFERENCE}, as in Table 2.", ""]
    lines += params_table(parts) + activations_table(parts) + dropout_lines(parts)
    lines += timing_table(parts)
    lines += communication_table(parts)
    lines += speedup_table(predicted)
    lines += validation_lines(parts)
    plot = plot_speedup(predicted.get("sweep", {}), study_dir / "speedup.png")
    if plot:
        lines += ["## Speed-up against bandwidth", "", f"![speed-up]({plot.name})", ""]
    report = study_dir / "report.md"
    report.write_text("\n".join(lines), encoding="utf-8")
    gathered = study_dir / "results.json"
    gathered.write_text(json.dumps({"study": study, "parts": parts, "predictions": predicted,
                                    "machine": {"platform": platform.platform(),
                                                "cpus": os.cpu_count()}}, indent=2) + "\n",
                        encoding="utf-8")
    return [report, gathered] + ([plot] if plot else [])
