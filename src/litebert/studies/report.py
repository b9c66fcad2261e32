"""The report of a study: report.md (the paper's table with our numbers next to its figures),
results.json (every run's record gathered) and PNG plots, from what the runner wrote:

    OUT/study.json                 the study spec as run (name, title, paper, quick, budget, runs)
    OUT/runs/<name>/study.json     one record per run: name, params, tokens, minutes, config,
                                   paper (the paper's figures for the row), results
                                   {pretraining, similarity, probes}

Every section is optional: a run that has not finished, or a study without probes, still
reports what there is. The sentences under the tables are computed from the numbers: where
our direction agrees with the paper's and where it does not.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from litebert.files import read_text

# Our pre-training metric -> its key in the paper's figures (Table 5: MLM / NSP / SOP), and
# the other objectives' held-out accuracies (ELECTRA's RTD, XLNet's PLM).
PRETRAINING = {"mlm": "MLM", "sop": "SOP", "nsp": "NSP", "rtd": "RTD", "plm": "PLM"}
Record = dict[str, Any]


class ReportError(ValueError):
    """A study directory that cannot be reported; the message names the file."""


# ---- reading -------------------------------------------------------------------------------

def _load(path: Path) -> dict:
    try:
        value = json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise ReportError(f"{path}: bad JSON ({err.msg}, line {err.lineno})") from None
    if not isinstance(value, dict):
        raise ReportError(f"{path}: a JSON {type(value).__name__}, expected an object")
    return value


def read_study(study_dir: Path) -> tuple[dict, list[Record]]:
    """The spec (empty when missing) and the run records, in the spec's order of runs."""
    spec_path = study_dir / "study.json"
    spec = _load(spec_path) if spec_path.is_file() else {}
    records = {p.parent.name: _load(p) for p in sorted(study_dir.glob("runs/*/study.json"))}
    if not records:
        raise ReportError(f"{study_dir}: no runs/<name>/study.json to report")
    order = [r.get("name") if isinstance(r, dict) else r for r in spec.get("runs", [])]
    names = [n for n in order if n in records] + [n for n in records if n not in order]
    return spec, [{"name": n, **records[n]} for n in names]


def _results(record: Record, section: str) -> dict:
    value = (record.get("results") or {}).get(section)
    return value if isinstance(value, dict) else {}


def _held_out(record: Record) -> dict:
    """The study's `pretraining` evaluation of the export (one held-out set for every run) or,
    where the study did not ask for it, the run's last in-training evaluation on its own
    held-out split."""
    found = _results(record, "pretraining")
    if found:
        return found
    final = (record.get("pretraining") or {}).get("final_eval")
    return final if isinstance(final, dict) else {}


def _ours(record: Record, metric: str) -> tuple[float | None, float | None]:
    """(accuracy, baseline) of a pre-training metric, or None where not measured."""
    found = _held_out(record)
    value = found.get(f"{metric}_accuracy", found.get(f"eval_{metric}_accuracy"))
    base = found.get(f"{metric}_baseline_accuracy", found.get(f"eval_{metric}_baseline_accuracy"))
    return (value if isinstance(value, (int, float)) else None,
            base if isinstance(base, (int, float)) else None)


def _paper(record: Record, metric: str) -> float | None:
    """The paper's figure for this row, whatever case or "_accuracy" suffix it was given in."""
    for key, value in (record.get("paper") or {}).items():
        if str(key).lower().removesuffix("_accuracy") == metric and \
                isinstance(value, (int, float)):
            return float(value)
    return None


def _probe_names(records: list[Record]) -> list[str]:
    names: list[str] = []
    for record in records:
        names += [n for n in _results(record, "probes") if n not in names]
    return names


# ---- formatting ----------------------------------------------------------------------------

def _count(n: Any) -> str:
    if not isinstance(n, (int, float)):
        return "-"
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:g}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _number(x: Any) -> str:
    return f"{x:g}" if isinstance(x, (int, float)) else str(x)


