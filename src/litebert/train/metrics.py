"""Training metrics: RUN_DIR/metrics.jsonl (one JSON object a line) plus TensorBoard scalars.

The JSON lines file is the record of truth: plain text, appended and flushed per record so
that a crash loses nothing already logged, readable without TensorBoard (see `read_metrics`
and `litebert.train.plots`). Every line carries an integer `step`; a line with any
`eval_`-prefixed key is an evaluation record, any other a training record.

Values are plain JSON numbers. Non-finite floats (NaN, inf) are written as `null`, because
JSON has no spelling for them and Python's `NaN` token breaks strict readers (jq, browsers);
`read_metrics` turns `null` back into NaN. TensorBoard gets the raw value, NaN included.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import numbers
import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from litebert.distributed import agree_on_write
from litebert.files import atomic_write
from litebert.train.checkpoint import resume_advice
from litebert.write_errors import explained_write, tree_size

log = logging.getLogger("litebert")

METRICS_NAME = "metrics.jsonl"
TENSORBOARD_DIR = "tensorboard"
EVAL_PREFIX = "eval_"
# TensorBoard events are queued and written by tensorboardX's own thread; a flush every
# few seconds keeps a live TensorBoard current without a disk sync per step.
_TB_FLUSH_SECS = 10
_TB_QUEUE = 1000  # a full queue blocks the caller: keep it large so a step never waits


class MetricsError(ValueError):
    """A metrics file or record that cannot be used; the message names the file and line."""


def is_eval(record: dict[str, Any]) -> bool:
    return any(key.startswith(EVAL_PREFIX) for key in record)


def tensorboard_tag(name: str) -> str:
    """`eval_mlm_loss` -> `eval/mlm_loss`; `loss` -> `train/loss`."""
    if name.startswith(EVAL_PREFIX):
        return "eval/" + name[len(EVAL_PREFIX):]
    return "train/" + name


# ---- writing -------------------------------------------------------------------------------

class MetricsLogger:
    """Appends records to RUN_DIR/metrics.jsonl and RUN_DIR/tensorboard/.

    enabled=False (non-zero ranks of a distributed run) makes it write nothing and create
    nothing. resume_step=N drops what a killed run logged after its last checkpoint
    (steps > N), which the resumed run is about to log again.

    Every rank of a process group creates it and calls log() with the same records: when the
    file cannot be written (a full disk), every rank raises the same WriteFailed, which names
    the newest checkpoint to resume from, instead of the others waiting for rank 0. A record
    whose append failed is cut off again, so the file holds whole lines only.
    """

    def __init__(self, run_dir: str | Path, *, enabled: bool = True,
                 resume_step: int | None = None, tensorboard: bool = True) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / METRICS_NAME
        self.enabled = enabled
        self._file: io.FileIO | None = None
        self._writer = None
        with self._explained(lambda: tree_size(self.path)):  # a repair rewrites the file
            if enabled:
                self._open(resume_step)
        if enabled and tensorboard:
            self._writer = _summary_writer(self.run_dir / TENSORBOARD_DIR, resume_step)

    def _open(self, resume_step: int | None) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            _repair(self.path, resume_step)
        # Unbuffered, appending: each record goes out in os.write calls of its own, nothing
        # waits in a buffer to be flushed (half) later. Kept open for the run.
        self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115 (closed in close())

    def _explained(self, needed: int | Callable[[], int]) -> AbstractContextManager[None]:
        """A write of metrics.jsonl: every rank enters it (see the class docstring)."""
        return explained_write(self.path, METRICS_NAME, needed=needed, agree=agree_on_write,
                               after=lambda: resume_advice(self.run_dir))

    def log(self, record: dict[str, Any]) -> None:
        """Write one record now: a JSON line and a TensorBoard scalar per number. Every rank
        calls it (the others write nothing, but agree on whether rank 0 could)."""
        if self.enabled and self._file is None:
            raise RuntimeError(f"{self.path}: MetricsLogger.log after close()")
        clean = plain_record(record)
        line = json.dumps({k: _json_value(v) for k, v in clean.items()}, allow_nan=False)
        data = (line + "\n").encode("utf-8")
        with self._explained(len(data)):
            if self._file is not None:
                _append(self._file, data)
        if self._writer is not None:
            step = clean["step"]
            for name, value in clean.items():
                if name != "step" and isinstance(value, (int, float)) \
                        and not isinstance(value, bool):
                    self._writer.add_scalar(tensorboard_tag(name), value, step)

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """Flush and close both outputs; calling it twice is harmless."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> MetricsLogger:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _append(file: io.FileIO, data: bytes) -> None:
    """Append `data` whole or not at all: a write that fails part-way (the disk filled up in
    the middle of a line) is cut off again, so no half line is left for the next record to
    be glued onto."""
    start = os.fstat(file.fileno()).st_size  # bytes; appends always go to the end
    try:
        view = memoryview(data)
        while view:  # a write may take only part of the bytes before the disk is full
            view = view[os.write(file.fileno(), view):]
    except OSError:
        with contextlib.suppress(OSError):  # shrinking a file needs no space
            os.ftruncate(file.fileno(), start)
        raise


