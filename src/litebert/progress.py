"""One progress display for every loop: a tqdm bar on a terminal, plain lines elsewhere.

Off a terminal (a log file, a pipe, CI) a bar's carriage-return frames pile up: `make demo >
log 2>&1` wrote a megabyte of them. There a line like

    pre-training: 120/600 step (20%), 3.1 step/s, 0:38 elapsed, loss=2.345

is printed at most every LITEBERT_PROGRESS_SECONDS seconds (30 by default), plus one when
the loop ends.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from tqdm import tqdm

DEFAULT_SECONDS = 30.0


def interval() -> float:
    """Seconds between plain lines: LITEBERT_PROGRESS_SECONDS, else 30."""
    raw = os.environ.get("LITEBERT_PROGRESS_SECONDS")
    if not raw:
        return DEFAULT_SECONDS
    try:
        return max(0.0, float(raw))
    except ValueError:
        raise ValueError(f"LITEBERT_PROGRESS_SECONDS={raw!r}: expected a number of seconds, "
                         f"e.g. 30") from None


def progress(iterable: Iterable | None = None, total: int | None = None, desc: str = "",
             unit: str = "it", initial: int = 0, disable: bool = False,
             file: TextIO | None = None) -> Any:
    """A progress display with tqdm's update(n), set_postfix(**kw), close(), `with` and
    iteration over `iterable`. `disable` (e.g. on ranks other than 0) shows nothing."""
    file = sys.stderr if file is None else file
    if disable or _is_terminal(file):
        return tqdm(iterable, total=total, desc=desc, unit=unit, initial=initial,
                    disable=disable, file=file, mininterval=2.0)
    return PlainProgress(iterable, total, desc, unit.strip(), initial, file)


def _is_terminal(file: TextIO) -> bool:
    try:
        return file.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class PlainProgress:
    """Plain progress lines, at most one per interval() seconds, and a last one on close."""

    def __init__(self, iterable: Iterable | None, total: int | None, desc: str, unit: str,
                 initial: int, file: TextIO):
        self.iterable, self.total, self.desc, self.unit = iterable, total, desc, unit
        self.n = self.initial = initial
        self.file, self.every = file, interval()
        self.postfix: dict[str, Any] = {}
        self.start = self.last = time.monotonic()
        self.closed = False

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            self._print(now)

    def set_postfix(self, **kw: Any) -> None:
        self.postfix = kw

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._print(time.monotonic())

    def __iter__(self) -> Iterator:
        try:
            for item in self.iterable or ():
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def line(self, now: float) -> str:
        elapsed = now - self.start
        count = f"{self.n:,}" if self.total is None else f"{self.n:,}/{self.total:,}"
        parts = [f"{count} {self.unit}".rstrip()]
        if self.total:
            parts[0] += f" ({self.n / self.total:.0%})"
        if elapsed > 0:
            parts.append(f"{(self.n - self.initial) / elapsed:,.1f} {self.unit}/s")
        minutes, seconds = divmod(int(elapsed), 60)
        parts.append(f"{minutes}:{seconds:02d} elapsed")
        parts += [f"{k}={v}" for k, v in self.postfix.items()]
        return f"{self.desc}: " * bool(self.desc) + ", ".join(parts)

    def _print(self, now: float) -> None:
        print(self.line(now), file=self.file, flush=True)