def _minutes(x: Any) -> str:
    return f"{x:.1f}" if isinstance(x, (int, float)) else "-"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows)]


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as {"a.b": leaf}, to find a setting wherever the config keeps it."""
    if not isinstance(value, dict):
        return {prefix: value}
    out: dict[str, Any] = {}
    for key, inner in value.items():
        out.update(_flat(inner, f"{prefix}.{key}" if prefix else str(key)))
    return out


def _find(records: list[Record], *names: str) -> Any:
    for record in records:
        for key, value in _flat(record).items():
            if key.rsplit(".", 1)[-1] in names and value not in (None, ""):
                return value
    return None


# ---- report.md -----------------------------------------------------------------------------

def _hardware(spec: dict, records: list[Record]) -> str:
    """What the records say ran the study; this machine when they do not say."""
    said = _find([spec, *records], "hardware", "device", "platform")
    cpus = _find([spec, *records], "cpu_count", "cpus")
    if said is None:
        said = f"{platform.system()} {platform.machine()}"
    return f"{said}, {cpus or os.cpu_count()} CPUs"


def _shape(records: list[Record]) -> str:
    """The model's shape; a field the runs set differently says "per run"."""
    fields = []
    for key in ("num_hidden_layers", "hidden_size", "embedding_size", "sharing"):
        values = {json.dumps(_find([r], key)) for r in records} - {"null"}
        if len(values) == 1:
            fields.append(f"{key}={json.loads(values.pop())}")
        elif values:
            fields.append(f"{key} per run")
    return "model of " + ", ".join(fields)


def _title(spec: dict, records: list[Record]) -> list[str]:
    title = spec.get("title") or spec.get("name") or "Study"
    size = _find(records, "preset", "model_size") or _shape(records)
    tokens = [r["tokens"] for r in records if isinstance(r.get("tokens"), (int, float))]
    minutes = [r["minutes"] for r in records if isinstance(r.get("minutes"), (int, float))]
    seeds = {len(p.get("seeds", [])) for r in records for p in _results(r, "probes").values()}
    line = (f"{size}; {_count(max(tokens)) if tokens else '-'} tokens seen per run; "
            f"{sum(minutes):.1f} minutes in all; {_hardware(spec, records)}; "
            f"probe seeds: {', '.join(map(str, sorted(seeds))) or '-'}")
    paper = f"Paper: {spec['paper']}." if spec.get("paper") else ""
    quick = " (--quick: a smoke test, not a measurement)" if spec.get("quick") else ""
    return [f"# {title}{quick}", "", line + ".", "", *([paper, ""] if paper else [])]


def pretraining_table(records: list[Record]) -> list[str]:
    metrics = [m for m in PRETRAINING if any(_ours(r, m)[0] is not None or
                                             _paper(r, m) is not None for r in records)]
    cited = [m for m in metrics if any(_paper(r, m) is not None for r in records)]
    header = ["run", "params (backbone / with heads)", "steps", "tokens", "minutes"]
    for m in metrics:
        header += [f"{PRETRAINING[m]} ours % (baseline)"]
        header += [f"{PRETRAINING[m]} paper"] if m in cited else []
    header.append("paper, other")
    rows = []
    for r in records:
        params = r.get("params") or {}
        row = [str(r["name"]), f"{_count(params.get('backbone'))} / "
               f"{_count(params.get('with_heads'))}",
               _count((r.get("pretraining") or {}).get("steps")), _count(r.get("tokens")),
               _minutes(r.get("minutes"))]
        for m in metrics:
            value, base = _ours(r, m)
            paper = _paper(r, m)
            row += [f"{_pct(value)} ({_pct(base)})"]
            row += (["-" if paper is None else _number(paper)] if m in cited else [])
        other = {k: v for k, v in (r.get("paper") or {}).items()
                 if str(k).lower().removesuffix("_accuracy") not in metrics}
        row.append(", ".join(f"{k} {_number(v)}" for k, v in other.items()) or "-")
        rows.append(row)
    return _table(header, rows)