def _summary_writer(directory: Path, resume_step: int | None):
    from tensorboardX import SummaryWriter  # imported late: protobuf costs ~0.2 s at import

    # TensorBoard hides events with step >= purge_step; we keep step N itself (it is in the
    # checkpoint the run resumes from), so purge from N + 1.
    purge = None if resume_step is None else resume_step + 1
    # tensorboardX names files by the second and the host, and opens them with "wb": a
    # second writer in the same second would truncate the first. A nanosecond suffix keeps
    # names distinct and sorting in creation order, which TensorBoard's purge relies on.
    return SummaryWriter(str(directory), purge_step=purge, flush_secs=_TB_FLUSH_SECS,
                         max_queue=_TB_QUEUE, filename_suffix=f".{time.time_ns()}")


def plain_record(record: dict[str, Any]) -> dict[str, Any]:
    """Tensors and numpy scalars -> Python numbers; `step` first and an int."""
    if not isinstance(record, dict) or "step" not in record:
        raise MetricsError(f"a metrics record must be a dict with a 'step' key, got {record!r}")
    out: dict[str, Any] = {}
    for key, value in record.items():
        if not isinstance(key, str):
            raise MetricsError(f"metrics record key {key!r} is not a string")
        out[key] = _plain_value(key, value)
    step = out.pop("step")
    if isinstance(step, float) and step.is_integer():
        step = int(step)
    if not isinstance(step, int) or isinstance(step, bool):
        raise MetricsError(f"metrics record 'step' must be an integer, got {step!r}")
    return {"step": step, **out}


def _plain_value(key: str, value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    # torch tensors and numpy arrays/scalars all have .item(); one element only, so a
    # per-example tensor passed by mistake is an error rather than silently its first value.
    numel = getattr(value, "numel", None)
    size = numel() if callable(numel) else getattr(value, "size", None)
    if hasattr(value, "item") and size == 1:
        return value.item()
    if isinstance(value, numbers.Real):  # fractions.Fraction and other Real types
        return float(value)
    raise MetricsError(f"metrics record value {key!r} must be a number or a one-element "
                       f"tensor, got {type(value).__name__} {value!r:.80}")


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# ---- reading and repairing -----------------------------------------------------------------

def parse_metrics_file(path: str | Path) -> tuple[list[tuple[str, dict[str, Any]]], int]:
    """(raw line, record) for each line, and how many malformed last lines were skipped (0/1).

    A process killed mid-write leaves a partial last line: that one is skipped. A malformed
    line anywhere else means the file was damaged or written by something else: an error.
    """
    path = Path(path)
    # errors="replace": a write cut inside a multi-byte character must not be a decode error
    text = path.read_text(encoding="utf-8", errors="replace")
    numbered = [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
    entries: list[tuple[str, dict[str, Any]]] = []
    skipped = 0
    for index, (lineno, line) in enumerate(numbered):
        try:
            record = _decode(line)
        except ValueError as err:
            if index == len(numbered) - 1:
                skipped += 1
                continue
            raise MetricsError(f"{path}:{lineno}: malformed metrics line ({err}): "
                               f"{line[:80]!r}") from None
        entries.append((line, record))
    return entries, skipped


def _decode(line: str) -> dict[str, Any]:
    record = json.loads(line)  # json.JSONDecodeError is a ValueError
    if not isinstance(record, dict):
        raise ValueError(f"a JSON {type(record).__name__}, not an object")
    step = record.get("step")
    if not isinstance(step, int) or isinstance(step, bool):
        raise ValueError(f"'step' must be an integer, got {step!r}")
    return {k: (math.nan if v is None else v) for k, v in record.items()}


def read_metrics(run_dir: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(training records, evaluation records) of RUN_DIR/metrics.jsonl, in file order."""
    run_dir = Path(run_dir)
    path = run_dir / METRICS_NAME if run_dir.is_dir() else run_dir
    if not run_dir.exists():
        raise MetricsError(f"{run_dir}: no such run directory")
    if not path.is_file():
        raise MetricsError(f"{run_dir}: no {METRICS_NAME} (not a training run directory, or "
                           f"nothing logged yet)")
    entries, skipped = parse_metrics_file(path)
    if skipped:
        log.info("%s: skipped a truncated last line (the run was killed mid-write)", path)
    train = [record for _, record in entries if not is_eval(record)]
    evals = [record for _, record in entries if is_eval(record)]
    return train, evals


def _repair(path: Path, resume_step: int | None) -> None:
    """Drop a partial last line and, when resuming, the steps after the checkpoint.

    Rewritten atomically (temp file + os.replace) so a crash here cannot lose the log.
    Without the repair, the next append would be glued onto a partial line.
    """
    entries, skipped = parse_metrics_file(path)
    kept = [line for line, record in entries
            if resume_step is None or record["step"] <= resume_step]
    raw = path.read_bytes()
    if len(kept) == len(entries) and not skipped and (not raw or raw.endswith(b"\n")):
        return
    if skipped:
        log.warning("%s: dropped a truncated last line (the run was killed mid-write)", path)
    if len(kept) < len(entries):
        log.info("%s: dropped %d records after step %d (resuming from its checkpoint)",
                 path, len(entries) - len(kept), resume_step)
    atomic_write(path, "".join(line + "\n" for line in kept))
