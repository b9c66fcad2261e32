"""Studies that measure a system rather than train runs: one entry per study.

A YAML study (spec.py, runner.py) trains and evaluates runs; a measured study is a Python
package with its own parts and report. `litebert study list / run / report` read this table
beside the YAML specs; adding a measured study is its package and one entry here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litebert.studies.lite_vs_bert import report as lite_vs_bert_report
from litebert.studies.lite_vs_bert import study as lite_vs_bert


@dataclass(frozen=True)
class MeasuredStudy:
    name: str
    title: str
    paper: str
    parts: int  # how many parts it runs (for `study list`)
    run: Callable[..., Any]  # (out, quick=..., only=...) -> results
    report: Callable[[Path], list[Path]]  # study dir -> files written


MEASURED: dict[str, MeasuredStudy] = {
    lite_vs_bert.NAME: MeasuredStudy(lite_vs_bert.NAME, lite_vs_bert.TITLE,
                                     lite_vs_bert.PAPER, len(lite_vs_bert.PARTS),
                                     lite_vs_bert.run, lite_vs_bert_report.write_report),
}


def measured_study_in(directory: Path) -> MeasuredStudy | None:
    """The measured study whose directory this is (its study.json names it), else None."""
    path = Path(directory) / "study.json"
    if not path.is_file():
        return None
    try:
        name = json.loads(path.read_text(encoding="utf-8")).get("name")
    except (json.JSONDecodeError, AttributeError):
        return None
    return MEASURED.get(name)