def probes_table(records: list[Record]) -> list[str]:
    names = _probe_names(records)
    if not names:
        return []
    rows = []
    for r in records:
        row = [str(r["name"])]
        for name in names:
            p = _results(r, "probes").get(name)
            row.append("-" if not p else f"{_pct(p.get('median'))} "
                                         f"({_pct(p.get('min'))}-{_pct(p.get('max'))})")
        rows.append(row)
    lines = _table(["run", *(f"{n} % median (min-max)" for n in names)], rows)
    lines.append("")
    for name in names:
        p = next(_results(r, "probes")[name] for r in records if name in _results(r, "probes"))
        metric = {"all": "accuracy over all questions"}.get(p.get("metric"), p.get("metric"))
        lines.append(f"- {name}: {p.get('data', '?')}; metric {metric or '?'}, "
                     f"majority-class baseline {_pct(p.get('baseline'))}%, "
                     f"{len(p.get('seeds', []))} seeds.")
    return lines


# ---- agreement with the paper --------------------------------------------------------------

def agreement(label: str, points: list[tuple[str, float | None, float | None]]) -> str | None:
    """A sentence comparing our ordering of the runs with the paper's, from (run, ours,
    paper) triples, ours as fractions and the paper's in percent; None when fewer than two
    runs have both numbers or the paper ties."""
    both = [(n, o, p) for n, o, p in points if o is not None and p is not None]
    if len(both) < 2:
        return None
    hi = max(both, key=lambda t: t[2])
    lo = min(both, key=lambda t: t[2])
    if hi[2] == lo[2]:
        return None
    if hi[1] > lo[1]:
        verdict = "agrees with the paper's direction"
    elif hi[1] < lo[1]:
        verdict = "disagrees with the paper's direction"
    else:
        verdict = "shows no difference where the paper has one"
    sentence = (f"{label}: the paper has {hi[0]} at {_number(hi[2])}% and {lo[0]} at "
                f"{_number(lo[2])}%; ours {hi[0]} {_pct(hi[1])}% vs {lo[0]} {_pct(lo[1])}% "
                f"— {verdict}")
    pairs = [(a, b) for i, a in enumerate(both) for b in both[i + 1:] if a[2] != b[2]]
    if len(pairs) > 1:
        same = sum((a[1] - b[1]) * (a[2] - b[2]) > 0 for a, b in pairs)
        sentence += f" ({same} of {len(pairs)} pairs of runs ordered as in the paper)"
    return sentence + "."


def _above_baseline(label: str, records: list[Record], metric: str) -> str | None:
    pairs = [(v, b) for v, b in map(lambda r: _ours(r, metric), records)
             if v is not None and b is not None]
    if not pairs:
        return None
    above = sum(v > b for v, b in pairs)
    sentence = f"{label}: ours above its baseline in {above} of {len(pairs)} runs"
    if above == 0:
        sentence += (" — at this budget no run has learned it beyond the baseline, so its "
                     "figures say nothing about how the runs differ")
    return sentence + "."


def held_out_source(records: list[Record]) -> list[str]:
    """Says which runs' held-out figures are their own last in-training evaluation rather
    than the study's shared `pretraining` evaluation; nothing when none are."""
    own = [str(r["name"]) for r in records if not _results(r, "pretraining") and _held_out(r)]
    if not own:
        return []
    which = "every run" if len(own) == len(records) else ", ".join(own)
    return [f"- Held-out figures of {which}: the run's last in-training evaluation, on its own "
            "data's held-out split (no shared `pretraining` evaluation)."]


def pretraining_sentences(records: list[Record]) -> list[str]:
    out = []
    for metric, label in PRETRAINING.items():
        out += [s for s in (_above_baseline(label, records, metric),
                            agreement(label, [(r["name"], _ours(r, metric)[0],
                                               _paper(r, metric)) for r in records])) if s]
    return out


def mlm_against_downstream(records: list[Record]) -> str | None:
    """Without probes, our MLM accuracy is the only figure to set against the paper's
    downstream average; said as such (the paper gives no MLM figure for these rows)."""
    points = [(str(r["name"]), _ours(r, "mlm")[0], _paper(r, "avg")) for r in records]
    sentence = agreement("MLM accuracy (ours) against the paper's downstream Avg", points)
    if sentence is None:
        return None
    return sentence[:-1] + " — a proxy: the paper reports no MLM accuracy for these rows."


