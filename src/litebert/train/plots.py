"""PNG plots of a training run, drawn from RUN_DIR/metrics.jsonl (see `train.metrics`).

Figures are built with matplotlib's object API on an Agg canvas, never through pyplot: no
display is needed and no global backend or figure state is touched, so plotting from a
training process or a test is safe.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, PercentFormatter

from litebert.train.metrics import METRICS_NAME, MetricsError, read_metrics

PLOTS_DIR = "plots"
RELATIONS = ("sop", "nsp")  # sentence-pair objectives; objective "none" logs neither
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
    train, evals = read_metrics(run_dir)
    if not train and not evals:
        raise MetricsError(f"{run_dir / METRICS_NAME}: no records to plot")
    train, evals = _last_per_step(train), _last_per_step(evals)
    relation = _relation(train + evals)
    out = Path(out_dir) if out_dir is not None else run_dir / PLOTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    drawers: list[Callable[[Records, Records, str | None], Figure | None]] = [
        _loss_figure, _mlm_accuracy_figure, _relation_accuracy_figure, _lr_figure,
        _throughput_figure, _grad_norm_figure]
    written = []
    for draw in drawers:
        fig = draw(train, evals, relation)
        if fig is None:
            continue
        fig.suptitle(run_dir.resolve().name, fontsize=9, color="0.4")
        path = out / f"{fig.get_label()}.png"
        fig.savefig(path)
        written.append(path)
    return written


# ---- data ----------------------------------------------------------------------------------

def _last_per_step(records: Records) -> Records:
    """One record per step, the last logged, in step order.

    A run restarted without `resume_step` logs some steps twice; the later values are the
    ones the surviving run built on.
    """
    by_step = {record["step"]: record for record in records}
    return [by_step[step] for step in sorted(by_step)]


def _relation(records: Records) -> str | None:
    for name in RELATIONS:
        if any(f"{name}_loss" in r or f"eval_{name}_accuracy" in r for r in records):
            return name
    return None


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

def _loss_figure(train: Records, evals: Records, relation: str | None) -> Figure | None:
    fig, ax = _figure("loss", "Loss", "loss")
    names = [("loss", "C0", "o"), ("mlm_loss", "C1", "s")]
    if relation:
        names.append((f"{relation}_loss", "C2", "^"))
    drawn = False
    for name, color, marker in names:
        series, evaluated = _series(train, name), _series(evals, f"eval_{name}")
        # objective "none": loss == mlm_loss, one curve says it
        if name == "mlm_loss" and _same(series, _series(train, "loss")) \
                and _same(evaluated, _series(evals, "eval_loss")):
            continue
        if len(series[0]):
            _smoothed(ax, series, f"train {name}", color)
        if len(evaluated[0]):
            ax.plot(*evaluated, ls="none", marker=marker, ms=7, color=color, mec="black",
                    mew=0.8, zorder=3, label=f"eval {name}")
        drawn = drawn or bool(len(series[0]) or len(evaluated[0]))
    if not drawn:
        return None
    ax.legend(loc="upper right")
    return fig


def _mlm_accuracy_figure(train: Records, evals: Records, relation: str | None) -> Figure | None:
    accuracy = _series(evals, "eval_mlm_accuracy")
    if not len(accuracy[0]):
        return None
    fig, ax = _figure("mlm_accuracy", "MLM accuracy", "masked-token accuracy (eval)")
    ax.plot(*accuracy, "o-", color="C1", lw=1.6, ms=5, label="MLM accuracy")
    baseline = _series(evals, "eval_mlm_baseline_accuracy")
    if len(baseline[0]):
        _reference(ax, baseline, "most-frequent-token baseline")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(PercentFormatter(xmax=1))
    ax.legend(loc="lower right")
    return fig


def _relation_accuracy_figure(train: Records, evals: Records,
                              relation: str | None) -> Figure | None:
    if relation is None:
        return None
    accuracy = _series(evals, f"eval_{relation}_accuracy")
    if not len(accuracy[0]):
        return None
    name = relation.upper()
    fig, ax = _figure(f"{relation}_accuracy", f"{name} accuracy", f"{name} accuracy (eval)")
    ax.plot(*accuracy, "o-", color="C2", lw=1.6, ms=5, label=f"{name} accuracy")
    baseline = _series(evals, f"eval_{relation}_baseline_accuracy")
    if len(baseline[0]):
        _reference(ax, baseline, "chance baseline")
    else:
        ax.axhline(0.5, color="0.35", ls=":", lw=1.2, label="chance (50%)")
    lowest = np.nanmin(np.concatenate([accuracy[1], baseline[1], [0.5]]))
    ax.set_ylim(min(0.4, lowest - 0.05), 1.0)
    ax.yaxis.set_major_formatter(PercentFormatter(xmax=1))
    ax.legend(loc="lower right")
    return fig


def _lr_figure(train: Records, evals: Records, relation: str | None) -> Figure | None:
    lr = _series(train, "lr")
    if not len(lr[0]):
        return None
    fig, ax = _figure("lr", "Learning rate", "learning rate")
    ax.plot(*lr, color="C3", lw=1.6)
    ax.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    ax.set_ylim(bottom=0)
    return fig


def _throughput_figure(train: Records, evals: Records, relation: str | None) -> Figure | None:
    throughput = _series(train, "tokens_per_s")
    if not len(throughput[0]):
        return None
    fig, ax = _figure("throughput", "Throughput", "tokens / s")
    _smoothed(ax, throughput, "tokens/s", "C4")
    ax.yaxis.set_major_formatter(EngFormatter(sep=""))
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower right")
    return fig


def _grad_norm_figure(train: Records, evals: Records, relation: str | None) -> Figure | None:
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
