"""PNG plots of a training run, drawn from RUN_DIR/metrics.jsonl (see `train.metrics`).

Figures are built with matplotlib's object API on an Agg canvas, never through pyplot: no
display is needed and no global backend or figure state is touched, so plotting from a
training process or a test is safe.

What is drawn follows the keys the run logged, whatever its objective: the loss figure has
every "<part>_loss" (train) and "eval_<part>_loss" (eval) with the total; each logged
"eval_<metric>_accuracy" gets its own figure, <metric>_accuracy.png, with its
"eval_<metric>_baseline_accuracy" and, when logged, its precision and recall (MLM runs:
mlm_accuracy.png and sop_accuracy.png or nsp_accuracy.png; ELECTRA: generator_mlm_accuracy.png
and rtd_accuracy.png).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, PercentFormatter

from litebert.train.metrics import METRICS_NAME, MetricsError, read_metrics

PLOTS_DIR = "plots"
COMPANIONS = (("precision", "s--"), ("recall", "^:"))  # drawn on their metric's figure
MARKERS = ("o", "s", "^", "D", "v", "P")  # of the eval points of each loss part
LOG_SPREAD = 20  # loss curves whose medians differ more than this get a log axis
_MIN_POINTS_TO_SMOOTH = 20
Records = list[dict[str, Any]]
Series = tuple[np.ndarray, np.ndarray]


def plot_run(run_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """Write loss/accuracy/lr/throughput PNGs into OUT_DIR (RUN_DIR/plots); return the paths.

    A figure whose metrics the run never logged (no evaluation yet, objective "none") is
    skipped rather than drawn empty.
    """
    run_dir = Path(run_dir)
    if run_dir.is_file():  # the metrics file itself was given
        run_dir = run_dir.parent
    figures = run_figures(run_dir)
    out = Path(out_dir) if out_dir is not None else run_dir / PLOTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fig in figures:
        path = out / f"{fig.get_label()}.png"
        fig.savefig(path)
        written.append(path)
    return written


def run_figures(run_dir: Path) -> list[Figure]:
    """The figures of a run directory, each labelled with its file name (without .png)."""
    train, evals = read_metrics(run_dir)
    if not train and not evals:
        raise MetricsError(f"{run_dir / METRICS_NAME}: no records to plot")
    train, evals = _last_per_step(train), _last_per_step(evals)
    parts, metrics = _loss_parts(train + evals), _accuracies(evals)
    # A metric's accuracy is drawn in the color of its loss (mlm, sop: C1, C2).
    colors = {name: f"C{i}" for i, name in enumerate(parts + [m for m in metrics
                                                              if m not in parts])}
    candidates = [_loss_figure(train, evals, parts),
                  *(_accuracy_figure(evals, name, colors[name]) for name in metrics),
                  _lr_figure(train), _throughput_figure(train), _grad_norm_figure(train)]
    figures = [fig for fig in candidates if fig is not None]
    for fig in figures:
        fig.suptitle(run_dir.resolve().name, fontsize=9, color="0.4")
    return figures


# ---- data ----------------------------------------------------------------------------------

def _last_per_step(records: Records) -> Records:
    """One record per step, the last logged, in step order.

    A run restarted without `resume_step` logs some steps twice; the later values are the
    ones the surviving run built on.
    """
    by_step = {record["step"]: record for record in records}
    return [by_step[step] for step in sorted(by_step)]


def _loss_parts(records: Records) -> list[str]:
    """"loss" (the total), then every part with a "<part>_loss" or "eval_<part>_loss" key,
    in the order the run first logged them."""
    parts = {"loss": None}
    for record in records:
        for key in record:
            name = key.removeprefix("eval_")
            if name.endswith("_loss"):
                parts.setdefault(name.removesuffix("_loss"), None)
    return list(parts)


def _accuracies(evals: Records) -> list[str]:
    """Every <metric> with an "eval_<metric>_accuracy" key other than a baseline's."""
    names: dict[str, None] = {}
    for record in evals:
        for key in record:
            if key.startswith("eval_") and key.endswith("_accuracy") \
                    and not key.endswith("_baseline_accuracy"):
                names.setdefault(key.removeprefix("eval_").removesuffix("_accuracy"), None)
    return list(names)