def downstream_sentence(records: list[Record]) -> str | None:
    """Our mean of the probe medians against the paper's downstream average ("avg")."""
    points = []
    for r in records:
        medians = [p["median"] for p in _results(r, "probes").values()
                   if isinstance(p.get("median"), (int, float))]
        points.append((str(r["name"]), sum(medians) / len(medians) if medians else None,
                       _paper(r, "avg")))
    return agreement("Downstream (mean of our probe medians; paper: Avg)", points)


# ---- plots ---------------------------------------------------------------------------------

def _save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)  # Agg on the figure itself: no pyplot, no global backend state
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def plot_similarity(records: list[Record], path: Path) -> Path | None:
    """Figure 2 of the paper: L2 distance and angle between each layer's input and output."""
    runs = [(r["name"], _results(r, "similarity")) for r in records]
    runs = [(n, s) for n, s in runs if s.get("l2") and s.get("degrees")]
    if not runs:
        return None
    fig = Figure(figsize=(10, 4))
    for i, (key, ylabel) in enumerate((("l2", "L2 distance"),
                                       ("degrees", "cosine similarity (degrees)"))):
        ax = fig.add_subplot(1, 2, i + 1)
        for name, found in runs:
            ax.plot(range(1, len(found[key]) + 1), found[key], marker="o", label=name)
        ax.set_xlabel("layer")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend()
    return _save(fig, path)


def plot_metrics(records: list[Record], path: Path) -> Path | None:
    """Bars of each run's accuracies (pre-training and probe medians, with min-max)."""
    series: dict[str, list[tuple[float, float, float]]] = {}
    for metric, label in PRETRAINING.items():
        values = [_ours(r, metric)[0] for r in records]
        if any(v is not None for v in values):
            series[label] = [(v or 0.0, 0.0, 0.0) for v in values]
    for name in _probe_names(records):
        found = [_results(r, "probes").get(name) or {} for r in records]
        series[name] = [(p.get("median", 0.0), p.get("median", 0.0) - p.get("min", 0.0),
                         p.get("max", 0.0) - p.get("median", 0.0)) for p in found]
    if not series:
        return None
    fig = Figure(figsize=(max(6.0, 1.2 * len(series) * len(records)), 4))
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / len(records)
    for i, r in enumerate(records):
        xs = [k + i * width for k in range(len(series))]
        heights = [values[i][0] for values in series.values()]
        errors = [[values[i][1] for values in series.values()],
                  [values[i][2] for values in series.values()]]
        ax.bar(xs, heights, width, yerr=errors, capsize=3, label=str(r["name"]))
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(series))], list(series))
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1)
    ax.legend()
    return _save(fig, path)


# ---- the whole report ----------------------------------------------------------------------

def write_report(study_dir: Path) -> list[Path]:
    """report.md, results.json and the PNGs in study_dir; the paths written."""
    study_dir = Path(study_dir)
    spec, records = read_study(study_dir)
    plots = [p for p in (plot_similarity(records, study_dir / "figure2.png"),
                         plot_metrics(records, study_dir / "metrics.png")) if p]
    lines = _title(spec, records)
    lines += ["## Pre-training (intrinsic accuracy on held-out data)", "",
              *pretraining_table(records), ""]
    lines += held_out_source(records)
    lines += [f"- {s}" for s in pretraining_sentences(records)] + [""]
    probes = probes_table(records)
    if probes:
        lines += ["## Downstream probes (dev accuracy, %)", "", *probes, ""]
        sentence = downstream_sentence(records)
        lines += [f"- {sentence}", ""] if sentence else []
    elif proxy := mlm_against_downstream(records):
        lines += [f"- {proxy}", ""]
    if plots:
        lines += ["## Plots", "", *(f"![{p.stem}]({p.name})" for p in plots), ""]
    report = study_dir / "report.md"
    report.write_text("\n".join(lines), encoding="utf-8")
    gathered = study_dir / "results.json"
    gathered.write_text(json.dumps({"study": spec, "runs": records,
                                    "machine": {"platform": platform.platform(),
                                                "cpus": os.cpu_count()}}, indent=2) + "\n",
                        encoding="utf-8")
    return [report, gathered, *plots]
