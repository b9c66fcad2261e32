"""Progress display: a bar on a terminal, a few plain lines in logs (litebert.progress)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

import litebert
from litebert import progress as progress_module
from litebert.progress import PlainProgress, progress


class FakeClock:
    """time.monotonic advancing `step` seconds per call."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_off_a_terminal_10000_updates_make_a_few_plain_lines(monkeypatch):
    monkeypatch.delenv("LITEBERT_PROGRESS_SECONDS", raising=False)
    monkeypatch.setattr(progress_module.time, "monotonic", FakeClock(0.01))  # 100 s in all
    out = io.StringIO()
    with progress(total=10_000, desc="pre-training", unit="step", file=out) as bar:
        assert isinstance(bar, PlainProgress)
        for _ in range(10_000):
            bar.update(1)
            bar.set_postfix(loss="1.234")
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert len(lines) == 4  # at 30, 60 and 90 s, then the last one
    assert lines[-1].startswith("pre-training: 10,000/10,000 step (100%), ")
    assert "step/s" in lines[-1] and lines[-1].endswith("loss=1.234")


def test_a_real_fast_loop_writes_one_line(monkeypatch):
    monkeypatch.delenv("LITEBERT_PROGRESS_SECONDS", raising=False)
    out = io.StringIO()
    bar = progress(total=10_000, desc="x", file=out)
    for _ in range(10_000):
        bar.update()
    bar.close()
    bar.close()  # a second close prints nothing
    assert out.getvalue().count("\n") == 1 and "\r" not in out.getvalue()


def test_the_interval_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("LITEBERT_PROGRESS_SECONDS", "10")
    monkeypatch.setattr(progress_module.time, "monotonic", FakeClock(1.0))
    out = io.StringIO()
    with progress(desc="tokenizing", unit="docs", file=out) as bar:  # no total
        for _ in range(100):
            bar.update(3)
    lines = out.getvalue().splitlines()
    assert 9 <= len(lines) <= 11
    assert re.match(r"tokenizing: 300 docs, [\d.,]+ docs/s, \d+:\d\d elapsed$", lines[-1])
    monkeypatch.setenv("LITEBERT_PROGRESS_SECONDS", "soon")
    with pytest.raises(ValueError, match="LITEBERT_PROGRESS_SECONDS='soon'"):
        progress(file=io.StringIO())


def test_wrapping_an_iterable_yields_everything_and_ends_with_a_line():
    out = io.StringIO()
    assert list(progress(iter(range(5)), total=5, desc="masking", unit="blocks",
                         file=out)) == list(range(5))
    assert out.getvalue().startswith("masking: 5/5 blocks (100%)")


def test_on_a_terminal_it_is_a_tqdm_bar_and_disabled_it_is_silent():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    bar = progress(total=3, desc="d", file=term)
    assert type(bar).__name__ == "tqdm"
    bar.update(3)
    bar.close()
    assert "\r" in term.getvalue()
    quiet = io.StringIO()
    bar = progress(total=3, file=quiet, disable=True)
    bar.update(3)
    bar.set_postfix(loss=1)
    bar.close()
    assert quiet.getvalue() == ""


def test_no_module_uses_tqdm_directly():
    root = Path(litebert.__file__).parent
    users = [p.relative_to(root).as_posix() for p in root.rglob("*.py")
             if "tqdm" in p.read_text(encoding="utf-8") and p.name != "progress.py"]
    assert users == []