def _display(name: str) -> str:
    """generator_mlm -> "generator MLM": the short words are acronyms (MLM, SOP, RTD)."""
    return " ".join(w.upper() if len(w) <= 3 else w for w in name.split("_"))


def _series(records: Records, key: str) -> Series:
    """(steps, values) of the records holding `key`; empty when none is a finite number."""
    pairs = [(r["step"], _as_float(r[key])) for r in records if key in r]
    steps = np.array([s for s, _ in pairs], dtype=np.float64)
    values = np.array([v for _, v in pairs], dtype=np.float64)
    if not np.isfinite(values).any():
        return np.empty(0), np.empty(0)
    return steps, values


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _ema(values: np.ndarray) -> np.ndarray:
    """Bias-corrected exponential moving average skipping NaNs (as TensorBoard smooths)."""
    span = max(2, min(len(values) // 25, 200))  # ~4% of the run, so a long run stays smooth
    beta = 1.0 - 2.0 / (span + 1)
    out = np.empty_like(values)
    avg = weight = 0.0
    for i, value in enumerate(values):
        if math.isfinite(value):
            avg = beta * avg + (1 - beta) * value
            weight = beta * weight + (1 - beta)
        out[i] = avg / weight if weight else math.nan
    return out


# ---- drawing helpers -----------------------------------------------------------------------

def _figure(name: str, title: str, ylabel: str):
    """A figure for NAME.png (the name is kept as the figure's label)."""
    fig = Figure(figsize=(8, 4.5), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    fig.set_label(name)
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))  # 125000 -> 125k
    ax.grid(True, alpha=0.3)
    return fig, ax


def _smoothed(ax, series: Series, label: str, color: str) -> None:
    """The raw curve faint, its moving average bold; short curves are drawn raw."""
    steps, values = series
    if len(values) < _MIN_POINTS_TO_SMOOTH:
        ax.plot(steps, values, color=color, lw=1.4, label=label)
        return
    ax.plot(steps, values, color=color, lw=0.8, alpha=0.25)
    ax.plot(steps, _ema(values), color=color, lw=1.8, label=f"{label} (smoothed)")


def _reference(ax, series: Series, label: str, style: str = "--") -> None:
    """A baseline: a horizontal line when constant, else a curve over the eval steps."""
    steps, values = series
    finite = values[np.isfinite(values)]
    if len(finite) and np.ptp(finite) < 1e-9:
        ax.axhline(finite[0], color="0.35", ls=style, lw=1.2, label=label)
    else:
        ax.plot(steps, values, color="0.35", ls=style, lw=1.2, label=label)


def _same(a: Series, b: Series) -> bool:
    return a[0].shape == b[0].shape and np.allclose(a[1], b[1], equal_nan=True)


# ---- figures -------------------------------------------------------------------------------

def _loss_figure(train: Records, evals: Records, parts: list[str]) -> Figure | None:
    fig, ax = _figure("loss", "Loss", "loss")
    total = (_series(train, "loss"), _series(evals, "eval_loss"))
    curves: list[np.ndarray] = []
    for i, part in enumerate(parts):
        name = "loss" if part == "loss" else f"{part}_loss"
        series, evaluated = _series(train, name), _series(evals, f"eval_{name}")
        # A single part (objective "none": loss == mlm_loss): one curve says it.
        if part != "loss" and _same(series, total[0]) and _same(evaluated, total[1]):
            continue
        color, marker = f"C{i}", MARKERS[i % len(MARKERS)]
        if len(series[0]):
            _smoothed(ax, series, f"train {name}", color)
        if len(evaluated[0]):
            ax.plot(*evaluated, ls="none", marker=marker, ms=7, color=color, mec="black",
                    mew=0.8, zorder=3, label=f"eval {name}")
        curves += [values for _, values in (series, evaluated) if len(values)]
    if not curves:
        return None
    if _spread(curves) > LOG_SPREAD:  # a part weighted far below the total (ELECTRA's RTD
        ax.set_yscale("log")  # loss, x50) would lie flat at the bottom of a linear axis
    ax.legend(loc="upper right")
    return fig


def _spread(curves: list[np.ndarray]) -> float:
    """Largest over smallest median of the curves (1 when a median is not positive)."""
    medians = [np.nanmedian(c) for c in curves if np.isfinite(c).any()]
    if not medians or min(medians) <= 0:
        return 1.0
    return float(max(medians) / min(medians))


def _accuracy_figure(evals: Records, name: str, color: str) -> Figure | None:
    """eval_<name>_accuracy, its companions (precision, recall) and its baseline."""
    accuracy = _series(evals, f"eval_{name}_accuracy")
    if not len(accuracy[0]):
        return None
    title = _display(name)
    fig, ax = _figure(f"{name}_accuracy", f"{title[:1].upper()}{title[1:]} accuracy", "")
    ax.plot(*accuracy, "o-", color=color, lw=1.6, ms=5, label=f"{title} accuracy")
    drawn, values = ["accuracy"], [accuracy[1]]
    for companion, style in COMPANIONS:
        series = _series(evals, f"eval_{name}_{companion}")
        if len(series[0]):
            ax.plot(*series, style, color=color, lw=1.2, ms=4, alpha=0.8,
                    label=f"{title} {companion}")
            drawn.append(companion)
            values.append(series[1])
    baseline = _series(evals, f"eval_{name}_baseline_accuracy")
    if len(baseline[0]):
        _reference(ax, baseline, "baseline")
        values.append(baseline[1])
    ax.set_ylabel(f"{title} {', '.join(drawn)} (eval)")
    _rate_axis(ax, np.concatenate(values))
    ax.legend(loc="lower right")
    return fig


def _rate_axis(ax, values: np.ndarray) -> None:
    """Percent ticks; from 0, except for rates that all hover over 50% (a sentence-pair
    task): the upper half then, where the differences are."""
    finite = values[np.isfinite(values)]
    lowest = float(finite.min()) if len(finite) else 0.0
    highest = float(finite.max()) if len(finite) else 1.0
    ax.set_ylim(bottom=min(0.4, lowest - 0.05) if lowest >= 0.45 else 0.0,
                top=1.0 if highest > 0.5 else None)
    ax.yaxis.set_major_formatter(PercentFormatter(xmax=1))


def _lr_figure(train: Records) -> Figure | None:
    lr = _series(train, "lr")
    if not len(lr[0]):
        return None
    fig, ax = _figure("lr", "Learning rate", "learning rate")
    ax.plot(*lr, color="C3", lw=1.6)
    ax.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    ax.set_ylim(bottom=0)
    return fig


def _throughput_figure(train: Records) -> Figure | None:
    throughput = _series(train, "tokens_per_s")
    if not len(throughput[0]):
        return None
    fig, ax = _figure("throughput", "Throughput", "tokens / s")
    _smoothed(ax, throughput, "tokens/s", "C4")
    ax.yaxis.set_major_formatter(EngFormatter(sep=""))
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower right")
    return fig


def _grad_norm_figure(train: Records) -> Figure | None:
    norm = _series(train, "grad_norm")
    if not len(norm[0]):
        return None
    fig, ax = _figure("grad_norm", "Gradient norm", "gradient norm")
    _smoothed(ax, norm, "grad norm", "C5")
    finite = norm[1][np.isfinite(norm[1])]
    if finite.min() > 0 and finite.max() / finite.min() > 20:  # spikes would flatten the rest
        ax.set_yscale("log")
    ax.legend(loc="upper right")
    return fig
